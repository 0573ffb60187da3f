"""A P/D run's events folded into its engines' vLLM metrics (observability/pd.py's PDMeters):
each pool's step records and the decode side's KV transfers, in the run's time order. Both
`servescope export` (cli/export_pd.py) and the server's P/D track (api/records/pd_frames.py)
fold through here."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from servescope.api.wire.serialize import normalize
from servescope.core.hardware import resolve
from servescope.core.pd_events import PDEvent, PoolStep, Transfer
from servescope.core.pd_fleet import PDFleet
from servescope.observability.meter import Requests
from servescope.observability.pd import POOLS, PDMeters


def pd_meters(fleet: PDFleet, requests: Requests, spill_dir: Path | None = None) -> PDMeters:
    """Meters for every engine of the fleet's pools, reading its prefill ends as they come."""
    configs = {pool: [e.config for e in getattr(fleet, pool).engines] for pool in POOLS}
    return PDMeters(requests, {pool: [c.to_dict() for c in cs] for pool, cs in configs.items()},
                    [resolve(c).model.num_hidden_layers for c in configs["decode"]],
                    fleet.ready_s, spill_dir)


def fold_event(meters: PDMeters, event: PDEvent) -> None:
    """One event: a pool's step into its engine's meter, a transfer into its decode replica's
    connector (routing decisions make no metric)."""
    if isinstance(event, PoolStep):
        meters.observe_step(event.pool, event.replica, normalize(event.record.to_dict()))
    elif isinstance(event, Transfer):
        meters.observe_transfer(event)


def fold(meters: PDMeters, events: Iterable[PDEvent]) -> None:
    for event in events:
        fold_event(meters, event)
