"""The P/D fleet (core/pd_fleet.py): llm-d's routing rule, TTFT in parts that sum, and the
behaviour the split is for: lower p99 ITL than a colocated fleet of the same GPU count."""

from __future__ import annotations

import numpy as np
import pytest
from support.factories import make_config

from servescope.core import metrics
from servescope.core.fleet import make_fleet
from servescope.core.kv_link import LinkSpec
from servescope.core.pd_fleet import PDFleet
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_config
from servescope.core.routers.make import make_router

LINK = LinkSpec("infiniband", 1e-3, 13.0)  # 1,000,000 B/s after 13 ms
BYTES_PER_TOKEN = 1000


def hand_made(specs: list[RequestSpec], threshold: int = 0, **config: object) -> PDFleet:
    configs = [make_config(**config)]
    return PDFleet(configs, configs, specs, make_router("round-robin", 1),
                   make_router("round-robin", 1), LINK, threshold, BYTES_PER_TOKEN)


def test_ttft_parts_sum_to_ttft_and_the_transfer_part_is_kv_transfer() -> None:
    specs = [RequestSpec("r0", 12, 4, arrival_s=0.0), RequestSpec("r1", 20, 3, arrival_s=0.004)]
    fleet = hand_made(specs)
    fleet.run_to_end()
    parts = fleet.ttft_parts()
    done = {r.id: r for e in fleet.decode.engines for r in e.done_requests}
    for request_id, part in parts.items():
        ttft_ms = metrics.request_metrics(done[request_id])["ttft_ms"]
        assert sum(part.values()) == pytest.approx(ttft_ms)
    summary = fleet.summary()
    transfer = summary["kv_transfer"]
    assert transfer["transfers"] == 2 and transfer["bytes"] == (12 + 20) * BYTES_PER_TOKEN
    assert transfer["mean_ms"] == pytest.approx(np.mean([p["transfer_ms"]
                                                         for p in parts.values()]))
    assert summary["completed"] == 2 and summary["pools"]["prefill"]["router"]["decisions"] == 2


def test_a_request_prefills_then_decodes_its_last_prompt_token() -> None:
    # the placeholder prefill step of 12 tokens: 10 + 0.02 x 12 = 10.24 ms; handed over then,
    # admitted at once, 13 + 12 ms of link
    fleet = hand_made([RequestSpec("r0", 12, 2, arrival_s=0.0)])
    fleet.run_to_end()
    part = fleet.ttft_parts()["r0"]
    assert part["prefill_queue_ms"] == 0.0
    assert part["transfer_ms"] == pytest.approx(25.0)
    load = fleet.connectors[0].loads["r0"]
    assert load.num_tokens == 12 and load.admitted_s == pytest.approx(0.01024)


def test_below_the_threshold_a_request_prefills_on_its_decode_replica() -> None:
    # llm-d's PrefixBasedPDDecider.decide: non-cached tokens < nonCachedTokens -> decode only
    specs = [RequestSpec("short", 8, 2, arrival_s=0.0), RequestSpec("long", 40, 2, arrival_s=0.0)]
    fleet = hand_made(specs, threshold=16)
    fleet.run_to_end()
    assert fleet.colocated == {"short"}
    assert set(fleet.connectors[0].loads) == {"long"}
    assert fleet.ttft_parts()["short"]["transfer_ms"] == 0.0


def test_the_prefill_side_frees_its_blocks_once_read() -> None:
    fleet = hand_made([RequestSpec("r0", 12, 2, arrival_s=0.0)])
    fleet.run_to_end()
    prefill = fleet.prefill.engines[0]
    assert prefill.scheduler.connector.read_s == {"r0": fleet.connectors[0].loads["r0"].done_s}
    assert "r0" in prefill.kv.tables  # nothing scheduled since: freed at its next schedule


def mixed_trace(n: int, seed: int = 0) -> list[RequestSpec]:
    """Short chats (200 in, 200 out) at a steady rate, with a long document prompt (6000 in)
    every fifth request."""
    rng = np.random.default_rng(seed)
    specs, t = [], 0.0
    for i in range(n):
        t += float(rng.exponential(0.06))
        long = i % 5 == 0
        specs.append(RequestSpec(f"r{i}", 6000 if long else 200, 32 if long else 200,
                                 arrival_s=t))
    return specs


def test_pd_lowers_p99_itl_against_a_colocated_fleet_of_the_same_gpus() -> None:
    config = resolve_config({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                             "async_scheduling": False}).config
    specs = mixed_trace(120)
    colocated = make_fleet([config, config], specs, records=False)
    colocated.run_to_end()
    pd = PDFleet([config], [config], specs, make_router("round-robin", 1),
                 make_router("round-robin", 1), LinkSpec.from_dict({}))
    pd.run_to_end()
    together, split = colocated.summary(), pd.summary()
    assert split["completed"] == together["completed"] == len(specs)
    assert split["p99_itl_ms"] < 0.8 * together["p99_itl_ms"]


def test_a_handoff_cuts_the_decode_replicas_quiet_stretch() -> None:
    # r0 decodes 200 tokens alone (a quiet stretch, planned ahead unrecorded); r1's prefill
    # ends while it runs, and its decode replica admits it at the next step boundary, not
    # after r0's stretch
    config = resolve_config({"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100",
                             "async_scheduling": False}).config
    fleet = PDFleet([config], [config], [RequestSpec("r0", 100, 200, arrival_s=0.0),
                                         RequestSpec("r1", 100, 2, arrival_s=0.3)],
                    make_router("round-robin", 1), make_router("round-robin", 1),
                    LinkSpec.from_dict({}))
    fleet.run_to_end()
    prefill_end = fleet.prefill.engines[0].done_requests[1].finish_time
    decode = fleet.decode.engines[0]
    step_s = decode.done_requests[0].token_times[-1] - decode.done_requests[0].token_times[-2]
    admitted = fleet.connectors[0].loads["r1"].admitted_s
    assert prefill_end <= admitted <= prefill_end + 1.5 * step_s
