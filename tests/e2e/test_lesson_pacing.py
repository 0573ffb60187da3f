"""Issue 14's pacing in a real Chromium: lesson playback steps a few records a second and
pauses by itself at a chosen event; "next event" keys land on a record of that kind; markers
show the events on the scrubber and the charts."""

from __future__ import annotations

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

RECORD = "() => window.__servescope.store.panes[0].run.record"
NOTE = "() => document.getElementById('lesson-note').textContent"


def test_next_event_keys_land_on_their_kind(page, server_url):
    page.goto(server_url + "/?preset=kv-starvation")
    wait_ready(page)
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].init.preset === 'kv-starvation'")
    page.keyboard.press("r")  # the next preemption
    page.wait_for_function(f"() => ({NOTE})().startsWith('Next preemption')", timeout=30000)
    page.wait_for_function(f"() => ({RECORD})()?.preempted.length > 0")
    first = page.evaluate(RECORD)["iter"]
    page.keyboard.press("f")  # the next finished request, after it
    page.wait_for_function(f"() => ({NOTE})().startsWith('Next request finished')",
                           timeout=30000)
    page.wait_for_function(f"(at) => ({RECORD})()?.finished.length > 0 && ({RECORD})().iter > at",
                           arg=first)
    marks = page.eval_on_selector_all("#event-marks .event-mark",
                                      "els => els.map(e => e.dataset.kind)")
    assert "preemption" in marks and "finished" in marks
    on_timeline = page.eval_on_selector_all("#timeline-marks .event-mark",
                                            "els => els.map(e => e.dataset.kind)")
    assert "preemption" in on_timeline and "finished" in on_timeline
    assert page.errors == []


def test_lesson_playback_steps_and_pauses_at_a_preemption(page, server_url):
    page.goto(server_url + "/?preset=kv-starvation&pace=10")
    wait_ready(page)
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].init.preset === 'kv-starvation'")
    page.keyboard.press("Shift+L")
    page.wait_for_function(f"() => ({RECORD})()?.iter >= 2")
    assert page.get_attribute("#btn-lesson", "aria-pressed") == "true"
    assert not page.evaluate("() => window.__servescope.store.panes[0].playing")  # stepped
    page.wait_for_function(f"() => ({NOTE})().startsWith('Paused at a preemption')",
                           timeout=60000)
    rec = page.evaluate(RECORD)
    assert rec["preempted"], rec["iter"]
    assert page.get_attribute("#btn-lesson", "aria-pressed") == "false"
    assert page.errors == []
