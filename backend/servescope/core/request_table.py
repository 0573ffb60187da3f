"""A workload's requests as columns (id, prompt and output lengths, arrival): the request list
the views page through and the stream state looks ids up in, at a few bytes a request where a
dict a request costs about two hundred. Reads back as the dicts it replaces."""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from servescope.core.request import RequestSpec

FIELDS = ("id", "prompt_len", "output_len", "arrival_s", "arrival_step")
if TYPE_CHECKING:
    Column = array[Any] | list[Any] | None  # None: every value is None


def _column(values: list[Any], typecode: str, kind: type) -> Column:
    """An array when every value is exactly `kind` (so it reads back the same: an int
    arrival_s stays an int), None when every value is None, else the list itself."""
    if all(v is None for v in values):
        return None
    if all(type(v) is kind for v in values):
        try:
            return array(typecode, values)
        except OverflowError:
            pass
    return values


class RequestTable(Sequence[dict[str, Any]]):
    """Row k reads as {"id", "prompt_len", "output_len", "arrival_s", "arrival_step"}."""

    def __init__(self, ids: list[str], prompt_len: list[Any], output_len: list[Any],
                 arrival_s: list[Any], arrival_step: list[Any]) -> None:
        self.ids = ids
        self.prompt_len = _column(prompt_len, "q", int)
        self.output_len = _column(output_len, "q", int)
        self.arrival_s = _column(arrival_s, "d", float)
        self.arrival_step = _column(arrival_step, "q", int)
        self._index: dict[str, int] | None = None
        self._prompt_lengths: dict[str, int] | None = None

    @classmethod
    def from_specs(cls, specs: Iterable[RequestSpec]) -> RequestTable:
        specs = list(specs)
        return cls([s.id for s in specs], [s.prompt_len for s in specs],
                   [s.output_len for s in specs], [s.arrival_s for s in specs],
                   [s.arrival_step for s in specs])

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, Any]]) -> RequestTable:
        """From dicts with at least "id" (a request list read back, a test's few rows)."""
        rows = list(rows)
        return cls([r["id"] for r in rows], *([r.get(f) for r in rows] for f in FIELDS[1:]))

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, k: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, k: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, k: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(k, slice):
            return [self._row(i) for i in range(*k.indices(len(self)))]
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError(k)
        return self._row(k)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (self._row(i) for i in range(len(self)))

    def _row(self, k: int) -> dict[str, Any]:
        return {"id": self.ids[k], "prompt_len": _at(self.prompt_len, k),
                "output_len": _at(self.output_len, k), "arrival_s": _at(self.arrival_s, k),
                "arrival_step": _at(self.arrival_step, k)}

    @property
    def positions(self) -> dict[str, int]:
        """Position of each id (the last, should an id repeat), built on first use."""
        if self._index is None:
            self._index = {rid: k for k, rid in enumerate(self.ids)}
        return self._index

    @property
    def prompt_lengths(self) -> dict[str, int]:
        """Each id's prompt length (the last, should an id repeat), built on first use: the
        stream state's predictions look one up per scheduled request."""
        if self._prompt_lengths is None:
            lengths = self.prompt_len if self.prompt_len is not None else [0] * len(self)
            same: dict[int, int] = {}  # one int object per distinct length, not per request
            self._prompt_lengths = {rid: same.setdefault(n, n)
                                    for rid, n in zip(self.ids, lengths, strict=True)}
        return self._prompt_lengths

    def prompt_len_of(self, rid: str) -> int:
        """The request's prompt length; 0 for an id not in the table."""
        k = self.positions.get(rid)
        return 0 if k is None else int(_at(self.prompt_len, k) or 0)

    def output_len_of(self, rid: str) -> int | None:
        """The request's output length (its max_tokens); None where the table has none."""
        k = self.positions.get(rid)
        return None if k is None else _at(self.output_len, k)

    def arrival_s_of(self, rid: str) -> float | None:
        k = self.positions.get(rid)
        return None if k is None else _at(self.arrival_s, k)

    def __getstate__(self) -> dict[str, Any]:
        """Without the lookups: a worker process rebuilds them if it needs them."""
        return {**self.__dict__, "_index": None, "_prompt_lengths": None}


def _at(column: Column, k: int) -> Any:
    return None if column is None else column[k]


def request_table(rows: Sequence[Mapping[str, Any]]) -> RequestTable:
    """`rows` as a table, or itself when it is one already (shared, with its index)."""
    return rows if isinstance(rows, RequestTable) else RequestTable.from_rows(rows)
