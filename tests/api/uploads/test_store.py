"""The store: everything survives a reopen; what a crash leaves behind is cleaned up; writers in
parallel threads never collide; a retried upload answers with the row already stored; the cache
of loaded traces keeps to its bounds."""

from __future__ import annotations

import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor

from servescope.api.uploads.owner import owner_of
from servescope.api.uploads.recent import Recent
from servescope.api.uploads.store import Store, valid_id

ME = owner_of("first-client-token-1")


def put(store: Store, text: str = "[]", owner: str = ME) -> dict:
    part = store.temp_path()
    part.write_text(text)
    return store.commit_trace(part, "t.json", "workload-json", 0, {"num_requests": 0},
                              owner=owner)


def test_traces_and_scenarios_survive_a_reopen(tmp_path):
    store = Store(tmp_path)
    trace = put(store, '[{"id": "a", "prompt_len": 3, "output_len": 2}]')
    scenario = store.save_scenario("lesson 1", {"configs": [{}], "workload": {"preset": "demo"}})
    store.close()
    again = Store(tmp_path)
    assert again.trace(trace["trace_id"], ME) == trace
    assert json.loads(again.trace_path(trace["trace_id"], ME).read_text())[0]["id"] == "a"
    assert again.scenario(scenario["id"]) == scenario
    assert [s["name"] for s in again.scenarios()] == ["lesson 1"]


def test_ids_are_unguessable_and_never_paths(tmp_path):
    store = Store(tmp_path)
    ids = {put(store, f"[{'{}, ' * k}{{}}]")["trace_id"] for k in range(20)}
    assert len(ids) == 20 and all(valid_id(i) and len(i) >= 20 for i in ids)
    for hostile in ("../index.sqlite3", "..", "/etc/passwd", "a" * 100, "x/../../y", ""):
        assert store.trace(hostile, ME) is None and store.trace_path(hostile, ME) is None


def test_a_crash_leaves_no_entry_behind(tmp_path):
    store = Store(tmp_path)
    kept = put(store)
    (store.tmp / "inflight.part").write_text("half an upl")  # killed mid-upload
    (store.blobs / "OrphanBlobWithoutRow0000").write_text("[]")  # killed before commit
    store.db.execute("INSERT INTO traces (id, filename, format, num_requests, size, summary, "
                     "created_s) VALUES ('RowWithoutBlob000000000', 'x', 'f', 0, 0, '{}', 0)")
    # blob lost
    store.close()
    again = Store(tmp_path)
    assert [t["trace_id"] for t in again.traces(ME)] == [kept["trace_id"]]
    assert list(again.tmp.iterdir()) == []
    assert sorted(p.name for p in again.blobs.iterdir()) == [kept["trace_id"]]


def test_a_failed_commit_keeps_neither_row_nor_blob(tmp_path, monkeypatch):
    store = Store(tmp_path)
    part = store.temp_path()
    part.write_text("[]")

    def boom(*_args):
        raise OSError("disk full")

    monkeypatch.setattr("servescope.api.uploads.store.os.replace", boom)
    try:
        store.commit_trace(part, "t.json", "workload-json", 0, {}, owner=ME)
    except OSError:
        pass
    assert store.traces(ME) == [] and list(store.blobs.iterdir()) == []


def test_an_index_from_before_upload_options_opens_and_new_rows_keep_theirs(tmp_path):
    old = sqlite3.connect(tmp_path / "index.sqlite3")
    old.executescript("""
        CREATE TABLE traces (id TEXT PRIMARY KEY, filename TEXT NOT NULL, format TEXT NOT NULL,
          num_requests INTEGER, size INTEGER NOT NULL, summary TEXT NOT NULL,
          created_s REAL NOT NULL);
        INSERT INTO traces VALUES ('OldTraceFromBefore00000', 'old.csv', 'azure', 3, 10, '{}', 1);
    """)
    old.close()
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "OldTraceFromBefore00000").write_text("x")
    store = Store(tmp_path)
    assert store.trace("OldTraceFromBefore00000", ME) is None  # owned by nobody: found by none
    old_row = store.db.execute("SELECT options FROM traces").fetchone()
    assert json.loads(old_row[0]) == {}
    part = store.temp_path()
    part.write_text("[]")
    new = store.commit_trace(part, "t.json", "workload-json", 0, {}, {"sample_n": 5},
                             owner=ME)
    store.close()
    assert Store(tmp_path).trace(new["trace_id"], ME)["options"] == {"sample_n": 5}


def test_the_same_bytes_and_options_answer_with_the_stored_row(tmp_path):
    store = Store(tmp_path)
    first = put(store, '[{"id": "a", "prompt_len": 3, "output_len": 2}]')
    again = put(store, '[{"id": "a", "prompt_len": 3, "output_len": 2}]')
    assert again == first and len(store.traces(ME)) == 1
    assert sorted(p.name for p in store.blobs.iterdir()) == [first["trace_id"]]
    part = store.temp_path()
    part.write_text('[{"id": "a", "prompt_len": 3, "output_len": 2}]')
    other = store.commit_trace(part, "t.json", "workload-json", 0, {}, {"limit": 1}, owner=ME)
    assert other["trace_id"] != first["trace_id"] and len(store.traces(ME)) == 2


def test_parallel_writers_in_threads_each_commit_once(tmp_path):
    store = Store(tmp_path)

    def work(k: int) -> str:
        store.save_scenario(f"s{k}", {"configs": [{}], "workload": {"preset": "demo"}})
        return put(store, json.dumps([{"id": f"r{k}", "prompt_len": 3, "output_len": 2}]))[
            "trace_id"]

    with ThreadPoolExecutor(16) as pool:
        ids = list(pool.map(work, range(64)))
    assert len(set(ids)) == 64
    assert sorted(t["trace_id"] for t in store.traces(ME)) == sorted(ids)
    assert len(store.scenarios()) == 64
    assert sorted(p.name for p in store.blobs.iterdir()) == sorted(ids)


def test_a_failure_after_the_rename_removes_the_blob_with_the_row(tmp_path, monkeypatch):
    store = Store(tmp_path)

    def boom(*_args):
        raise OSError("fsync failed")

    monkeypatch.setattr("servescope.api.uploads.store._fsync_dir", boom)
    try:
        put(store)
    except OSError:
        pass
    else:
        raise AssertionError("the commit should have failed")
    assert store.traces(ME) == [] and list(store.blobs.iterdir()) == []


def test_loaded_traces_past_the_weight_bound_go_oldest_first_but_the_last_stays():
    recent = Recent(4, max_weight=100)
    for key, weight in (("a", 40), ("b", 40), ("c", 10)):
        recent.put(key, key.upper(), weight)
    assert [recent.get(k) for k in "abc"] == ["A", "B", "C"]
    recent.put("d", "D", 30)  # 120 in all: the oldest (a, got first above) goes
    assert [recent.get(k) for k in "abcd"] == [None, "B", "C", "D"]
    recent.put("huge", "H", 500)  # over the bound alone: kept, and only it
    assert [recent.get(k) for k in ("b", "c", "d", "huge")] == [None, None, None, "H"]
    recent.put("e", "E", 1)
    assert recent.get("huge") is None and recent.get("e") == "E"
    count = Recent(2)  # no weight bound: the count alone
    for k in "xyz":
        count.put(k, k, 10**9)
    assert [count.get(k) for k in "xyz"] == [None, "y", "z"]


def test_an_upload_is_found_only_for_its_owner(tmp_path):
    store = Store(tmp_path)
    mine = put(store, '[{"id": "a", "prompt_len": 3, "output_len": 2}]')
    other = owner_of("second-client-token")
    assert store.trace(mine["trace_id"], other) is None
    assert store.trace_path(mine["trace_id"], other) is None
    assert store.traces(other) == [] and store.traces("") == []
    # the same bytes from another client are that client's own upload, not a link to mine
    theirs = put(store, '[{"id": "a", "prompt_len": 3, "output_len": 2}]', owner=other)
    assert theirs["trace_id"] != mine["trace_id"]
    assert [t["trace_id"] for t in store.traces(ME)] == [mine["trace_id"]]
    assert [t["trace_id"] for t in store.traces(other)] == [theirs["trace_id"]]
