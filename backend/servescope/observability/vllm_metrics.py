"""vLLM's Prometheus metric names, types, help texts and histogram buckets, as vLLM 0.33
defines them in vllm/v1/metrics/loggers.py (PrometheusStatLogger), read there and written
down here; each maps to a meter column or histogram (meter.py)."""

from __future__ import annotations

from dataclasses import dataclass

# Labels every per-engine metric carries in vLLM, plus ours: `session` (a public label of the
# session, never its id) tells sessions apart on one ServeScope server.
LABELS = ("model_name", "engine", "session")
# A fleet's replica index (0-based), last on each of its series: the label a fleet's scraped
# pods are told apart by (docs/metrics.md says how dashboards map it to `instance` or `pod`).
REPLICA = "replica"
# A P/D fleet's pool ("prefill" | "decode"), before `replica` on each of a pool's series
# (the interface issue #36's engineers agreed: docs/pd.md)
POOL = "pool"

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)
REQUEST_LATENCY_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                           40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)
ITERATION_TOKENS_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
PARAMS_N_BUCKETS = (1, 2, 5, 10, 20)

# vLLM's FinishReason values; a ServeScope request stops at its output length, which vLLM
# (max_tokens = output length and ignore_eos, as `vllm bench serve` sends) reports as length.
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
FINISHED_REASON = "length"


def build_1_2_5_buckets(max_value: int) -> tuple[int, ...]:
    """1, 2, 5, 10, 20, 50, ... up to max_value (vLLM's token-count buckets)."""
    out: list[int] = []
    scale = 1
    while True:
        for mantissa in (1, 2, 5):
            if mantissa * scale > max_value:
                return tuple(out)
            out.append(mantissa * scale)
        scale *= 10


@dataclass(frozen=True)
class Gauge:
    name: str
    column: str
    doc: str


@dataclass(frozen=True)
class Counter:
    name: str  # without the _total suffix the exposition adds
    column: str | None  # None: always zero in a simulation (no KV connector, no images)
    doc: str


@dataclass(frozen=True)
class Histogram:
    name: str
    observations: str
    doc: str
    buckets: tuple[float, ...] | None  # None: 1-2-5 up to max_model_len


GAUGES = (
    Gauge("vllm:num_requests_running", "num_requests_running",
          "Number of requests in model execution batches."),
    Gauge("vllm:num_requests_waiting", "num_requests_waiting",
          "Number of requests waiting to be processed."),
    Gauge("vllm:kv_cache_usage_perc", "kv_cache_usage_perc",
          "KV-cache usage. 1 means 100 percent usage."),
)

COUNTERS = (
    Counter("vllm:num_preemptions", "num_preemptions",
            "Cumulative number of preemption from the engine."),
    Counter("vllm:prompt_tokens", "prompt_tokens", "Number of prefill tokens processed."),
    Counter("vllm:prompt_tokens_cached", "prompt_tokens_cached",
            "Number of cached prompt tokens (local + external)."),
    Counter("vllm:generation_tokens", "generation_tokens",
            "Number of generation tokens processed."),
    Counter("vllm:prefix_cache_queries", "prefix_cache_queries",
            "Prefix cache queries, in terms of number of queried tokens."),
    Counter("vllm:prefix_cache_hits", "prefix_cache_hits",
            "Prefix cache hits, in terms of number of cached tokens."),
    Counter("vllm:external_prefix_cache_queries", None,
            "External prefix cache queries from KV connector cross-instance cache sharing, "
            "in terms of number of queried tokens."),
    Counter("vllm:external_prefix_cache_hits", None,
            "External prefix cache hits from KV connector cross-instance cache sharing, in "
            "terms of number of cached tokens."),
    Counter("vllm:mm_cache_queries", None,
            "Multi-modal cache queries, in terms of number of queried items."),
    Counter("vllm:mm_cache_hits", None,
            "Multi-modal cache hits, in terms of number of cached items."),
)

# vllm:prompt_tokens_by_source{source}: where a request's prompt tokens came from.
PROMPT_SOURCES = (("local_compute", "prompt_tokens_local_compute"),
                  ("local_cache_hit", "prompt_tokens_local_cache_hit"),
                  ("external_kv_transfer", "prompt_tokens_external_kv_transfer"))

HISTOGRAMS = (
    Histogram("vllm:time_to_first_token_seconds", "time_to_first_token",
              "Histogram of time to first token in seconds.", TTFT_BUCKETS),
    Histogram("vllm:inter_token_latency_seconds", "inter_token_latency",
              "Histogram of inter-token latency in seconds.", ITL_BUCKETS),
    Histogram("vllm:request_time_per_output_token_seconds", "request_time_per_output_token",
              "Histogram of time_per_output_token_seconds per request.", ITL_BUCKETS),
    Histogram("vllm:e2e_request_latency_seconds", "e2e_request_latency",
              "Histogram of e2e request latency in seconds.", REQUEST_LATENCY_BUCKETS),
    Histogram("vllm:request_queue_time_seconds", "request_queue_time",
              "Histogram of time spent in WAITING phase for request.",
              REQUEST_LATENCY_BUCKETS),
    Histogram("vllm:request_inference_time_seconds", "request_inference_time",
              "Histogram of time spent in RUNNING phase for request.",
              REQUEST_LATENCY_BUCKETS),
    Histogram("vllm:request_prefill_time_seconds", "request_prefill_time",
              "Histogram of time spent in PREFILL phase for request.",
              REQUEST_LATENCY_BUCKETS),
    Histogram("vllm:request_decode_time_seconds", "request_decode_time",
              "Histogram of time spent in DECODE phase for request.",
              REQUEST_LATENCY_BUCKETS),
    Histogram("vllm:request_prompt_tokens", "request_prompt_tokens",
              "Number of prefill tokens processed.", None),
    Histogram("vllm:request_generation_tokens", "request_generation_tokens",
              "Number of generation tokens processed.", None),
    Histogram("vllm:iteration_tokens_total", "iteration_tokens",
              "Histogram of number of tokens per engine_step.", ITERATION_TOKENS_BUCKETS),
    # n = 1: the most any of a request's sequences generated is what it generated
    Histogram("vllm:request_max_num_generation_tokens", "request_generation_tokens",
              "Histogram of maximum number of requested generation tokens.", None),
    Histogram("vllm:request_params_n", "request_params_n",
              "Histogram of the n request parameter.", PARAMS_N_BUCKETS),
    # max_tokens = the output length (what `vllm bench serve` sends, with ignore_eos)
    Histogram("vllm:request_params_max_tokens", "request_generation_tokens",
              "Histogram of the max_tokens request parameter.", None),
    Histogram("vllm:request_prefill_kv_computed_tokens", "request_prefill_kv_computed_tokens",
              "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
              None),
)

# The names the issue and docs/metrics.md promise, besides the families above.
REQUEST_SUCCESS = "vllm:request_success"
PROMPT_TOKENS_BY_SOURCE = "vllm:prompt_tokens_by_source"
WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason"
CACHE_CONFIG_INFO = "vllm:cache_config_info"
SLEEP_STATE = "vllm:engine_sleep_state"
# vLLM's sleep_state labels; a simulated engine never sleeps (awake = 1, the others 0)
SLEEP_STATES = ("awake", "weights_offloaded", "discard_all")
