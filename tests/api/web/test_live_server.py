"""A real `servescope serve` process with real websockets clients: several viewers and a
follower stay in step, seek, compare; uploads survive a restart and a kill mid-upload; a
viewer that stops reading ends at the newest state with server memory bounded (the
no-queue mechanism itself is shown deterministically in test_viewer.py)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
import urllib.request

from support.live import Client
from support.server import UPLOAD_TOKEN, UPLOADS, Server


def is_status(m):
    return m["type"] == "status"


def ws_path(server, sid, follow=False, token=None):
    query = "?follow=1" if follow else (f"?token={token}" if token else "")
    return f"{server.ws_url}/ws/sessions/{sid}{query}"


def test_viewers_and_a_follower_see_the_same_run_and_seek(server):
    demo = post(server, "/api/sessions", b'{"workload": {"preset": "demo"}}', "application/json")
    sid, token = demo["session_id"], demo["token"]

    async def main():
        async with Client(ws_path(server, sid, token=token)) as driver, \
                Client(ws_path(server, sid, token=token)) as other, \
                Client(ws_path(server, sid, follow=True)) as follower:
            viewers = (driver, other, follower)
            for c in viewers:
                await c.until(is_status)
            assert follower.init["role"] == "follower"
            await driver.send(type="play", speed=4.0)
            await driver.until(lambda m: driver.at() > 5, timeout=60)
            await driver.send(type="pause")
            for c in viewers:
                await c.until(lambda m: is_status(m) and not m["playing"])
            at = driver.status["iters"][0]
            assert at > 5
            for c in viewers:
                assert c.at() == at
            assert other.records[0] == driver.records[0] == follower.records[0]
            await driver.send(type="seek", iter=3)
            for c in viewers:
                await c.until(lambda m: is_status(m) and m["iters"] == [3])
                assert c.at() == 3 and "keyframe" in c.kinds[-4:]
            await follower.send(type="play", speed=1)
            err = await follower.until(lambda m: m["type"] == "error")
            assert err["code"] == "read_only"

    asyncio.run(main())


def test_frames_are_paced_and_coalesced(server):
    async def main():
        async with Client(f"{server.ws_url}/ws/sessions/new") as c:
            await c.send(type="configure", workload={"synthetic": {
                "num_requests": 2000, "request_rate": 100}})
            await c.until(is_status)
            # Timed from before `play`, so that a client the machine stalls (frames piling up
            # in its socket, then read at once) only lengthens `elapsed`: the server sent
            # frame N no sooner than its pacing allows after play, and we read it after that.
            start, frames = time.monotonic(), 0
            await c.send(type="play", speed=5.0)
            while frames < 30:  # a count, not a time window: a loaded machine only slows it
                m = await c.recv()
                frames += m["type"] == "step"
            elapsed = time.monotonic() - start
            await c.send(type="pause")
            # at most max_fps (60) frames a second, with a little timer slack
            assert frames <= 2 + 1.1 * 60 * elapsed, (frames, elapsed)
            total = len(c.records[0])
            assert total > 2 * len([k for k in c.kinds if k == "step"])  # coalesced

    asyncio.run(main())


def test_compare_session_over_a_real_socket(server):
    async def main():
        async with Client(f"{server.ws_url}/ws/sessions/new") as c:
            await c.send(type="configure", configs=[{}, {"max_num_batched_tokens": 64},
                                                    {"policy": "vllm-v0",
                                                     "enable_prefix_caching": False}],
                         workload={"preset": "demo"})
            await c.until(is_status)
            assert len(c.init["engines"]) == 3
            await c.send(type="seek", time_s=0.4)
            await c.until(lambda m: is_status(m) and m["time_s"] > 0)
            starts = [c.last[k]["time_s"] for k in range(3)]
            assert all(t <= 0.4 for t in starts)
            assert c.records.get(1) or c.last[1]

    asyncio.run(main())


def multipart(body: bytes, boundary: str = "XyZ") -> tuple[bytes, str]:
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"t.json\"\r\nContent-Type: application/json\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    return head + body + tail, f"multipart/form-data; boundary={boundary}"


def post(server, path, data, ctype):
    req = urllib.request.Request(server.url + path, data=data, method="POST",
                                 headers={"Content-Type": ctype, **UPLOADS})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def test_uploads_and_scenarios_survive_a_restart(tmp_path):
    rows = [{"id": f"q{i}", "arrival_s": i * 0.01, "prompt_len": 50, "output_len": 4}
            for i in range(6)]
    data_dir = tmp_path / "data"
    first = Server(data_dir)
    try:
        trace = post(first, "/api/traces", *multipart(json.dumps(rows).encode()))
        sess = post(first, "/api/sessions", json.dumps(
            {"config": {"max_num_seqs": 2},
             "workload": {"trace": trace["trace_id"], "upload_token": UPLOAD_TOKEN}}).encode(),
            "application/json")
        scenario = post(first, f"/api/sessions/{sess['session_id']}/scenario",
                        b'{"name": "two at a time"}', "application/json")
    finally:
        first.stop()
    second = Server(data_dir)
    try:
        assert [t["trace_id"] for t in second.get("/api/traces")] == [trace["trace_id"]]
        assert second.get(f"/api/scenarios/{scenario['id']}")["name"] == "two at a time"
        again = post(second, "/api/sessions", json.dumps(
            {"workload": {"scenario": scenario["id"]}}).encode(), "application/json")
        assert again["engines"][0]["config"]["max_num_seqs"] == 2
        summary = second.get(f"/api/sessions/{again['session_id']}/summary")
        assert summary[0]["summary"]["completed"] == 6
    finally:
        second.stop()


def test_a_kill_during_upload_leaves_no_entry(tmp_path):
    data_dir = tmp_path / "data"
    first = Server(data_dir)
    body, ctype = multipart(b"[" + b'{"id": "a", "prompt_len": 5, "output_len": 2},' * 20000)
    sock = socket.create_connection(("127.0.0.1", first.port))
    sock.sendall((f"POST /api/traces HTTP/1.1\r\nHost: 127.0.0.1:{first.port}\r\n"
                  f"Content-Type: {ctype}\r\n"
                  f"Content-Length: {len(body) + 1000}\r\n\r\n").encode() + body[:len(body) // 2])
    deadline = time.monotonic() + 120  # a bound only against hanging when broken
    while not list((data_dir / "tmp").iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list((data_dir / "tmp").iterdir()), "the upload never started"
    first.stop(kill=True)
    sock.close()
    second = Server(data_dir)
    try:
        assert second.get("/api/traces") == []
        assert list((data_dir / "tmp").iterdir()) == []
        assert list((data_dir / "blobs").iterdir()) == []
    finally:
        second.stop()


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_slow_reader_reaches_the_newest_state_and_memory_stays_bounded(server):
    async def main():
        async with Client(f"{server.ws_url}/ws/sessions/new") as driver:
            await driver.send(type="configure", workload={"synthetic": {
                "num_requests": 3000, "request_rate": 200, "prompt_len_min": 16,
                "prompt_len_max": 600, "output_len_min": 20, "output_len_max": 300}},
                config={"num_gpu_blocks": 4000, "max_num_seqs": 256,
                        "max_num_batched_tokens": 4096})
            await driver.until(is_status)
            sid = driver.init["session_id"]
            # max_queue=1 and a small read buffer: this client stops draining its socket
            async with Client(ws_path(server, sid), max_queue=1, compression=None) as slow:
                await slow.until(is_status)
                before = rss_kib(server.proc.pid)
                await driver.send(type="play", speed=1000.0)
                # The slow viewer reads nothing while the driver takes a few MB (far more than
                # socket buffers hold) or the run ends, whichever comes first: no clock involved.
                sent_to_driver, ended = 0, False
                while sent_to_driver < 4_000_000 and not ended:
                    msg = await driver.recv(timeout=60)
                    sent_to_driver += len(json.dumps(msg))
                    ended = is_status(msg) and not msg["playing"]
                if not ended:
                    await driver.send(type="pause")
                    await driver.until(lambda m: is_status(m) and not m["playing"])
                grown = rss_kib(server.proc.pid) - before
                newest = driver.status["iters"][0]
                await slow.until(lambda m: is_status(m) and not m["playing"], timeout=30)
                assert slow.at() == newest
                assert grown < 80_000, f"server grew by {grown} KiB"

    asyncio.run(main())
