"""Issue 14's guided tour in a real Chromium: it plays the demo from its start and stops once
at the first occurrence of each concept, each stop naming the request and linking its
explainer; the explainer page answers every link."""

from __future__ import annotations

import urllib.request

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e

NOTE = "() => document.getElementById('lesson-note').textContent"
ANCHOR = "() => document.getElementById('lesson-note').dataset.anchor"
STOPS = {"chunked-prefill", "prefix-caching", "block-pool", "token-budget", "preemption"}


def test_the_tour_stops_at_each_concept_once(page, server_url):
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(server_url + "/?pace=20")  # 20 steps a second: the stops are the same
    wait_ready(page)
    page.click("#btn-tour")
    page.wait_for_function(f"() => ({NOTE})().startsWith('Tour:')")
    seen = []
    for _ in range(len(STOPS)):
        before = page.evaluate(NOTE)
        page.keyboard.press(" ")  # go on to the next stop
        page.wait_for_function(f"(b) => ({NOTE})() !== b && ({NOTE})().includes('Notice:')",
                               arg=before, timeout=60000)
        note, anchor = page.evaluate(NOTE), page.evaluate(ANCHOR)
        step = int(note.split(".")[0].removeprefix("Step "))
        assert page.evaluate("() => window.__servescope.store.panes[0].run.record.step") == step
        seen.append(anchor)
    assert set(seen) == STOPS and len(seen) == len(STOPS), seen
    assert "last stop" in page.evaluate(NOTE)
    with urllib.request.urlopen(server_url + "/explain", timeout=10) as r:
        html = r.read().decode()
    links = page.eval_on_selector_all("a.why", "els => els.map(e => e.getAttribute('href'))")
    for href in {*links, *(f"/explain#{a}" for a in STOPS)}:
        assert f'id="{href.split("#")[1]}"' in html, href
    assert page.errors == [] and errors == []
