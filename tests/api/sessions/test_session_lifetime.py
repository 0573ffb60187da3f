"""Sessions outlive their sockets only briefly: a session whose driver left is freed after the
grace period unless saved or followed; the session limit counts live sessions, so closed tabs
never lock the next visitor out."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from support.server import ORIGIN, FakeClock, make_settings, receive

from servescope.api.app import create_app

CONFIGURE = json.dumps({"type": "configure", "v": 1,
                        "workload": {"requests": [{"id": "a", "arrival_s": 0.0,
                                                   "prompt_len": 8, "output_len": 2}]}})


def app_with(tmp_path, clock: FakeClock, **settings):
    return create_app(make_settings(tmp_path, session_grace_s=5.0, session_idle_s=100.0,
                                    **settings), clock=clock)


def open_and_close(client: TestClient) -> str:
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(CONFIGURE)
        init = receive(ws)  # an error here would be the first message
        assert init["type"] == "init" and init["role"] == "driver", init
        return str(init["session_id"])


def test_a_closed_drivers_session_is_freed_after_the_grace_period(tmp_path):
    clock = FakeClock()
    with TestClient(app_with(tmp_path, clock), headers=ORIGIN) as c:
        registry = c.app.state.registry
        sid = open_and_close(c)
        clock.advance(4.0)
        assert registry.reap() == [] and sid in registry.sessions
        with c.websocket_connect(f"/ws/sessions/{sid}") as ws:  # the driver comes back in time
            assert receive(ws)["type"] == "init"
            clock.advance(50.0)
            assert registry.reap() == []  # connected: never reaped
        clock.advance(5.5)
        assert registry.reap() == [sid]


def test_a_saved_or_followed_session_outlives_the_grace_period(tmp_path):
    clock = FakeClock()
    with TestClient(app_with(tmp_path, clock), headers=ORIGIN) as c:
        registry = c.app.state.registry
        saved = open_and_close(c)
        assert c.post(f"/api/sessions/{saved}/scenario", json={"name": "kept"}).status_code == 201
        followed = open_and_close(c)
        with c.websocket_connect(f"/ws/sessions/{followed}?follow=1") as ws:
            assert receive(ws)["role"] == "follower"
            clock.advance(60.0)
            assert registry.reap() == []
            clock.advance(50.0)
            assert registry.reap() == [saved]  # past the idle time
        clock.advance(5.5)
        assert registry.reap() == [followed]


def test_64_connect_and_close_cycles_do_not_lock_out_the_next_visitor(tmp_path):
    clock = FakeClock()  # never advanced: every closed session is still in its grace period
    with TestClient(app_with(tmp_path, clock, max_sessions=64), headers=ORIGIN) as c:
        registry = c.app.state.registry
        for _ in range(64):
            open_and_close(c)
        assert len(registry.sessions) == 64
        with c.websocket_connect("/ws/sessions/new") as ws:
            ws.send_text(CONFIGURE)
            assert receive(ws)["role"] == "driver"
            assert len(registry.sessions) == 64


def test_the_limit_counts_live_sessions(tmp_path):
    clock = FakeClock()
    with TestClient(app_with(tmp_path, clock, max_sessions=2), headers=ORIGIN) as c:
        with c.websocket_connect("/ws/sessions/new") as one, \
                c.websocket_connect("/ws/sessions/new") as two:
            for ws in (one, two):
                ws.send_text(CONFIGURE)
                assert receive(ws)["type"] == "init"
            with c.websocket_connect("/ws/sessions/new") as three:
                err = receive(three)
                assert err["type"] == "error" and err["code"] == "limit"
