"""A P/D fleet's metrics (issue #36): each pool's replicas' vllm:* series, labelled
pool="prefill"|"decode" and replica="k", folded from their step records as a fleet's are
(observability/fleet.py), and each engine's KV connector metrics (observability/nixl.py) from
the run's transfers. Every engine counts what its own vLLM would: a prefill replica's request
asks for one token (the P/D proxy's max_tokens 1); a decode replica's disaggregated request
arrives when its prefill ends, as the proxy sends it on then.

The caller feeds a run's events (core/pd_events.py) in time order:
    PoolStep  -> meters.observe_step(pool, replica, normalized record dict)
    Transfer  -> meters.observe_transfer(transfer)
(api/records/pd_meters.py's `fold_event`; `servescope export` and the server's P/D track) and
reads the series through pd_views(...) with families.engine_samples(view, position),
position = view.meter.index_at_time(t).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from servescope.observability.families import EngineView, engine_view
from servescope.observability.meter import Meter, Requests
from servescope.observability.nixl import ConnectorMeter, num_descriptors
from servescope.observability.spill import Spill

POOLS = ("prefill", "decode")  # core/pd_config.py POOLS: the label's values


class TransferLike(Protocol):
    """What the meters read of a KV transfer (core/pd_events.py's Transfer; the wing imports
    no other, so it names only what it needs)."""

    @property
    def request_id(self) -> str: ...
    @property
    def decode_replica(self) -> int: ...
    @property
    def num_blocks(self) -> int: ...
    @property
    def num_bytes(self) -> int: ...
    @property
    def num_tokens(self) -> int: ...
    @property
    def start_s(self) -> float: ...
    @property
    def done_s(self) -> float: ...
    @property
    def failed(self) -> bool: ...


class PoolRequests:
    """The request table as one pool's engines see it (see the module's docstring);
    `handoff_s` (request id -> its prefill's end) fills as the run goes."""

    def __init__(self, requests: Requests, pool: str, handoff_s: Mapping[str, float]) -> None:
        self.requests = requests
        self.pool = pool
        self.handoff_s = handoff_s

    def prompt_len_of(self, rid: str) -> int:
        return self.requests.prompt_len_of(rid)

    def output_len_of(self, rid: str) -> int | None:
        return 1 if self.pool == "prefill" else self.requests.output_len_of(rid)

    def arrival_s_of(self, rid: str) -> float | None:
        handoff = self.handoff_s.get(rid) if self.pool == "decode" else None
        return handoff if handoff is not None else self.requests.arrival_s_of(rid)


class PDMeters:
    """Every engine's meter and connector meter, by pool and replica."""

    def __init__(self, requests: Requests, configs: Mapping[str, Sequence[dict[str, Any]]],
                 num_layers: Sequence[int], handoff_s: Mapping[str, float],
                 spill_dir: Path | None = None) -> None:
        """`configs`: each pool's replicas' config dicts; `num_layers`: each decode replica's
        model's (a read's descriptors); `handoff_s`: the run's prefill ends, as they come;
        `spill_dir`: where the meters spill their columns (a server's; None: in memory)."""
        self.configs = {pool: list(configs[pool]) for pool in POOLS}
        # per decode replica: the prompt tokens each request loaded (a failed load: none)
        self.external: list[dict[str, int]] = [{} for _ in self.configs["decode"]]
        self.meters = {pool: [Meter(PoolRequests(requests, pool, handoff_s),
                                    bool(config.get("enable_prefix_caching")),
                                    None if spill_dir is None else Spill(spill_dir),
                                    self.external[k] if pool == "decode" else None)
                              for k, config in enumerate(self.configs[pool])] for pool in POOLS}
        self.connectors = {pool: [ConnectorMeter() for _ in self.configs[pool]]
                           for pool in POOLS}
        self.num_layers = list(num_layers)

    def observe_step(self, pool: str, replica: int, record: dict[str, Any]) -> None:
        self.meters[pool][replica].observe(record)

    def observe_transfer(self, transfer: TransferLike) -> None:
        """A load into its decode replica (whose connector reads the KV; NIXL's pull mode),
        before the step that learns it ended."""
        k = transfer.decode_replica
        self.external[k][transfer.request_id] = 0 if transfer.failed else transfer.num_tokens
        descriptors = num_descriptors(transfer.num_blocks, self.num_layers[k])
        self.connectors["decode"][k].add(transfer.start_s, transfer.done_s, transfer.num_bytes,
                                         descriptors, transfer.failed)


def pd_views(meters: PDMeters, model_name: str, engine: int, session: str,
             max_model_len: int) -> list[EngineView]:
    """Every engine's view, the prefill pool's replicas then the decode pool's, each labelled
    with its pool and replica (a pool of one replica too) and carrying its connector meter."""
    return [engine_view(meter, model_name, engine, session, config, max_model_len,
                        replica=k, pool=pool, connector=meters.connectors[pool][k])
            for pool in POOLS
            for k, (meter, config) in enumerate(zip(meters.meters[pool], meters.configs[pool],
                                                    strict=True))]


def positions_at(views: Sequence[EngineView], time_s: float) -> list[int]:
    """Each view's last record started by `time_s` (-1: none yet): its scrape position."""
    return [view.meter.index_at_time(time_s) for view in views]
