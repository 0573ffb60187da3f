"""Packing records against the stream state: exact round trips under generated workloads and
configs, keyframes equal to the engine's own block pool, decoding resumable from any keyframe."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.spec_records import with_drafts

from servescope.api.wire.compact import expand_keyframe
from servescope.api.wire.keyframes import FINAL, keyframe, load_keyframe
from servescope.api.wire.serialize import normalize, pack, request_info, unpack
from servescope.api.wire.stream_state import FINISHED, StreamState
from servescope.api.wire.text import dump
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.request import RequestSpec

CONFIGS = [
    {},
    {"enable_prefix_caching": False},
    {"long_prefill_token_threshold": 8},
    {"policy": "vllm-v0", "enable_prefix_caching": False},
    {"policy": "static", "enable_prefix_caching": False, "static_batch_size": 3},
    {"policy": "naive", "enable_prefix_caching": False},
    {"allocator": "pow2", "enable_prefix_caching": False, "max_model_len": 256},
    {"async_scheduling": True},
    {"async_scheduling": True, "enable_prefix_caching": False},
    {"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}},
    {"speculative_config": {"method": "eagle3", "num_speculative_tokens": 5},
     "async_scheduling": True},
]


def wire(obj):
    return json.loads(json.dumps(obj))


def sent_keyframe(state, config):
    """The keyframe message as the server sends it, read back."""
    return json.loads(dump(keyframe(state, 0, config.num_gpu_blocks)))


@st.composite
def runs(draw):
    n = draw(st.integers(1, 14))
    shared = draw(st.booleans())
    specs = [RequestSpec(f"r{i}", draw(st.integers(1, 120)), draw(st.integers(1, 30)),
                         arrival_step=draw(st.integers(0, 20)),
                         prefix=(("sys", 24),) if shared and i % 2 else ())
             for i in range(n)]
    base = {"block_size": 4, "num_gpu_blocks": draw(st.integers(40, 120)), "max_num_seqs": 6,
            "max_num_batched_tokens": draw(st.sampled_from([16, 32, 64]))}
    return EngineConfig.from_dict({**base, **draw(st.sampled_from(CONFIGS))}), specs


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs(), st.integers(0, 2**32 - 1))
def test_entries_with_drafts_round_trip_exactly_from_any_keyframe(run, seed):
    """A speculating run's entries (drafts inside `n`, accepted 0..drafts or -1) decode to
    the same records, from record 0 and from every keyframe; the state counts a verify's
    accepted drafts plus one token out and rolls its rejected drafts back."""
    config, specs = run
    rng = random.Random(seed)
    info = request_info(specs)
    enc, dec = StreamState(info), StreamState(info)
    packed, keyframes, records = [], {-1: sent_keyframe(enc, config)}, []
    for record in Engine(config, specs).run():
        rec = wire(with_drafts(record.to_dict(), rng))
        outputs = dict(enc.outputs)
        records.append(rec)
        packed.append(wire(pack(enc, rec)))
        assert "sd" in packed[-1] or not rec["scheduled"]
        assert unpack(dec, packed[-1]) == rec
        for e in rec["scheduled"]:
            gained = enc.outputs.get(e["id"], 0) - outputs.get(e["id"], 0)
            want = 0 if not e["sampled"] or e["accepted"] < 0 else 1 + e["accepted"]
            # all of them, or as many as reach the output length (cut at max_tokens)
            cap = info.output_len_of(e["id"]) - outputs.get(e["id"], 0)
            assert gained == want or gained == cap < want
            rolled = e["drafts"] - e["accepted"] if e["accepted"] >= 0 else 0
            assert enc.computed[e["id"]] == e["start"] + e["n"] - rolled - (want - gained)
        keyframes[rec["iter"]] = sent_keyframe(enc, config)
    for at, kf in keyframes.items():
        state = load_keyframe(info, kf)
        assert [unpack(state, p) for p in packed[at + 1:]] == records[at + 1:]


def test_a_run_without_speculation_packs_no_draft_keys():
    specs = [RequestSpec(f"r{i}", 20 + i, 6, arrival_step=i) for i in range(4)]
    config = EngineConfig.from_dict({"block_size": 4, "num_gpu_blocks": 64})
    enc, dec = StreamState(request_info(specs)), StreamState(request_info(specs))
    for record in Engine(config, specs).run():
        p = wire(pack(enc, record.to_dict()))
        assert not {"sd", "sa", "sz"} & set(p)
        assert all(set(e) == {"id", "n", "start", "sampled", "kind"}
                   for e in unpack(dec, p)["scheduled"])


def test_steady_drafts_pack_only_the_acceptances():
    """K drafts every step: `sd` names only a change against the last record, `sa` carries
    each verify's accepted count."""
    info = [{"id": "a", "prompt_len": 4, "output_len": 20}]
    enc, dec = StreamState(info), StreamState(info)
    first = normalize({"iter": 0, "step": 0, "time_s": 0.0, "arrivals": ["a"], "new": ["a"],
                       "running": ["a"], "scheduled": [{"id": "a", "n": 4, "start": 0,
                                                        "sampled": True, "kind": "prefill",
                                                        "drafts": 0, "accepted": 0}]})
    p0 = wire(pack(enc, first))
    assert p0["sd"] == [] and "sa" not in p0 and unpack(dec, p0) == first
    start = 4
    for k, accepted in enumerate((2, 0, 3)):
        rec = normalize({"iter": k + 1, "step": k + 1, "time_s": k + 1.0, "running": ["a"],
                         "scheduled": [{"id": "a", "n": 4, "start": start, "sampled": True,
                                        "kind": "decode", "drafts": 3, "accepted": accepted}]})
        p = wire(pack(enc, rec))
        assert p["sd"] == ([0, 3] if k == 0 else []) and p["sa"] == [accepted]
        assert not {"sn", "ss", "sm", "sk"} & set(p)  # a verify is predicted whole
        assert unpack(dec, p) == rec
        start += 1 + accepted
    assert enc.outputs["a"] == 1 + 3 + 1 + 4 and enc.computed["a"] == start


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_pack_unpack_is_exact_and_keyframes_match_the_pool(run):
    config, specs = run
    info = request_info(specs)
    engine = Engine(config, specs)
    enc, dec = StreamState(info), StreamState(info)
    packed, keyframes, records = [], {-1: sent_keyframe(enc, config)}, []
    while (record := engine.step()) is not None:
        rec = wire(record.to_dict())
        records.append(rec)
        packed.append(wire(pack(enc, rec)))
        assert unpack(dec, packed[-1]) == rec
        keyframes[rec["iter"]] = sent_keyframe(enc, config)
        kf = expand_keyframe(keyframes[rec["iter"]])
        # a finished request's final counts travel as marks, and load back as the counts
        finished = [k for k, rid in enumerate(enc.ids) if enc.status.get(rid) == FINISHED]
        assert all(kf["num_output_tokens"][k] == FINAL for k in finished)
        loaded = load_keyframe(info, keyframes[rec["iter"]])
        for mine, theirs in ((loaded.computed, enc.computed), (loaded.outputs, enc.outputs)):
            assert mine == {rid: n for rid, n in theirs.items() if n}
        owners: dict[int, int | str] = {}  # a block's owner: the first table holding it
        for rid, blocks in enc.tables.items():
            for b in blocks:
                owners.setdefault(b, enc.ref(rid))
        assert kf["block_owner"] == [owners.get(b) for b in range(len(kf["block_owner"]))]
        # (under async the pool already holds the next step's blocks; the stream has not yet)
        if config.allocator == "paged" and not config.async_scheduling:
            pool = engine.kv.pool
            assert kf["block_ref_count"][1:] == pool.ref_cnt[1:]
            hashed = [b for b in range(1, pool.num_gpu_blocks) if pool.block_hash[b] is not None]
            assert kf["cached_blocks"] == hashed
    for at, kf in keyframes.items():  # a late joiner decodes on from any keyframe
        state = load_keyframe(info, kf)
        assert [unpack(state, p) for p in packed[at + 1:]] == records[at + 1:]


def test_packed_decode_frames_are_small():
    specs = [RequestSpec(f"r{i}", 64 + i, 200, arrival_step=0) for i in range(256)]
    config = EngineConfig.from_dict({"block_size": 16, "num_gpu_blocks": 10000,
                                     "max_num_seqs": 256, "max_num_batched_tokens": 8192})
    state = StreamState(request_info(specs))
    sizes = []
    for record in Engine(config, specs).run():
        rec = record.to_dict()
        text = json.dumps(pack(state, rec), separators=(",", ":"))
        if len(rec["scheduled"]) == 256:
            sizes.append(len(text))
    sizes.sort()
    assert sizes and sizes[len(sizes) // 2] < 2048
    full = len(json.dumps(rec, separators=(",", ":")))
    assert full > 5 * sizes[len(sizes) // 2] or len(rec["scheduled"]) < 256


def test_normalize_fills_fields_older_recordings_lack():
    rec = normalize({"iter": 0, "step": 0, "time_s": 0.0, "scheduled": [], "running": [],
                     "waiting": [], "finished": ["a"]})
    assert rec["released"] == ["a"] and rec["new_blocks"] == {} and rec["kv_usage"] == 0.0
    state = StreamState([])
    assert unpack(StreamState([]), wire(pack(state, rec))) == rec


def test_ids_outside_the_request_list_travel_as_strings():
    state, dec = StreamState([{"id": "a", "prompt_len": 4}]), StreamState(
        [{"id": "a", "prompt_len": 4}])
    rec = normalize({"iter": 0, "step": 0, "time_s": 0.0, "arrivals": ["a", "zz"],
                     "scheduled": [{"id": "zz", "n": 3, "start": 0, "sampled": True,
                                    "kind": "prefill"}],
                     "new": ["zz"], "running": ["zz"], "waiting": ["a"],
                     "new_blocks": {"zz": [1]}, "num_usable_blocks": 8, "num_free_blocks": 7,
                     "kv_usage": 0.125})
    p = wire(pack(state, rec))
    assert "zz" in p["a"] and p["a"][0] == 0
    assert unpack(dec, p) == rec


def test_a_waste_that_keeps_its_keys_travels_as_its_changes_else_whole():
    """"kd" gives kv_waste's changed values by position; where positions would not do (other
    keys or order, a key that is a number, a None value) "kw" gives it whole. Either decodes to
    the record's own kv_waste."""
    wastes = [{"used": 4, "free": 2}, {"used": 4, "free": 2}, {"used": 5, "free": 2},
              {"used": 6, "free": 1}, {"free": 1, "used": 6}, {"free": 1, "used": 7},
              {"free": 1, "used": 7, "x": 0}, {"free": None, "used": 7, "x": 0},
              {"free": 2, "used": 7, "x": 0}, {"1": 3, "0": 2}, {"1": 4, "0": 2}]
    state, dec = StreamState([]), StreamState([])
    sent = []
    for k, waste in enumerate(wastes):
        rec = normalize({"iter": k, "step": k, "time_s": float(k), "kv_waste": waste})
        p = wire(pack(state, rec))
        sent.append({key: p[key] for key in ("kw", "kd") if key in p})
        decoded = unpack(dec, p)
        assert decoded == rec and list(decoded["kv_waste"]) == list(waste)
    assert sent == [{"kw": wastes[0]}, {}, {"kd": [5, None]}, {"kd": [6, 1]},
                    {"kw": wastes[4]}, {"kd": [None, 7]}, {"kw": wastes[6]}, {"kw": wastes[7]},
                    {"kd": [2, None, None]}, {"kw": wastes[9]}, {"kw": wastes[10]}]


def test_counts_of_a_list_without_lengths_travel_as_they_are():
    """A final count is marked only where the request list gives both lengths (a replayed
    recording's list may not): elsewhere the keyframe sends the count itself."""
    requests = [{"id": "a"}, {"id": "b", "prompt_len": 4}, {"id": "c", "prompt_len": 3,
                                                            "output_len": 2}]
    state = StreamState(requests)
    for rid, computed, outputs in (("a", 5, 2), ("b", 5, 2), ("c", 4, 2)):
        state.status[rid], state.computed[rid], state.outputs[rid] = FINISHED, computed, outputs
    kf = expand_keyframe(sent_keyframe(state, EngineConfig(num_gpu_blocks=8)))
    assert kf["num_computed_tokens"] == [5, 5, FINAL] and kf["num_output_tokens"] == [2, 2, FINAL]
    loaded = load_keyframe(requests, kf)
    assert (loaded.computed, loaded.outputs) == (state.computed, state.outputs)
