"""Where in a step the meter takes each metric, on hand-made records: vLLM's gauges are read
at the end of Scheduler.update_from_output (Scheduler.make_stats, vllm/v1/core/sched/
scheduler.py), after the step's finished requests left the running list; a finished request
with n = 1 is observed by ParentRequest.observe_finished_request
(vllm/v1/engine/parallel_sampling.py) as its own generation tokens and n = 1."""

from __future__ import annotations

from servescope.observability.meter import Meter


class Lengths:
    """Prompt lengths and arrivals of the hand-made requests."""

    def __init__(self, prompts: dict[str, int]) -> None:
        self.prompts = prompts

    def output_len_of(self, rid: str) -> int | None:
        return None

    def prompt_len_of(self, rid: str) -> int:
        return self.prompts[rid]

    def arrival_s_of(self, rid: str) -> float | None:
        return 0.0


def step(t: float, running: list[str], sampled: list[str], finished: list[str] = (),
         **extra: object) -> dict[str, object]:
    return {"time_s": t, "step_time_ms": 10.0, "running": running, "waiting": [],
            "scheduled": [{"id": rid, "sampled": rid in sampled} for rid in running],
            "finished": list(finished), "kv_usage": 0.5, **extra}


def two_requests() -> Meter:
    """a: 4-token prompt, 2 output tokens; b: 8-token prompt, 3 output tokens, 3 cached."""
    meter = Meter(Lengths({"a": 4, "b": 8}), enable_prefix_caching=True)
    meter.observe(step(0.0, ["a", "b"], ["a", "b"], arrivals=["a", "b"], new=["a", "b"],
                       num_cached_tokens={"b": 3}))
    meter.observe(step(0.01, ["a", "b"], ["a", "b"], finished=["a"]))
    meter.observe(step(0.02, ["b"], ["b"], finished=["b"]))
    return meter


def test_a_request_finishing_in_the_step_is_not_counted_running() -> None:
    meter = two_requests()
    # after schedule both run in step 1; after its update only b does
    assert [meter.row(i)["num_requests_running"] for i in range(3)] == [2.0, 1.0, 0.0]


def test_the_last_step_of_a_decode_stretch_drops_what_it_finished() -> None:
    meter = Meter(Lengths({"a": 4, "b": 4}), enable_prefix_caching=False)
    meter.observe(step(0.0, ["a", "b"], ["a", "b"], arrivals=["a", "b"], new=["a", "b"]))
    meter.observe_decodes(["a", "b"], [0.01, 0.02, 0.03], [10.0, 10.0, 10.0],
                          [0.5, 0.5, 0.5], ["a"])
    assert [meter.row(i)["num_requests_running"] for i in range(4)] == [2.0, 2.0, 2.0, 1.0]


def test_a_finished_request_is_observed_as_vllm_observes_n_1() -> None:
    meter = two_requests()
    assert meter.observations("request_generation_tokens")[1] == [2, 3]
    assert meter.observations("request_params_n")[1] == [1, 1]
    # b's prefill computed 8 - 3 tokens (its prefix-cache hit excluded)
    assert meter.observations("request_prefill_kv_computed_tokens")[1] == [4, 5]
    assert meter.row(2)["prompt_tokens_local_cache_hit"] == 3.0
