"""Issue 31's classroom flow in a real Chromium: a follower's page shows the teacher's tour note
and pane names and says it follows; a "next event" key with no such event left keeps the
teacher's place; the URL's speed is the one the page plays at."""

from __future__ import annotations

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

NAMES = ["naive", "static batching", "continuous batching, no chunking",
         "continuous batching + chunked prefill"]
NOTE = "() => document.getElementById('lesson-note').textContent"
LABELS = "() => window.__servescope.store.panes.map((p) => p.label)"
RECORD = "() => window.__servescope.store.panes[0].run.record?.iter ?? -1"


def test_a_follower_reads_the_teachers_tour_and_pane_names(page, browser, server_url):
    page.goto(server_url + "/?view=compare")
    wait_ready(page, 3)
    sid = page.evaluate("() => window.__servescope.store.sessionId")
    ctx = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        student = ctx.new_page()
        errors: list[str] = []
        student.on("pageerror", lambda e: errors.append(str(e)))
        student.goto(f"{server_url}/?session={sid}&follow=1")
        wait_ready(student, 3)
        assert student.evaluate(LABELS) == NAMES  # not "policy=naive"
        assert student.text_content("#conn").startswith("following (read-only)")
        assert student.is_disabled("#btn-tour") and student.is_disabled("#btn-lesson")
        assert "following read-only" in student.get_attribute("#btn-tour", "title")
        page.keyboard.press("t")  # the teacher starts the tour
        page.wait_for_function(f"() => ({NOTE})().length > 0")
        student.wait_for_function(f"(text) => ({NOTE})() === text", arg=page.evaluate(NOTE))
        page.keyboard.press(" ")  # on to the tour's first stop
        page.wait_for_function(f"() => ({NOTE})().startsWith('Step ')", timeout=60000)
        student.wait_for_function(f"(text) => ({NOTE})() === text", arg=page.evaluate(NOTE))
        assert student.is_visible("#lesson-note a")  # its explainer link too
        assert errors == []
    finally:
        ctx.close()
    assert page.errors == []


def test_a_next_event_key_with_none_left_keeps_the_place(page, server_url):
    page.goto(server_url + "/?preset=demo&speed=5")
    wait_ready(page)
    assert page.text_content("#speed-out") == "5x"  # the URL's speed, after the session's init
    page.keyboard.press("Shift+ArrowRight")
    page.wait_for_function(f"() => ({RECORD})() === 9")
    page.keyboard.press("w")  # static batch waste, on a vLLM V1 run: there is none
    page.wait_for_function(f"() => ({NOTE})().startsWith('No static batch waste')",
                           timeout=60000)
    page.wait_for_function(f"() => ({RECORD})() === 9")
    assert "staying at step" in page.evaluate(NOTE)
    assert page.text_content("#speed-out") == "5x"
    assert page.errors == []
