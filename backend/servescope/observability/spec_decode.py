"""Speculative decoding's counters as vLLM keeps them (vllm/v1/spec_decode/metrics.py,
SpecDecodingStats.observe_draft): folded from each record's scheduled entries at the point
vLLM samples them, Scheduler.update_from_output, where a request with drafts gets its
output. Also the tokens a scheduled entry yields, which every reader of records counts."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from servescope.observability.columns import Changes
from servescope.observability.spill import Spill

# (vLLM's counter name, its documentation, the SpecDecodeCounts total that feeds it), as
# vllm/v1/spec_decode/metrics.py's SpecDecodingProm registers them
COUNTERS = (("vllm:spec_decode_num_drafts", "Number of spec decoding drafts.", "num_drafts"),
            ("vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
             "num_draft_tokens"),
            ("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
             "num_accepted_tokens"))
PER_POS = ("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.")


def tokens_out(e: Mapping[str, Any]) -> int:
    """Output tokens a scheduled entry yields: none unless it samples; a verify yields its
    accepted drafts plus one token (vllm/v1/core/sched/scheduler.py, update_from_output);
    `accepted` -1 marks an output vLLM discards (the request finished meanwhile)."""
    if not e.get("sampled"):
        return 0
    accepted = e.get("accepted", 0)
    return 0 if accepted < 0 else 1 + accepted


def kept_tokens(e: Mapping[str, Any], num_output: int, output_len: int | None) -> int:
    """The tokens a request keeps of an entry: a speculating entry's stop at its output length
    (max_tokens; vllm/v1/core/sched/scheduler.py, _update_request_with_output cuts them)."""
    tokens = tokens_out(e)
    if "drafts" not in e or output_len is None:
        return tokens
    return max(0, min(tokens, output_len - num_output))


def num_speculative_tokens(config: Mapping[str, Any]) -> int:
    """K of a config dict's `speculative_config` (a dict or its JSON text); 0 without one."""
    spec = config.get("speculative_config")
    if isinstance(spec, str):
        spec = json.loads(spec)
    return int(spec.get("num_speculative_tokens") or 0) if isinstance(spec, dict) else 0


class SpecDecodeCounts:
    """The cumulative counters after each record, kept where they change."""

    def __init__(self, spill: Spill | None = None) -> None:
        self.spill = spill
        self.totals = {name: Changes(spill) for _, _, name in COUNTERS}
        self.per_pos: list[Changes] = []  # accepted tokens at draft position 0, 1, ...
        self._sums = dict.fromkeys(self.totals, 0)
        self._pos_sums: list[int] = []

    def observe(self, it: int, scheduled: Iterable[Mapping[str, Any]]) -> None:
        """Record `it`'s verifies: each entry with drafts whose output vLLM applies."""
        for e in scheduled:
            drafts, accepted = e.get("drafts", 0), e.get("accepted", 0)
            if not drafts or accepted < 0:
                continue
            self._sums["num_drafts"] += 1
            self._sums["num_draft_tokens"] += drafts
            self._sums["num_accepted_tokens"] += accepted
            while len(self._pos_sums) < accepted:
                self._pos_sums.append(0)
                self.per_pos.append(Changes(self.spill))
            for pos in range(accepted):
                self._pos_sums[pos] += 1
                self.per_pos[pos].set(it, self._pos_sums[pos])
            for name, total in self._sums.items():
                self.totals[name].set(it, total)

    def at(self, pos: int) -> dict[str, float]:
        """The three totals after record `pos` (0 before any)."""
        return {name: changes.at(pos) for name, changes in self.totals.items()}

    def accepted_at(self, position: int, pos: int) -> float:
        """Accepted tokens at draft `position` after record `pos`."""
        return self.per_pos[position].at(pos) if position < len(self.per_pos) else 0.0
