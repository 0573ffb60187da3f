"""Issue 8 in a real Chromium: diagnose a kv-starvation run at its end, export a chart as PNG
and as SVG, then diagnose each engine of the compare view."""

from __future__ import annotations

import json
import urllib.request
import xml.etree.ElementTree as ET

import pytest
from pagestate import wait_ready

pytestmark = pytest.mark.e2e


def _session(server_url: str, preset: str) -> str:
    """A new session on `preset`; its id and driver token as the page's query."""
    body = json.dumps({"workload": {"preset": preset}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        made = json.loads(res.read())
    return f"{made['session_id']}&token={made['token']}"


def _get(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=60) as res:
        return dict(json.loads(res.read()))


def _check_svg_export(page) -> None:
    """The KV chart's SVG download: an SVG document with its title, axis labels and one
    polyline holding every KV usage value the page has."""
    page.wait_for_function(
        "() => window.__servescope.explore().charts.charts.every((c) =>"
        " c.u.data[0].length === window.__servescope.store.panes[0].history.length)")
    values = page.evaluate(
        "() => window.__servescope.store.panes[0].history.cols.kv_usage_pct"
        ".filter(Number.isFinite)")
    with page.expect_download(timeout=30000) as info:
        page.click("[data-export=svg-kv]")
    assert info.value.suggested_filename == "servescope-kv.svg"
    root = ET.parse(info.value.path()).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    assert root.tag == ns + "svg"
    assert root.findtext(ns + "title") == "KV cache usage"
    texts = [t.text for t in root.iter(ns + "text")]
    assert "time (s)" in texts and "% of blocks" in texts, texts
    lines = list(root.iter(ns + "polyline"))
    assert [line.get("data-series") for line in lines] == ["KV usage"]
    assert len(lines[0].get("points").split()) == len(values) > 5


def _check_compare_diagnosis(page, server_url: str) -> None:
    """Compare view (C): one row per engine with the verdict the REST API gives that engine
    (two engines: the lesson's four modes would diagnose kv-starvation's long naive run)."""
    page.evaluate("() => { window.__servescope.api.scenario.compare ="
                  " [{ policy: 'vllm-v1' }, { policy: 'vllm-v0' }]; }")
    page.keyboard.press("c")
    wait_ready(page, 1)
    sid = page.evaluate("() => window.__servescope.store.sessionId")
    page.click("#btn-compare-diagnose")
    page.wait_for_function(
        "() => document.querySelectorAll('#compare-diagnosis tbody tr').length === 2"
        " && !document.getElementById('compare-diagnosis').hidden", timeout=30000)
    rows = page.eval_on_selector_all(
        "#compare-diagnosis tbody tr",
        "rows => rows.map(r => [...r.cells].map(c => c.textContent))")
    # vllm-v0 alone is the lesson's third mode, so its pane carries that mode's plain name
    assert [r[0] for r in rows] == ["policy=vllm-v1", "continuous batching, no chunking"], rows
    for engine, (_, verdict, knob, _) in enumerate(rows):
        data = _get(f"{server_url}/api/sessions/{sid}/diagnosis?engine={engine}")
        assert f"({data['dominant']})" in verdict, (verdict, data["dominant"])
        top = next(v for v in data["verdicts"] if v["kind"] == data["dominant"])
        assert knob.split()[0] == top["recommendations"][0]["flag"], (knob, top)


def test_diagnose_kv_starvation_and_export_png(page, server_url):
    page.goto(f"{server_url}/?session={_session(server_url, 'kv-starvation')}&preset=kv-starvation")
    wait_ready(page)
    # play the whole run at 100x: the charts hold every record for the exports below
    page.evaluate("() => window.__servescope.api.setSpeed(100)")
    page.click("#btn-play")
    page.wait_for_function(
        "() => { const p = window.__servescope.store.panes[0];"
        " return p.status === 'done' && !p.playing && p.history.length > 5; }", timeout=60000)
    page.click("#btn-diagnose")
    page.wait_for_selector("#diagnosis .diagnosis-verdict", timeout=15000)
    verdict = page.text_content("#diagnosis .diagnosis-verdict")
    assert "kv_starvation" in verdict, verdict
    provenance = page.text_content("#diagnosis .diagnosis-provenance")
    assert "simulated run" in provenance
    assert page.locator("#diagnosis .diagnosis-evidence li").count() > 0
    flags = page.locator("#diagnosis .diagnosis-flags li").all_text_contents()
    assert flags and all(f.startswith("--") for f in flags), flags
    # the charts export as PNG files
    with page.expect_download(timeout=30000) as info:
        page.click("[data-export=png-kv]")
    download = info.value
    assert download.suggested_filename.endswith(".png")
    with open(download.path(), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    with page.expect_download(timeout=30000) as info:
        page.click("[data-export=bench]")
    with open(info.value.path()) as f:
        assert json.load(f)["completed"] > 0
    _check_svg_export(page)
    _check_compare_diagnosis(page, server_url)
    assert page.errors == []
