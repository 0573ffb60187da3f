"""Qwen-Bailian usage traces (traces/bailian.py) and the session ids other formats carry."""

import json

import pytest
from support.trace_load import load

from servescope.traces.errors import TraceFormatError
from servescope.traces.recording import request_rows
from servescope.traces.registry import detect
from servescope.traces.workload_json import read_rows


def rows_file(write, rows):
    return write("qwen_traceA_blksz_16.jsonl", "".join(json.dumps(r) + "\n" for r in rows))


def row(chat, parent, t, n, hashes):
    return {"chat_id": chat, "parent_chat_id": parent, "timestamp": t, "input_length": n,
            "output_length": 3, "type": "text", "turn": 1, "hash_ids": hashes}


def test_turns_follow_their_parents_to_the_first_turns_chat(write):
    # chat 5 -> 6 -> 9 is one conversation; 7 is another; 8's parent 42 is not in the file
    path = rows_file(write, [row(5, -1, 10.0, 40, [1, 2, 3]), row(7, -1, 10.5, 16, [4]),
                             row(6, 5, 11.0, 60, [1, 2, 3, 5]), row(8, 42, 11.2, 16, [6]),
                             row(9, 6, 12.0, 70, [1, 2, 3, 5, 7])])
    assert detect(path) == "bailian"
    specs, report = load(path, "bailian")
    assert [s.session_id for s in specs] == ["5", "7", "5", "42", "5"]
    assert [s.arrival_s for s in specs] == pytest.approx([0.0, 0.5, 1.0, 1.2, 2.0])  # seconds
    assert report.meta["num_sessions"] == 3


def test_hash_ids_are_16_token_blocks(write):
    specs, _ = load(rows_file(write, [row(1, -1, 0, 40, [1, 2, 3])]), "bailian")
    assert specs[0].prefix == (("h:1", 16), ("h:2", 16), ("h:3", 8))  # trimmed to 40 tokens


def test_a_chat_id_that_is_no_integer_is_named(write):
    with pytest.raises(TraceFormatError, match="chat_id"):
        load(rows_file(write, [row("x", -1, 0, 40, [1])]), "bailian")


def test_mooncake_rows_keep_a_session_id_when_they_have_one(write):
    path = write("m.jsonl", json.dumps({"timestamp": 0, "input_length": 10, "output_length": 1,
                                        "hash_ids": [1], "session_id": "u1"}) + "\n"
                 + json.dumps({"timestamp": 5, "input_length": 10, "output_length": 1,
                               "hash_ids": [2]}) + "\n")
    assert detect(path) == "mooncake"
    specs, _ = load(path, "mooncake")
    assert [s.session_id for s in specs] == ["u1", None]


def test_burstgpt_v3_session_ids(write):
    path = write("b.csv", "Timestamp,Session ID,Model,Request tokens,Response tokens,"
                 "Total tokens,Log Type,Elapsed time\n"
                 "1,s9,ChatGPT,10,5,15,Conversation log,2\n2,,ChatGPT,10,5,15,API log,2\n")
    specs, _ = load(path, "burstgpt")
    assert [s.session_id for s in specs] == ["s9", None]


def test_workload_json_session_ids_round_trip():
    specs = read_rows([{"id": "a", "arrival_s": 0, "prompt_len": 4, "output_len": 1,
                        "session_id": "u1"},
                       {"id": "b", "arrival_s": 0, "prompt_len": 4, "output_len": 1,
                        "session_id": 7},
                       {"id": "c", "arrival_s": 0, "prompt_len": 4, "output_len": 1}])
    assert [s.session_id for s in specs] == ["u1", "7", None]
    assert read_rows(request_rows(specs)) == specs
    with pytest.raises(TraceFormatError, match="session_id"):
        read_rows([{"id": "a", "arrival_s": 0, "prompt_len": 4, "output_len": 1,
                    "session_id": [1]}])
