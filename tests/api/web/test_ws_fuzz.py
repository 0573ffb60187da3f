"""Hypothesis-generated client messages: every reply is a valid server message, nothing
crashes, and the session still steps afterwards."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.server import receive, receive_until

JSONISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
              st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)
TYPES = st.sampled_from(["configure", "play", "pause", "step", "seek", "reset", "warp", ""])
FIELDS = st.sampled_from(["speed", "n", "step", "iter", "time_s", "config", "configs",
                          "workload", "v", "extra"])
CONFIG_KEYS = st.sampled_from(["block_size", "num_gpu_blocks", "max_num_seqs", "policy",
                               "max_num_batched_tokens", "enable_prefix_caching", "bogus"])
WORKLOADS = st.one_of(
    st.fixed_dictionaries({"preset": st.sampled_from(["demo", "nope", "../etc", ""])}),
    st.fixed_dictionaries({"synthetic": st.dictionaries(
        st.sampled_from(["num_requests", "request_rate", "prompt_len_min", "seed"]),
        st.one_of(st.integers(-3, 40), st.floats(-1, 50), st.text(max_size=3)), max_size=4)}),
    st.fixed_dictionaries({"trace": st.text(max_size=30)}),
    JSONISH)


@st.composite
def messages(draw):
    kind = draw(TYPES)
    msg = {"type": kind, "v": draw(st.sampled_from([1, 1, 1, 2, "1"]))}
    for key in draw(st.lists(FIELDS, max_size=3, unique=True)):
        if key == "config":
            msg[key] = draw(st.dictionaries(CONFIG_KEYS, JSONISH, max_size=3))
        elif key == "workload":
            msg[key] = draw(WORKLOADS)
        else:
            msg[key] = draw(JSONISH)
    if draw(st.booleans()) and kind in ("step", "seek"):
        msg["n" if kind == "step" else "iter"] = draw(st.integers(-2, 3000))
    return json.dumps(msg) if draw(st.integers(0, 9)) else draw(st.text(max_size=20))


def drain(ws):
    """Read until the viewer has caught up (a status follows every applied message)."""
    ws.send_text(json.dumps({"type": "pause", "v": 1}))
    return receive_until(ws, "status", limit=2000)


@settings(max_examples=60, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(messages(), min_size=1, max_size=6))
def test_fuzzed_client_messages_leave_a_working_session(client, batch):
    demo = client.post("/api/sessions", json={"workload": {"preset": "demo"}}).json()
    with client.websocket_connect(demo["ws_path"]) as ws:
        receive_until(ws, "status")
        for text in batch:
            ws.send_text(text)
        replies = drain(ws)  # every message in between was validated by receive()
        assert not [m for m in replies if m["type"] == "error"
                    and m["message"].startswith("internal error")], replies
        ws.send_text(json.dumps({"type": "configure", "v": 1, "workload": {"preset": "demo"}}))
        ws.send_text(json.dumps({"type": "reset", "v": 1}))
        at_start = False  # until the reset's keyframe (iter -1) and a status after it arrive
        for _ in range(5000):
            m = receive(ws)
            if m["type"] == "keyframe":
                at_start = m["iter"] == -1
            if at_start and m["type"] == "status" and m["iters"] == [-1]:
                break
        assert at_start
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 2}))
        got = []
        while len(got) < 2:
            m = receive(ws)
            if m["type"] == "step":
                got += m["records"]
        assert [r["i"] for r in got] == [0, 1]
