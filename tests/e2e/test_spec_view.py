"""The spec-decode view plays in a real Chromium: a speculating run's batch bar draws decodes'
drafts by outcome (accepted and rejected), the acceptance chart gets points, and the batch line
names where the acceptance came from."""

from __future__ import annotations

import json
import re
import urllib.request

import pytest
from pagestate import CHART_POINTS, wait_ready

pytestmark = pytest.mark.e2e

DRAFT_COLUMNS = """() => {
  const m = /accepted (\\d+) rejected (\\d+) pending (\\d+)/.exec(
    document.getElementById('batch-bar').dataset.draftColumns ?? '');
  return m && Number(m[1]) > 0 && Number(m[2]) > 0 ? m[0] : null;
}"""

SMALL_BUDGET = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "max_model_len": 4096,
                "max_num_seqs": 16, "max_num_batched_tokens": 64,
                "enable_prefix_caching": False, "async_scheduling": False,
                "speculative_config": {"method": "eagle3", "num_speculative_tokens": 3}}


@pytest.fixture
def spec_url(server_url) -> str:
    """A session of its own on the light-load speculation lesson's requests (EAGLE-3, K = 3)
    under a 64-token budget, so that a decode's drafts span whole pixel columns of the bar
    (at the preset's 8,192 a token is a fifth of a pixel)."""
    body = json.dumps({"workload": {"preset": "lesson-speculation-light"},
                       "config": SMALL_BUDGET}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        session = json.loads(res.read())
    return f"{server_url}{session['drive_url']}"


def test_a_speculating_run_plays_its_drafts_acceptance_and_source(page, spec_url):
    page.goto(spec_url)
    wait_ready(page)
    page.click("#btn-play")
    # a step whose bar shows both accepted and rejected drafts (EAGLE-3 accepts some of 3)
    shown = page.wait_for_function(DRAFT_COLUMNS, timeout=60000).json_value()
    assert re.fullmatch(r"accepted \d+ rejected \d+ pending \d+", shown)
    page.wait_for_function(
        "() => window.__servescope.store.panes[0].history.cols.acceptance_rate"
        ".some((x) => x !== null)", timeout=60000)
    page.click("#btn-play")  # pause
    points = page.evaluate(CHART_POINTS)
    assert points.get("acceptance", 0) > 0
    rates = page.evaluate(
        "() => window.__servescope.store.panes[0].history.cols.acceptance_rate")
    assert all(x is None or 0 <= x <= 1 for x in rates)
    info = page.text_content("#batch-info")
    assert "(acceptance: model: eagle3" in info, info
    assert page.errors == []
