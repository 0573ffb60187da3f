"""A fleet's metrics: one meter per replica, folded from the replica's own records as the fleet
yields them, and one view per replica carrying its index as the `replica` label. A fleet of one
replica is exported as a single engine is, without the label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from servescope.observability.families import EngineView, engine_view
from servescope.observability.meter import Meter, Requests


def replica_meters(requests: Requests, configs: Sequence[dict[str, Any]]) -> list[Meter]:
    """A meter per replica (config dicts, one per replica), all reading one request table:
    each replica's records name only the requests routed to it."""
    return [Meter(requests, bool(config.get("enable_prefix_caching"))) for config in configs]


def replica_views(meters: Sequence[Meter], model_name: str, engine: int, session: str,
                  configs: Sequence[dict[str, Any]], max_model_len: int) -> list[EngineView]:
    several = len(meters) > 1
    return [engine_view(meter, model_name, engine, session, config, max_model_len,
                        replica=index if several else None)
            for index, (meter, config) in enumerate(zip(meters, configs, strict=True))]
