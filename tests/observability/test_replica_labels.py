"""A fleet's replicas on /metrics and in the OpenMetrics export: each replica's vllm:* series
carry its index as `replica`, each replica counts only its own requests, the text writer
equals prometheus-client's for those series, and a single engine's series stay as vLLM's."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from prometheus_client import generate_latest

from servescope.observability.families import Families, engine_samples
from servescope.observability.fleet import replica_meters, replica_views
from servescope.observability.openmetrics import ExportError, openmetrics, sample_times
from servescope.observability.text import render

PROMPT = {"a": 4, "b": 7, "c": 9}


class Table:
    def output_len_of(self, rid: str) -> int | None:
        return None

    def prompt_len_of(self, rid: str) -> int:
        return PROMPT[rid]

    def arrival_s_of(self, rid: str) -> float | None:
        return 0.0


def one_step(rid: str, time_s: float) -> dict:
    """A request arriving, scheduled, emitting its first token and finishing in one step."""
    return {"time_s": time_s, "step_time_ms": 10.0, "arrivals": [rid], "new": [rid],
            "scheduled": [{"id": rid, "sampled": True}], "running": [rid], "waiting": [],
            "finished": [rid], "kv_usage": 0.25}


def fleet(num_replicas: int = 2):
    configs = [{"block_size": 16, "enable_prefix_caching": True}] * num_replicas
    meters = replica_meters(Table(), configs)
    meters[0].observe(one_step("a", 0.0))  # replica 0 serves a, then c; replica 1 serves b
    if num_replicas > 1:
        meters[1].observe(one_step("b", 0.5))
    meters[0].observe(one_step("c", 1.0))
    return meters, replica_views(meters, "m", 0, "s", configs, 64)


def value(text: str, series: str) -> float:
    (found,) = re.findall(rf"^{re.escape(series)} (\S+)$", text, re.MULTILINE)
    return float(found)


def test_each_replica_has_its_own_series_with_its_replica_label() -> None:
    meters, views = fleet()
    text = render([s for view, m in zip(views, meters, strict=True)
                   for s in engine_samples(view, m.num_records - 1)])
    base = 'engine="0",model_name="m"'
    # replica 0 finished a (4 prompt tokens) and c (9); replica 1 finished b (7)
    assert value(text, f'vllm:prompt_tokens_total{{{base},replica="0",session="s"}}') == 13
    assert value(text, f'vllm:prompt_tokens_total{{{base},replica="1",session="s"}}') == 7
    assert value(text, 'vllm:request_success_total{engine="0",finished_reason="length",'
                       'model_name="m",replica="1",session="s"}') == 1
    series = [line for line in text.splitlines() if line.startswith("vllm:")]
    assert series and all('replica="' in line for line in series)
    assert len([s for s in series if 'replica="0"' in s]) == len(series) // 2


def test_a_fleet_of_one_is_written_as_a_single_engine() -> None:
    meters, views = fleet(num_replicas=1)
    text = render(engine_samples(views[0], meters[0].num_records - 1))
    assert "replica" not in text
    assert value(text, 'vllm:prompt_tokens_total{engine="0",model_name="m",session="s"}') == 13


class Collector:
    def __init__(self, families: Families) -> None:
        self.families = families

    def collect(self) -> Iterator[object]:
        return iter(self.families)


def test_the_text_writer_equals_generate_latest_for_replica_series() -> None:
    meters, views = fleet()
    samples = [s for view, m in zip(views, meters, strict=True)
               for s in engine_samples(view, m.num_records - 1)]
    families = Families()
    families.put(samples)
    assert render(samples) == generate_latest(Collector(families)).decode()  # type: ignore[arg-type]


def test_the_export_samples_every_replica_on_one_clock_to_the_fleets_end() -> None:
    _, views = fleet()
    # replica 0's last step ends at 1.01 s, replica 1's at 0.51 s: the grid runs to 1.01 s
    assert sample_times(views, 0.5) == [(0.0, [0, -1]), (0.5, [0, 0]), (1.0, [1, 0]),
                                        (1.01, [1, 0])]
    text = "".join(openmetrics(views, 1000.0, 0.5))
    at_end = re.findall(r'^vllm:prompt_tokens_total\{.*replica="(\d)".*\} (\S+) 1001\.01$',
                        text, re.MULTILINE)
    assert sorted(at_end) == [("0", "13.0"), ("1", "7.0")]


def test_the_exports_sample_bound_counts_every_replica() -> None:
    _, views = fleet()
    # 1.01 s at 1e-5 s: 101,001 sampling times, under the bound for one engine, over it for two
    assert len(sample_times(views[:1], 1e-5)) == 101_001
    with pytest.raises(ExportError, match=r"sampling times x 2 replicas.*at least 1\.01e-05") \
            as err:
        sample_times(views, 1e-5)
    assert err.value.field == "interval_s"
