"""Synthetic workloads from an injected numpy Generator: Poisson, gamma-bursty, closed-loop fixed
concurrency, mixed long-prompt traffic, multi-tenant sessions (traces/tenants.py), and the lesson
workload (shared with `exercises`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from servescope.core.request import RequestSpec
from servescope.traces.lengths import LengthSpec, lengths
from servescope.traces.tenants import multi_tenant


def _specs(prefix: str, arrivals: np.ndarray, prompts: np.ndarray,
           outputs: np.ndarray) -> list[RequestSpec]:
    return [RequestSpec(f"{prefix}{i}", int(p), int(o), arrival_s=float(t))
            for i, (t, p, o) in enumerate(zip(arrivals, prompts, outputs, strict=True))]


def gamma(rng: np.random.Generator, num_requests: int, rate_per_s: float, burstiness: float = 1.0,
          prompt_len: LengthSpec = (128, 1024), output_len: LengthSpec = (32, 256),
          id_prefix: str = "g") -> list[RequestSpec]:
    """Gamma inter-arrival gaps with shape `burstiness` and mean 1/rate, as `vllm bench serve
    --burstiness` draws them: 1 is Poisson, below 1 burstier, above 1 more regular."""
    if rate_per_s <= 0 or burstiness <= 0:
        raise ValueError("rate_per_s and burstiness must be positive")
    gaps = rng.gamma(burstiness, 1.0 / (rate_per_s * burstiness), num_requests)
    arrivals = np.cumsum(gaps) - gaps[0] if num_requests else gaps
    return _specs(id_prefix, arrivals, lengths(rng, prompt_len, num_requests),
                  lengths(rng, output_len, num_requests))


def poisson(rng: np.random.Generator, num_requests: int, rate_per_s: float,
            prompt_len: LengthSpec = (128, 1024), output_len: LengthSpec = (32, 256),
            id_prefix: str = "p") -> list[RequestSpec]:
    """Exponential gaps (a Poisson process); the first request arrives at 0."""
    return gamma(rng, num_requests, rate_per_s, 1.0, prompt_len, output_len, id_prefix)


def closed_loop(rng: np.random.Generator, num_requests: int, concurrency: int,
                prompt_len: LengthSpec = (128, 1024), output_len: LengthSpec = (32, 256),
                tpot_ms: float = 20.0, prefill_tokens_per_s: float = 10_000.0,
                think_s: float = 0.0, id_prefix: str = "c") -> list[RequestSpec]:
    """`concurrency` users, each sending its next request when the previous one would finish.

    An open-loop approximation (arrivals are fixed before the run): a request is assumed to take
    prompt_len / prefill_tokens_per_s + output_len * tpot_ms, plus `think_s` between requests.
    When the simulated engine is slower than that, more than `concurrency` requests overlap."""
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    prompts = lengths(rng, prompt_len, num_requests)
    outputs = lengths(rng, output_len, num_requests)
    free_at = np.zeros(concurrency)
    arrivals = np.empty(num_requests)
    for i in range(num_requests):
        user = int(np.argmin(free_at))  # the user who becomes free first sends the next request
        arrivals[i] = free_at[user]
        latency = prompts[i] / prefill_tokens_per_s + outputs[i] * tpot_ms / 1000.0
        free_at[user] += latency + think_s
    return _specs(id_prefix, arrivals, prompts, outputs)


def mixed_long(rng: np.random.Generator, num_requests: int, rate_per_s: float,
               long_fraction: float = 0.1, short_prompt: LengthSpec = (64, 1024),
               long_prompt: LengthSpec = (8192, 32768), output_len: LengthSpec = (32, 256),
               id_prefix: str = "m") -> list[RequestSpec]:
    """Poisson arrivals of short chats with a `long_fraction` of long-document prompts."""
    if not 0.0 <= long_fraction <= 1.0:
        raise ValueError("long_fraction must be in [0, 1]")
    gaps = rng.exponential(1.0 / rate_per_s, num_requests)
    arrivals = np.cumsum(gaps) - gaps[0] if num_requests else gaps
    is_long = rng.random(num_requests) < long_fraction
    prompts = np.where(is_long, lengths(rng, long_prompt, num_requests),
                       lengths(rng, short_prompt, num_requests))
    return _specs(id_prefix, arrivals, prompts, lengths(rng, output_len, num_requests))


LESSON_PROMPTS = (128, 256, 512, 2048, 8192)


def lesson_workload(num_requests: int = 60, rate_per_s: float = 40.0,
                    seed: int = 0) -> list[RequestSpec]:
    """The lesson's toy: Poisson arrivals, prompts from {128 ... 8192}, outputs 50-300."""
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / rate_per_s, num_requests))
    prompts = rng.choice(LESSON_PROMPTS, num_requests)
    outputs = rng.integers(50, 301, num_requests)
    return [RequestSpec(f"r{i}", int(prompts[i]), int(outputs[i]), arrival_s=float(arrivals[i]))
            for i in range(num_requests)]


def lesson(seed: int = 0, num_requests: int = 60, rate_per_s: float = 40.0) -> list[RequestSpec]:
    """The lesson workload: 60 requests at about 40 req/s, prompts from {128, 256, 512, 2048,
    8192}, outputs 50-300, seeded. Defined once, here."""
    return lesson_workload(num_requests, rate_per_s, seed)


GENERATORS: dict[str, Callable[..., list[RequestSpec]]] = {
    "poisson": poisson, "gamma": gamma, "closed_loop": closed_loop, "mixed_long": mixed_long,
    "multi_tenant": multi_tenant,
}


def generate(name: str, seed: int = 0, **params: Any) -> list[RequestSpec]:
    """A named generator with a Generator seeded by `seed` ("lesson" takes the seed itself)."""
    if name == "lesson":
        return lesson(seed, **params)
    if name not in GENERATORS:
        raise ValueError(f"unknown generator {name!r}; known: lesson, {', '.join(GENERATORS)}")
    return GENERATORS[name](np.random.default_rng(seed), **params)
