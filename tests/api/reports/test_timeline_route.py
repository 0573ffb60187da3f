"""GET /api/sessions/{id}/timeline checked against the exported records: the density of each
state summed here step by step from what the run wrote (not from the store's count columns),
a P/D decode replica's requests waiting for remote KV among them (over the idle time too, till
the step their KV arrives in), rows whose time per kind adds up to the records', and bad
parameters refused by name."""

from __future__ import annotations

import json

import pytest
from support.server import receive_until

# one request every 2 s: idle stretches between bursts; few blocks: preemptions
WORKLOAD = {"synthetic": {"num_requests": 40, "seed": 5, "request_rate": 2.0}}
CONFIG = {"num_gpu_blocks": 24, "block_size": 16}
STATES = ["waiting", "waiting_for_kv", "prefill", "decode", "stalled", "preempted"]
# A P/D fleet over a slow link: a 64-token prompt of Llama 3.1 8B is 8,388,608 KV bytes, 0.84 s
# at 0.01 GB/s, so each decode replica holds requests admitted and waiting for their KV
PD = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100", "num_gpu_blocks": 256,
      "prefill": {"replicas": 1}, "decode": {"replicas": 1},
      "kv_link": {"kind": "pcie", "gbps": 0.01}}
PD_REQUESTS = [{"id": f"r{k}", "arrival_s": 0.05 * k, "prompt_len": 64, "output_len": 4}
               for k in range(4)]


def session(client, workload=WORKLOAD, config=CONFIG,
            view: dict | None = None) -> tuple[str, list[dict]]:
    """A finished session and its records; `view`: the replica a fleet's track streams."""
    r = client.post("/api/sessions", json={"workload": workload, "config": config})
    assert r.status_code == 201, r.text
    sid = r.json()["session_id"]
    if view is not None:
        with client.websocket_connect(r.json()["ws_path"]) as ws:
            receive_until(ws, "status")
            ws.send_text(json.dumps({"type": "replica", "v": 1, **view}))
            receive_until(ws, "init")
    client.get(f"/api/sessions/{sid}/summary")  # waits for the simulation to end
    text = client.get(f"/api/sessions/{sid}/export?format=jsonl").text
    return sid, [json.loads(x) for x in text.splitlines()]


def states_by_record(records: list[dict]) -> list[dict[str, int]]:
    """Each record's requests per state, from its lists (preempted until scheduled again; a
    P/D decode replica's admitted requests waiting for their remote KV apart)."""
    out, preempted = [], set()
    for r in records:
        preempted |= set(r["preempted"])
        preempted -= set(r["resumed"]) | {e["id"] for e in r["scheduled"]}
        kinds = [e["kind"] for e in r["scheduled"]]
        kv = set(r.get("waiting_for_kv", ())) - preempted
        out.append({"prefill": kinds.count("prefill"), "decode": kinds.count("decode"),
                    "stalled": len(r["running"]) - len(kinds),
                    "preempted": sum(1 for x in r["waiting"] if x in preempted),
                    "waiting_for_kv": sum(1 for x in r["waiting"] if x in kv),
                    "waiting": sum(1 for x in r["waiting"] if x not in preempted | kv)})
    return out


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def segments(records: list[dict]) -> list[tuple[float, float, dict[str, int], bool]]:
    """(start, end, requests per state, held) of each step, and of each idle time a P/D decode
    replica spends waiting for remote KV: a record that lists requests waiting for their KV
    keeps its waiting requests waiting (each in its state) until the next record starts, the
    one its KV arrived in (a step of no time admits them: docs/pd.md, rule D1')."""
    out = []
    counts = states_by_record(records)
    for k, (r, c) in enumerate(zip(records, counts, strict=True)):
        end = r["time_s"] + r["step_time_ms"] / 1000
        out.append((r["time_s"], end, c, False))
        if c["waiting_for_kv"] and k + 1 < len(records) and records[k + 1]["time_s"] > end:
            held = {s: 0 for s in c} | {s: c[s] for s in ("waiting", "waiting_for_kv",
                                                          "preempted")}
            out.append((end, records[k + 1]["time_s"], held, True))
    return out


def check_density(data: dict, records: list[dict], bins: int) -> int:
    """The answer's columns are the records' time-weighted counts per state (null where no step
    ran and nothing waited for KV); how many bins are such gaps."""
    t0, width = data["start_s"], data["bin_s"]
    assert t0 == pytest.approx(records[0]["time_s"])
    assert data["states"] == STATES
    gaps = 0
    for b in range(bins):
        lo, hi = t0 + b * width, t0 + (b + 1) * width
        busy = 0.0
        expected = dict.fromkeys(data["states"], 0.0)
        for a, z, c, _ in segments(records):
            part = overlap(a, z, lo, hi)
            busy += part
            for k in expected:
                expected[k] += c[k] * part / width
        for k, v in expected.items():
            got = data["columns"][k][b]
            if busy == 0:
                assert got is None
            else:
                assert got == pytest.approx(v, abs=1e-6), (b, k)
        gaps += busy == 0
    return gaps


def test_density_is_the_time_weighted_count_of_each_state_and_idle_bins_are_gaps(client):
    sid, records = session(client)
    assert any(c["preempted"] for c in states_by_record(records)), "the workload must preempt"
    bins = 40
    data = client.get(f"/api/sessions/{sid}/timeline", params={"bins": bins}).json()
    assert check_density(data, records, bins) > 0  # a request every 0.5 s leaves idle bins
    assert not any(data["columns"]["waiting_for_kv"])  # a colocated engine: none, ever
    assert data["rows"] is None or len(data["rows"]) <= 200


def test_a_decode_replica_s_density_counts_the_requests_waiting_for_remote_kv(client):
    sid, records = session(client, {"requests": PD_REQUESTS}, PD,
                           view={"pool": "decode", "replica": 0})
    assert any(r.get("waiting_for_kv") for r in records), "the decode replica's records"
    bins = 20
    data = client.get(f"/api/sessions/{sid}/timeline", params={"bins": bins}).json()
    check_density(data, records, bins)
    # each request decodes while the ones after it wait for their KV on the one link: every
    # waiting request there waits for KV, none plainly
    assert any(data["columns"]["waiting_for_kv"])
    assert not any(data["columns"]["waiting"])


def test_a_window_in_which_a_decode_replica_idles_shows_its_requests_waiting_for_kv(client):
    """r0 has finished and r1..r3 wait for their KV, with no step for 0.8 s: the window within
    that idle time shows them waiting_for_kv throughout, in rows and density alike."""
    sid, records = session(client, {"requests": PD_REQUESTS}, PD,
                           view={"pool": "decode", "replica": 0})
    k = next(k for k, r in enumerate(records) if r["finished"] and r.get("waiting_for_kv"))
    end = records[k]["time_s"] + records[k]["step_time_ms"] / 1000
    waiting = records[k]["waiting_for_kv"]
    gap = (end, records[k + 1]["time_s"])
    assert len(waiting) == 3 and gap[1] - gap[0] > 0.5, (waiting, gap)
    start, stop = gap[0] + 0.1, gap[1] - 0.1
    data = client.get(f"/api/sessions/{sid}/timeline",
                      params={"start_s": start, "end_s": stop, "bins": 8}).json()
    assert data["columns"]["waiting_for_kv"] == pytest.approx([3.0] * 8)
    assert all(not any(data["columns"][s]) for s in STATES if s != "waiting_for_kv")
    rows = {row["id"]: row["spans"] for row in data["rows"]}
    assert rows == {rid: [["waiting_for_kv", start, stop]] for rid in waiting}


def test_a_window_with_few_requests_has_rows_whose_time_per_kind_matches_the_records(client):
    sid, records = session(client)
    mid = records[len(records) // 2]
    start, end = mid["time_s"], mid["time_s"] + 0.4
    data = client.get(f"/api/sessions/{sid}/timeline",
                      params={"start_s": start, "end_s": end, "bins": 10}).json()
    assert data["rows"] is not None
    got = {row["id"]: row for row in data["rows"]}
    expected: dict[str, dict[str, float]] = {}
    order: list[str] = []
    preempted: set[str] = set()
    for r in records:
        preempted |= set(r["preempted"])
        preempted -= set(r["resumed"]) | {e["id"] for e in r["scheduled"]}
        part = overlap(r["time_s"], r["time_s"] + r["step_time_ms"] / 1000, start, end)
        if part <= 0:
            continue
        kinds = {e["id"]: e["kind"] for e in r["scheduled"]}
        who = [(x, kinds.get(x, "stalled")) for x in r["running"]] + [
            (x, "preempted" if x in preempted else "waiting") for x in r["waiting"]]
        for rid, kind in who:
            if rid not in expected:
                order.append(rid)
            per = expected.setdefault(rid, {})
            per[kind] = per.get(kind, 0.0) + part
    assert [row["id"] for row in data["rows"]] == order and order
    for rid, per in expected.items():
        spans = got[rid]["spans"]
        assert all(start <= a < b <= end for _, a, b in spans), spans
        totals: dict[str, float] = {}
        for kind, a, b in spans:
            totals[kind] = totals.get(kind, 0.0) + b - a
        assert totals == pytest.approx(per, abs=1e-9), rid
    # its colour index is the request's place in the workload
    assert {row["index"] for row in data["rows"]} <= set(range(40))


def test_more_requests_than_max_rows_gives_density_only(client):
    sid, _ = session(client)
    data = client.get(f"/api/sessions/{sid}/timeline", params={"max_rows": 1}).json()
    assert data["rows"] is None
    assert any(v for v in data["columns"]["waiting"] if v)


@pytest.mark.parametrize(("params", "field"), [
    ({"start_s": 5, "end_s": 5}, "end_s"),
    ({"start_s": 5, "end_s": 2}, "end_s"),
    ({"bins": 0}, "bins"),
    ({"bins": 4001}, "bins"),
    ({"max_rows": -1}, "max_rows"),
    ({"start_s": "soon"}, "start_s"),
    ({"end_s": "nan"}, "end_s"),
    ({"engine": 4}, "engine"),
])
def test_bad_parameters_are_422_naming_the_field(client, params, field):
    sid, _ = session(client, {"synthetic": {"num_requests": 4, "seed": 1}}, {})
    r = client.get(f"/api/sessions/{sid}/timeline", params=params)
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    named = detail["field"] if isinstance(detail, dict) else detail[0]["loc"][-1]
    assert named == field, detail


def test_an_unknown_session_is_404(client):
    r = client.get("/api/sessions/nosuchsessionxxxxxxxx/timeline")
    assert r.status_code == 404 and r.json()["detail"]["field"] == "session_id"


@pytest.mark.parametrize("kind", ["colocated", "pd"])
def test_a_long_window_is_binned_by_the_bin_each_step_starts_in(client, monkeypatch, kind):
    """Steps whole in the bin they start in; a decode replica's idle time waiting for remote KV
    (few spans, each long) split across the bins it covers."""
    from servescope.api.reports import timeline
    monkeypatch.setattr(timeline, "MAX_EXACT_RECORDS", 1)  # every window is "long"
    sid, records = (session(client) if kind == "colocated" else
                    session(client, {"requests": PD_REQUESTS}, PD,
                            view={"pool": "decode", "replica": 0}))
    bins = 30
    data = client.get(f"/api/sessions/{sid}/timeline", params={"bins": bins}).json()
    t0, width = data["start_s"], data["bin_s"]
    assert data["rows"] is None
    sums = {b: dict.fromkeys([*STATES, "busy"], 0.0) for b in range(bins)}
    for a, z, c, held in segments(records):
        parts = ({b: overlap(a, z, t0 + b * width, t0 + (b + 1) * width) for b in range(bins)}
                 if held else {min(bins - 1, int((a - t0) / width)): z - a})
        for b, dt in parts.items():
            sums[b]["busy"] += dt
            for k, v in c.items():
                sums[b][k] += v * dt / width
    assert any(sums[b]["waiting_for_kv"] for b in range(bins)) == (kind == "pd")
    for b in range(bins):
        for k in data["states"]:
            got = data["columns"][k][b]
            if sums[b]["busy"] == 0:  # no step, or only steps of no time, and no KV awaited
                assert got is None
            else:
                assert got == pytest.approx(sums[b][k], abs=1e-6), (b, k)
