"""Replay of vLLM's iteration log (`--enable-logging-iteration-details`), one line per step:
"Iteration(N): A context requests, B context tokens, C generation requests, D generation tokens,
iteration elapsed time: T ms, <device> KV cache usage: U%". Other log lines are passed over.

The log has no request ids: each step's batch is shown as anonymous slots ("~ctx0", "~gen0", ...)
that are NOT the same request from one step to the next, context tokens are split evenly over
the context requests, the blocks in use are held by placeholders ("~kv0", ...; steps_pool), and
the block count and token budget are assumed (override them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from servescope.core.records import ScheduledColumns, StepRecord
from servescope.traces._io import open_text, text_lines
from servescope.traces._records import make_record
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport
from servescope.traces.steps_pool import Holders

MARKER = "Iteration("
_LINE = re.compile(
    r"Iteration\((?P<step>\d+)\):\s*(?P<ctx_reqs>\d+) context requests?,\s*"
    r"(?P<ctx_tokens>\d+) context tokens?,\s*(?P<gen_reqs>\d+) generation requests?,\s*"
    r"(?P<gen_tokens>\d+) generation tokens?,\s*iteration elapsed time:\s*"
    r"(?P<ms>\d+(?:\.\d*)?) ms(?:,\s*(?:\S+ )?KV cache usage:\s*(?P<usage>\d+(?:\.\d*)?)%)?")
ANONYMOUS_NOTE = ("vLLM's iteration log has no request ids: requests are anonymous batch slots "
                  "(~ctx, ~gen), not the same request from step to step")
UNKNOWN = ("request ids", "arrivals and finishes", "preemptions",
           "which request holds each KV block (blocks in use are drawn unattributed, ~kv)",
           "prefix-cache hits", "the number of KV blocks, token budget and max_num_seqs "
           "(assumed unless given)")


def read(path: Path, report: TraceReport, num_blocks: int = 10_000, token_budget: int = 8192,
         max_num_seqs: int = 1024) -> Iterator[StepRecord]:
    """`num_blocks` sets the KV pool the usage percentage is drawn on (vLLM does not log it;
    take `num_gpu_blocks` from vLLM's startup log for real counts)."""
    report.meta.update(anonymous_ids=True, num_blocks=num_blocks, token_budget=token_budget,
                       unknown=list(UNKNOWN))
    report.note(ANONYMOUS_NOTE)
    time_s = 0.0
    holders, num_used = Holders("~kv"), 0
    with open_text(path) as handle:
        for number, line in text_lines(handle):
            if MARKER not in line or "context requests" not in line:
                continue
            match = _LINE.search(line)
            if match is None:
                raise TraceFormatError(number, "", "an Iteration(N) line that does not read "
                                       "'A context requests, B context tokens, C generation "
                                       "requests, D generation tokens, iteration elapsed time: "
                                       "T ms'")
            if match["usage"] is None:
                report.note("some lines carry no KV cache usage: shown as 0%")
            record = _record(match, report.num_rows, time_s, num_blocks, token_budget,
                             max_num_seqs, number, holders, num_used)
            num_used = num_blocks - record.num_free_blocks
            time_s += record.step_time_ms / 1000.0
            report.num_rows += 1
            report.num_yielded += 1
            yield record
    if report.num_rows == 0:
        raise TraceFormatError(0, "", "no 'Iteration(N): ...' lines: was vLLM started with "
                               "--enable-logging-iteration-details?")


def _record(match: re.Match[str], index: int, time_s: float, num_blocks: int,
            token_budget: int, max_num_seqs: int, line: int, holders: Holders,
            num_used: int) -> StepRecord:
    ctx_reqs, ctx_tokens = int(match["ctx_reqs"]), int(match["ctx_tokens"])
    gen_reqs, gen_tokens = int(match["gen_reqs"]), int(match["gen_tokens"])
    if ctx_tokens < ctx_reqs or (ctx_reqs == 0 and ctx_tokens):
        raise TraceFormatError(line, "context tokens",
                               f"{ctx_tokens} tokens for {ctx_reqs} context requests")
    if gen_tokens < gen_reqs or (gen_reqs == 0 and gen_tokens):
        raise TraceFormatError(line, "generation tokens",
                               f"{gen_tokens} tokens for {gen_reqs} generation requests")
    usage = float(match["usage"]) if match["usage"] is not None else 0.0
    if usage > 100.0:
        raise TraceFormatError(line, "KV cache usage", f"{usage}% is over 100%")
    ids = _slot_ids("~ctx", ctx_reqs) + _slot_ids("~gen", gen_reqs)
    is_ctx = np.arange(len(ids)) < ctx_reqs
    scheduled = ScheduledColumns(  # built as columns: a batch of hundreds costs no more
        ids, np.concatenate([_split(ctx_tokens, ctx_reqs), _split(gen_tokens, gen_reqs)]),
        np.zeros(len(ids), np.int64), ~is_ctx, is_ctx)
    num_free = round(num_blocks * (1.0 - usage / 100.0))
    used = num_blocks - num_free  # slots 1..used are in use (0 is vLLM's null block)
    new_blocks, released = holders.update(range(num_used + 1, used + 1),
                                          range(used + 1, num_used + 1))
    return make_record(
        step=int(match["step"]), iter=index, time_s=time_s, step_time_ms=float(match["ms"]),
        scheduled=scheduled, num_free_blocks=num_free, num_usable_blocks=num_blocks,
        token_budget=token_budget, max_num_seqs=max_num_seqs, new_blocks=new_blocks,
        released=released, freed_blocks=tuple(range(used + 1, num_used + 1)))


def _split(tokens: int, parts: int) -> np.ndarray:
    """`tokens` over `parts` as evenly as the log allows (the first ones get the remainder)."""
    if parts == 0:
        return np.zeros(0, np.int64)
    base, extra = divmod(tokens, parts)
    return base + (np.arange(parts) < extra).astype(np.int64)


_SLOT_IDS: dict[str, list[str]] = {"~ctx": [], "~gen": []}


def _slot_ids(prefix: str, count: int) -> list[str]:
    known = _SLOT_IDS[prefix]
    known.extend(f"{prefix}{k}" for k in range(len(known), count))
    return known[:count]
