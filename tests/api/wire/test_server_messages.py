"""Every message a session sends in a scripted run (init, keyframe, step, status, progress,
done, lesson, error) has a model in api/wire/protocol.py, and its text is exactly what that model
serializes to: the server builds its messages through the models."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from servescope.api.wire import protocol as P
from servescope.api.wire.text import Raw, Template, dump

MODELS = {m.model_fields["type"].default: m for m in get_args(get_args(P.ServerMessage)[0])}


def read(ws, until: str, seen: list[str], limit: int = 500) -> None:
    """Append the texts `ws` receives to `seen`, up to and including a message of type
    `until` (progress messages come whenever the simulation stores a batch)."""
    for _ in range(limit):
        seen.append(ws.receive_text())
        if json.loads(seen[-1])["type"] == until:
            return
    raise AssertionError(f"no {until} message in {limit}")


def scripted_run(client) -> list[str]:
    """Configure, step, a lesson note, a bad message, seek past the end, a fleet's steps, and a
    join to an unknown session."""
    seen: list[str] = []
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": {"max_num_seqs": 4},
                                 "workload": {"synthetic": {"num_requests": 10, "seed": 3}}}))
        read(ws, "status", seen)
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 3}))
        read(ws, "status", seen)
        ws.send_text(json.dumps({"type": "lesson", "v": 1, "note": "Step 3.", "anchor": None}))
        read(ws, "lesson", seen)
        ws.send_text("not json")
        read(ws, "error", seen)
        ws.send_text(json.dumps({"type": "seek", "v": 1, "iter": 10**6}))
        read(ws, "status", seen)
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": {"replicas": 2},
                                 "workload": {"synthetic": {"num_requests": 6, "seed": 3}}}))
        read(ws, "status", seen)
        ws.send_text(json.dumps({"type": "step", "v": 1, "n": 2}))
        read(ws, "fleet", seen)
    with client.websocket_connect("/ws/sessions/AAAAAAAAAAAAAAAAAAAAAA") as ws:
        read(ws, "error", seen)
    return seen


def as_sent(text: str, msg: P.Message) -> str:
    """What the model serializes to, the way the server sends it (a step frame's packed
    records are stored as compact JSON text and spliced in as they are)."""
    if isinstance(msg, P.Step):
        records = json.dumps(json.loads(text)["records"], separators=(",", ":"))
        return dump(P.Step.model_construct(engine=msg.engine, records=Raw(records)))
    return dump(msg)


@pytest.mark.filterwarnings("error:Pydantic serializer warnings")
def test_every_message_of_a_session_is_its_protocol_models_text(client):
    seen = scripted_run(client)
    kinds = set()
    for text in seen:
        kind = json.loads(text)["type"]
        assert kind in MODELS, f"the server sent a {kind!r} message, which has no model"
        msg = P.SERVER.validate_json(text)
        assert isinstance(msg, MODELS[kind])
        assert text == as_sent(text, msg), kind
        kinds.add(kind)
    assert kinds == set(MODELS)  # the script reaches every message the protocol defines
    progress = [m for m in map(json.loads, seen) if m["type"] == "progress"]
    assert all(e is None for m in progress for e in m["errors"])  # keyframes dumped cleanly


def test_a_frame_from_the_template_is_the_step_models_dump():
    items = '{"i":0,"t":0.0,"ms":1.5,"nf":7},{"i":1,"t":0.0015,"ms":2.0,"nf":6,"a":[0]}'
    template = Template(P.Step.model_construct(engine=2), "records")
    frame = template.fill(items)
    assert frame == dump(P.Step.model_construct(engine=2, records=Raw(f"[{items}]")))
    step = P.SERVER.validate_json(frame)
    assert isinstance(step, P.Step) and step.engine == 2 and [r.i for r in step.records] == [0, 1]
    assert step.records[1].a == [0]


def test_dump_sends_every_field_with_its_default():
    assert json.loads(dump(P.Error(message="m"))) == {
        "type": "error", "v": 1, "message": "m", "field": None, "code": "bad_message"}
    done = json.loads(dump(P.Done(engine=1, summary={"completed": 3}, num_records=9)))
    assert done == {"type": "done", "v": 1, "engine": 1, "summary": {"completed": 3},
                    "num_records": 9, "error": None}


def test_a_session_errors_code_is_sent_as_its_own_or_as_bad_message_when_rest_only():
    assert P.error_code("storage_full") == "storage_full"
    assert P.error_code("format") == "bad_message"  # an upload's (HTTP) code, not the socket's
    P.Error(message="m", code=P.error_code("format"))  # what the socket sends validates
