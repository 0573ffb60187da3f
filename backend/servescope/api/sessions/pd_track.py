"""A track whose engine is a P/D fleet (core/pd_fleet.py: a prefill pool and a decode pool
joined by KV links): the fleet runs on the track's thread, the viewed replica's records are the
track's (a lane: prefill replicas first, then decode), and every replica's records, the routed
arrivals and the KV transfers fold into the track's frames (api/records/pd_frames.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from servescope.api.errors import BuildError
from servescope.api.records.pd_frames import PDFrames, pd_source
from servescope.api.records.pd_meters import pd_meters
from servescope.api.sessions.fleet_track import FLEET_NO_LEAP
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.wire.fleet import MAX_VIEW_REPLICAS
from servescope.api.wire.pd import POOLS
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.kv_link import LinkSpec
from servescope.core.pd_config import pd_fleet_from
from servescope.core.request_table import request_table
from servescope.scenarios.workloads import Workload


def check_lanes(pools: dict[str, list[EngineConfig]], viewed: int) -> None:
    """Both pools' replicas fit the view, and the viewed lane is one of them."""
    lanes = sum(len(pools[name]) for name in POOLS)
    if lanes > MAX_VIEW_REPLICAS:
        raise BuildError(f"{lanes} replicas in both pools: a session's fleet view shows at most "
                         f"{MAX_VIEW_REPLICAS}",
                         f"{max(POOLS, key=lambda name: len(pools[name]))}.replicas", "limit")
    if viewed >= lanes:
        raise BuildError(f"replica lane {viewed}: this P/D fleet has {lanes}", "replica",
                         "config")


def pd_track(k: int, config: dict[str, Any], pools: dict[str, list[EngineConfig]],
             resolved: Workload, info: Sequence[dict[str, Any]], settings: Settings, path: Path,
             viewed: int) -> tuple[Track, EngineConfig, dict[str, Any]]:
    """The track of engine k (`config`: the P/D config JSON, `pools` its pool_configs), the
    viewed replica's config, and init's fleet info."""
    if resolved.records is not None:
        raise BuildError("a recorded run replays one engine; a P/D fleet needs a simulated "
                         "workload", "prefill", "config")
    check_lanes(pools, viewed)
    try:
        fleet = pd_fleet_from(config, resolved.specs, records=True)
        link = LinkSpec.from_dict(config.get("kv_link"))
    except (ConfigError, KeyError, ValueError) as err:
        field = err.field if isinstance(err, ConfigError) else "prefill"
        raise BuildError(str(err), field, "config") from err
    engines = [*fleet.prefill.engines, *fleet.decode.engines]
    configs = [e.config for e in engines]
    blocks = [c.num_gpu_blocks or 0 for c in configs]
    table = request_table(info)
    sizes = {"prefill": len(fleet.prefill.engines), "decode": len(fleet.decode.engines)}
    frames = PDFrames(list(resolved.specs), sizes, blocks,
                      [c.frontend_overhead_ms or 0.0 for c in configs],
                      pd_meters(fleet, table, path.parent))
    engine = engines[viewed]
    track = Track(k, pd_source(fleet.run(), viewed, frames), info, blocks[viewed],
                  settings.keyframe_interval, settings.max_records_per_session, path,
                  summary=fleet.summary, enable_prefix_caching=engine.config.enable_prefix_caching)
    track.engine = engine
    track.fleet = frames
    track.no_leap = FLEET_NO_LEAP if len(info) >= settings.leap_min_requests else None
    pool = "prefill" if viewed < sizes["prefill"] else "decode"
    return track, engine.config, {
        "replicas": len(engines), "router": fleet.decode.router.name,
        "scrape_interval_ms": 0.0, "replica": viewed - (sizes["prefill"] if pool == "decode"
                                                        else 0),
        "no_seek": track.no_leap, "pool": pool,
        "pools": {name: {"replicas": sizes[name],
                         "router": getattr(fleet, name).router.name} for name in POOLS},
        "kv_link": {"kind": link.kind, "gbps": link.gbps, "latency_ms": link.latency_ms},
        "pd_threshold": fleet.threshold}

