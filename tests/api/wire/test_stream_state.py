"""The stream state (api/wire/stream_state.py) folding hand-made records in."""

from __future__ import annotations

from typing import Any

from servescope.api.wire.stream_state import FINISHED, RUNNING, StreamState


def rec(iter_: int, **fields: Any) -> dict[str, Any]:
    """A record with nothing in it but `fields`."""
    empty: dict[str, Any] = {
        "iter": iter_, "step": iter_, "arrivals": [], "scheduled": [], "new": [], "resumed": [],
        "preempted": [], "finished": [], "released": [], "rejected": [], "new_blocks": {},
        "kv_events": [], "num_cached_tokens": {}, "running": [], "waiting": [],
        "num_usable_blocks": 8, "token_budget": 16, "max_num_seqs": 2, "kv_waste": {}}
    return {**empty, **fields}


def entry(rid: str, start: int, n: int) -> dict[str, Any]:
    return {"id": rid, "start": start, "n": n, "sampled": True}


def test_a_request_preempted_after_its_last_token_arrived_stays_finished() -> None:
    # vLLM's AsyncScheduler plans step 2 before step 1's tokens arrive: b's last token is in
    # flight, so b is not scheduled, and a's new block preempts it (Scheduler.schedule pops the
    # last running request). Step 1's update still delivers b's token and finishes it from the
    # queue (Scheduler.update_from_output: stopped_preempted_reqs). Record 1 carries that
    # update, record 2 the plan: the preemption comes after the finish in the stream.
    state = StreamState([{"id": "a", "prompt_len": 4, "output_len": 3},
                         {"id": "b", "prompt_len": 6, "output_len": 2}])
    state.apply(rec(0, arrivals=["a", "b"], new=["a", "b"], running=["a", "b"],
                    scheduled=[entry("a", 0, 4), entry("b", 0, 6)],
                    new_blocks={"a": [1], "b": [2, 3]}))
    state.apply(rec(1, scheduled=[entry("a", 4, 1), entry("b", 6, 1)], finished=["b"],
                    released=["b"], running=["a", "b"]))
    state.apply(rec(2, scheduled=[entry("a", 5, 1)], preempted=["b"], new_blocks={"a": [4]},
                    running=["a"], waiting=["b"]))
    assert state.status == {"a": RUNNING, "b": FINISHED}
    assert (state.computed["b"], state.outputs["b"], state.preemptions["b"]) == (7, 2, 1)
    assert state.tables == {"a": [1, 4]}
