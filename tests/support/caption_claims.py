"""The page's caption clauses as claims, each checked against the record it describes and the
state folded from the records before it (support/step_fold.py).

A caption is "Step N: clause; clause." A clause that matches no pattern here fails the check, so
a new sentence cannot reach the page without a check of what it claims. Each pattern names the
phase of the record at which its claim is checked: "pre" (before the step), "mid" (after its
schedule: the waiting queue was tried then) or "post" (after its update)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from servescope.core.config import EngineConfig
from servescope.core.kv_contiguous import ContiguousKVCacheManager
from support.step_fold import StepFold

N = r"[\d,]+"


def num(text: str | None) -> int:
    return int(text.replace(",", "")) if text else 0


def named_ids(text: str) -> tuple[list[str], int]:
    """listIds' words back to (the named ids, how many more)."""
    more = 0
    m = re.fullmatch(r"(.+) and (\d+) more", text)
    if m:
        text, more = m[1], int(m[2])
    return [i for i in re.split(r", | and ", text) if i], more


@dataclass
class Ctx:
    """One record under check: the fold, the record, the run's config; pending preemptions."""

    fold: StepFold
    config: EngineConfig
    rec: dict[str, Any] = field(default_factory=dict)
    phase: str = "mid"
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def policy(self) -> str:
        return self.config.policy

    @property
    def used(self) -> int:
        return sum(e["n"] for e in self.rec["scheduled"])

    def entry(self, rid: str) -> dict[str, Any] | None:
        return next((e for e in self.rec["scheduled"] if e["id"] == rid), None)

    def fail(self, message: str) -> None:
        raise AssertionError(f"{self.config.policy}/{self.config.allocator} step "
                             f"{self.rec['step']}: {message}")

    def check(self, ok: bool, message: str) -> None:
        if not ok:
            self.fail(message)


Check = Callable[[Ctx, re.Match[str]], None]
PATTERNS: list[tuple[re.Pattern[str], str, Check]] = []


def claim(pattern: str, phase: str = "mid") -> Callable[[Check], Check]:
    def register(fn: Check) -> Check:
        PATTERNS.append((re.compile(pattern), phase, fn))
        return fn
    return register


Claim = tuple[re.Match[str], str, Check]


def parse_caption(ctx: Ctx, text: str) -> list[Claim]:
    """Each clause of `text` with the check that knows it (a clause none knows fails)."""
    body = re.fullmatch(r"Step (\d+): (.+)\.", text)
    ctx.check(body is not None and int(body[1]) == ctx.rec["step"], f"caption {text!r}")
    assert body is not None
    claims = []
    for clause in body[2].split("; "):
        found = next(((m, phase, fn) for rx, phase, fn in PATTERNS if (m := rx.fullmatch(clause))),
                     None)
        ctx.check(found is not None, f"a clause no check knows: {clause!r}")
        assert found is not None
        claims.append(found)
    return claims


def check_claims(ctx: Ctx, claims: list[Claim]) -> None:
    """The claims checked at the current phase of the record."""
    for m, phase, fn in claims:
        if phase in (ctx.phase, "any"):
            fn(ctx, m)


def fits_padded(ctx: Ctx, num_tokens: int) -> int:
    """How many static reservations of `num_tokens` an empty pool holds (a batch starts empty)."""
    c = ctx.config
    if c.allocator == "paged":
        return ctx.fold.num_usable // -(-num_tokens // c.block_size)
    kv = ContiguousKVCacheManager(ctx.fold.num_usable + 1, c.block_size, c.allocator,
                                  c.max_model_len)
    return kv.num_fitting(num_tokens)


def reservation(ctx: Ctx, rid: str) -> tuple[int, int]:
    """A contiguous allocator's reservation for `rid`: tokens and buddy-chunk blocks."""
    c, spec = ctx.config, ctx.fold.specs[rid]
    kv = ContiguousKVCacheManager(ctx.fold.num_usable + 1, c.block_size, c.allocator,
                                  c.max_model_len)
    tokens = kv.reservation_tokens(spec.prompt_len, spec.output_len)  # its whole buddy chunk
    return tokens, tokens // c.block_size
