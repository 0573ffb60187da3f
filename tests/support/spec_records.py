"""Hand-made speculative records for the wire, metrics and exports tests before the core
drafts: an engine's records with drafts and acceptances laid onto their decode entries."""

from __future__ import annotations

import random
from typing import Any


def with_drafts(rec: dict[str, Any], rng: random.Random, k: int = 3) -> dict[str, Any]:
    """`rec` as a run speculating K = `k` would record it: each decode schedules 0..k drafts
    inside `n` (n = 1 + drafts), accepts 0..drafts of them, now and then -1 (an output vLLM
    discards); other entries carry 0 drafts and 0 accepted (-1 now and then too)."""
    out = dict(rec)
    out["scheduled"] = []
    for e in rec["scheduled"]:
        e = dict(e)
        drafts = rng.randint(0, k) if e["kind"] == "decode" else 0
        e["n"] += drafts
        e["drafts"] = drafts
        e["accepted"] = -1 if rng.random() < 0.05 else rng.randint(0, drafts)
        out["scheduled"].append(e)
    return out
