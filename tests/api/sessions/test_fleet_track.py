"""api/sessions/fleet_track.py: a page's fleet resolves each replica as every door does
(core/resolve.py resolve_fleet), so a mixed fleet's replica takes vLLM's defaults for its own
GPU, not the fleet's."""

from __future__ import annotations

import json

from support.server import receive_until

from servescope.api.sessions.fleet_track import replica_configs

# vLLM 0.33 EngineArgs.get_batch_defaults (api server): a >= 70 GiB device that is not an A100
# gets max_num_batched_tokens 8192 and max_num_seqs 1024; an A100 keeps 2048 and 256.
MIXED = {"replicas": 2, "gpu": "H100", "num_gpu_blocks": 64,
         "replica_configs": [{}, {"gpu": "A100"}]}


def test_each_replica_takes_the_batch_defaults_of_its_own_gpu():
    budgets = [(c.gpu, c.max_num_batched_tokens, c.max_num_seqs) for c in replica_configs(MIXED)]
    assert budgets == [("H100", 8192, 1024), ("A100", 2048, 256)]


def test_each_replica_is_one_engine_and_a_given_setting_is_kept():
    configs = replica_configs({**MIXED, "max_num_seqs": 8})
    assert [(c.replicas, c.replica_configs, c.max_num_seqs) for c in configs] == [
        (1, None, 8), (1, None, 8)]


def test_the_viewed_replica_in_init_is_the_one_its_gpu_resolves(client):
    with client.websocket_connect("/ws/sessions/new") as ws:
        ws.send_text(json.dumps({"type": "configure", "v": 1, "config": MIXED,
                                 "workload": {"synthetic": {"num_requests": 4, "seed": 1}}}))
        receive_until(ws, "status")
        ws.send_text(json.dumps({"type": "replica", "v": 1, "replica": 1}))
        init = receive_until(ws, "init")[-1]
        engine = init["engines"][0]
        assert engine["fleet"]["replica"] == 1
        assert (engine["config"]["gpu"], engine["config"]["max_num_batched_tokens"]) == (
            "A100", 2048)
