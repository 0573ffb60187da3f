"""Scenario presets (traces/presets/*.json): an engine config plus a seeded synthetic workload.

A workload is explicit `requests`, a `generator` or a list of `generators` (each with its own
`id_prefix`):
  {"seed", "num_requests", "arrival": {"every_steps": k} | {"rate_per_step": r} |
   {"rate_per_s": r} | {"at_step": s}, "prompt_len": L, "output_len": L}
where a length L is an int, [low, high] (uniform, inclusive), {"choice": [...]} or
{"mean", "sd", "min", "max"} (normal, rounded and clipped); or a named generator of
traces/synthetic.py, {"name": "lesson", "seed", ...its parameters}: the lesson's presets name
the one generator `servescope compare` and `exercise` draw from, so all draw the same requests.
An exercise preset also lists `variants`: [{name, set: {config overrides}}], the runs to
compare side by side. A generator's `shared_prefix`: {"key", "num_tokens"} starts every prompt
with the same tokens (a system prompt), added to its drawn length, so prefix caching can reuse
their blocks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from servescope.core.config import ConfigError, EngineConfig
from servescope.core.request import RequestSpec
from servescope.core.resolve import resolve_config
from servescope.traces import synthetic, workload_json
from servescope.traces.errors import TraceFormatError

PRESET_DIR = Path(__file__).resolve().parents[3] / "traces" / "presets"


class PresetError(ValueError):
    pass


def list_presets(directory: Path = PRESET_DIR) -> list[dict[str, Any]]:
    """[{name, title, description, verdict, variants, variant_sets, config}] for the explorer's
    preset menu (`config`: the preset's own config as its file gives it; `variant_sets`: each
    variant's name and config overrides, for the compare picker)."""
    out = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text())
        out.append({"name": path.stem, "title": data.get("title", path.stem),
                    "description": data.get("description", ""),
                    "verdict": data.get("verdict"),
                    "variants": [v["name"] for v in data.get("variants", [])],
                    "variant_sets": [{"name": v["name"], "set": v["set"]}
                                     for v in data.get("variants", [])],
                    "config": data["config"]})
    return out


def load_preset(name: str, directory: Path = PRESET_DIR) -> tuple[EngineConfig,
                                                                   list[RequestSpec],
                                                                   dict[str, Any]]:
    path = directory / f"{name}.json"
    if not path.is_file():
        known = ", ".join(p["name"] for p in list_presets(directory))
        raise PresetError(f"no preset {name!r}; known: {known}")
    data = json.loads(path.read_text())
    config = resolved(data["config"], path)
    workload = data["workload"]
    if "requests" in workload:
        try:
            specs = workload_json.read_rows(workload["requests"])
        except TraceFormatError as err:
            raise PresetError(f"{path}: requests: {err}") from err
    else:
        specs = [s for g in workload.get("generators", [workload.get("generator")])
                 for s in generate(g)]
    return config, specs, data


def variants(name: str, directory: Path = PRESET_DIR) -> list[tuple[str, EngineConfig]]:
    """The (name, config) runs an exercise preset compares; [] for a plain preset. Each
    variant's settings go over the preset's before they are resolved."""
    _, _, data = load_preset(name, directory)
    return [(v["name"], resolved({**data["config"], **v.get("set", {})}, directory / name))
            for v in data.get("variants", [])]


def resolved(given: dict[str, Any], where: Path) -> EngineConfig:
    """A preset's settings resolved as every door resolves a config (core/resolve.py)."""
    try:
        return resolve_config(given).config
    except ConfigError as err:
        raise PresetError(f"{where}: {err}") from err


def generate(spec: dict[str, Any]) -> list[RequestSpec]:
    if "name" in spec:
        params = {k: v for k, v in spec.items() if k not in ("name", "seed")}
        try:
            return synthetic.generate(str(spec["name"]), int(spec.get("seed", 0)), **params)
        except (TypeError, ValueError) as err:
            raise PresetError(f"generator {spec['name']!r}: {err}") from err
    rng = np.random.default_rng(int(spec.get("seed", 0)))
    n = int(spec["num_requests"])
    prompts = _lengths(rng, spec["prompt_len"], n)
    outputs = _lengths(rng, spec["output_len"], n)
    arrival = spec.get("arrival", {"at_step": 0})
    steps: list[int | None] = [None] * n
    times: list[float | None] = [None] * n
    if "rate_per_s" in arrival:
        times = [float(t) for t in np.cumsum(rng.exponential(1.0 / arrival["rate_per_s"], n))]
    elif "rate_per_step" in arrival:
        gaps = rng.exponential(1.0 / arrival["rate_per_step"], n)
        steps = [int(s) for s in np.floor(np.cumsum(gaps))]
    elif "every_steps" in arrival:
        steps = [i * int(arrival["every_steps"]) for i in range(n)]
    else:
        steps = [int(arrival.get("at_step", 0))] * n
    prefix = spec.get("id_prefix", "r")
    shared = spec.get("shared_prefix")
    head = ((str(shared["key"]), int(shared["num_tokens"])),) if shared else ()
    extra = head[0][1] if head else 0
    return [RequestSpec(f"{prefix}{i}", int(prompts[i]) + extra, int(outputs[i]),
                        arrival_step=steps[i], arrival_s=times[i], prefix=head)
            for i in range(n)]


def _lengths(rng: np.random.Generator, spec: Any, n: int) -> np.ndarray:
    if isinstance(spec, int):
        return np.full(n, spec)
    if isinstance(spec, list) and len(spec) == 2:
        return rng.integers(int(spec[0]), int(spec[1]) + 1, n)
    if isinstance(spec, dict) and "choice" in spec:
        return rng.choice(np.asarray(spec["choice"], dtype=int), n)
    if isinstance(spec, dict) and {"mean", "sd"} <= set(spec):
        values = np.rint(rng.normal(spec["mean"], spec["sd"], n))
        return np.clip(values, spec.get("min", 1), spec.get("max", np.inf)).astype(int)
    raise PresetError(f"bad length spec {spec!r}")
