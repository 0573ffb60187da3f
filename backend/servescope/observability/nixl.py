"""vLLM 0.33's KV connector metrics, NixlConnector's (vllm/distributed/kv_transfer/
kv_connector/v1/nixl/stats.py: NixlKVConnectorStats, NixlPromMetrics), over a P/D run's
transfers: names, types, help texts and buckets as vLLM defines them. Each engine running the
connector registers them (both pools); the decode side, which reads the KV (NIXL's pull mode),
records the transfers.

Kept: vllm:nixl_xfer_time_seconds (a transfer's time once its bytes move: latency + bytes /
bandwidth), vllm:nixl_bytes_transferred, vllm:nixl_num_descriptors (histograms of the
transfers that completed), vllm:nixl_num_failed_transfers and
vllm:nixl_num_failed_notifications (counters; a notification never fails here, so 0). Left
out: vllm:nixl_post_time_seconds (the CPU time to post a read, not simulated) and the KV-expiry
counters (a prefill replica's blocks never expire here: each is read).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from prometheus_client.utils import floatToGoString

# NixlPromMetrics.__init__'s buckets; the transfer-time histogram drops the first (buckets[1:])
_TIME_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 5.0)
XFER_TIME_BUCKETS = _TIME_BUCKETS[1:]
BYTES_BUCKETS = tuple(float(2 ** (10 + i)) for i in range(1, 25, 2))  # "2kb to 16gb"
DESCRIPTOR_BUCKETS = (10.0, 20.0, 30.0, 50.0, 75.0, 100.0, 200.0, 400.0, 1000.0, 2000.0,
                      4000.0, 10000.0, 20000.0, 50000.0)
# A layer's KV cache is registered as two NIXL regions, its K and its V planes (FlashAttention's
# layout, NixlConnectorWorker.register_kv_caches); a read takes one descriptor per block of each.
REGIONS_PER_LAYER = 2


@dataclass(frozen=True)
class NixlHistogram:
    name: str
    doc: str
    column: str  # a ConnectorMeter column
    buckets: tuple[float, ...]


HISTOGRAMS = (
    NixlHistogram("vllm:nixl_xfer_time_seconds", "Histogram of transfer duration for NIXL KV "
                  "Cache transfers.", "duration_s", XFER_TIME_BUCKETS),
    NixlHistogram("vllm:nixl_bytes_transferred", "Histogram of bytes transferred per NIXL KV "
                  "Cache transfers.", "num_bytes", BYTES_BUCKETS),
    NixlHistogram("vllm:nixl_num_descriptors", "Histogram of number of descriptors per NIXL"
                  "  KV Cache transfers.", "num_descriptors", DESCRIPTOR_BUCKETS),
)
# (name without _total, help); the first counts failed transfers, the second notifications
COUNTERS = (
    ("vllm:nixl_num_failed_transfers", "Number of failed NIXL KV Cache transfers, including "
     "handshake and notification failures. NOTE: KV expiry is tracked separately in "
     "vllm:nixl_num_kv_expired_reqs."),
    ("vllm:nixl_num_failed_notifications", "Number of failed NIXL KV Cache notifications. "
     "Retained for compatibility; these failures are also included in "
     "vllm:nixl_num_failed_transfers."),
)


def num_descriptors(num_blocks: int, num_layers: int) -> int:
    """The descriptors of one read of `num_blocks` blocks (one rank's view)."""
    return num_blocks * num_layers * REGIONS_PER_LAYER


@dataclass
class ConnectorMeter:
    """One engine's transfers as its connector's stats record them: each observed when it
    ends (NixlKVConnectorStats.record_transfer on a completed read; a failed one only counts)."""

    done_s: list[float] = field(default_factory=list)
    failed: list[bool] = field(default_factory=list)
    columns: dict[str, list[float]] = field(default_factory=lambda: {
        "duration_s": [], "num_bytes": [], "num_descriptors": []})

    def add(self, start_s: float, done_s: float, num_bytes: int, num_descriptors: int,
            failed: bool) -> None:
        self.done_s.append(done_s)
        self.failed.append(failed)
        for name, value in (("duration_s", done_s - start_s), ("num_bytes", num_bytes),
                            ("num_descriptors", num_descriptors)):
            self.columns[name].append(float(value))

    def ended_by(self, time_s: float) -> np.ndarray:
        return np.asarray(self.done_s, np.float64) <= time_s

    def histogram(self, spec: NixlHistogram, time_s: float,
                  ) -> tuple[list[tuple[str, float]], float]:
        """(cumulative count per `le`, sum) over the transfers completed by `time_s`."""
        kept = self.ended_by(time_s) & ~np.asarray(self.failed, bool)
        values = np.asarray(self.columns[spec.column], np.float64)[kept]
        counts = np.bincount(np.searchsorted(spec.buckets, values, "left"),
                             minlength=len(spec.buckets) + 1).cumsum()
        les = [_le(b) for b in spec.buckets] + ["+Inf"]
        return list(zip(les, counts.astype(float).tolist(), strict=True)), float(values.sum())

    def num_failed(self, time_s: float) -> float:
        return float((self.ended_by(time_s) & np.asarray(self.failed, bool)).sum())


def _le(bound: float) -> str:
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]
