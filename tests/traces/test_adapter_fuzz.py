"""Every adapter, fed junk or near-valid input, either yields records or raises TraceFormatError
(never another exception, never a partial result passed off as whole)."""

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servescope.traces import registry
from servescope.traces.errors import TraceFormatError
from servescope.traces.report import TraceReport

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
HEADERS = {
    "azure": "TIMESTAMP,ContextTokens,GeneratedTokens",
    "burstgpt": "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type",
    "splitwise": "request_id,request_type,application_id,arrival_timestamp,batch_size,"
                 "prompt_size,token_size",
    "sharegpt-stats": "num_prefill_tokens,num_decode_tokens,num_total_tokens,pd_ratio",
}
cell = st.one_of(st.integers(-5, 10**6).map(str), st.floats(allow_nan=True).map(str),
                 st.sampled_from(["", "x", "2023-11-16 18:17:03.9799600", "1e3", '"a,b"',
                                  "2024-05-10 00:00:01+00:00"]),
                 st.text(max_size=8))
json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10, 10**20), st.floats(), st.text(max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionary(st.text(max_size=5), inner, max_size=4)
                            if hasattr(st, "dictionary") else st.dictionaries(
                                st.text(max_size=5), inner, max_size=4)),
    max_leaves=12)


def run(fmt: str, data: bytes, **params) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace"
        path.write_bytes(data)
        try:
            for _ in registry.load(path, TraceReport(fmt, ""), **params):
                pass
        except TraceFormatError:
            pass
        try:
            registry.detect(path)
        except TraceFormatError:
            pass


@pytest.mark.parametrize("fmt", sorted(HEADERS))
@FUZZ
@given(rows=st.lists(st.lists(cell, min_size=0, max_size=8), max_size=6))
def test_csv_adapters(fmt, rows):
    body = "\n".join(",".join(r) for r in rows)
    run(fmt, (HEADERS[fmt] + "\n" + body + "\n").encode(), **(
        {"num_requests": 3} if fmt == "sharegpt-stats" else {}))


MOONCAKE_KEYS = st.fixed_dictionaries({}, optional={
    "timestamp": json_value | st.integers(0, 10**7), "input_length": json_value |
    st.integers(0, 10**5), "output_length": json_value | st.integers(0, 10**4),
    "hash_ids": st.lists(st.integers(0, 100) | json_value, max_size=5)})


@FUZZ
@given(lines=st.lists(MOONCAKE_KEYS, max_size=5), junk=st.text(max_size=20))
def test_mooncake(lines, junk):
    run("mooncake", ("\n".join(json.dumps(x) for x in lines) + "\n" + junk).encode())


BENCH = st.fixed_dictionaries({}, optional={
    k: st.lists(st.integers(-2, 500) | st.floats() | json_value, max_size=4) | json_value
    for k in ("input_lens", "output_lens", "start_times", "ttfts", "itls", "errors", "latencies")
} | {"request_goodput:": json_value})


@FUZZ
@given(runs=st.lists(BENCH, min_size=1, max_size=3), indent=st.booleans())
def test_vllm_bench(runs, indent):
    text = json.dumps(runs[0], indent=1) if indent else "\n".join(json.dumps(r) for r in runs)
    run("vllm-bench", text.encode())


WORKLOAD_ROW = st.fixed_dictionaries({}, optional={
    "id": st.text(max_size=3) | json_value, "arrival_step": st.integers(-1, 9) | json_value,
    "arrival_s": st.floats() | json_value, "prompt_len": st.integers(-1, 99) | json_value,
    "output_len": st.integers(-1, 99) | json_value, "priority": json_value,
    "shared_prefix": st.fixed_dictionaries({}, optional={"id": json_value,
                                                          "len": st.integers(-1, 99)})})


@FUZZ
@given(rows=st.lists(WORKLOAD_ROW | json_value, max_size=5), cut=st.integers(0, 400))
def test_workload_json(rows, cut):
    text = json.dumps(rows, indent=1)
    run("workload-json", text[:cut].encode() if cut < len(text) else text.encode())


@FUZZ
@given(records=st.lists(st.dictionaries(st.sampled_from(
    ["step", "iter", "time_s", "step_time_ms", "scheduled", "running", "waiting", "new_blocks",
     "num_free_blocks", "num_usable_blocks", "token_budget", "max_num_seqs", "kv_events",
     "finished", "num_cached_tokens"]), json_value), max_size=4))
def test_servescope_steps(records):
    head = json.dumps({"format": "servescope-steps", "version": 1})
    run("servescope-steps", "\n".join([head, *map(json.dumps, records)]).encode())


@FUZZ
@given(lines=st.lists(st.one_of(
    st.text(max_size=40),
    st.builds("Iteration({}): {} context requests, {} context tokens, {} generation requests, "
              "{} generation tokens, iteration elapsed time: {} ms, GPU KV cache usage: {}%".format,
              *[st.integers(0, 10**4)] * 5, st.floats(0, 1e4).map("{:.2f}".format),
              st.floats(0, 200).map("{:.1f}".format))), max_size=6))
def test_iteration_log(lines):
    run("vllm-iteration-log", "\n".join(lines).encode())


@FUZZ
@given(data=st.binary(max_size=200))
def test_any_bytes_in_any_format(data):
    for fmt in registry.FORMATS:
        run(fmt, data, **({"num_blocks": 4} if fmt in ("vllm-kv-events", "vllm-iteration-log")
                          else {}))


@FUZZ
@given(batches=st.lists(st.one_of(
    st.tuples(st.floats(0, 1e6), st.lists(st.one_of(
        st.tuples(st.just("BlockStored"), st.lists(st.integers(0, 2**64 - 1), max_size=4),
                  st.none(), st.lists(st.integers(0, 9), max_size=3), st.integers(1, 64)),
        st.tuples(st.just("BlockRemoved"), st.lists(st.integers(0, 9), max_size=3)),
        st.just(("AllBlocksCleared",)), json_value), max_size=4)).map(list),
    json_value), max_size=5))
def test_kv_events(batches):
    msgpack = pytest.importorskip("msgpack")
    data = b"".join(msgpack.packb(b, default=str) for b in batches)
    run("vllm-kv-events", data)
