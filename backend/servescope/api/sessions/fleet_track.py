"""A track whose engine is a fleet (core/fleet.py: replicas behind a router): the fleet runs on
the track's thread, the viewed replica's records are the track's, and every replica's records
and the routed arrivals fold into the track's fleet frames (api/records/fleet_frames.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from servescope.api.errors import BuildError
from servescope.api.records.fleet_frames import FleetFrames
from servescope.api.records.track_source import fleet_source
from servescope.api.sessions.track import Track
from servescope.api.settings import Settings
from servescope.api.wire.fleet import MAX_VIEW_REPLICAS
from servescope.core.config import ConfigError, EngineConfig
from servescope.core.fleet import Fleet
from servescope.core.request_table import request_table
from servescope.core.resolve import resolve_fleet
from servescope.core.routers.make import make_router
from servescope.observability.meter import Meter
from servescope.observability.spill import Spill
from servescope.scenarios.diagnosis_check import prepare
from servescope.scenarios.workloads import Workload

# What the page says of a seek past what a long fleet run has computed: the scout that leaps
# (api/leaps/scout.py) runs one engine, not a fleet.
FLEET_NO_LEAP = ("a fleet runs from its start (it has no checkpoints yet): a seek ahead of the "
                 "simulation waits for it to get there")


def is_fleet(config: EngineConfig) -> bool:
    """Whether the config asks for a fleet: more than one replica (one replica behind any router
    is the single engine, record for record: core/fleet.py)."""
    return config.replicas > 1


def check_fleet_size(config: EngineConfig) -> None:
    """The fleet fits a session's view: asked before any replica's own config is made (a
    million replicas would take a minute to refuse)."""
    if config.replicas > MAX_VIEW_REPLICAS:
        raise BuildError(f"replicas {config.replicas}: a session's fleet view shows at most "
                         f"{MAX_VIEW_REPLICAS}", "replicas", "limit")


def replica_configs(given: Mapping[str, Any]) -> list[EngineConfig]:
    """Each replica's engine config, resolved as every door resolves a fleet's (core/resolve.py
    resolve_fleet: its replica_configs entry over the fleet's settings); each is one engine
    (replicas 1), the fleet keys being the fleet's."""
    return [c.replace(replicas=1, replica_configs=None) for c in resolve_fleet(given)]


def fleet_track(k: int, config: EngineConfig, given: Mapping[str, Any], resolved: Workload,
                info: Sequence[dict[str, Any]], settings: Settings, path: Path,
                viewed: int) -> tuple[Track, EngineConfig, dict[str, Any]]:
    """The track of engine k, the viewed replica's config, and init's fleet info; `config` is
    the fleet's settings `given` resolved."""
    if resolved.records is not None:
        raise BuildError("a recorded run replays one engine; a fleet needs a simulated "
                         "workload", "replicas", "config")
    check_fleet_size(config)
    if viewed >= config.replicas:
        raise BuildError(f"replica {viewed}: this fleet has {config.replicas}", "replica",
                         "config")
    try:
        prepared = [prepare(c) for c in replica_configs(given)]
        router = make_router(config.router, config.replicas, config.router_config,
                             block_size=config.block_size)
        fleet = Fleet([c for c, _ in prepared], resolved.specs, router,
                      step_time_fns=[fn for _, fn in prepared], records=True,
                      scrape_interval_ms=config.scrape_interval_ms)
    except (ConfigError, KeyError, ValueError) as err:
        field = err.field if isinstance(err, ConfigError) else "router"
        raise BuildError(str(err), field, "config") from err
    engine = fleet.engines[viewed]
    blocks = [e.config.num_gpu_blocks or 0 for e in fleet.engines]
    table = request_table(info)
    configs = [e.config for e in fleet.engines]
    frames = FleetFrames(list(resolved.specs), blocks,
                         [c.frontend_overhead_ms or 0.0 for c in configs],
                         [Meter(table, c.enable_prefix_caching, Spill(path.parent))
                          for c in configs], [c.to_dict() for c in configs])
    track = Track(k, fleet_source(fleet.run(), viewed, frames), info,
                  blocks[viewed], settings.keyframe_interval, settings.max_records_per_session,
                  path, summary=fleet.summary,
                  enable_prefix_caching=engine.config.enable_prefix_caching)
    track.engine = engine
    track.fleet = frames
    track.no_leap = FLEET_NO_LEAP if len(info) >= settings.leap_min_requests else None
    return track, engine.config, {
        "replicas": len(fleet.engines), "router": router.name,
        "scrape_interval_ms": config.scrape_interval_ms, "replica": viewed,
        "no_seek": track.no_leap}
