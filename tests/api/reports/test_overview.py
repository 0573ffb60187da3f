"""The overview strip's bins and the percentile panel, checked against the exported records and
the per-request CSV: binned by hand here, from what the run wrote, not from the store's SQL."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

WORKLOAD = {"synthetic": {"num_requests": 60, "seed": 3, "request_rate": 0.5}}


def session(client) -> str:
    r = client.post("/api/sessions", json={"workload": WORKLOAD})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    client.get(f"/api/sessions/{sid}/summary")  # waits for the simulation to end
    return sid


def test_bins_hold_the_records_that_start_in_them_and_idle_bins_are_gaps(client):
    sid = session(client)
    records = [json.loads(x) for x in
               client.get(f"/api/sessions/{sid}/export?format=jsonl").text.splitlines()]
    bins = 50
    data = client.get(f"/api/sessions/{sid}/overview", params={"bins": bins}).json()
    cols = data["columns"]
    t0 = records[0]["time_s"]
    t1 = max(r["time_s"] + r["step_time_ms"] / 1000 for r in records)
    width = (t1 - t0) / bins
    assert data["num_records"] == len(records) and data["start_s"] == pytest.approx(t0)
    expected: dict[int, list[dict]] = {}
    for r in records:
        expected.setdefault(min(bins - 1, int((r["time_s"] - t0) / width)), []).append(r)
    for b in range(bins):
        rs = expected.get(b)
        if rs is None:  # nothing ran: a gap in every series
            assert cols["first_iter"][b] is None and cols["throughput_tok_per_s"][b] is None
            continue
        assert (cols["first_iter"][b], cols["last_iter"][b]) == (rs[0]["iter"], rs[-1]["iter"])
        tokens = sum(e["n"] for r in rs for e in r["scheduled"])
        steps_s = rs[-1]["time_s"] + rs[-1]["step_time_ms"] / 1000 - rs[0]["time_s"]
        assert cols["throughput_tok_per_s"][b] == pytest.approx(tokens / max(width, steps_s))
        assert cols["num_waiting"][b] == max(len(r["waiting"]) for r in rs)
        assert cols["kv_usage_max_pct"][b] == pytest.approx(100 * max(r["kv_usage"] for r in rs))
    assert any(v is None for v in cols["first_iter"])  # one request every 2 s leaves idle stretches


@pytest.mark.parametrize("bins", [50, 600, 1200, 4000])
def test_no_bin_is_faster_than_the_fastest_step_it_sums(client, bins):
    """The demo's strip said "throughput, max 112,357 tok/s" where no step passed 25,296: its
    bins were shorter than a step, and a step's tokens were divided by the bin's width."""
    r = client.post("/api/sessions", json={"workload": {"preset": "demo"}})
    sid = r.json()["session_id"]
    client.get(f"/api/sessions/{sid}/summary")
    records = [json.loads(x) for x in
               client.get(f"/api/sessions/{sid}/export?format=jsonl").text.splitlines()]
    fastest = max(sum(e["n"] for e in r["scheduled"]) / (r["step_time_ms"] / 1000)
                  for r in records)
    cols = client.get(f"/api/sessions/{sid}/overview", params={"bins": bins}).json()["columns"]
    rates = [v for v in cols["throughput_tok_per_s"] if v is not None]
    assert max(rates) <= fastest * (1 + 1e-9)
    assert all(v is None or v <= 1.0 for v in cols["busy_share"])


def test_percentiles_of_the_whole_run_and_of_a_window_match_the_request_csv(client):
    sid = session(client)
    rows = list(csv.DictReader(io.StringIO(
        client.get(f"/api/sessions/{sid}/export?format=csv").text)))
    whole = client.get(f"/api/sessions/{sid}/percentiles").json()
    ttft = [float(r["ttft_ms"]) for r in rows]
    assert whole["num_requests"] == len(rows) == 60
    for p in (50, 90, 95, 99):
        assert whole["ttft_ms"][f"p{p}"] == pytest.approx(float(np.percentile(ttft, p)), rel=1e-4)
    finish = {r["id"]: float(r["arrival_s"]) + float(r["e2el_ms"]) / 1000 for r in rows}
    ends = sorted(finish.values())
    cut = (ends[30] + ends[31]) / 2  # between two finishes: the CSV's rounding cannot move one
    window = client.get(f"/api/sessions/{sid}/percentiles", params={"end_s": cut}).json()
    inside = [float(r["e2el_ms"]) for r in rows if finish[r["id"]] <= cut]
    assert window["num_requests"] == len(inside) == 31
    assert window["e2el_ms"]["p99"] == pytest.approx(float(np.percentile(inside, 99)), rel=1e-4)
    empty = client.get(f"/api/sessions/{sid}/percentiles", params={"start_s": 1e6}).json()
    assert empty["num_requests"] == 0 and empty["itl_ms"]["p50"] is None
    bad = client.get(f"/api/sessions/{sid}/percentiles", params={"start_s": "nan"})
    assert bad.status_code == 422


@pytest.mark.parametrize("route", ["overview", "diagnosis?full=true", "export?format=jsonl",
                                   "timeline"])
def test_a_job_whose_run_is_replaced_while_it_waits_still_answers(client, route):
    """The page asks, then the driver reconfigures (closing the run's track) before the job's
    worker opens the track's file: the job reads the run it was asked about (the page drops the
    stale answer), the file goes when it is done, and asking after the replacement is a 409."""
    sid = session(client)
    live = client.app.state.registry.get(sid)
    (track,) = live.tracks
    how = {"overview": live.jobs.call, "diagnosis": live.jobs.call,
           "jsonl export": live.jobs.stream, "timeline": live.jobs.run}

    async def closing(job, *args, **kw):
        track.close()  # what a reconfigure does to the old run
        return await how[job](job, *args, **kw)
    live.jobs.call = live.jobs.stream = live.jobs.run = closing
    r = client.get(f"/api/sessions/{sid}/{route}")
    assert r.status_code == 200, r.text
    assert r.text and not track.store.path.exists()
    r = client.get(f"/api/sessions/{sid}/{route}")
    assert r.status_code == 409 and r.json()["detail"]["field"] == "engine"
