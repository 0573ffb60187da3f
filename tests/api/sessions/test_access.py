"""Who may drive a session: a new connection gets its own session and the driver token; follow
links, bare session ids and wrong tokens only watch (`read_only`, nothing changes); the session
list shows a caller only the sessions whose token it presents; a page for an unknown session is
a clear 404 page."""

from __future__ import annotations

import json

from support.server import receive, receive_until


def step(ws, n=1):
    ws.send_text(json.dumps({"type": "step", "v": 1, "n": n}))
    return receive_until(ws, "status")


def new_session(client):
    """Connect as a fresh visitor does and configure the demo; the init that comes back."""
    ws = client.websocket_connect("/ws/sessions/new")
    conn = ws.__enter__()
    conn.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
    init = receive_until(conn, "init")[-1]
    receive_until(conn, "status")
    return ws, conn, init


def test_each_new_connection_gets_its_own_session_and_token(client):
    a_ctx, a, init_a = new_session(client)
    b_ctx, b, init_b = new_session(client)
    try:
        assert init_a["role"] == init_b["role"] == "driver"
        assert init_a["session_id"] != init_b["session_id"]
        assert init_a["token"] and init_b["token"] and init_a["token"] != init_b["token"]
        assert step(a, 5)[-1]["iters"] == [4]
        b.send_text(json.dumps({"type": "pause", "v": 1}))
        assert receive_until(b, "status")[-1]["iters"] == [-1]  # a's steps did not move b
    finally:
        a_ctx.__exit__(None, None, None)
        b_ctx.__exit__(None, None, None)


def test_without_the_token_a_connection_only_watches(client):
    ctx, driver, init = new_session(client)
    sid, token = init["session_id"], init["token"]
    try:
        step(driver, 3)
        for path in (f"/ws/sessions/{sid}", f"/ws/sessions/{sid}?token=wrong{token}",
                     f"/ws/sessions/{sid}?follow=1&token={token}"):
            with client.websocket_connect(path) as ws:
                first = receive_until(ws, "status")
                assert first[0]["role"] == "follower" and first[0]["token"] is None, path
                for msg in ({"type": "step", "n": 4}, {"type": "reset"}, {"type": "play"},
                            {"type": "configure", "config": {"max_num_seqs": 2}}):
                    ws.send_text(json.dumps({"v": 1, **msg}))
                    err = receive(ws)
                    assert err["type"] == "error" and err["code"] == "read_only", (path, msg)
        session = client.app.state.registry.get(sid)
        assert session.position == [2] and not session.playing
        assert session.built.engines[0]["config"]["max_num_seqs"] == 32
        with client.websocket_connect(f"/ws/sessions/{sid}?token={token}") as second_tab:
            assert receive_until(second_tab, "status")[0]["role"] == "driver"
            assert step(second_tab, 2)[-1]["iters"] == [4]
    finally:
        ctx.__exit__(None, None, None)


def test_the_session_list_shows_only_the_callers_sessions(client):
    mine = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
    theirs = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
    assert client.get("/api/sessions").json() == []
    listed = client.get("/api/sessions", headers={"X-Session-Token": mine["token"]}).json()
    assert [s["session_id"] for s in listed] == [mine["session_id"]]
    both = client.get("/api/sessions", headers={
        "X-Session-Token": f"{mine['token']}, {theirs['token']}"}).json()
    assert {s["session_id"] for s in both} == {mine["session_id"], theirs["session_id"]}
    public = client.get(f"/api/sessions/{mine['session_id']}").json()
    assert "token" not in public and mine["token"] not in json.dumps(public)


def test_pages_for_new_followed_driven_and_unknown_sessions(client):
    mine = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
    sid, token = mine["session_id"], mine["token"]

    def boot(query):
        r = client.get("/" + query)
        assert r.status_code == 200, query
        text = r.text.split('<script id="boot" type="application/json">')[1].split("</script>")[0]
        return json.loads(text)

    assert boot("")["ws_path"] == "/ws/sessions/new"
    assert boot(f"?session={sid}&follow=1")["ws_path"] == f"/ws/sessions/{sid}?follow=1"
    assert boot(f"?session={sid}")["ws_path"] == f"/ws/sessions/{sid}?follow=1"
    assert boot(f"?session={sid}&token=nope")["follow"] is True
    driven = boot(f"?session={sid}&token={token}")
    assert driven["ws_path"] == f"/ws/sessions/{sid}?token={token}" and not driven["follow"]
    assert token not in json.dumps(boot(f"?session={sid}&follow=1&token={token}"))
    for bad in ("AAAAAAAAAAAAAAAAAAAAAA", "../etc", "x" * 60):
        r = client.get(f"/?session={bad}")
        assert r.status_code == 404 and "This session is not running" in r.text
        assert "Traceback" not in r.text and "main.js" not in r.text


def test_follow_qr_is_an_svg_of_the_follow_link(client):
    mine = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
    r = client.get(f"/api/sessions/{mine['session_id']}/follow-qr.svg")
    assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml"
    assert r.text.startswith("<svg") and "<path" in r.text
    assert client.get("/api/sessions/AAAAAAAAAAAAAAAAAAAAAA/follow-qr.svg").status_code == 404


def test_the_explainers_page_has_every_concept(client):
    r = client.get("/explain")
    assert r.status_code == 200 and "main.js" not in r.text
    for anchor in ("paged-attention", "block-pool", "batching", "token-budget",
                   "chunked-prefill", "prefix-caching", "preemption"):
        assert f'id="{anchor}"' in r.text, anchor
