"""What a load found besides the records: counts, skipped rows by reason, flags for the views."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TraceReport:
    """Filled in while the record stream is consumed; complete once it is exhausted.

    `notes` are short sentences the UI shows beside the run ("request ids are placeholders").
    `meta` holds format-specific facts (a benchmark's measured summary, a capture's block size).
    """

    format: str
    kind: str  # "requests" or "steps"
    num_rows: int = 0  # data rows read (requests or steps), skipped ones included
    num_yielded: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": self.format, "kind": self.kind, "num_rows": self.num_rows,
            "num_yielded": self.num_yielded, "skipped": dict(self.skipped),
            "notes": list(self.notes), "meta": dict(self.meta),
        }
