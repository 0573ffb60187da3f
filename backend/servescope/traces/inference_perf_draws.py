"""inference-perf's random draws, rule for rule: its two length samplers (the random/synthetic
datagens call generate_distribution, the shared-prefix datagen sample_from_distribution, in
inference_perf/utils/numeric/distribution/utils.py) and its load timers (loadgen/load_timer.py)."""

from __future__ import annotations

import math

import numpy as np

from servescope.traces.errors import TraceFormatError
from servescope.traces.inference_perf_config import Distribution

POISSON_CHUNK_S = 4096  # seconds of Poisson counts drawn at once (a speed choice, not a rule)


def generate_lengths(dist: Distribution, count: int, rng: np.random.Generator,
                     where: str) -> np.ndarray:
    """generate_distribution: fixed, uniform on [min, max), lognormal shifted so min maps to 0,
    normal (its mean must lie in [min, max]); skew_normal and poisson are refused there."""
    if dist.type == "fixed":
        return np.full(count, int(dist.mean), dtype=np.int64)
    if dist.type == "uniform":
        values = rng.uniform(dist.min, dist.max, count)
    elif dist.type == "lognormal":
        shifted = dist.mean - dist.min if dist.mean - dist.min > 0 else 1.0
        sigma2 = math.log(1 + (dist.std_dev / shifted) ** 2)
        values = rng.lognormal(math.log(shifted) - sigma2 / 2, math.sqrt(sigma2), count) \
            + dist.min
    elif dist.type == "normal":
        if not dist.min <= dist.mean <= dist.max:
            raise TraceFormatError(0, where + ".mean", "must lie between min and max")
        values = rng.normal(dist.mean, dist.std_dev, count)
    else:
        raise TraceFormatError(0, where + ".type", "the random and synthetic data types take "
                               "normal, lognormal, uniform or fixed")
    return _clip(values, dist)


def sample_lengths(dist: Distribution, count: int, rng: np.random.Generator,
                   where: str) -> np.ndarray:
    """sample_from_distribution: every type; lognormal moment-matched without a shift, uniform
    on [min, max + 1), poisson with lambda = mean (1 when mean <= 0)."""
    if dist.type == "fixed":
        return np.full(count, int(dist.mean), dtype=np.int64)
    if dist.type == "normal":
        values = rng.normal(dist.mean, dist.std_dev, count)
    elif dist.type == "skew_normal":  # Azzalini's two-normal construction
        delta = dist.skew / math.sqrt(1.0 + dist.skew ** 2)
        u0, v = rng.standard_normal(count), rng.standard_normal(count)
        u1 = delta * u0 + math.sqrt(1.0 - delta ** 2) * v
        values = dist.mean + dist.std_dev * np.where(u0 >= 0, u1, -u1)
    elif dist.type == "lognormal":
        if dist.mean <= 0:
            raise TraceFormatError(0, where + ".mean", "a lognormal needs mean > 0")
        if dist.std_dev <= 0:
            values = np.full(count, dist.mean)
        else:
            sigma2 = math.log(1.0 + (dist.std_dev / dist.mean) ** 2)
            values = rng.lognormal(math.log(dist.mean) - sigma2 / 2, math.sqrt(sigma2), count)
    elif dist.type == "uniform":
        values = rng.uniform(dist.min, dist.max + 1, count)
    else:  # poisson
        values = rng.poisson(dist.mean if dist.mean > 0 else 1.0, count).astype(np.float64)
    return _clip(values, dist)


def _clip(values: np.ndarray, dist: Distribution) -> np.ndarray:
    rounded = np.round(np.clip(values, dist.min, dist.max)).astype(np.int64)
    clipped: np.ndarray = np.clip(rounded, dist.min, dist.max)
    return clipped


def constant_offsets(rate: float, duration: float, rng: np.random.Generator) -> np.ndarray:
    """ConstantLoadTimer: int(rate x duration) exponential gaps, scaled to sum to the duration,
    so the last request goes out exactly at its end."""
    count = int(rate * duration)
    if count == 0:
        return np.zeros(0)
    gaps = rng.exponential(1 / rate, count)
    return np.cumsum(gaps * (duration / gaps.sum()))


def poisson_offsets(rate: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """PoissonLoadTimer: each second draws a Poisson(rate) count (an empty second is skipped)
    and spreads it over that second as a constant timer does, until `count` requests (the
    stage's int(rate x duration)) are out, however long that takes. Seconds are drawn a chunk
    at a time (the draws' order differs from its loop; its own generator is unseeded)."""
    out: list[np.ndarray] = []
    second, sent = 0, 0
    while sent < count:
        per_second = rng.poisson(rate, POISSON_CHUNK_S)
        for offset in np.flatnonzero(per_second):
            n = int(per_second[offset])
            out.append(second + offset + constant_offsets(n, 1.0, rng)[:count - sent])
            sent += len(out[-1])
            if sent >= count:
                break
        second += POISSON_CHUNK_S
    return np.concatenate(out) if out else np.zeros(0)
