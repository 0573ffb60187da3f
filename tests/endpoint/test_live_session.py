"""The explorer watching `serve --openai` (api/sessions/live.py) on a real server: the link it
prints opens the live session, whose viewers see the requests clients send under vLLM's engine
ids ("cmpl-<request_id>-0"), seek back over what has run, cannot reconfigure it, and whose
records save as a recording that replays to the same records."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from support.live import Client
from support.server import UPLOAD_TOKEN, UPLOADS, Server

IDS = ("live-a", "live-b", "live-c")
ENGINE_IDS = [f"cmpl-{i}-0" for i in IDS]  # vLLM's engine id for a completion's one prompt


def complete(server: Server, request_id: str, max_tokens: int) -> dict:
    r = httpx.post(server.url + "/v1/completions", timeout=30, json={
        "prompt": list(range(1, 21)), "max_tokens": max_tokens, "ignore_eos": True,
        "request_id": request_id})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def watched(endpoint: Server) -> tuple[Server, str, str]:
    """The server, the live session's id and its driver token (from the printed link)."""
    url = urlsplit(endpoint.printed("explorer at "))
    assert f"{url.scheme}://{url.netloc}" == endpoint.url and url.path == "/"
    query = parse_qs(url.query)
    return endpoint, query["session"][0], query["token"][0]


def arrivals(client: Client) -> list[str]:
    return [rid for rec in client.records.get(0, []) for rid in rec["arrivals"]]


async def watch(server: Server, sid: str, token: str) -> None:
    async with Client(f"{server.ws_url}/ws/sessions/{sid}?token={token}") as c:
        init = await c.until(lambda m: m["type"] == "init")
        assert (init["source"], init["role"]) == ("live", "driver")
        for k, request_id in enumerate(IDS):  # sent while the page watches: they come live
            await asyncio.to_thread(complete, server, request_id, 8 + k)
        await c.until(lambda m: m["type"] == "step" and set(ENGINE_IDS) <= set(arrivals(c)))
        assert [rid for rid in arrivals(c) if rid in ENGINE_IDS] == ENGINE_IDS

        await c.send(type="configure", config={"max_num_seqs": 2})
        refused = await c.until(lambda m: m["type"] == "error")
        assert (refused["code"], refused["field"]) == ("read_only", "type")
        assert "live endpoint" in refused["message"]
        await c.send(type="reset")
        refused = await c.until(lambda m: m["type"] == "error")
        assert (refused["code"], refused["field"]) == ("read_only", "type")

        c.records[0] = []  # seek back to the first record: it and those after it come again
        await c.send(type="seek", iter=0)
        await c.until(lambda m: m["type"] == "status" and m["iters"] == [0])
        assert c.last[0]["iter"] == 0 and c.last[0]["arrivals"] == [ENGINE_IDS[0]]

        # past the live edge there is nothing yet: the seek shows the newest record at once
        head = c.get(f"/api/sessions/{sid}")["simulated"][0]["num_records"] - 1
        await c.send(type="seek", time_s=1e6)
        edge = await c.until(lambda m: m["type"] == "status" and m["iters"] != [0])
        assert edge["iters"][0] >= head > 0


def test_the_printed_link_watches_requests_arrive_and_seeks_back(watched):
    asyncio.run(watch(*watched))


def test_a_saved_live_run_replays_to_the_same_records(watched):
    server, sid, _ = watched
    complete(server, "live-saved", 5)
    saved = httpx.get(f"{server.url}/api/sessions/{sid}/export?format=recording", timeout=30)
    assert saved.status_code == 200, saved.text
    head, *lines = saved.text.splitlines()
    header = json.loads(head)
    assert header["format"] == "servescope-steps"
    recorded = [json.loads(line) for line in lines]
    arrived = [rid for rec in recorded for rid in rec["arrivals"]]
    assert "cmpl-live-saved-0" in arrived
    assert [r["id"] for r in header["requests"]] == arrived
    assert [r["prompt_len"] for r in header["requests"]] == [20] * len(arrived)

    up = httpx.post(server.url + "/api/traces", files={"file": ("live.jsonl", saved.content)},
                    headers=UPLOADS, timeout=60)
    assert up.status_code == 201, up.text
    assert up.json()["format"] == "servescope-steps"
    replayed = asyncio.run(replay(server, up.json()["trace_id"]))
    assert replayed == recorded
    assert server.get(f"/api/sessions/{sid}")["simulated"][0]["error"] is None
    assert "Traceback" not in server.stderr()


async def replay(server: Server, trace_id: str) -> list[dict]:
    """The records a session replaying the uploaded recording shows, played to its end."""
    async with Client(f"{server.ws_url}/ws/sessions/new") as c:
        await c.send(type="configure", workload={"trace": trace_id, "upload_token": UPLOAD_TOKEN})
        init = await c.until(lambda m: m["type"] == "init")
        assert init["source"] == "replayed"
        sid = init["session_id"]
        await c.until(lambda m: m["type"] == "status")
        exported = await asyncio.to_thread(
            httpx.get, f"{server.url}/api/sessions/{sid}/export?format=jsonl", timeout=30)
        assert exported.status_code == 200, exported.text
        return [json.loads(line) for line in exported.text.splitlines()]
