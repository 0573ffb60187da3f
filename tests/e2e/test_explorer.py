"""Issue 6 in a real Chromium: step, seek, compare, projection keys, bad upload, hostile ids."""

from __future__ import annotations

import json

import pytest
from pagestate import OWNED_PIXELS, OWNED_PIXELS_EACH, pane, wait_history, wait_ready

pytestmark = pytest.mark.e2e

HOSTILE = "<img src=x onerror=alert(1)>"


def cursor_is(page, step, i=0):
    page.wait_for_function(
        "([i, s]) => window.__servescope.store.panes[i].run.cursor === s", arg=[i, step],
        timeout=30000)


def test_step_forward_back_and_seek(page, fresh_url):
    page.goto(fresh_url)
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
    page.goto(fresh_url + "&step=60")
    wait_ready(page)
    cursor_is(page, 60)
    page.wait_for_timeout(200)
    assert pane(page)["owned"] > 0
    assert page.evaluate(OWNED_PIXELS, "kv-grid") > 0
    assert page.text_content("#step-out") == "60"
    assert page.errors == []


def test_compare_runs_side_by_side_with_the_lesson_table(page, fresh_url, screenshots):
    configs = [{"policy": "vllm-v1"}, {"policy": "vllm-v0"}, {"policy": "static"}]
    page.goto(fresh_url + "&view=compare&compare=" + json.dumps(configs))
    wait_ready(page, 2)
    page.click("#btn-play")
    for i in range(3):
        wait_history(page, 30, i)
    page.wait_for_timeout(300)
    rows = page.eval_on_selector_all(
        "#lesson tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    assert [r[0] for r in rows] == ["policy=vllm-v1", "continuous batching, no chunking",
                                    "static batching"]
    for r in rows:
        assert float(r[1]) > 0, r  # output throughput
    assert page.locator(".pane canvas.kv").count() == 3
    # Each pane's pool holds what its engine reports held (the static pane included: its
    # members keep their reserved blocks to the batch's end), and its canvas shows them.
    held = page.evaluate("""() => window.__servescope.store.panes.map((p) => [
        Array.from(p.run.owner).filter((x) => x >= 0).length,
        p.run.record.num_usable_blocks - p.run.record.num_free_blocks])""")
    for i, (shown, engine) in enumerate(held):
        assert shown == engine, (i, shown, engine)
    assert held[0][1] > 0 and held[1][1] > 0, held  # a static batch may just have ended
    pixels = page.evaluate(OWNED_PIXELS_EACH, ".pane canvas.kv")
    for (_, engine), n in zip(held, pixels, strict=True):
        assert (n > 100) == (engine > 0), (held, pixels)
    page.screenshot(path=str(screenshots / "compare.png"), full_page=True)
    page.click("#btn-play")
    assert page.errors == []


def test_projection_mode_keys(page, fresh_url, screenshots):
    page.goto(fresh_url)
    wait_ready(page)
    page.keyboard.press("p")
    page.wait_for_selector("body.projection #keys", state="visible")
    page.keyboard.press(" ")
    page.wait_for_function("() => window.__servescope.store.panes[0].playing")
    # Each key press waits for the state it changes before the next is pressed.
    page.keyboard.press("+")
    wait_text(page, "#speed-out", "2x")
    page.keyboard.press("-")
    wait_text(page, "#speed-out", "1x")
    page.keyboard.press("-")
    wait_text(page, "#speed-out", "0.5x")
    page.wait_for_function("() => location.search.includes('speed=0.5')")
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
    page.wait_for_function("() => !document.body.classList.contains('projection')")
    assert page.errors == []


def wait_text(page, selector, text):
    page.wait_for_function("([s, t]) => document.querySelector(s).textContent === t",
                           arg=[selector, text])


def test_bad_upload_shows_the_servers_error(page, fresh_url, tmp_path):
    bad = tmp_path / "trace.jsonl"
    bad.write_text("this is { not a trace\n")
    page.goto(fresh_url)
    wait_ready(page)
    page.set_input_files("#upload", str(bad))
    page.wait_for_selector("#upload-error:not([hidden])")  # next to the upload
    text = page.text_content("#upload-error")
    # the server's own words for the same file, asked directly
    detail = page.evaluate("""async (body) => {
        const form = new FormData();
        form.append("file", new File([body], "trace.jsonl"));
        const token = document.cookie.match(/servescope_csrf=([^;]+)/)[1];  // as the page sends it
        const res = await fetch("/api/traces", { method: "POST", body: form,
                                                 headers: { "X-CSRF-Token": token } });
        return [res.status, (await res.json()).detail];
    }""", bad.read_text())
    assert detail[0] == 400, detail
    message = detail[1]["message"] if isinstance(detail[1], dict) else detail[1]
    assert text.startswith("Upload failed: ") and message in text, (text, detail)
    assert page.errors == []


def test_hostile_request_ids_render_as_text(page, fresh_url, tmp_path):
    """Markup in request ids, uploaded as a real trace and simulated by the real server."""
    ids = [HOSTILE, '"><script>alert(2)</script>', "r'3"]
    trace = tmp_path / "hostile.json"
    trace.write_text(json.dumps([{"id": i, "prompt_len": 40, "output_len": 8, "arrival_s": 0}
                                 for i in ids]))
    page.goto(fresh_url)
    wait_ready(page)
    page.set_input_files("#upload", str(trace))
    page.wait_for_function(
        "(id) => window.__servescope.store.panes[0].run.ids.includes(id)", arg=HOSTILE,
        timeout=15000)
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__servescope.store.panes[0].run.cursor >= 0")
    page.click(f"#lane-running .chip >> text={HOSTILE}")  # select it: its block table shows
    page.wait_for_timeout(300)
    assert HOSTILE in page.text_content("#lane-running")
    assert "<script>" in page.text_content("#lane-running")
    assert HOSTILE in page.text_content("#block-table")
    assert HOSTILE in page.text_content("#caption")
    assert page.locator("img[src=x]").count() == 0
    injected = "body script:not(#boot):not([type=module]):not([type=importmap])"
    assert page.locator(injected).count() == 0
    assert page.errors == [], page.errors


def test_an_upload_is_this_browsers_own(page, fresh_url, tmp_path):
    """The page keeps the upload token the server answers, names it in the session's configure
    and the page's link; GET /api/traces lists the upload with it and nothing without."""
    trace = tmp_path / "mine.json"
    trace.write_text(json.dumps([{"id": "m0", "prompt_len": 40, "output_len": 8,
                                  "arrival_s": 0}]))
    page.goto(fresh_url)
    wait_ready(page)
    page.set_input_files("#upload", str(trace))
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].init?.trace?.filename === 'mine.json'",
        timeout=15000)
    token = page.evaluate("() => localStorage.getItem('servescope.upload_token')")
    assert token and page.evaluate("() => window.__servescope.api.scenario.upload_token") == token
    page.wait_for_function("(t) => location.search.includes('upload_token=' + t)", arg=token)
    listed = page.evaluate("""async (t) => {
      const count = async (headers) =>
        (await (await fetch('/api/traces', { headers })).json()).length;
      return [await count({ 'X-Upload-Token': t }), await count({})];
    }""", token)
    assert listed[0] >= 1 and listed[1] == 0, listed
    assert page.errors == [], page.errors
