"""Parallel uploads against a real server: every answer is what was stored (201 means listed,
once), and after a kill -9 in the middle the listed set is the set answered 201, retries
included (a retried upload answers with the row already stored)."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from support.server import UPLOADS, Server


def body(k: int) -> tuple[bytes, str]:
    rows = [{"id": f"u{k}-{j}", "arrival_s": j * 0.01, "prompt_len": 16 + k, "output_len": 4}
            for j in range(50)]
    boundary = f"----servescope{k}"
    data = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"t{k}.json\"\r\nContent-Type: application/json\r\n\r\n"
            f"{json.dumps(rows)}\r\n--{boundary}--\r\n").encode()
    return data, f"multipart/form-data; boundary={boundary}"


def post(server: Server, k: int) -> tuple[int, dict[str, Any] | None]:
    data, kind = body(k)
    request = urllib.request.Request(server.url + "/api/traces", data=data, method="POST",
                                     headers={"Content-Type": kind, **UPLOADS})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, None
    except OSError:  # the server died mid-request: no answer
        return 0, None


def listed(server: Server) -> list[str]:
    return [t["trace_id"] for t in server.get("/api/traces")]


def test_twenty_parallel_uploads_each_answer_201_and_listed_once(tmp_path):
    # one client's 100 uploads: past the default hourly share, which tests/hostile checks
    server = Server(tmp_path / "data", SERVESCOPE_CLIENT_MAX_UPLOADS_PER_HOUR="1000")
    try:
        check_parallel_uploads(server)
    finally:
        server.stop()


def check_parallel_uploads(server: Server) -> None:
    answered: list[str] = []
    for round_ in range(5):
        with ThreadPoolExecutor(20) as pool:
            results = list(pool.map(lambda k: post(server, k), range(round_ * 20,
                                                                   round_ * 20 + 20)))
        assert [status for status, _ in results] == [201] * 20
        answered += [r["trace_id"] for _, r in results if r]
    ids = listed(server)
    assert len(ids) == len(set(ids)) == 100
    assert sorted(ids) == sorted(answered)


def test_after_kill_9_mid_uploads_the_listed_set_is_the_set_answered_201(tmp_path):
    server = Server(tmp_path / "data")
    results: dict[int, tuple[int, dict[str, Any] | None]] = {}
    enough = threading.Event()

    def one(k: int) -> None:
        results[k] = post(server, k)
        if sum(1 for s, _ in results.values() if s == 201) >= 10:
            enough.set()

    try:
        with ThreadPoolExecutor(12) as pool:
            for k in range(60):
                pool.submit(one, k)
            enough.wait(120)
            server.stop(kill=True)  # SIGKILL, while the rest are in flight or queued
    finally:
        server.stop(kill=True)
    ok = {k: r["trace_id"] for k, (s, r) in results.items() if s == 201 and r}
    failed = sorted(set(range(60)) - set(ok))
    print(f"kill -9: {len(ok)} answered 201, {len(failed)} without an answer")
    assert len(ok) >= 10 and failed, "the kill should land in the middle"
    assert all(s in (0, 201) for s, _ in results.values())
    again = Server(tmp_path / "data")
    try:
        ids = listed(again)
        assert set(ok.values()) <= set(ids)  # every 201 survived the kill
        print(f"after the restart: {len(ids)} listed; the rest retried")
        for k in failed:  # a client without an answer retries: 201, never a duplicate
            status, retried = post(again, k)
            assert status == 201 and retried is not None
            ok[k] = retried["trace_id"]
        ids = listed(again)
        assert len(ids) == len(set(ids)) == 60
        assert sorted(ids) == sorted(ok.values())
        blobs = sorted(p.name for p in (tmp_path / "data" / "blobs").iterdir())
        assert blobs == sorted(ids)
    finally:
        again.stop()
