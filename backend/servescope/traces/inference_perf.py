"""kubernetes-sigs/inference-perf: its config YAML turned into the requests it would send, as its
load generator and datagens build them (the schema: inference_perf_config.py; the draws:
inference_perf_draws.py), with its lifecycle report beside the config read as measured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from servescope.core.request import RequestSpec
from servescope.traces import inference_perf_report
from servescope.traces._specs import build_spec
from servescope.traces._yaml import load_mapping
from servescope.traces.errors import TooManyRequests, TraceFormatError
from servescope.traces.inference_perf_config import (
    DataConfig,
    Distribution,
    LoadConfig,
    SharedPrefix,
    Stage,
    data_config,
    load_config,
)
from servescope.traces.inference_perf_draws import (
    constant_offsets,
    generate_lengths,
    poisson_offsets,
    sample_lengths,
)
from servescope.traces.report import TraceReport

STAGE_LEAD_S = 1.0  # loadgen run_stage: the first request's clock starts 1 s after the stage
MAX_REQUESTS = 10_000_000  # requests (and shared-prefix prompts) one config may ask for: 10x
#                            the largest public trace we read (Azure 2024 conv, ~1M requests)
DATA_TYPES = ("shared_prefix", "random", "synthetic")
MAX_ROUNDS = 256  # multi-turn rounds per session: each round resends the whole history, so a
#                   prompt grows by a round's tokens each time (256 x even 100 tokens > 25k)


def read(path: Path, report: TraceReport, seed: int | None = None,
         measured_report: Path | None = None, saturation_rate_per_s: float | None = None,
         max_requests: int | None = None,
         window_s: tuple[float, float | None] | None = None) -> Iterator[RequestSpec]:
    """The requests of one inference-perf run. `seed` stands in for load.base_seed (whose own
    default is the wall clock; 0 here). A lifecycle report (`measured_report`, else
    summary_lifecycle_metrics.json beside the config) becomes report.meta["measured_summary"].
    `saturation_rate_per_s` is the rate a `load.sweep` probe measured on the live server.
    Before anything is generated the stages are counted (in `window_s` when given): over
    `max_requests` (else MAX_REQUESTS) raises TooManyRequests with the window end that fits."""
    config = load_mapping(Path(path), "an inference-perf config is a YAML mapping")
    specs = requests_from_config(config, report, seed, saturation_rate_per_s, max_requests,
                                 window_s)
    inference_perf_report.attach_measured(report, Path(path), measured_report)
    yield from specs


def requests_from_config(config: dict[str, Any], report: TraceReport, seed: int | None = None,
                         saturation_rate_per_s: float | None = None,
                         max_requests: int | None = None,
                         window_s: tuple[float, float | None] | None = None
                         ) -> list[RequestSpec]:
    load, data = load_config(config.get("load", {})), data_config(config.get("data", {}))
    seed = seed if seed is not None else (load.base_seed or 0)
    stages = _stages(load, saturation_rate_per_s)
    _count(stages, load.interval, max_requests, window_s)
    arrivals = _arrivals(load.type, stages, load.interval, np.random.default_rng(seed))
    if data.type == "shared_prefix":
        sp = data.shared_prefix or SharedPrefix()
        lengths = _shared_prompts(sp, np.random.default_rng(sp.seed if sp.seed is not None
                                                             else seed))
        specs = _shared_prefix_requests(report, sp, lengths, arrivals)
    elif data.type in ("random", "synthetic"):
        specs = _distribution_requests(report, data, arrivals, np.random.default_rng(seed))
    else:
        raise TraceFormatError(0, "data.type", f"{data.type}: its prompts come from a dataset "
                               f"or file the config does not carry; supported: "
                               f"{', '.join(DATA_TYPES)}")
    _notes(report, config, load, data)
    return specs


def check_count(config: dict[str, Any], max_requests: int | None,
                window_s: tuple[float, float | None] | None = None,
                saturation_rate_per_s: float | None = None) -> None:
    """TooManyRequests when the config's stages send more than `max_requests` (else
    MAX_REQUESTS) in the window; nothing generated."""
    load = load_config(config.get("load", {}))
    _count(_stages(load, saturation_rate_per_s), load.interval, max_requests, window_s)


def _count(stages: tuple[Stage, ...], interval: float, max_requests: int | None,
           window_s: tuple[float, float | None] | None) -> None:
    """Counted from each stage's rate x duration (an upper bound for poisson). A stage is
    taken to start `interval` + 1 s after the previous one ends, as _arrivals places it."""
    cap = MAX_REQUESTS if max_requests is None else max_requests
    start, end = window_s if window_s is not None else (0.0, None)
    count, fits_end_s, at = 0.0, None, 0.0
    for stage in stages:
        low = max(at, start)
        high = at + stage.duration if end is None else min(at + stage.duration, end)
        if high > low:
            if fits_end_s is None and count + stage.rate * (high - low) > cap:
                fits_end_s = low + (cap - count) / stage.rate
            count += stage.rate * (high - low)
        at += stage.duration + interval + STAGE_LEAD_S
    if count >= cap + 0.5:  # stage counts are rounded to whole requests
        raise TooManyRequests(int(min(count, 2**63 - 1)), cap, fits_end_s, window_s is not None)


def _stages(load: LoadConfig, saturation_rate_per_s: float | None) -> tuple[Stage, ...]:
    if load.type not in ("constant", "poisson"):
        raise TraceFormatError(0, "load.type", f"{load.type}: its arrivals depend on the server "
                               "or a trace file; supported: constant, poisson")
    if load.sweep is None:
        if not load.stages:
            raise TraceFormatError(0, "load.stages", "empty: nothing is sent")
        return load.stages
    if saturation_rate_per_s is None:
        raise TraceFormatError(0, "load.sweep", "its stage rates run up to the saturation rate "
                               "its probe measures on the live server: give that rate as "
                               "rate_per_s (--rate-per-s)")
    n, top = load.sweep.num_stages, saturation_rate_per_s  # LoadGenerator.preprocess
    rates = (np.linspace(1, top, n) if load.sweep.type == "linear"
             else 1 + top - np.geomspace(top, 1, num=n))
    return tuple(Stage(round(float(r), 2), load.sweep.stage_duration) for r in rates
                 if round(float(r), 2) > 0)


def _arrivals(kind: str, stages: tuple[Stage, ...], interval: float,
              rng: np.random.Generator) -> list[np.ndarray]:
    """Each stage's send times. A stage starts `interval` + 1 s after the previous one's last
    send (inference-perf also waits for its requests to finish, which depends on the server)."""
    out, origin = [], 0.0
    for stage in stages:
        offsets = (constant_offsets(stage.rate, stage.duration, rng) if kind == "constant"
                   else poisson_offsets(stage.rate, int(stage.rate * stage.duration), rng))
        out.append(origin + offsets)
        last = out[-1][-1] if len(offsets) else origin
        origin = last + interval + STAGE_LEAD_S
    return out


def _shared_prompts(sp: SharedPrefix, rng: np.random.Generator) -> np.ndarray:
    """SharedPrefixDataGenerator: per-group system prompt lengths, then group by group its
    prompts' question and output lengths, built once and shuffled. Rows: (group, system,
    question, output, index within the group)."""
    num = sp.num_groups * sp.num_prompts_per_group
    if num > MAX_REQUESTS:
        raise TraceFormatError(0, "data.shared_prefix", f"asks for more than {MAX_REQUESTS:,} "
                               "prompts")
    where = "data.shared_prefix."
    system = sample_lengths(_resolve(sp.system_prompt_len, None), sp.num_groups, rng,
                            where + "system_prompt_len")
    question = _resolve(sp.question_len, sp.question_distribution)
    output = _resolve(sp.output_len, sp.output_distribution)
    rows = []
    for group in range(sp.num_groups):
        q = sample_lengths(question, sp.num_prompts_per_group, rng, where + "question_len")
        o = sample_lengths(output, sp.num_prompts_per_group, rng, where + "output_len")
        rows.append(np.column_stack([np.full(len(q), group), np.full(len(q), system[group]),
                                     q, o, np.arange(len(q))]))
    table = np.concatenate(rows)
    return table[rng.permutation(num)]


def _resolve(value: int | Distribution, legacy: Distribution | None) -> Distribution:
    """_resolve_distribution: an inline distribution, else the legacy one, else fixed."""
    if isinstance(value, Distribution):
        return value
    if legacy is not None:
        return legacy
    return Distribution(min=value, max=value, mean=float(value), std_dev=0.0)


def _shared_prefix_requests(report: TraceReport, sp: SharedPrefix, prompts: np.ndarray,
                            arrivals: list[np.ndarray]) -> list[RequestSpec]:
    """Request i of a stage (numbering restarts with each stage) sends prompt i mod P: the
    group's system prompt then the prompt's question, tokens shared whole between repeats.
    Multi-turn chat: user session i mod P, round i // P, prepends its session's context (the
    system prompt at round 0, then the previous round's prompt and answer)."""
    if sp.enable_multi_turn_chat and max((len(a) for a in arrivals), default=0) \
            > MAX_ROUNDS * len(prompts):
        raise TraceFormatError(0, "data.shared_prefix.enable_multi_turn_chat", f"a stage "
                               f"would run more than {MAX_ROUNDS} rounds per user session")
    specs: list[RequestSpec] = []
    for stage in arrivals:
        for i, at in enumerate(stage):
            group, system, question, output, index = (int(x) for x in prompts[i % len(prompts)])
            prompt: tuple[tuple[str, int], ...] = ((f"ip-system-{group}", system),
                      (f"ip-question-{group}-{index}", question))
            if sp.enable_multi_turn_chat:
                prompt = _turn(prompt, (f"ip-system-{group}", system), output, i // len(prompts),
                               f"{group}-{index}")
            spec = build_spec(report, f"ip{len(specs)}", sum(n for _, n in prompt), output,
                              arrival_s=float(at), prefix=prompt)
            if spec is not None:
                specs.append(spec)
    return specs


def _turn(prompt: tuple[tuple[str, int], ...], system: tuple[str, int], output: int,
          round_: int, user: str) -> tuple[tuple[str, int], ...]:
    """LocalUserSession: the context starts as the system prompt; each answered round makes it
    that round's whole prompt plus its answer; a round sends context + the user's prompt."""
    context: tuple[tuple[str, int], ...] = (system,)
    for past in range(round_):
        sent = context + tuple((f"{key}-r{past}", n) for key, n in prompt)
        context = sent + ((f"ip-answer-{user}-r{past}", output),)
    return context + tuple((f"{key}-r{round_}", n) for key, n in prompt)


def _distribution_requests(report: TraceReport, data: DataConfig, arrivals: list[np.ndarray],
                           rng: np.random.Generator) -> list[RequestSpec]:
    """Random/SyntheticDataGenerator: total_count lengths drawn once; request i of a stage
    (numbering restarts with each stage) takes lengths[i]."""
    longest = max((len(a) for a in arrivals), default=0)
    lengths = []
    for key in ("input_distribution", "output_distribution"):
        dist = getattr(data, key)
        if dist is None:
            raise TraceFormatError(0, f"data.{key}", "missing (required by the random and "
                                   "synthetic data types)")
        count = dist.total_count or longest
        if count < longest:
            raise TraceFormatError(0, f"data.{key}.total_count", f"a stage sends {longest} "
                                   f"requests but only {count} lengths are drawn")
        lengths.append(generate_lengths(dist, max(count, 1), rng, f"data.{key}"))
    if data.input_distribution.total_count is None:  # type: ignore[union-attr]
        report.note("no total_count (inference-perf requires one): as many lengths are drawn "
                    "as the largest stage sends")
    specs: list[RequestSpec] = []
    for stage in arrivals:
        for i, at in enumerate(stage):
            spec = build_spec(report, f"ip{len(specs)}", int(lengths[0][i]), int(lengths[1][i]),
                              arrival_s=float(at))
            if spec is not None:
                specs.append(spec)
    return specs


def _notes(report: TraceReport, config: dict[str, Any], load: LoadConfig,
           data: DataConfig) -> None:
    if (config.get("api") or {}).get("streaming") is False:
        report.note("the run did not stream: its TTFT equals its E2E latency")
    if len(load.stages) > 1 or load.sweep is not None:
        report.note(f"stages follow each other {load.interval:g} s + 1 s after the last send "
                    "(inference-perf also waits for every request of a stage to finish)")
    if data.ignored:
        report.note(f"not modelled: data.{', data.'.join(data.ignored)}")
    if data.shared_prefix is not None and data.shared_prefix.enable_multi_turn_chat:
        report.note("multi-turn chat: each round is sent at its scheduled time (inference-perf "
                    "holds it until the session's previous round has answered)")
