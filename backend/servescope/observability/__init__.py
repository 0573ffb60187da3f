"""vLLM's Prometheus metrics for simulated and replayed runs: folding records into vLLM's
counters, gauges and histograms (meter), their names and buckets (vllm_metrics), and the
metric families that `GET /metrics` and the OpenMetrics export write (families)."""
