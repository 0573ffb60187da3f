"""The Sweep view in real Chromium: a grid over the demo preset runs on the server, the plot
shows the Pareto frontier the API reports, the table sorts, and a point opens its own run in
the explorer (two picked points open a compare)."""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import parse_qs, urlparse

from pagestate import wait_ready

GRID = {"max_num_seqs": [2, 16], "max_num_batched_tokens": [128, 1024]}
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _api(server_url: str, path: str, token: str | None = None) -> dict:
    request = urllib.request.Request(server_url + path,
                                     headers={"x-sweep-token": token} if token else {})
    with urllib.request.urlopen(request, timeout=10) as r:
        return json.loads(r.read())


def _run_sweep(page, server_url: str) -> dict:
    page.goto(server_url + "/sweep?preset=demo")
    page.fill("#sweep-config", json.dumps({"model": MODEL, "gpu": "H100"}))
    page.fill("#sweep-grid", json.dumps(GRID))
    page.fill("#sweep-slos", "p99_ttft_ms=400")
    page.click("#sweep-start")
    page.wait_for_function("() => document.body.dataset.sweepStatus === 'done'", timeout=120_000)
    sweep_id = parse_qs(urlparse(page.url).query)["sweep"][0]
    token = page.evaluate("(id) => sessionStorage.getItem(`sweep-token:${id}`)", sweep_id)
    return _api(server_url, f"/api/sweeps/{sweep_id}", token)


def test_the_sweep_view_shows_the_frontier_and_opens_a_point(page, server_url, screenshots):
    view = _run_sweep(page, server_url)
    assert view["status"] == "done" and len(view["points"]) == 4
    assert page.text_content("#sweep-progress").startswith("4 of 4 points")
    assert page.text_content("#sweep-answer") == view["answer"]
    plot = page.locator("#sweep-plot")
    assert plot.get_attribute("data-points") == "4"
    assert plot.get_attribute("data-frontier") == str(len(view["pareto"]))
    assert page.locator("#sweep-plot canvas").count() == 1
    rows = page.locator("#sweep-table tbody tr")
    assert rows.count() == 4
    assert page.locator("#sweep-table tr.pareto").count() == len(view["pareto"])
    page.screenshot(path=str(screenshots / "sweep.png"))

    page.click('#sweep-table [data-sort="request_goodput"]')  # up, then down
    page.click('#sweep-table [data-sort="request_goodput"]')
    shown = [int(i) for i in rows.evaluate_all("rs => rs.map((r) => r.dataset.index)")]
    by_goodput = sorted(view["points"], key=lambda p: (-p["request_goodput"], p["index"]))
    assert shown == [p["index"] for p in by_goodput]

    target = next(p for p in view["points"] if p["index"] == view["pareto"][0])
    xy = page.evaluate("""(i) => {
      const u = window.__sweep.plot.uplot; const col = u.data[0].length;
      const at = [...Array(col).keys()].find((k) => u.data[2][k] != null);
      const box = u.over.getBoundingClientRect();
      return [box.left + u.valToPos(u.data[0][at], "x"), box.top + u.valToPos(u.data[1][at], "y")];
    }""", target["index"])
    page.mouse.move(xy[0], xy[1])
    page.mouse.click(xy[0], xy[1])
    page.wait_for_url("**/?*preset=demo*")
    query = parse_qs(urlparse(page.url).query)
    assert query["max_num_seqs"] == [str(target["point"]["max_num_seqs"])]
    wait_ready(page)
    page.wait_for_function(  # the page joins the demo session, then configures its own run
        "(n) => window.__servescope.store.panes[0].init.config?.max_num_seqs === n",
        arg=target["config"]["max_num_seqs"], timeout=30_000)
    config = page.evaluate("() => window.__servescope.store.panes[0].init.config")
    assert config["max_num_batched_tokens"] == target["config"]["max_num_batched_tokens"]
    assert config["num_gpu_blocks"] == target["config"]["num_gpu_blocks"]  # sized as in the sweep
    assert page.errors == []


def test_two_picked_points_open_a_compare(page, server_url):
    view = _run_sweep(page, server_url)
    page.check('#sweep-table [data-pick="0"]')
    page.check('#sweep-table [data-pick="3"]')
    page.click("#sweep-compare")
    page.wait_for_url("**view=compare**")
    page.wait_for_function("() => window.__servescope?.store?.panes.length === 2 && "
                           "window.__servescope.store.panes.every((p) => p.run.numBlocks > 1 "
                           "&& p.init.config)", timeout=30_000)
    configs = page.evaluate("() => window.__servescope.store.panes.map((p) => p.init.config)")
    want = [view["points"][0]["config"], view["points"][3]["config"]]
    assert [c["max_num_seqs"] for c in configs] == [w["max_num_seqs"] for w in want]
    assert [c["num_gpu_blocks"] for c in configs] == [w["num_gpu_blocks"] for w in want]
    assert page.errors == []
