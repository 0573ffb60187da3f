"""The classroom: followers see what the driver's page shows. Its engines' names travel with
`configure` (`labels`) into every viewer's init; its lesson and tour note (`lesson`) is relayed
to every viewer, and to a follower who joins later right after its init. A follower cannot set
either; a label list that does not match the configs is refused."""

from __future__ import annotations

import json

from support.server import receive, receive_until

NAMES = ["naive", "continuous batching + chunked prefill"]
NOTE = {"note": "Step 12. chat3 is preempted: its blocks go back to the pool.",
        "anchor": "preemption", "on": False, "tour": True}


def send(ws, **msg):
    ws.send_text(json.dumps({"v": 1, **msg}))


def driver_session(client):
    ctx = client.websocket_connect("/ws/sessions/new")
    ws = ctx.__enter__()
    send(ws, type="configure", configs=[{"policy": "naive"}, {"policy": "vllm-v1"}],
         labels=NAMES, workload={"preset": "demo"})
    init = receive_until(ws, "init")[-1]
    receive_until(ws, "status")
    return ctx, ws, init


def test_followers_get_the_drivers_names_and_lesson_note(client):
    ctx, driver, init = driver_session(client)
    sid = init["session_id"]
    try:
        assert [e["label"] for e in init["engines"]] == NAMES
        with client.websocket_connect(f"/ws/sessions/{sid}?follow=1") as follower:
            first = receive_until(follower, "status")
            assert first[0]["role"] == "follower"
            assert [e["label"] for e in first[0]["engines"]] == NAMES  # not "policy=naive"
            send(driver, type="lesson", **NOTE)
            relayed = receive_until(follower, "lesson")[-1]
            assert {k: relayed[k] for k in NOTE} == NOTE
            send(follower, type="lesson", note="the follower's own")
            err = receive(follower)
            assert err["type"] == "error" and err["code"] == "read_only"
        with client.websocket_connect(f"/ws/sessions/{sid}?follow=1") as late:
            kinds = [m["type"] for m in receive_until(late, "lesson")]
            assert kinds[0] == "init"  # the note comes after the init it belongs to
    finally:
        ctx.__exit__(None, None, None)


def test_labels_must_name_each_config_and_a_reconfigure_clears_the_note(client):
    ctx, driver, init = driver_session(client)
    session = client.app.state.registry.get(init["session_id"])
    try:
        send(driver, type="configure", configs=[{"policy": "naive"}, {"policy": "static"}],
             labels=["just one"], workload={"preset": "demo"})
        err = receive(driver)
        assert err["type"] == "error" and err["code"] == "bad_message"
        send(driver, type="lesson", note="x" * 2001)
        assert receive(driver)["code"] == "bad_message"
        send(driver, type="lesson", **NOTE)
        receive_until(driver, "lesson")
        assert session.lesson is not None
        send(driver, type="configure", config={"policy": "vllm-v1"}, workload={"preset": "demo"})
        assert receive_until(driver, "init")[-1]["engines"][0]["label"] == "policy=vllm-v1"
        assert session.lesson is None
    finally:
        ctx.__exit__(None, None, None)
