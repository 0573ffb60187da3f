"""How many drafts the target accepts at a request's verify step, when the workload has no
recorded `spec_accepted` list: per-position acceptance rates, seeded per request.

Draft position i is accepted only if positions 0..i-1 were, with probability `rates[i]` (the
rate conditioned on the earlier positions, as the EAGLE papers define n-alpha). A request's
draws depend on (seed, request id, verify index) only, never on which requests share its
batch, so the same seed gives the same acceptances under any schedule.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from servescope.core.request import RequestSpec
from servescope.core.speculative import SpeculativeConfig


@dataclass(frozen=True)
class DefaultRates:
    """Conditional per-position rates for a method; the last repeats past the end."""

    rates: tuple[float, ...]
    source: str


# vLLM issue #26191: Llama-3.1-8B-Instruct + yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, MT-bench,
# K = 7, temperature 0: 12208 accepted over 4816 drafts (mean acceptance length 3.53). The
# EAGLE-3 paper (arXiv 2503.01840, Fig. 7) shows n-alpha roughly flat in n, so one rate a with
# a + a^2 + ... + a^7 = 12208 / 4816 = 2.53: a = 0.74.
EAGLE3 = DefaultRates((0.74,), "Llama-3.1-8B EAGLE-3 on MT-bench, vLLM issue #26191 "
                               "(mean acceptance length 3.53 at K = 7)")
# vLLM PR #16035: Llama-3-8B-Instruct + lmsys/sglang-EAGLE-LLaMA3-Instruct-8B, MT-bench,
# K = 2: mean acceptance length 1.89, so a + a^2 = 0.89: a = 0.57 (its K = 4 run, 2.08, shows
# the rate falling further out; a flat 0.57 gives 2.19 there).
EAGLE = DefaultRates((0.57,), "Llama-3-8B EAGLE on MT-bench, vLLM PR #16035 "
                              "(mean acceptance length 1.89 at K = 2)")
# DeepSeek-V3 technical report (arXiv 2412.19437, section 5.4.3): "the acceptance rate of the
# second token prediction ranges between 85% and 90%"; the low end. It measures one MTP
# module (position 0) only: later positions take the same rate, an assumption.
MTP = DefaultRates((0.85,), "DeepSeek-V3 MTP, technical report section 5.4.3 (85-90% on "
                            "the second token; later positions assumed equal)")
# vLLM PR #24344: ngram, K = 5, prompt_lookup 2..5, on vdaita/edit_5k_char (code edits):
# acceptance at token 0..4 of 0.81, 0.74, 0.70, 0.68, 0.66 of the drafts (cumulative), so
# the conditional rates are 0.81, 0.74/0.81, 0.70/0.74, 0.68/0.70, 0.66/0.68.
NGRAM = DefaultRates((0.81, 0.91, 0.95, 0.97, 0.97),
                     "n-gram prompt lookup on edit_5k_char code edits, vLLM PR #24344")
DEFAULT_RATES = {"eagle3": EAGLE3, "eagle": EAGLE, "mtp": MTP, "ngram": NGRAM}
CHUNK = 16  # verify steps drawn at once per request (drawn again, longer, when passed)


class AcceptanceModel:
    """`accepted(request_id, verify_index, num_drafts)`: drafts accepted at a verify step."""

    def __init__(self, method: str, num_speculative_tokens: int,
                 rates: tuple[float, ...], seed: int = 0) -> None:
        if not rates:
            raise ValueError("acceptance rates: at least one")
        if any(not 0.0 <= r <= 1.0 for r in rates):
            raise ValueError(f"acceptance rates must lie in [0, 1]; got {rates}")
        self.method = method
        self.num_speculative_tokens = num_speculative_tokens
        padded = list(rates[:num_speculative_tokens])
        padded += [rates[-1]] * (num_speculative_tokens - len(padded))
        self.rates = np.array(padded, np.float64)
        self.seed = seed
        self.drawn: dict[str, np.ndarray] = {}  # request id -> accepted count per verify step

    def accepted(self, request_id: str, verify_index: int, num_drafts: int) -> int:
        counts = self.drawn.get(request_id)
        if counts is None or verify_index >= len(counts):
            counts = self._draw(request_id, max(CHUNK, 2 * (verify_index + 1)))
        return min(int(counts[verify_index]), num_drafts)

    def _draw(self, request_id: str, num_steps: int) -> np.ndarray:
        """The first num_steps verify steps' counts; a longer draw repeats a shorter one's
        prefix (the generator yields the same stream)."""
        key = zlib.crc32(request_id.encode())
        rng = np.random.default_rng([self.seed, key])
        hits = rng.random((num_steps, len(self.rates))) < self.rates
        counts: np.ndarray = np.cumprod(hits, axis=1).sum(axis=1).astype(np.int8)
        self.drawn[request_id] = counts
        return counts

    def mean_acceptance_length(self) -> float:
        """Expected tokens a verify step yields with all K drafts: 1 + sum of prod(rates[:i])."""
        return 1.0 + float(np.cumprod(self.rates).sum())


def make_acceptance(method: str, num_speculative_tokens: int,
                    rates: tuple[float, ...] | None, seed: int = 0,
                    ) -> tuple[AcceptanceModel | None, str]:
    """The model a speculative config gets, and the words that say where its rates came
    from: the config's own `acceptance_rates`, else the method's published default, else
    none (every draft rejected) for a method with no published measurement here."""
    if rates:
        model = AcceptanceModel(method, num_speculative_tokens, tuple(rates), seed)
        return model, f"model: {method}, speculative_config.acceptance_rates"
    default = DEFAULT_RATES.get(method)
    if default is None:
        return None, (f"none: no published default for {method}; set "
                      "speculative_config.acceptance_rates")
    model = AcceptanceModel(method, num_speculative_tokens, default.rates, seed)
    return model, f"model: {method} defaults ({default.source})"


def for_engine(spec: SpeculativeConfig | None, requests: Sequence[RequestSpec],
               seed: int = 0) -> tuple[AcceptanceModel | None, str]:
    """What an engine built for `spec` asks when a request has no recorded list, and the
    summary's words for where its acceptances come from ("none" without speculation)."""
    if spec is None:
        return None, "none"
    model, source = make_acceptance(spec.method, spec.num_speculative_tokens,
                                    spec.acceptance_rates, seed)
    recorded = sum(1 for r in requests if r.spec_accepted is not None)
    return model, describe_source(source, len(requests), recorded)


def describe_source(model_source: str, num_requests: int, num_recorded: int) -> str:
    """What a run's summary says about its acceptance: the workload's recorded lists, the
    model, or both where only some requests carry one."""
    if num_recorded == 0:
        return model_source
    if num_recorded == num_requests:
        return "recorded spec_accepted"
    return (f"recorded spec_accepted ({num_recorded} of {num_requests} requests); "
            f"else {model_source}")
