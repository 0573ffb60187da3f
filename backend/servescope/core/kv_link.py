"""The P/D handoff priced: a request's KV bytes from the model geometry, and the link between a
prefill and a decode replica that carries them, one transfer at a time (transfers queue on a
link when they contend).

    bytes = layers x KV heads x head size x 2 (K and V) x bytes per element x tokens

counted as the decode side must hold them: with its TP size t_d each rank keeps
max(1, KV heads / t_d) heads (core/model_spec.py kv_bytes_per_token), so when t_d exceeds the
KV heads the heads are replicated and more bytes cross (re-sharding: vLLM's NixlConnector reads
each decode rank's heads from the prefill rank(s) holding them, nixl/tp_mapping.py). A link
joins min(t_p, t_d) rank pairs, each at the kind's per-GPU bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servescope.core.config_error import ConfigError
from servescope.core.model_spec import ModelSpec


@dataclass(frozen=True)
class LinkKind:
    """One GPU's bandwidth in one direction (GB/s, 1e9 bytes) and a transfer's fixed cost."""

    gbps: float
    latency_ms: float
    source: str


# Per-GPU, one direction. Latency: the order of one RDMA read plus its completion notice
# (microseconds on these fabrics); an assumption, not a measurement.
LINK_KINDS = {
    "nvlink": LinkKind(450.0, 0.005, "NVIDIA H100/H200 SXM datasheet: NVLink 4, 900 GB/s "
                       "bidirectional per GPU"),
    "infiniband": LinkKind(50.0, 0.01, "NVIDIA ConnectX-7 datasheet: NDR 400 Gb/s per port, "
                           "one NIC per GPU in a DGX H100"),
    "roce": LinkKind(50.0, 0.01, "400 GbE (ConnectX-7 datasheet), one NIC per GPU"),
    "pcie": LinkKind(64.0, 0.01, "PCI-SIG PCIe 5.0 x16: 32 GT/s x 16 lanes, ~64 GB/s a "
                     "direction"),
}
DEFAULT_LINK = "infiniband"  # llm-d's well-lit P/D path runs NIXL over InfiniBand/RoCE RDMA


def kv_bytes(model: ModelSpec, element_bytes: int, num_tokens: int, decode_tp: int) -> int:
    """The bytes `num_tokens` tokens of KV take on the decode side, all its ranks together."""
    return model.kv_bytes_per_token(element_bytes, decode_tp) * decode_tp * num_tokens


@dataclass(frozen=True)
class LinkSpec:
    """A link's kind and the figures it runs at (the kind's defaults unless overridden)."""

    kind: str
    gbps: float
    latency_ms: float

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> LinkSpec:
        """The config's `kv_link` object: {"kind", "gbps", "latency_ms"}, all optional."""
        data = dict(data or {})
        for key in data:
            if key not in ("kind", "gbps", "latency_ms"):
                raise ConfigError(f"kv_link.{str(key)[:40]}", "unknown key (kind, gbps, "
                                  "latency_ms)")
        kind = data.get("kind", DEFAULT_LINK)
        if kind not in LINK_KINDS:
            raise ConfigError("kv_link.kind", f"expected one of {', '.join(LINK_KINDS)}, got "
                              f"{str(kind)[:40]!r}")
        default = LINK_KINDS[kind]
        gbps = _number(data, "gbps", default.gbps, positive=True)
        latency = _number(data, "latency_ms", default.latency_ms, positive=False)
        return cls(kind, gbps, latency)


def _number(data: dict[str, Any], key: str, default: float, positive: bool) -> float:
    value = data.get(key, default)
    if (not isinstance(value, int | float) or isinstance(value, bool)
            or not (value > 0 if positive else value >= 0)):
        raise ConfigError(f"kv_link.{key}", f"expected a number {'>' if positive else '>='} 0, "
                          f"got {value!r:.40}")
    return float(value)


class KVLink:
    """One prefill replica to one decode replica: transfers in the order they start, each
    waiting for the one before it (FIFO), then taking latency + bytes / bandwidth."""

    def __init__(self, spec: LinkSpec, num_rank_pairs: int) -> None:
        self.spec = spec
        self.bytes_per_s = spec.gbps * 1e9 * num_rank_pairs
        self.free_s = 0.0  # when the last transfer queued here ends

    def duration_s(self, num_bytes: int) -> float:
        return self.spec.latency_ms / 1000.0 + num_bytes / self.bytes_per_s

    def send(self, num_bytes: int, ready_s: float) -> tuple[float, float]:
        """Queue a transfer ready at `ready_s`: (when its bytes start moving, when it ends)."""
        start = max(ready_s, self.free_s)
        self.free_s = start + self.duration_s(num_bytes)
        return start, self.free_s
