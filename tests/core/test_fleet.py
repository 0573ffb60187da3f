"""The fleet: one replica is the single engine byte for byte (records and summary) on every
reference case and recording; several replicas are deterministic, keep every invariant after
every step, and each replica runs exactly the requests routed to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.factories import make_config, serialized
from support.paths import SHARED

from servescope.capture.replay import read_recording
from servescope.cli._scenario import load_workload
from servescope.core.config import EngineConfig
from servescope.core.engine import Engine
from servescope.core.fleet import Fleet, RoutedArrival
from servescope.core.invariants import check_invariants
from servescope.core.request import RequestSpec
from servescope.core.routers.make import make_router
from servescope.traces.workload_json import read_rows

RECORDINGS = Path(__file__).resolve().parents[2] / "traces" / "recordings"


def reference_cases() -> list[tuple[str, EngineConfig, list[RequestSpec]]]:
    """(name, config, workload) of every vLLM reference case (../shared/vllm-reference, when
    present) and every recording in traces/recordings."""
    cases = []
    directory = SHARED / "vllm-reference"
    for config_path in sorted(directory.glob("*.config.json")):
        name = config_path.name.removesuffix(".config.json")
        specs = load_workload(directory / f"{name.removesuffix('.async')}.workload.json")
        cases.append((name, EngineConfig.from_dict(json.loads(config_path.read_text())), specs))
    for path in sorted(RECORDINGS.glob("*.jsonl")):
        head, _ = read_recording(path)
        cases.append((path.stem, EngineConfig.from_dict(head["config"]),
                      read_rows(head["requests"])))
    return cases


CASES = reference_cases()


def records_of(fleet: Fleet) -> list[str]:
    return [serialized(item[1]) for item in fleet.run() if isinstance(item, tuple)]


@pytest.mark.parametrize("interval_ms", [0.0, 50.0])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_one_replica_is_the_single_engine(case: tuple[str, EngineConfig, list[RequestSpec]],
                                          interval_ms: float) -> None:
    _, config, specs = case
    single = [serialized(r) for r in Engine(config, specs).run()]
    fleet = Fleet([config], specs, make_router("least-kv", 1), scrape_interval_ms=interval_ms)
    assert records_of(fleet) == single
    engine = Engine(config, specs, records=False)
    engine.run_to_end()
    quiet = Fleet([config], specs, make_router("random", 1), records=False,
                  scrape_interval_ms=interval_ms)
    quiet.run_to_end()
    summary = quiet.summary()
    assert summary.pop("router")["decisions"] == len(specs)
    assert [r["completed"] for r in summary.pop("replicas")] == [engine.summary()["completed"]]
    assert json.dumps(summary) == json.dumps(engine.summary())


def workload(n: int = 40, gap_s: float = 0.004) -> list[RequestSpec]:
    return [RequestSpec(f"r{i}", 8 + (i * 7) % 30, 3 + (i * 5) % 17, arrival_s=i * gap_s,
                        session_id=f"s{i % 5}") for i in range(n)]


@pytest.mark.parametrize("router", ["random", "least-requests", "shortest-queue", "session"])
def test_a_fleet_is_deterministic(router: str) -> None:
    config = make_config(num_gpu_blocks=40)
    runs = []
    for _ in range(2):
        fleet = Fleet([config] * 3, workload(), make_router(router, 3, seed=5),
                      scrape_interval_ms=5.0)
        items = list(fleet.run())
        runs.append(([serialized(i[1]) for i in items if isinstance(i, tuple)],
                     [i for i in items if isinstance(i, RoutedArrival)],
                     json.dumps(fleet.summary())))
    assert runs[0] == runs[1]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_every_replica_keeps_its_invariants_after_every_step(asynchronous: bool) -> None:
    configs = [make_config(num_gpu_blocks=24, async_scheduling=asynchronous),
               make_config(num_gpu_blocks=40, max_num_batched_tokens=16,
                           async_scheduling=asynchronous)]
    fleet = Fleet(configs, workload(60, 0.002), make_router("least-requests", 2),
                  scrape_interval_ms=3.0)
    steps = [0, 0]
    for replica, engine in enumerate(fleet.engines):
        engine.fast_forward = False  # every step its own, so each is checked
        advance = engine.advance

        def checked(engine: Engine = engine, advance=advance, replica: int = replica):  # type: ignore[no-untyped-def]
            record = advance()
            if record is not None:
                check_invariants(engine.scheduler, record)
                steps[replica] += 1
            return record
        engine.advance = checked  # type: ignore[method-assign]
    items = list(fleet.run())
    routed = [i for i in items if isinstance(i, RoutedArrival)]
    assert len(routed) == 60 and min(steps) > 10
    for replica, engine in enumerate(fleet.engines):
        sent = {r.request_id for r in routed if r.replica == replica}
        assert {r.id for r in engine.done_requests} | {i for i, _ in engine.rejected} == sent
        assert engine.done and not engine.scheduler.has_unfinished


def test_a_replica_runs_its_share_as_a_single_engine_would() -> None:
    # a fleet's replica is today's engine fed what the router sent it: the same requests
    # given to an Engine up front give the same records
    config = make_config(num_gpu_blocks=40)
    specs = workload()
    fleet = Fleet([config] * 2, specs, make_router("round-robin", 2), scrape_interval_ms=0.0)
    per_replica: list[list[str]] = [[], []]
    for item in fleet.run():
        if isinstance(item, tuple):
            per_replica[item[0]].append(serialized(item[1]))
    for replica in (0, 1):
        share = [s for s in specs if fleet.replica_of[s.id] == replica]
        assert [serialized(r) for r in Engine(config, share).run()] == per_replica[replica]


def test_an_idle_replica_waits_for_its_next_request_without_jumping_past_it() -> None:
    config = make_config(num_gpu_blocks=40)
    specs = [RequestSpec("a", 8, 4, arrival_s=0.0), RequestSpec("b", 8, 4, arrival_s=1.0),
             RequestSpec("c", 8, 4, arrival_s=2.0)]
    fleet = Fleet([config] * 2, specs, make_router("round-robin", 2), scrape_interval_ms=0.0)
    fleet.run_to_end()
    first = {r.id: r.first_scheduled_time for e in fleet.engines for r in e.done_requests}
    assert first == {"a": 0.0, "b": 1.0, "c": 2.0}
