"""Issue 6 in a real Chromium: step, seek, compare, projection keys, bad upload, hostile ids."""

from __future__ import annotations

import json

import pytest
from pagestate import OWNED_PIXELS, pane, wait_history, wait_ready

pytestmark = pytest.mark.e2e

HOSTILE = "<img src=x onerror=alert(1)>"


def cursor_is(page, step, i=0):
    page.wait_for_function(
        "([i, s]) => window.__servescope.store.panes[i].run.cursor === s", arg=[i, step],
        timeout=10000)


def test_step_forward_back_and_seek(page, server_url):
    page.goto(server_url + "/")
    wait_ready(page)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_history(page, 3)
    steps = page.evaluate("() => window.__servescope.store.panes[0].history.cols.step")
    cursor_is(page, steps[2])
    page.keyboard.press("ArrowLeft")
    cursor_is(page, steps[1])
    page.click("#btn-fwd")
    cursor_is(page, steps[2])
    # a link with ?step= lands on that step (from a keyframe, not by replaying)
    page.goto(server_url + "/?step=60")
    wait_ready(page)
    cursor_is(page, 60)
    page.wait_for_timeout(200)
    assert pane(page)["owned"] > 0
    assert page.evaluate(OWNED_PIXELS, "kv-grid") > 0
    assert page.text_content("#step-out") == "60"
    assert page.errors == []


def test_compare_runs_side_by_side_with_the_lesson_table(page, server_url, screenshots):
    configs = [{"policy": "vllm-v1"}, {"policy": "vllm-v0"}, {"policy": "static"}]
    page.goto(server_url + "/?view=compare&compare=" + json.dumps(configs))
    wait_ready(page, 2)
    page.click("#btn-play")
    for i in range(3):
        wait_history(page, 30, i)
    page.wait_for_timeout(300)
    rows = page.eval_on_selector_all(
        "#lesson tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert [r[0] for r in rows] == ["policy=vllm-v1", "policy=vllm-v0", "policy=static"]
    for r in rows:
        assert float(r[1]) > 0, r  # output throughput
    assert page.locator(".pane canvas.kv").count() == 3
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    page.click("#btn-play")
    assert page.errors == []


def test_projection_mode_keys(page, server_url, screenshots):
    page.goto(server_url + "/")
    wait_ready(page)
    page.keyboard.press("p")
    assert "projection" in page.get_attribute("body", "class")
    assert page.is_visible("#keys")
    page.keyboard.press(" ")
    page.wait_for_function("() => window.__servescope.store.panes[0].playing")
    page.keyboard.press("+")
    assert page.text_content("#speed-out") == "2x"
    page.keyboard.press("-")
    page.keyboard.press("-")
    assert page.text_content("#speed-out") == "0.5x"
    assert "speed=0.5" in page.url
    wait_history(page, 20)
    page.keyboard.press(" ")
    page.wait_for_function("() => !window.__servescope.store.panes[0].playing")
    page.keyboard.press("4")
    page.wait_for_function("() => location.search.includes('policy=vllm-v1')")
    page.keyboard.press("1")
    page.wait_for_function("() => location.search.includes('policy=naive')")
    wait_ready(page)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_history(page, 2)
    page.wait_for_timeout(200)
    page.screenshot(path=str(screenshots / "projection.png"))
    page.keyboard.press("Escape")
    assert "projection" not in (page.get_attribute("body", "class") or "")
    assert page.errors == []


def test_bad_upload_shows_the_servers_error(page, server_url, tmp_path):
    bad = tmp_path / "trace.jsonl"
    bad.write_text("this is { not a trace\n")
    page.goto(server_url + "/")
    wait_ready(page)
    page.set_input_files("#upload", str(bad))
    page.wait_for_selector("#error:not([hidden])")
    text = page.text_content("#error")
    assert "trace.jsonl" in text and "Upload failed" in text, text
    assert page.errors == []


def _hostile_server(ws):
    """A mocked session whose request ids are markup."""
    ids = [HOSTILE, '"><script>alert(2)</script>', "r'3"]

    def on_message(text):
        msg = json.loads(text)
        if msg["type"] == "configure":
            ws.send(json.dumps({"type": "init", "v": 1, "num_gpu_blocks": 16, "block_size": 4,
                                "requests": [{"id": i, "prompt_len": 4, "output_len": 2}
                                             for i in ids], "source": "replayed"}))
        elif msg["type"] in ("step", "play"):
            ws.send(json.dumps({"type": "step", "v": 1, "records": [{
                "step": 0, "iter": 0, "time_s": 0, "step_time_ms": 5, "arrivals": ids,
                "scheduled": [{"id": i, "n": 4, "start": 0, "sampled": True, "kind": "prefill"}
                              for i in ids[:2]],
                "new": ids[:2], "resumed": [], "preempted": [], "finished": [], "rejected": [],
                "new_blocks": {ids[0]: [1], ids[1]: [2]}, "freed_blocks": [], "kv_events": [],
                "num_cached_tokens": {}, "running": ids[:2], "waiting": ids[2:],
                "num_free_blocks": 13, "num_usable_blocks": 15, "kv_usage": 0.13,
                "token_budget": 16, "max_num_seqs": 4, "kv_waste": {}}]}))
    ws.on_message(on_message)


def test_hostile_request_ids_render_as_text(page, server_url):
    page.route_web_socket("**/ws/**", _hostile_server)
    page.goto(server_url + "/")
    wait_ready(page)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__servescope.store.panes[0].run.cursor === 0")
    page.click(f"#lane-running .chip >> text={HOSTILE}")  # select it: its block table shows
    page.wait_for_timeout(300)
    assert HOSTILE in page.text_content("#lane-running")
    assert "<script>" in page.text_content("#lane-running")
    assert HOSTILE in page.text_content("#block-table")
    assert HOSTILE in page.text_content("#caption")
    assert page.locator("img[src=x]").count() == 0
    injected = "body script:not(#boot):not([type=module]):not([type=importmap])"
    assert page.locator(injected).count() == 0
    assert page.text_content("#source-label") == "replayed"
    assert page.errors == [], page.errors
