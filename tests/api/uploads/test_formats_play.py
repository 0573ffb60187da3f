"""Every format the trace registry knows, end to end on a real server: a small file in that
format uploads over REST, a session runs it over a real WebSocket, plays to the end, and what
the client decodes is what the file says (requests, arrivals, records, measurements, cache)."""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from support.format_samples import BENCH, SAMPLES, Sample
from support.live import Client
from support.paths import shared_path
from support.server import ORIGIN, UPLOAD_TOKEN, UPLOADS, Server, make_settings, receive_until

from servescope.api.app import create_app
from servescope.api.uploads.receive import parse_upload
from servescope.traces import registry
from servescope.traces.upload_options import UploadOptions

FOLD = Path(__file__).resolve().parents[2] / "frontend" / "fold_records.mjs"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    # a viewer is never skipped ahead by a keyframe: the test sees every record
    s = Server(tmp_path_factory.mktemp("formats") / "data",
               SERVESCOPE_CATCH_UP_RECORDS="1000000")
    yield s
    s.stop()


def upload(server: Server, filename: str, body: bytes) -> dict:
    r = httpx.post(server.url + "/api/traces", files={"file": (filename, body)}, timeout=60,
                   headers=UPLOADS)
    assert r.status_code == 201, r.text
    return r.json()


async def run_session(server: Server, trace_id: str, seek_iter: int | None = None,
                      speed: float = 1000.0) -> tuple[Client, dict, set[int] | None]:
    """Configure a new session on the trace, play it to the end; (client, done, the cached
    blocks the client knows after a seek back to `seek_iter`: a keyframe and the records
    after it)."""
    async with Client(f"{server.ws_url}/ws/sessions/new") as c:
        await c.send(type="configure", workload={"trace": trace_id, "upload_token": UPLOAD_TOKEN})
        await c.until(lambda m: m["type"] == "status")
        await c.send(type="play", speed=speed)
        done = await c.until(lambda m: m["type"] == "done", timeout=60)
        await c.until(lambda m: m["type"] == "status" and m["done"] and not m["playing"])
        played = c.records[0][:]  # what playing showed, before a seek sends some again
        cached = None
        if seek_iter is not None:
            await c.send(type="seek", iter=seek_iter)
            await c.until(lambda m: m["type"] == "status" and m["iters"] == [seek_iter])
            assert "keyframe" in c.kinds[-4:]
            cached = set(c.states[0].cached)
        c.records[0] = played
        return c, done, cached


def test_every_registry_format_has_a_sample():
    assert set(SAMPLES) == set(registry.FORMATS)


@pytest.mark.parametrize("fmt", sorted(registry.FORMATS))
def test_format_uploads_and_plays_to_the_end(live, tmp_path, fmt):
    sample = SAMPLES[fmt](tmp_path)
    data = upload(live, sample.filename, sample.body)
    assert data["format"] == fmt
    assert data["num_requests"] == sample.num_requests
    assert data["summary"]["num_records"] == len(sample.steps)
    seek = 1 if fmt == "vllm-kv-events" else None
    client, done, cached = asyncio.run(run_session(live, data["trace_id"], seek))
    init = client.init
    trace = init["trace"]
    assert (trace["format"], trace["filename"], trace["trace_id"]) == (
        fmt, sample.filename, data["trace_id"])
    assert init["num_requests"] == len(client.requests) == sample.num_requests
    records = client.records[0]
    assert "step" in client.kinds and len(records) == done["num_records"] > 0
    if registry.FORMATS[fmt].kind == "steps":
        assert init["source"] == "replayed"
        check_replay(sample, init, records)
    else:
        assert init["source"] == "simulated"
        check_simulated(sample, client.requests, records, done)
    CHECKS.get(fmt, lambda *_: None)(sample, data, client, done, cached)


def check_simulated(sample: Sample, requests: list[dict], records: list[dict],
                    done: dict) -> None:
    if sample.ids:
        assert [r["id"] for r in requests] == sample.ids
        assert [r["arrival_s"] for r in requests] == pytest.approx(sample.arrivals)
        assert [r["prompt_len"] for r in requests] == sample.prompt_lens
    ids = {r["id"] for r in requests}
    assert {i for r in records for i in r["arrivals"]} == ids
    assert {i for r in records for i in r["finished"]} == ids  # every request ran to its end
    assert done["summary"]["completed"] == len(ids)


def check_replay(sample: Sample, init: dict, records: list[dict]) -> None:
    """The records the client decodes are the uploaded steps, and the page's reducer holds
    the blocks they say are in use."""
    assert len(records) == len(sample.steps)
    assert [r["time_s"] for r in records] == pytest.approx([s["time_s"] for s in sample.steps])
    for key in ("step", "step_time_ms", "num_free_blocks"):
        if key in sample.steps[0]:
            assert [r[key] for r in records] == [s[key] for s in sample.steps], key
    if shutil.which("node") is None:
        return
    stream = "\n".join(json.dumps(x) for x in [init, *records])
    out = subprocess.run(["node", str(FOLD)], input=stream, capture_output=True, text=True,
                         check=True, timeout=60)
    assert json.loads(out.stdout) == [r["num_usable_blocks"] - r["num_free_blocks"]
                                      for r in records]


def check_steps_recording(sample, data, client, done, cached_after_seek):
    assert client.records[0] == sample.steps  # field for field
    assert client.init["trace"]["source"] == "simulated"
    assert client.init["trace"]["unknown"] == []


def check_iteration_log(sample, data, client, done, cached_after_seek):
    records = client.records[0]
    for rec, step in zip(records, sample.steps, strict=True):
        assert sum(e["n"] for e in rec["scheduled"]) == step["num_scheduled_tokens"]
        assert len(rec["scheduled"]) == step["num_seqs"]
        assert all(e["id"].startswith(("~ctx", "~gen")) for e in rec["scheduled"])
        assert rec["arrivals"] == rec["finished"] == rec["preempted"] == []
    trace = client.init["trace"]
    assert client.init["num_requests"] == 0 and client.requests == []
    assert any("request ids" in what for what in trace["unknown"])
    assert any("no request ids" in note for note in trace["notes"])
    # the pool the usage is drawn on, and the assumed limits, are the adapter's documented ones
    assert client.init["num_gpu_blocks"] == 10001
    assert client.init["config"]["max_num_batched_tokens"] == 8192


def check_kv_events(sample, data, client, done, cached_after_seek):
    cached: set[int] = set()
    for rec, step in zip(client.records[0], sample.steps, strict=True):
        for ev in rec["kv_events"]:
            (cached.update if ev["type"] == "BlockStored" else cached.difference_update)(
                ev["block_ids"])
        assert cached == step["cached"], rec["iter"]
        assert rec["scheduled"] == []
    assert cached_after_seek == sample.steps[1]["cached"]  # after a seek back to record 1
    assert client.init["block_size"] == 16  # from the BlockStored events
    assert any("scheduled" in what for what in client.init["trace"]["unknown"])


def check_bench(sample, data, client, done, cached_after_seek):
    measured = client.init["trace"]["measured"]
    assert measured == data["summary"]["measured"]
    assert measured["mean_ttft_ms"] == BENCH["mean_ttft_ms"]  # the file's own figure wins
    assert measured["completed"] == 2 and measured["request_goodput"] == 1.2
    itl_ms = [x * 1000 for row in BENCH["itls"][:2] for x in row]  # the failed one is skipped
    assert measured["p99_itl_ms"] == pytest.approx(np.percentile(itl_ms, 99))
    assert measured["median_e2el_ms"] == pytest.approx(70.0)
    simulated = done["summary"]
    assert simulated["mean_ttft_ms"] > 0 and simulated["mean_ttft_ms"] != measured["mean_ttft_ms"]


def check_mooncake(sample, data, client, done, cached_after_seek):
    # mc1 shares hash block 0 (512 tokens) with mc0, which finished before it arrived
    hits = {k: v for r in client.records[0] for k, v in r["num_cached_tokens"].items()}
    assert hits.get("mc1") == 512 and not hits.get("mc2")


def check_sharegpt(sample, data, client, done, cached_after_seek):
    requests = client.requests
    assert {r["prompt_len"] for r in requests} == {40, 24}  # the row with 0 is never drawn
    assert {r["arrival_s"] for r in requests} == {0.0}


CHECKS = {"servescope-steps": check_steps_recording, "vllm-iteration-log": check_iteration_log,
          "vllm-kv-events": check_kv_events, "vllm-bench": check_bench,
          "mooncake": check_mooncake, "sharegpt-stats": check_sharegpt}


def _csv_count(path: Path, prompt: str, output: str) -> int:
    with path.open(newline="") as handle:
        return sum(int(float(r[prompt])) > 0 and int(float(r[output])) > 0
                   for r in csv.DictReader(handle))


def _jsonl_count(path: Path) -> int:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return sum(r["input_length"] > 0 and r["output_length"] > 0 for r in rows)


REAL = [  # (file under ../shared/traces, format, how many requests it holds)
    ("AzureLLMInferenceTrace_code.csv", "azure",
     lambda p: _csv_count(p, "ContextTokens", "GeneratedTokens")),
    ("BurstGPT_1.head105.csv", "burstgpt",
     lambda p: _csv_count(p, "Request tokens", "Response tokens")),
    ("BurstGPT_3.head58.csv", "burstgpt",
     lambda p: _csv_count(p, "Request tokens", "Response tokens")),
    ("conversation_trace.jsonl", "mooncake", _jsonl_count),
    ("test_trace.csv", "splitwise", lambda p: _csv_count(p, "prompt_size", "token_size")),
    ("sharegpt_8k_filtered_stats_llama2_tokenizer.csv", "sharegpt-stats", lambda p: 1000),
]


@pytest.mark.parametrize("name, fmt, count", REAL, ids=[r[0] for r in REAL])
def test_real_public_traces_upload_and_play(live, name, fmt, count):
    path = shared_path("traces", name)
    data = upload(live, name, path.read_bytes())
    assert (data["format"], data["num_requests"]) == (fmt, count(path))

    async def main():
        async with Client(f"{live.ws_url}/ws/sessions/new", max_size=None) as c:
            await c.send(type="configure", workload={"trace": data["trace_id"],
                                                     "upload_token": UPLOAD_TOKEN})
            await c.until(lambda m: m["type"] == "status")
            assert c.init["trace"]["filename"] == name
            assert c.init["num_requests"] == len(c.requests) == count(path)
            await c.send(type="play", speed=50.0)
            await c.until(lambda m: m["type"] == "step" and len(c.records[0]) >= 5, timeout=30)
            await c.send(type="pause")
            assert all(r["arrivals"] or r["scheduled"] for r in c.records[0])

    asyncio.run(main())


def test_a_missing_reader_dependency_is_a_501_naming_it(tmp_path, clock, monkeypatch):
    sample = SAMPLES["vllm-kv-events"](tmp_path)
    app = create_app(make_settings(tmp_path), clock=clock)
    with TestClient(app, headers={**ORIGIN, **UPLOADS}) as client:
        stored = client.post("/api/traces", files={"file": (sample.filename, sample.body)})
        assert stored.status_code == 201
        monkeypatch.setitem(sys.modules, "msgpack", None)  # as on a server without msgpack
        # the route parses in a job worker, a process this patch does not reach: its parse
        # is asked directly, as the worker would run it
        path = tmp_path / sample.filename
        path.write_bytes(sample.body)
        outcome, (status, detail) = parse_upload(path, UploadOptions(), 1000, sample.filename)
        assert outcome == "error" and status == 501
        assert "pip install msgpack" in detail["message"]
        assert sample.filename in detail["message"]
        assert len(client.get("/api/traces").json()) == 1
        # a stored capture the server can no longer read: the configure says why, as an error
        with client.websocket_connect("/ws/sessions/new") as ws:
            ws.send_text(json.dumps({"type": "configure", "v": 1,
                                     "workload": {"trace": stored.json()["trace_id"],
                                                  "upload_token": UPLOAD_TOKEN}}))
            err = receive_until(ws, "error")[-1]
            assert err["code"] == "workload" and "pip install msgpack" in err["message"]


def test_a_replay_refuses_a_config_it_was_not_recorded_with(live, tmp_path):
    sample = SAMPLES["servescope-steps"](tmp_path)
    trace_id = upload(live, sample.filename, sample.body)["trace_id"]

    async def main():
        async with Client(f"{live.ws_url}/ws/sessions/new") as c:
            await c.send(type="configure", config={"max_num_seqs": 3},
                         workload={"trace": trace_id, "upload_token": UPLOAD_TOKEN})
            err = await c.until(lambda m: m["type"] == "error")
            assert err["field"] == "config" and "max_num_seqs" in err["message"]
            await c.send(type="configure", config={"block_size": 4},
                         workload={"trace": trace_id, "upload_token": UPLOAD_TOKEN})
            assert (await c.until(lambda m: m["type"] == "init"))["source"] == "replayed"

    asyncio.run(main())
