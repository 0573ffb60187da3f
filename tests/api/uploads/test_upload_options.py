"""Upload options (multipart fields beside `file`): each one changes what a session loads, is
stored with the trace and reported by GET /api/traces/{id}; each bad value is a 4xx naming its
field with nothing stored; a trace over the session limit is refused with a window that fits;
requests the KV cache cannot hold are counted in init.trace's notes."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from support.server import (
    ORIGIN,
    UPLOAD_TOKEN,
    make_settings,
    receive,
    receive_until,
    request_list,
)

from servescope.api.app import create_app
from servescope.traces import registry
from servescope.traces.upload_options import OptionError, UploadOptions


def mooncake(n: int, prompt_len=lambda i: 100 + i, gap_ms: int = 1000) -> bytes:
    """`n` Mooncake rows, one every `gap_ms`: request mc<i> arrives at i * gap_ms / 1000 s."""
    rows = [{"timestamp": i * gap_ms, "input_length": prompt_len(i), "output_length": 4,
             "hash_ids": [i]} for i in range(n)]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


VIDUR = b"arrived_at,num_prefill_tokens,num_decode_tokens\n2.0,256,8\n2.5,128,4\n"
ITERATION_LOG = (b"Iteration(1): 1 context requests, 64 context tokens, 0 generation requests, "
                 b"0 generation tokens, iteration elapsed time: 5.0 ms, GPU KV cache usage: 1.0%\n")


def upload(client, body: bytes, name: str = "trace.jsonl", **fields):
    return client.post("/api/traces", files={"file": (name, body)},
                       data={k: str(v) for k, v in fields.items()})


def session_init(client, trace_id: str, config: dict | None = None) -> dict:
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config or {},
                                 "workload": {"trace": trace_id, "upload_token": UPLOAD_TOKEN}}))
        return receive(ws)


def run_to_end(client, trace_id: str, config: dict | None = None) -> tuple[dict, dict]:
    """(init, done summary) of a fresh session on the trace, sought to its end."""
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": config or {},
                                 "workload": {"trace": trace_id, "upload_token": UPLOAD_TOKEN}}))
        init = receive(ws)
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 100000}))
        done = [m for m in receive_until(ws, "status", 2000) if m["type"] == "done"]
        assert done
        return init, done[0]["summary"]


def listed(client, init: dict) -> list[dict]:
    """The session's request list, read in pages as the page reads it."""
    return request_list(lambda p: client.get(p).json(), init["session_id"])


def ids_and_arrivals(client, init: dict) -> list[tuple[str, float]]:
    return [(r["id"], round(r["arrival_s"], 6)) for r in listed(client, init)]


def test_a_window_keeps_its_requests_rebased_and_is_stored_and_said(client):
    r = upload(client, mooncake(10), window_start_s=2, window_end_s=5)
    assert r.status_code == 201, r.text
    data = r.json()
    assert data["num_requests"] == 4
    assert data["options"]["window_start_s"] == 2 and data["options"]["window_end_s"] == 5
    stored = client.get(f"/api/traces/{data['trace_id']}").json()
    assert stored["options"] == data["options"]
    init = session_init(client, data["trace_id"])
    assert ids_and_arrivals(client, init) == [
        ("mc2", 0.0), ("mc3", 1.0), ("mc4", 2.0), ("mc5", 3.0)]
    assert any("window 2-5 s" in n and "4 requests loaded" in n for n in init["trace"]["notes"])


def test_an_open_ended_window(client):
    data = upload(client, mooncake(10), window_start_s="7.5", window_end_s="").json()
    assert [i for i, _ in ids_and_arrivals(client, session_init(client, data["trace_id"]))] == \
        ["mc8", "mc9"]
    assert data["options"]["window_end_s"] is None  # a blank field is absent


def test_the_first_n_and_a_seeded_uniform_sample(client):
    first = upload(client, mooncake(30), limit=3).json()
    assert [i for i, _ in ids_and_arrivals(client, session_init(client, first["trace_id"]))] == \
        ["mc0", "mc1", "mc2"]
    picks = []
    for _ in range(2):
        data = upload(client, mooncake(30), sample_n=6, seed=11).json()
        init = session_init(client, data["trace_id"])
        picks.append([int(i[2:]) for i, _ in ids_and_arrivals(client, init)])
        assert any("a uniform sample of 6 of the 30 requests in the trace (seed 11)" in n
                   for n in init["trace"]["notes"])
    assert picks[0] == picks[1]  # the seed makes it reproducible
    assert len(set(picks[0])) == 6 and picks[0] == sorted(picks[0])  # distinct, in file order
    assert picks[0] != list(range(6))  # not the first six


def test_arrival_and_length_scaling(client):
    data = upload(client, mooncake(3, prompt_len=lambda i: 100 * (i + 1)), arrival_scale=2,
                  length_scale=0.5).json()
    init = session_init(client, data["trace_id"])
    assert ids_and_arrivals(client, init) == [("mc0", 0.0), ("mc1", 2.0), ("mc2", 4.0)]
    assert [r["prompt_len"] for r in listed(client, init)] == [50, 100, 150]
    assert [r["output_len"] for r in listed(client, init)] == [2, 2, 2]


def test_a_format_override_and_sharegpt_draws_and_rate(client):
    detected = upload(client, VIDUR, "vidur.csv").json()
    assert detected["format"] == "splitwise" and detected["num_requests"] == 2
    data = upload(client, VIDUR, "vidur.csv", format="sharegpt-stats", sample_n=7, seed=1,
                  rate_per_s=4).json()
    assert data["format"] == "sharegpt-stats" and data["num_requests"] == 7
    init = session_init(client, data["trace_id"])
    arrivals = [a for _, a in ids_and_arrivals(client, init)]
    assert arrivals[0] == 0 and all(b > a for a, b in zip(arrivals, arrivals[1:], strict=False))
    assert {r["prompt_len"] for r in listed(client, init)} <= {256, 128}
    assert any("Poisson arrivals at 4/s" in n for n in init["trace"]["notes"])


def refused(client, tmp_path, r, field: str, status: int = 400) -> str:
    """The answer names `field`, and nothing is stored or left in flight."""
    assert r.status_code == status, r.text
    detail = r.json()["detail"]
    assert detail["field"] == field, detail
    assert client.get("/api/traces").json() == []
    data = tmp_path / "data"
    assert list((data / "blobs").iterdir()) == [] and list((data / "tmp").iterdir()) == []
    return detail["message"]


@pytest.mark.parametrize(("fields", "field"), [
    ({"format": "excel"}, "format"),
    ({"window_start_s": "-1"}, "window_start_s"),
    ({"window_start_s": "soon"}, "window_start_s"),
    ({"window_end_s": "nan"}, "window_end_s"),
    ({"window_end_s": "inf"}, "window_end_s"),
    ({"window_start_s": "5", "window_end_s": "2"}, "window_end_s"),
    ({"limit": "0"}, "limit"),
    ({"limit": "2.5"}, "limit"),
    ({"sample_n": "-3"}, "sample_n"),
    ({"sample_n": "1000001"}, "sample_n"),  # over max_requests_per_session
    ({"sample_n": "5", "limit": "5"}, "limit"),
    ({"seed": "-1"}, "seed"),
    ({"seed": "x"}, "seed"),
    ({"arrival_scale": "0"}, "arrival_scale"),
    ({"arrival_scale": "-2"}, "arrival_scale"),
    ({"length_scale": "1e9"}, "length_scale"),
    ({"rate_per_s": "5"}, "rate_per_s"),  # a Mooncake trace has its own arrivals
    ({"windw_start_s": "1"}, "windw_start_s"),  # a typo is not silently ignored
    ({"sample_n": "9" * 200}, "sample_n"),
])
def test_bad_values_are_refused_naming_the_field(client, tmp_path, fields, field):
    message = refused(client, tmp_path, upload(client, mooncake(5), **fields), field)
    assert field in message


def test_options_that_do_not_apply_to_a_recorded_run(client, tmp_path):
    message = refused(client, tmp_path, upload(client, ITERATION_LOG, "vllm.log", sample_n=5),
                      "sample_n")
    assert "request traces" in message
    r = upload(client, ITERATION_LOG, "vllm.log", format="vllm-iteration-log")
    assert r.status_code == 201 and r.json()["format"] == "vllm-iteration-log"


def test_a_format_override_that_does_not_fit_the_file(client, tmp_path):
    r = upload(client, mooncake(3), format="azure")
    assert r.status_code == 400 and client.get("/api/traces").json() == []


def test_a_field_given_twice_is_refused(client, tmp_path):
    r = client.post("/api/traces", files=[("file", ("t.jsonl", mooncake(3))),
                                          ("limit", (None, "1")), ("limit", (None, "2"))])
    refused(client, tmp_path, r, "limit")


def test_a_window_with_nothing_in_it(client, tmp_path):
    message = refused(client, tmp_path, upload(client, mooncake(3), window_start_s=100), "")
    assert "no requests after the upload options" in message


def test_a_trace_over_the_session_limit_is_refused_with_a_window_that_fits(tmp_path, clock):
    with TestClient(create_app(make_settings(tmp_path, max_requests_per_session=20),
                               clock=clock), headers=ORIGIN) as client:
        body = mooncake(30, gap_ms=500)
        r = upload(client, body)
        message = refused(client, tmp_path, r, "", 413)
        detail = r.json()["detail"]
        assert detail["num_requests"] == 30 and detail["max_requests"] == 20
        assert "window" in message and "sample_n" in message and "limit" in message
        assert detail["fits_end_s"] == pytest.approx(9.5)  # the 20th request arrives at 9.5 s
        windowed = upload(client, body, window_start_s=3, window_end_s=50)
        assert windowed.status_code == 413 and windowed.json()["detail"]["num_requests"] == 24
        assert windowed.json()["detail"]["fits_end_s"] == pytest.approx(12.5)
        for fields in ({"window_end_s": detail["fits_end_s"]}, {"sample_n": 20}, {"limit": 20},
                       {"window_start_s": 3, "window_end_s": 12.5}):
            ok = upload(client, body, **fields)
            assert ok.status_code == 201 and ok.json()["num_requests"] == 20, fields


def test_requests_the_kv_cache_cannot_hold_are_counted_and_a_bigger_cache_fits_them(client):
    lengths = [300, 40_000, 500, 41_000, 200]  # the demo cache: 512 blocks of 16 = 8192 tokens
    data = upload(client, mooncake(5, prompt_len=lambda i: lengths[i])).json()
    init, summary = run_to_end(client, data["trace_id"])
    notes = [n for n in init["trace"]["notes"] if "KV blocks" in n]
    assert len(notes) == 1 and "2 of 5 requests" in notes[0] and "8,192 tokens" in notes[0]
    assert "the longest request is 41,004" in notes[0]
    assert "num_gpu_blocks" in notes[0]
    assert summary["failed"] == 2 and summary["completed"] == 3
    init, summary = run_to_end(client, data["trace_id"], {"num_gpu_blocks": 3000})
    assert not [n for n in init["trace"]["notes"] if "KV blocks" in n]
    assert summary["failed"] == 0 and summary["completed"] == 5
    for blocks in (3000, 513):  # a request too long for both is counted once, as vLLM does
        init, summary = run_to_end(client, data["trace_id"],
                                   {"num_gpu_blocks": blocks, "max_model_len": 400})
        notes = " ".join(init["trace"]["notes"])
        assert "3 of 5 requests are longer than max_model_len 400" in notes
        assert "KV blocks" not in notes and summary["failed"] == 3


def test_the_openapi_document_and_the_formats_list_name_the_options(client):
    doc = client.get("/openapi.json").json()
    post = doc["paths"]["/api/traces"]["post"]
    schema = post["requestBody"]["content"]["multipart/form-data"]["schema"]
    for name in ("format", "window_start_s", "window_end_s", "limit", "sample_n", "seed",
                 "arrival_scale", "length_scale", "rate_per_s"):
        assert name in schema["properties"] and name in post["description"], name
    formats = {f["name"]: f["kind"] for f in client.get("/api/traces/formats").json()}
    assert formats["mooncake"] == "requests" and formats["vllm-kv-events"] == "steps"


def test_sessions_on_an_uploaded_trace_do_not_read_its_file_again(client, monkeypatch):
    opened = []
    real = registry.open_trace

    def open_trace(path, *args, **kwargs):
        opened.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(registry, "open_trace", open_trace)
    data = upload(client, mooncake(30), sample_n=5, seed=2).json()
    assert opened == []  # the upload's own read is in a job worker, which keeps what it read
    first = session_init(client, data["trace_id"])
    again = session_init(client, data["trace_id"], {"max_num_seqs": 4})
    assert opened == []
    assert listed(client, first) == listed(client, again) and len(listed(client, first)) == 5
    assert first["trace"]["notes"] == again["trace"]["notes"]
    others = [upload(client, mooncake(3 + k)).json()["trace_id"] for k in range(4)]  # 4 kept
    assert listed(client, session_init(client, data["trace_id"])) == listed(client, first)
    assert len(opened) == 1  # pushed out by the others: read again, the same sample
    session_init(client, others[-1])
    assert len(opened) == 1


def test_a_benchmark_cut_by_the_options_shows_what_its_kept_requests_measured(client):
    bench = {"completed": 3, "mean_ttft_ms": 50.0, "input_lens": [100, 200, 300],
             "output_lens": [4, 3, 5], "ttfts": [0.02, 0.04, 0.09],
             "start_times": [10.0, 10.5, 11.0]}
    body = json.dumps(bench).encode()
    whole = session_init(client, upload(client, body, "bench.json").json()["trace_id"])
    assert whole["trace"]["measured"]["mean_ttft_ms"] == 50.0  # the file's own figure
    assert whole["trace"]["measured"]["completed"] == 3
    for fields in ({"limit": 2}, {"window_end_s": 0.5}):
        cut = session_init(client, upload(client, body, "bench.json", **fields).json()["trace_id"])
        assert cut["trace"]["measured"]["mean_ttft_ms"] == pytest.approx(30.0), fields
        assert "completed" not in cut["trace"]["measured"]  # the whole run's count
    scaled = session_init(client, upload(client, body, "bench.json", length_scale=2).json()
                          ["trace_id"])
    assert scaled["trace"]["measured"]["mean_ttft_ms"] == 50.0


def test_a_huge_unknown_field_name_is_echoed_bounded():
    name = "x" * 200_000
    with pytest.raises(OptionError, match="unknown upload field 'xxx") as caught:
        UploadOptions.from_fields({name: "1"}, max_requests=10)
    assert len(str(caught.value)) < 2048
    assert len(caught.value.field) < 1024
