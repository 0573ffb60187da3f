"""A job's worker process gets a long list argument in pieces after it starts (so that no single
pickling holds the server's GIL for long): whole and in order; and a worker that runs out of
its memory budget while the pieces come is reported as such, without the sender hanging."""

from __future__ import annotations

import operator

import pytest

from servescope.api.errors import WorkerError
from servescope.api.jobs.workers import PIECE, Worker


def in_worker(fn, args, budget: int = 0):
    worker = Worker(fn, args, budget, False)
    try:
        return worker._recv(60)[1]
    finally:
        worker.stop()


def test_a_long_list_argument_arrives_whole_and_in_order_beside_short_ones() -> None:
    rows = [{"id": f"r{k}", "n": k} for k in range(2 * PIECE + 5)]
    assert in_worker(list, (rows,)) == rows
    assert in_worker(divmod, (len(rows), PIECE)) == (2, 5)  # short arguments go as they are
    long = list(range(PIECE + 1))
    assert in_worker(operator.concat, ([-2, -1], long)) == [-2, -1, *long]
    assert in_worker(operator.concat, (long, rows)) == long + rows


def test_a_worker_over_its_budget_while_the_pieces_come_is_a_memory_error() -> None:
    rows = ["x" * 64 + str(k) for k in range(40 * PIECE)]  # about 20 MiB of strings
    with pytest.raises(WorkerError) as err:
        in_worker(len, (rows,), budget=2 * 1024 * 1024)
    assert err.value.kind == "memory"
    assert in_worker(len, (rows,)) == len(rows)
