"""The options of a trace upload (multipart form fields beside `file`): a format override, a time
window, the first N or a uniform sample of N, arrival and length scaling, a seed. Checked here,
stored with the trace, and applied again each time a session loads it."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from servescope.traces import registry
from servescope.traces.errors import shown
from servescope.traces.options import TraceOptions

MAX_SCALE = 1000.0
MAX_RATE_PER_S = 1e6
MAX_SEED = 2**63 - 1
SHAREGPT = "sharegpt-stats"  # no arrival times in the file: N and the rate are the upload's
INFERENCE_PERF = "inference-perf"  # a load.sweep's stage rates run up to a measured rate

# name -> (type, what it does): the route's OpenAPI schema and docs/protocol.md say the same.
FIELDS: dict[str, tuple[type, str]] = {
    "format": (str, "the trace format, overriding detection (GET /api/traces/formats)"),
    "window_start_s": (float, "keep requests arriving this many seconds or more after the "
                              "trace's first request; arrivals are rebased to it"),
    "window_end_s": (float, "keep requests arriving up to this many seconds after the trace's "
                            "first request"),
    "limit": (int, "keep the first N requests (after the window)"),
    "sample_n": (int, "keep a uniform random sample of N requests (after the window), in file "
                      "order; for sharegpt-stats, the number of requests drawn"),
    "seed": (int, "the seed of sample_n and of sharegpt-stats and inference-perf draws "
                  "(default 0; an inference-perf config's load.base_seed when not given)"),
    "arrival_scale": (float, "multiply arrival times: 2 halves the rate (default 1)"),
    "length_scale": (float, "multiply prompt and output lengths, rounded, at least 1 "
                            "(default 1)"),
    "rate_per_s": (float, "sharegpt-stats: Poisson arrivals at this rate (default: all "
                          "at 0); inference-perf: the saturation rate a load.sweep runs up to"),
}


class OptionError(ValueError):
    """A bad upload option; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class UploadOptions:
    format: str | None = None  # None: detected from the file
    window_start_s: float | None = None
    window_end_s: float | None = None
    limit: int | None = None
    sample_n: int | None = None
    seed: int = 0
    arrival_scale: float = 1.0
    length_scale: float = 1.0
    rate_per_s: float | None = None

    @classmethod
    def from_fields(cls, fields: dict[str, str], max_requests: int) -> UploadOptions:
        """Parse the form fields (blank ones are absent); OptionError names the first bad one."""
        values: dict[str, Any] = {}
        for name, text in fields.items():
            if name not in FIELDS:
                raise OptionError(name[:100], f"unknown upload field {shown(name)}; known: file, "
                                        f"{', '.join(FIELDS)}")
            if text.strip():
                values[name] = _parse(name, text.strip(), max_requests)
        options = cls(**values)
        options._check_together()
        return options

    @classmethod
    def from_dict(cls, stored: dict[str, Any]) -> UploadOptions:
        """The options a stored trace was uploaded with (a trace from before options: none)."""
        return cls(**{k: v for k, v in stored.items() if k in FIELDS})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def given(self) -> list[str]:
        """The names of the options that differ from their defaults."""
        default = UploadOptions()
        return [name for name in FIELDS if getattr(self, name) != getattr(default, name)]

    def _check_together(self) -> None:
        start, end = self.window_start_s, self.window_end_s
        if start is not None and end is not None and end < start:
            raise OptionError("window_end_s", f"window_end_s ({end}) must not be before "
                                              f"window_start_s ({start})")
        if self.limit is not None and self.sample_n is not None:
            raise OptionError("limit", "give limit (the first N) or sample_n (a uniform "
                                       "sample of N), not both")

    def check_kind(self, fmt: str) -> None:
        """Refuse options that do not apply to a trace of format `fmt`."""
        if self.rate_per_s is not None and fmt not in (SHAREGPT, INFERENCE_PERF):
            raise OptionError("rate_per_s", f"rate_per_s applies to {SHAREGPT} (its file has no "
                                            f"arrival times) and {INFERENCE_PERF} (a load.sweep's "
                                            f"saturation rate); this is a {fmt} trace")
        if registry.FORMATS[fmt].kind == "steps":
            shaping = [name for name in self.given() if name != "format"]
            if shaping:
                raise OptionError(shaping[0], f"{shaping[0]} applies to request traces; a "
                                              f"{fmt} file is a recorded run, replayed whole")

    def trace_options(self) -> TraceOptions:
        window = None
        if self.window_start_s is not None or self.window_end_s is not None:
            window = (self.window_start_s or 0.0, self.window_end_s)
        return TraceOptions(window_s=window, arrival_scale=self.arrival_scale,
                            length_scale=self.length_scale, limit=self.limit,
                            sample_n=self.sample_n, seed=self.seed)

    def adapter_params(self, fmt: str) -> dict[str, Any]:
        """What the format's reader takes from the options: sharegpt-stats draws N requests
        (sample_n or limit, else the reader's default) at rate_per_s."""
        seed = None if fmt == INFERENCE_PERF and "seed" not in self.given() else self.seed
        return registry.draw_params(fmt, self.sample_n or self.limit, self.rate_per_s, seed)


def _parse(name: str, text: str, max_requests: int) -> Any:
    kind, _ = FIELDS[name]
    if len(text) > 100:
        raise OptionError(name, f"{name}: value too long")
    if kind is str:
        if text not in registry.FORMATS:
            raise OptionError(name, f"unknown format {text!r}; known: "
                                    f"{', '.join(registry.FORMATS)}")
        return text
    low, high, open_low = _bounds(name, max_requests)
    what = "an integer" if kind is int else "a number"
    span = (f"{what} > {low:g}" if open_low else f"{what} >= {low:g}") + \
        (f" and <= {high:g}" if math.isfinite(high) else "")
    try:
        value = int(text) if kind is int else float(text)
    except ValueError:
        raise OptionError(name, f"{name} must be {span}, got {text!r}") from None
    if not (math.isfinite(value) and (value > low if open_low else value >= low)
            and value <= high):
        raise OptionError(name, f"{name} must be {span}, got {text!r}")
    return value


def _bounds(name: str, max_requests: int) -> tuple[float, float, bool]:
    """(low, high, whether low itself is refused)."""
    if name in ("limit", "sample_n"):
        return 1, max_requests, False  # a session holds at most max_requests
    if name == "seed":
        return 0, MAX_SEED, False
    if name == "rate_per_s":
        return 0, MAX_RATE_PER_S, True
    if name in ("arrival_scale", "length_scale"):
        return 0, MAX_SCALE, True
    return 0, math.inf, False  # the window, in seconds


def describe(options: UploadOptions, fmt: str, num_in_window: int,
             num_loaded: int) -> str | None:
    """One sentence for the views on what the options did (None when they did nothing)."""
    parts = []
    start, end = options.window_start_s, options.window_end_s
    if start is not None or end is not None:
        span = f"{start or 0:g}-{end:g} s" if end is not None else f"from {start:g} s"
        parts.append(f"window {span} of the trace (arrivals rebased to 0)")
    where = "in the window" if parts else "in the trace"
    if fmt == SHAREGPT:
        if options.rate_per_s is not None:
            parts.append(f"Poisson arrivals at {options.rate_per_s:g}/s (seed {options.seed})")
    elif options.sample_n is not None:
        parts.append(f"a uniform sample of {options.sample_n:,} of the {num_in_window:,} "
                     f"requests {where} (seed {options.seed})")
    elif options.limit is not None:
        parts.append(f"the first {options.limit:,} requests {where}")
    if options.arrival_scale != 1.0:
        parts.append(f"arrival times x{options.arrival_scale:g}")
    if options.length_scale != 1.0:
        parts.append(f"prompt and output lengths x{options.length_scale:g}")
    if fmt == SHAREGPT and (options.sample_n or options.limit) is not None:
        parts.append(f"{options.sample_n or options.limit:,} requests drawn")
    if not parts:
        return None
    return f"Upload options: {'; '.join(parts)}: {num_loaded:,} requests loaded."
