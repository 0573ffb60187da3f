"""Trace loading at scale: for each format, a generated file of `--rows` rows read through the
registry (detection, parsing, validation) against a baseline in the same run, reading the same
file's lines and splitting them with no validation. Prints rows/s, the ratio to the baseline,
and the adapter's peak Python memory (tracemalloc), which must stay flat as files grow.
Usage: python bench/trace_load.py [--rows N] [--formats a,b] [--keep DIR]"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import msgpack

from servescope.traces import registry


def azure(n: int) -> Iterator[str]:
    yield "TIMESTAMP,ContextTokens,GeneratedTokens\n"
    for i in range(n):
        seconds = 3 + i * 0.0125
        stamp = f"2023-11-16 18:{int(seconds // 60) % 60:02d}:{seconds % 60:010.7f}"
        yield f"{stamp},{100 + i % 900},{1 + i % 300}\n"


def burstgpt(n: int) -> Iterator[str]:
    yield "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
    for i in range(n):
        prompt, output = 50 + i % 700, 1 + i % 200
        yield f"{i * 0.02:.2f},ChatGPT,{prompt},{output},{prompt + output},Conversation log\n"


def mooncake(n: int) -> Iterator[str]:
    for i in range(n):
        yield json.dumps({"timestamp": i * 20, "input_length": 600 + i % 4000,
                          "output_length": 1 + i % 400, "hash_ids": [0, 1, i % 97, i]}) + "\n"


def splitwise(n: int) -> Iterator[str]:
    yield "arrived_at,num_prefill_tokens,num_decode_tokens\n"
    for i in range(n):
        yield f"{i * 0.01:.3f},{64 + i % 2000},{1 + i % 300}\n"


def iteration_log(n: int) -> Iterator[str]:
    """KV usage drifts as in a real log (a few blocks a step), between 20% and 80%."""
    for i in range(n):
        usage = 50 + 30 * math.sin(i / 2000)
        yield (f"INFO 12-02 10:00:00 [metrics.py:1] Iteration({i}): {i % 3} context requests, "
               f"{(i % 3) * 512} context tokens, {20 + i % 40} generation requests, "
               f"{20 + i % 40} generation tokens, iteration elapsed time: {8 + i % 5}.25 ms, "
               f"GPU KV cache usage: {usage:.1f}%\n")


def kv_events(n: int) -> Iterator[bytes]:
    """Two blocks stored a batch; from batch 50 on, one evicted: the cache grows to n + 50."""
    for i in range(n):
        events = [{"type": "BlockStored", "block_hashes": [2 * i, 2 * i + 1],
                   "parent_block_hash": None, "token_ids": list(range(32)), "block_size": 16}]
        if i >= 50:
            events.append({"type": "BlockRemoved", "block_hashes": [2 * (i - 50)]})
        yield msgpack.packb([float(i), events, 0])


Maker = Callable[[int], Iterator[str]] | Callable[[int], Iterator[bytes]]
FORMATS: dict[str, tuple[str, Maker]] = {
    "azure": ("azure.csv", azure), "burstgpt": ("BurstGPT_1.csv", burstgpt),
    "mooncake": ("trace.jsonl", mooncake), "splitwise": ("split.csv", splitwise),
    "vllm-iteration-log": ("vllm.log", iteration_log), "vllm-kv-events": ("kv.msgpack", kv_events),
}


def write(directory: Path, fmt: str, rows: int) -> Path:
    name, make = FORMATS[fmt]
    path = directory / name
    binary = fmt == "vllm-kv-events"
    with path.open("wb" if binary else "w") as out:
        for chunk in make(rows):
            out.write(chunk)  # type: ignore[arg-type]
    return path


def baseline(path: Path) -> float:
    """Seconds to read the file's lines and split each on commas: no parsing, no validation."""
    start = time.perf_counter()
    with path.open("rb") as handle:
        for line in handle:
            line.split(b",")
    return time.perf_counter() - start


def load(path: Path, fmt: str) -> tuple[int, float, float]:
    """(items, seconds, peak MiB) for reading the file through the registry; the time from a
    plain pass, the memory from a second one under tracemalloc (which slows allocation)."""
    start = time.perf_counter()
    count = consume(path, fmt)
    seconds = time.perf_counter() - start
    tracemalloc.start()
    consume(path, fmt)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return count, seconds, peak


def consume(path: Path, fmt: str) -> int:
    report, stream = registry.open_trace(path)
    assert report.format == fmt, (report.format, fmt)
    return sum(1 for _ in stream)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.keep or Path(tmp)
        directory.mkdir(parents=True, exist_ok=True)
        print(f"{'format':20} {'rows':>9} {'MB':>7} {'seconds':>8} {'rows/s':>9} "
              f"{'x baseline':>10} {'peak MiB':>9}")
        for fmt in args.formats.split(","):
            path = write(directory, fmt, args.rows)
            count, seconds, peak = load(path, fmt)
            base = baseline(path)
            print(f"{fmt:20} {count:9d} {path.stat().st_size / 1e6:7.1f} {seconds:8.2f} "
                  f"{count / seconds:9.0f} {seconds / base:10.1f} {peak:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
