"""The waiting queue: a list of requests that remembers its ids between changes, so a step
that admits nobody does not rebuild the id tuple a record carries."""

from __future__ import annotations

from typing import SupportsIndex

from servescope.core.request import Request


class WaitingQueue(list[Request]):
    _ids: tuple[str, ...] | None = None

    @property
    def ids(self) -> tuple[str, ...]:
        if self._ids is None:
            self._ids = tuple(r.id for r in self)
        return self._ids

    def append(self, request: Request) -> None:
        self._ids = None
        super().append(request)

    def insert(self, index: SupportsIndex, request: Request) -> None:
        self._ids = None
        super().insert(index, request)

    def pop(self, index: SupportsIndex = -1) -> Request:
        self._ids = None
        return super().pop(index)

    def remove(self, request: Request) -> None:
        self._ids = None
        super().remove(request)

    def __setitem__(self, *args: object) -> None:
        raise TypeError("WaitingQueue changes only through append, insert, pop and remove")

    def __delitem__(self, *args: object) -> None:
        raise TypeError("WaitingQueue changes only through append, insert, pop and remove")
