"""A small bounded cache of loaded traces, shared by threads."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class Recent:
    """The last `size` values put, by key, for any thread, and no more than `max_weight` in
    all but the last one put. A blob never changes, so what a trace loads as can be kept: a
    session on a trace just uploaded, or configured again, need not read its file again."""

    def __init__(self, size: int, max_weight: int | None = None) -> None:
        self.size = size
        self.max_weight = max_weight
        self._items: OrderedDict[str, Any] = OrderedDict()
        self._weights: dict[str, int] = {}
        self._lock = threading.Lock()

    def get(self, key: str) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: str, value: Any, weight: int = 1) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            self._weights[key] = weight
            while len(self._items) > self.size or (
                    len(self._items) > 1 and self.max_weight is not None
                    and sum(self._weights.values()) > self.max_weight):
                del self._weights[self._items.popitem(last=False)[0]]
