"""Speculative decoding's counters over a run, as vLLM 0.33 counts them
(`SpecDecodingStats.observe_draft` and `SpecDecodingLogging.log`,
vllm/v1/spec_decode/metrics.py): one draft per verify of a request with drafts whose output
is applied, its draft tokens, the ones the target accepted, and per position; and each
unfinished request's own draft tokens and accepted drafts, which its finished row takes.

  acceptance_rate         accepted tokens / draft tokens
  mean_acceptance_length  1 + accepted tokens / drafts (the bonus token counted, as vLLM does)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SpecCounters:
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list[int] = field(default_factory=list)
    # request id -> [draft tokens, accepted drafts] over its applied verifies so far
    per_request: dict[str, list[int]] = field(default_factory=dict)

    def observe(self, drafts: Mapping[str, int], accepted: Mapping[str, int]) -> None:
        """One step's verifies: drafts scheduled per request and how many of them were
        accepted (-1 or missing: the output was discarded, nothing counted)."""
        for request_id, num_draft_tokens in drafts.items():
            num_accepted = accepted.get(request_id, -1)
            if num_draft_tokens <= 0 or num_accepted < 0:
                continue
            self.num_drafts += 1
            self.num_draft_tokens += num_draft_tokens
            self.num_accepted_tokens += num_accepted
            mine = self.per_request.setdefault(request_id, [0, 0])
            mine[0] += num_draft_tokens
            mine[1] += num_accepted
            per_pos = self.num_accepted_tokens_per_pos
            per_pos.extend([0] * (num_accepted - len(per_pos)))
            for i in range(num_accepted):
                per_pos[i] += 1

    def add(self, other: SpecCounters) -> None:
        """Fold another engine's counters in (data parallelism: vLLM sums the DP ranks'
        spec-decode stats alike)."""
        self.num_drafts += other.num_drafts
        self.num_draft_tokens += other.num_draft_tokens
        self.num_accepted_tokens += other.num_accepted_tokens
        per_pos, theirs = self.num_accepted_tokens_per_pos, other.num_accepted_tokens_per_pos
        per_pos.extend([0] * (len(theirs) - len(per_pos)))
        for i, count in enumerate(theirs):
            per_pos[i] += count

    def take(self, request_id: str) -> tuple[int, int]:
        """A finished request's (draft tokens, accepted drafts), no longer kept here."""
        drafts, accepted = self.per_request.pop(request_id, (0, 0))
        return drafts, accepted

    def summary(self) -> dict[str, Any]:
        drafts, tokens = self.num_drafts, self.num_draft_tokens
        return {
            "num_drafts": drafts, "num_draft_tokens": tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "acceptance_rate": self.num_accepted_tokens / tokens if tokens else None,
            "mean_acceptance_length": 1 + self.num_accepted_tokens / drafts if drafts else None,
            "acceptance_rate_per_position": [n / drafts for n in
                                             self.num_accepted_tokens_per_pos] if drafts else [],
        }
