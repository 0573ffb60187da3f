"""Uploads in a real Chromium: an iteration log replays, labelled replayed, named by its file,
with its recorded config read-only and what it does not record said; a `vllm bench serve`
result simulates with its measured TTFT/ITL shown beside; a Mooncake trace uploads with a time
window and a sample from the upload options, a bad option refused next to the upload, and the
requests the KV cache cannot hold counted until a bigger cache is applied."""

from __future__ import annotations

import json
import urllib.request

import pytest
from pagestate import OWNED_PIXELS, pane, wait_ready, wait_requests

pytestmark = pytest.mark.e2e

ITERATIONS = [(1, 2, 600, 0, 0, "22.0", "4.0"), (2, 0, 0, 2, 2, "9.5", "4.1"),
              (3, 1, 300, 2, 2, "15.0", "6.0"), (4, 0, 0, 3, 3, "9.0", "2.0")]
BENCH = {"backend": "vllm", "num_prompts": 3, "completed": 3, "mean_ttft_ms": 41.5,
         "input_lens": [200, 300, 120], "output_lens": [6, 4, 8],
         "ttfts": [0.04, 0.045, 0.0395], "itls": [[0.01] * 5, [0.012] * 3, [0.011] * 7],
         "latencies": [0.09, 0.081, 0.1165], "start_times": [50.0, 50.1, 50.25]}


def iteration_log() -> str:
    return "".join(f"INFO [core.py:312] Iteration({n}): {a} context requests, {b} context "
                   f"tokens, {c} generation requests, {d} generation tokens, iteration elapsed "
                   f"time: {ms} ms, GPU KV cache usage: {u}%\n"
                   for n, a, b, c, d, ms, u in ITERATIONS)


def uploaded(page, name):
    page.wait_for_function(
        "(name) => window.__servescope.store.panes[0].init.trace?.filename === name",
        arg=name, timeout=20000)
    wait_ready(page)
    wait_requests(page)


def play_to_end(page, num_records):
    # 10x: a 20 s window of arrivals must not race the wait's own timeout at 1x
    page.evaluate("() => window.__servescope.api.setSpeed(10)")
    page.click("#btn-play")
    page.wait_for_function(
        "(n) => { const p = window.__servescope.store.panes[0];"
        " return p.status === 'done' && p.history.length >= n; }", arg=num_records,
        timeout=60000)  # a liveness bound for a loaded machine, not a measurement


def test_an_iteration_log_replays_and_a_bench_result_shows_measured_beside(page, fresh_url,
                                                                          tmp_path):
    log = tmp_path / "vllm_serve.log"
    log.write_text(iteration_log())
    page.goto(fresh_url)
    wait_ready(page)
    assert page.text_content("#source-label") == "simulated"
    page.set_input_files("#upload", str(log))
    uploaded(page, "vllm_serve.log")
    assert page.text_content("#source-label") == "replayed"
    assert "vllm_serve.log" in page.text_content("#scenario-name")
    assert "request ids" in page.text_content("#provenance")
    assert "replayed" in page.text_content("#upload-status")
    # the config panel shows the recording's pool and budget, and cannot change them
    assert page.input_value("#field-num_gpu_blocks") == "10001"
    assert page.input_value("#field-max_num_batched_tokens") == "8192"
    assert page.is_disabled("#field-max_num_seqs")
    assert page.is_hidden("#measured-label")
    play_to_end(page, len(ITERATIONS))
    state = pane(page)
    assert state["source"] == "replayed"
    assert state["ids"] and all(i.startswith("~") for i in state["ids"])  # no request known
    assert state["owned"] == 200  # 2.0% of 10,000 blocks in use at the last step
    assert page.evaluate(OWNED_PIXELS, "kv-grid") > 0
    assert "run complete" in page.text_content("#scenario-name")
    assert "recorded time" in page.text_content("#charts-title")
    page.wait_for_function("() => document.getElementById('btn-play').textContent.includes('Play')",
                           timeout=30000)  # the run's end is shown even right after a play

    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(BENCH))
    page.set_input_files("#upload", str(bench))
    uploaded(page, "bench.json")
    assert page.text_content("#source-label") == "simulated"
    assert page.is_visible("#measured-label")
    assert not page.is_disabled("#field-max_num_seqs")  # a simulation's config is the page's
    assert page.input_value("#field-num_gpu_blocks") != "10001"
    play_to_end(page, 3)
    line = page.text_content("#measured")
    assert "mean TTFT: measured 41.5 ms, simulated " in line and "so far" not in line
    simulated = page.evaluate("() => window.__servescope.store.panes[0].summary.mean_ttft_ms")
    assert f"simulated {simulated:.1f} ms" in line
    assert page.errors == [], page.errors


def mooncake_trace(path, n=400, gap_ms=100, long_every=10):
    """Request mc<i> arrives at i * gap_ms; every `long_every`-th has a 40k-token prompt."""
    rows = [{"timestamp": i * gap_ms, "input_length": 40_000 if i % long_every == 0 else 300 + i,
             "output_length": 8, "hash_ids": [i % 5, i]} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


INIT = "() => window.__servescope.store.panes[0].init"
REJECTED = ("() => window.__servescope.store.panes[0].run.reqs"
            ".filter((r) => r.status === 'rejected').length")


def test_a_mooncake_trace_uploads_with_a_window_and_a_sample(page, fresh_url, tmp_path):
    trace = tmp_path / "conversation_trace.jsonl"
    mooncake_trace(trace)
    page.goto(fresh_url)
    wait_ready(page)
    page.click("#upload-options summary")
    page.fill("#upload-window_start_s", "5")
    page.fill("#upload-window_end_s", "3")
    page.set_input_files("#upload", str(trace))
    page.wait_for_selector("#upload-error:not([hidden])")
    assert "window_end_s" in page.text_content("#upload-error")
    bad = '#upload-fields label[data-field="window_end_s"]'
    assert "bad" in page.get_attribute(bad, "class")
    assert "must not be before window_start_s" in page.text_content(bad)
    assert page.is_hidden("#error")

    page.fill("#upload-window_end_s", "25")
    page.fill("#upload-sample_n", "40")
    page.fill("#upload-seed", "7")
    page.click("#upload-again")
    uploaded(page, "conversation_trace.jsonl")
    assert page.is_hidden("#upload-error")
    init = page.evaluate(INIT)
    ids = [int(r["id"][2:]) for r in init["requests"]]
    assert len(ids) == 40 and all(50 <= i <= 250 for i in ids)  # 5-25 s at 10 a second
    provenance = page.text_content("#provenance")
    assert "a uniform sample of 40 of the 201 requests in the window (seed 7)" in provenance
    # the demo cache holds 512 blocks of 16 tokens: the 40k prompts in the sample cannot fit
    num_long = sum(1 for i in ids if i % 10 == 0)
    assert num_long > 0
    assert f"{num_long} of 40 requests need more KV blocks" in provenance
    play_to_end(page, 1)
    assert page.evaluate(REJECTED) == num_long

    page.fill("#field-num_gpu_blocks", "3000")
    page.click("#apply")
    page.wait_for_function(f"() => ({INIT})().config.num_gpu_blocks === 3000", timeout=20000)
    wait_ready(page)
    wait_requests(page)
    assert "need more KV blocks" not in page.text_content("#provenance")
    assert "a uniform sample of 40" in page.text_content("#provenance")  # the same 40
    assert [r["id"] for r in page.evaluate(INIT)["requests"]] == [r["id"] for r in init["requests"]]
    play_to_end(page, 1)
    assert page.evaluate(REJECTED) == 0
    assert page.errors == [], page.errors


def test_a_follower_of_a_compare_session_cannot_drive_it(page, server_url):
    body = json.dumps({"configs": [{"policy": "vllm-v1"}, {"policy": "static"}],
                       "workload": {"preset": "demo"}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        sid = json.loads(res.read())["session_id"]
    page.goto(f"{server_url}/?session={sid}&follow=1")
    wait_ready(page, 1)
    assert page.is_visible("#compare") and page.is_hidden("#explore")
    for control in ("#btn-play", "#btn-fwd", "#btn-back", "#speed", "#scrub", "#apply", "#upload"):
        assert page.is_disabled(control), control
    page.keyboard.press(" ")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(400)
    assert page.is_hidden("#error")  # no control message went out to be refused as read_only
    assert pane(page)["history"] == 0 and not pane(page)["playing"]  # nothing stepped or played
    assert page.errors == [], page.errors
