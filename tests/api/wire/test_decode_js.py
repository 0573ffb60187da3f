"""The browser's decoder (frontend/static/js/transport) against the server's packer: node
decodes streams the server packed, from record 0 and from every keyframe."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from support.spec_records import with_drafts

from servescope.api.wire.compact import expand_keyframe
from servescope.api.wire.keyframes import keyframe, resolve_final
from servescope.api.wire.keys import STATUS
from servescope.api.wire.serialize import pack, request_info
from servescope.api.wire.stream_state import StreamState
from servescope.api.wire.text import dump
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.scenarios.workloads import preset_workload

HERE = Path(__file__).parent
NODE = shutil.which("node")

CASES = [({}, "demo"), ({"enable_prefix_caching": False, "num_gpu_blocks": 120}, "demo"),
         ({"policy": "vllm-v0", "enable_prefix_caching": False}, "demo"),
         ({"policy": "static", "enable_prefix_caching": False}, "demo"),
         ({}, "kv-starvation"), ({}, "prefill-interference"),
         ({"async_scheduling": True}, "kv-starvation"),
         ({"speculative_config": {"method": "ngram", "num_speculative_tokens": 3}}, "demo"),
         ({"speculative_config": {"method": "eagle3", "num_speculative_tokens": 3},
           "async_scheduling": True}, "kv-starvation")]


def fixture(overrides, preset, every=7, drafts_seed=None):
    w = preset_workload(preset)
    config = EngineConfig.from_dict({**w.base_config, **overrides})
    info = request_info(w.specs)
    state = StreamState(info)
    packed, records = [], []
    kfs = [[-1, json.loads(dump(keyframe(state, 0, config.num_gpu_blocks)))]]
    rng = random.Random(drafts_seed)
    for record in Engine(config, w.specs).run():
        rec = record.to_dict()
        rec = json.loads(json.dumps(rec if drafts_seed is None else with_drafts(rec, rng)))
        records.append(rec)
        packed.append(pack(state, rec))
        if rec["iter"] % every == 0:
            kfs.append([rec["iter"], json.loads(dump(keyframe(state, 0, config.num_gpu_blocks)))])
        if len(records) >= 400:
            break
    plain = {at: resolve_final(expand_keyframe(kf), info) for at, kf in kfs}
    kf_blocks = {str(at): {"block_owner": [None if o is None else state.rid(o)
                                           for o in kf["block_owner"]],
                           "block_ref_count": kf["block_ref_count"],
                           "cached_blocks": kf["cached_blocks"],
                           "tables": {state.rid(r): b for r, b in kf["tables"]}}
                 for at, kf in plain.items()}
    kf_requests = {str(at): {r: {"status": STATUS[kf["status"][k]],
                                 "num_computed_tokens": kf["num_computed_tokens"][k],
                                 "num_output_tokens": kf["num_output_tokens"][k],
                                 "num_cached_tokens": kf["num_cached_tokens"][k],
                                 "num_preemptions": kf["num_preemptions"][k]}
                             for k, r in enumerate(state.ids)} for at, kf in plain.items()}
    return {"requests": list(info), "packed": packed, "records": records, "keyframes": kfs,
            "kf_requests": kf_requests, "kf_blocks": kf_blocks}


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize(("overrides", "preset"), CASES)
def test_js_decoder_matches_the_server(tmp_path, overrides, preset):
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(fixture(overrides, preset)))
    out = subprocess.run([NODE, str(HERE / "decode_check.mjs"), str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok ") and int(out.stdout.split()[1]) > 0


@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.parametrize("overrides", [{}, {"async_scheduling": True}])
def test_js_decoder_matches_the_server_on_entries_with_drafts(tmp_path, overrides):
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(fixture(overrides, "demo", drafts_seed=34)))
    out = subprocess.run([NODE, str(HERE / "decode_check.mjs"), str(path)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.startswith("ok ") and int(out.stdout.split()[1]) > 0


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_js_socket_reconnects_and_the_link_decodes():
    out = subprocess.run([NODE, str(HERE / "socket_check.mjs")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]
