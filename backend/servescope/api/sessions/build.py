"""Building a session's tracks from a configure message: resolve the workload, validate each
engine config over the workload's base config, and start one engine (or a replay) per track."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servescope.api.errors import BuildError, StorageError
from servescope.api.leaps.leap import REPLAY_NO_LEAP, why_no_leap
from servescope.api.leaps.leaping import Leaping
from servescope.api.leaps.scout import Job
from servescope.api.records.track_source import engine_source, replay_source
from servescope.api.sessions.fleet_track import (
    check_fleet_size,
    fleet_track,
    is_fleet,
    replica_configs,
)
from servescope.api.sessions.pd_track import pd_track
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.uploads.owner import owner_of
from servescope.api.uploads.store import Store
from servescope.api.uploads.trace_workload import stored_trace, with_fit_notes
from servescope.api.wire import protocol as P
from servescope.api.wire.serialize import request_info
from servescope.core import cost_model
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.engine import Engine
from servescope.core.pd_config import is_pd, pool_configs
from servescope.core.resolve import resolve_config
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.workloads import (
    Workload,
    WorkloadError,
    preset_workload,
    synthetic_workload,
    with_pool,
)
from servescope.traces import workload_json
from servescope.traces.errors import TraceDependencyError, TraceFormatError, shown


@dataclass
class Built:
    workload: P.WorkloadSpec
    source: P.RunSource
    preset: str | None
    engines: list[dict[str, Any]]
    tracks: list[Track]
    key: str = ""
    configs: list[dict[str, Any]] = field(default_factory=list)
    trace: dict[str, Any] | None = None  # an uploaded trace's name and provenance (init.trace)
    labels: list[str] | None = None  # the configure's names for the engines


async def build(configs: list[dict[str, Any]], workload: P.WorkloadSpec, settings: Settings,
                store: Store, prefix: Path, labels: list[str] | None = None,
                viewed: list[int] | None = None) -> Built:
    """The session's tracks, their stores at `prefix`-<k>.sqlite3, simulating in the background;
    `labels` name the engines as the driver's page does (else their config overrides do);
    `viewed`: the replica each fleet's track streams (default 0)."""
    resolved, configs = await resolve(workload, configs, store)
    if len(resolved.specs) > settings.max_requests_per_session:
        raise BuildError(f"{len(resolved.specs)} requests; this server allows at most "
                         f"{settings.max_requests_per_session} per session", "workload", "limit")
    if resolved.records is not None:
        _check_replay_configs(resolved.base_config, configs)
    # Engines, request tables and fit notes are proportional to the workload: off the loop.
    try:
        built = await asyncio.to_thread(_assemble, configs, workload, resolved, settings, prefix,
                                        labels, viewed or [0] * len(configs))
    except StorageError as err:
        raise BuildError(str(err), None, "storage_full" if err.full else "storage") from err
    for t in built.tracks:
        t.start()
    return built


def _assemble(configs: list[dict[str, Any]], workload: P.WorkloadSpec, resolved: Workload,
              settings: Settings, prefix: Path, labels: list[str] | None,
              viewed: list[int]) -> Built:
    info = request_info(resolved.specs)
    engines: list[dict[str, Any]] = []
    tracks: list[Track] = []
    try:
        for k, overrides in enumerate(configs):
            path = Path(f"{prefix}-{k}.sqlite3")
            where = f"configs[{k}]." * (len(configs) > 1)
            fleet: dict[str, Any] | None  # init's fleet entry (None: one engine)
            if is_pd({**resolved.base_config, **overrides}):
                given = {**resolved.base_config, **overrides}
                pools = _pd_pools(given, settings.max_gpu_blocks, where)
                track, config, fleet = pd_track(k, given, pools, resolved, info, settings,
                                                path, viewed[k])
                tracks.append(track)
                engines.append(_engine(track, config, resolved, overrides, labels, k, fleet))
                continue
            config = _config(resolved.base_config, overrides, k, len(configs))
            _check_pool(config, settings.max_gpu_blocks, where)
            given = with_pool({**resolved.base_config, **overrides})
            if is_fleet(config):
                check_fleet_size(config)
                _check_replica_pools(given, settings.max_gpu_blocks, where)
            track, config, fleet = (fleet_track(k, config, given, resolved, info, settings, path,
                                                viewed[k]) if is_fleet(config) else
                                    (*_track(k, config, resolved, info, settings, path), None))
            tracks.append(track)
            engines.append(_engine(track, config, resolved, overrides, labels, k, fleet))
        fits = [(e["label"], t.engine) for e, t in zip(engines, tracks, strict=True)]
        return Built(workload, "replayed" if resolved.records is not None else "simulated",
                     resolved.preset, engines, tracks, configs=configs, labels=labels,
                     trace=with_fit_notes(resolved.trace, resolved.specs, fits))
    except BaseException:
        for t in tracks:
            t.close()
        raise


def _engine(track: Track, config: EngineConfig, resolved: Workload, overrides: dict[str, Any],
            labels: list[str] | None, k: int, fleet: dict[str, Any] | None) -> dict[str, Any]:
    """Init's entry for engine k (a fleet's: its viewed replica's config and pool)."""
    blocks = config.num_gpu_blocks or 0
    return {"label": labels[k] if labels else _label(overrides, k), "config": config.to_dict(),
            "num_gpu_blocks": blocks, "block_size": config.block_size,
            "num_usable_blocks": max(0, blocks - 1),
            "memory_breakdown": _memory_breakdown(track, config),
            "not_modelled": _not_modelled(track, config),
            "acceptance_source": _acceptance_source(track, config, resolved), "fleet": fleet}


def _pd_pools(given: dict[str, Any], cap: int, where: str) -> dict[str, list[EngineConfig]]:
    """A P/D config's pools (core/pd_config.py), each replica's pool within the server's cap."""
    try:
        pools = pool_configs(given)
    except ConfigError as err:
        raise BuildError(str(err), f"{where}{err.field}", "config") from err
    except TypeError as err:
        raise BuildError(f"bad P/D config: {err}", f"{where}prefill", "config") from err
    for name, configs in pools.items():
        for config in configs:
            _check_pool(config, cap, f"{where}{name}.")
    return pools


def _check_replay_configs(base: dict[str, Any], configs: list[dict[str, Any]]) -> None:
    """A recording replays as it was run: its config cannot be changed or compared."""
    if len(configs) > 1:
        raise BuildError("a recorded run replays as it is; compare needs a simulated workload",
                         "configs")
    recorded = _config(base, {}, 0, 1)
    if _config(base, configs[0], 0, 1) != recorded:
        changed = sorted(k for k, v in configs[0].items() if recorded.to_dict().get(k) != v)
        raise BuildError("a recorded run replays with the config it was recorded with; it "
                         f"cannot change {', '.join(changed) or 'it'}", "config")


async def resolve(workload: P.WorkloadSpec, configs: list[dict[str, Any]],
                  store: Store) -> tuple[Workload, list[dict[str, Any]]]:
    try:
        if workload.preset is not None:
            return preset_workload(workload.preset), configs
        if workload.synthetic is not None:
            return await asyncio.to_thread(synthetic_workload, workload.synthetic), configs
        if workload.requests is not None:
            specs = workload_json.read_rows(workload.requests)
            return Workload({}, specs), configs
        if workload.trace is not None:
            return await asyncio.to_thread(stored_trace, store, workload.trace,
                                           owner_of(workload.upload_token)), configs
        scenario = store.scenario(workload.scenario or "")
        if scenario is None:
            raise BuildError(f"no saved scenario {shown(workload.scenario)}", "scenario",
                             "workload")
        inner = P.WorkloadSpec.model_validate(scenario["workload"])
        if inner.scenario is not None:
            raise BuildError("a scenario cannot name another scenario", "scenario", "workload")
        if inner.upload_token is None:  # a scenario on an upload: the configuring client's
            inner = inner.model_copy(update={"upload_token": workload.upload_token})
        chosen = (scenario.get("configs") or [{}]) if configs == [{}] else configs
        return (await resolve(inner, chosen, store))[0], chosen
    except TraceFormatError as err:
        raise BuildError(str(err), err.field or None, "workload") from err
    except TraceDependencyError as err:
        raise BuildError(str(err), "trace", "workload") from err
    except WorkloadError as err:
        raise BuildError(str(err), err.field, err.code) from err


def _config(base: dict[str, Any], overrides: dict[str, Any], k: int, n: int) -> EngineConfig:
    """The configure's settings over the workload's, resolved as every door resolves them
    (core/resolve.py); a null in the configure asks for vLLM's default."""
    try:
        return resolve_config(with_pool({**base, **overrides})).config
    except ConfigError as err:
        where = f"configs[{k}]." if n > 1 else ""
        raise BuildError(str(err), f"{where}{err.field}", "config") from err
    except TypeError as err:
        raise BuildError(f"bad config: {err}", "config", "config") from err


def _acceptance_source(track: Track, config: EngineConfig, resolved: Workload) -> str:
    """Where a speculating run's acceptances come from: a replayed recording's, else the
    engine's words for it (its summary's acceptance_source)."""
    if config.speculative is None:
        return "none"
    if resolved.records is not None or track.engine is None:
        return "recorded: the replayed recording"
    return str(track.engine.acceptance_source)


def _not_modelled(track: Track, config: EngineConfig) -> list[str]:
    """What the cost model leaves out of a priced engine's run (empty for replays)."""
    if track.engine is None or not track.engine.priced:
        return []
    return cost_model.not_modelled(config)


def _check_replica_pools(given: dict[str, Any], cap: int, where: str) -> None:
    """Each replica of a fleet within the server's cap (a replica_configs entry may ask for a
    pool of its own, given or derived from its own model and GPU)."""
    try:
        replicas = replica_configs(given)
    except (ConfigError, KeyError, ValueError):
        return  # fleet_track names what is wrong
    for i, replica in enumerate(replicas):
        _check_pool(replica, cap, f"{where}replica_configs[{i}].")


def _check_pool(config: EngineConfig, cap: int, where: str) -> None:
    """Refuse a pool over the server's cap before anything is allocated, given or derived
    whenever a GPU prices it (a catalog model or a model_config on a GPU with a small
    block_size can ask for millions of blocks)."""
    blocks = config.num_gpu_blocks
    how = ""
    if blocks is None and (config.model or config.model_config) is not None \
            and config.gpu is not None:
        try:
            blocks = cost_model.num_gpu_blocks(config)
        except (ConfigError, KeyError, ValueError, TypeError):
            return  # the engine names what is wrong
        how = (f" ({shown(config.model or 'model_config')} on {config.gpu}, "
               f"tensor_parallel_size {config.tensor_parallel_size}, block_size "
               f"{config.block_size} size it so; give num_gpu_blocks or a larger block_size)")
    if blocks is not None and blocks > cap:
        raise BuildError(f"num_gpu_blocks {blocks:,} is over this server's cap of {cap:,} "
                         f"(max_gpu_blocks){how}", f"{where}num_gpu_blocks", "config")


def _memory_breakdown(track: Track, config: EngineConfig) -> dict[str, float | int] | None:
    """The KV sizing of an engine the cost model prices (the numbers its pool came from when
    num_gpu_blocks was not given); None for the placeholder step time and for replays."""
    if track.engine is None or not track.engine.priced:
        return None
    return cost_model.memory_breakdown(config)


def _label(overrides: dict[str, Any], k: int) -> str:
    return ", ".join(f"{key}={value}" for key, value in overrides.items()) or f"engine {k}"


def _track(k: int, config: EngineConfig, resolved: Workload, info: Sequence[dict[str, Any]],
           settings: Settings, path: Path) -> tuple[Track, EngineConfig]:
    """The track and the config it runs (a model and GPU size the pool when blocks are not
    given)."""
    long = len(info) >= settings.leap_min_requests
    if resolved.records is not None:
        track = Track(k, replay_source(resolved.records), info, config.num_gpu_blocks or 0,
                      settings.keyframe_interval, settings.max_records_per_session, path,
                      enable_prefix_caching=config.enable_prefix_caching)
        track.no_leap = REPLAY_NO_LEAP if long else None
        return track, config
    try:  # priced as `servescope sim` and a sweep point price it (the API server's time too)
        config, step_time = prepare(config)
        engine = Engine(config, resolved.specs, step_time)
    except (ConfigError, KeyError, ValueError) as err:
        field = err.field if isinstance(err, ConfigError) else "config"
        raise BuildError(str(err), field, "config") from err
    config = engine.config
    track = Track(k, engine_source(engine), info, config.num_gpu_blocks or 0,
                  settings.keyframe_interval, settings.max_records_per_session, path,
                  summary=engine.summary, enable_prefix_caching=config.enable_prefix_caching)
    track.engine = engine
    specs = resolved.specs
    track.no_leap = why_no_leap(engine) if long else None
    if long and track.no_leap is None:
        track.leaping = Leaping(Job(config, len(specs), path, k, config.num_gpu_blocks or 0,
                                    settings.keyframe_interval), specs, settings.job_timeout_s)
    return track, config
