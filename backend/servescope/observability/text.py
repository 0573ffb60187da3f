"""The Prometheus text format (0.0.4) of the families' samples, written straight from them:
the same bytes as prometheus-client's generate_latest over the same families (a test holds
the two equal), at the speed a scrape of 64 playing sessions needs (bench/metrics_scrape.py)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache, lru_cache

from prometheus_client.utils import floatToGoString

from servescope.observability.families import OPTIONAL, TABLE, Sample, label_names


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


@cache
def _header(k: int) -> tuple[str, str, str]:
    """(sample name, HELP and TYPE lines, type) of family k."""
    metric = TABLE[k].make()
    name = metric.name + "_total" if metric.type == "counter" else metric.name
    doc = metric.documentation.replace("\\", r"\\").replace("\n", r"\n")
    head = f"# HELP {name} {doc}\n# TYPE {name} {metric.type}\n"
    return name, head, metric.type


@lru_cache(maxsize=1 << 14)  # a few label sets per engine, the same at every scrape
def _labels(names: tuple[str, ...], values: tuple[str, ...]) -> tuple[str, str, str]:
    """The label string, and its two halves around where `le` sorts in (histograms)."""
    pairs = sorted([*zip(names, values, strict=True), ("le", "\0")])
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in pairs)
    before, _, after = text.partition('le="\0"')
    head, tail = before.rstrip(","), after.lstrip(",")
    return (f"{head},{tail}" if head and tail else head + tail), before, after


@lru_cache(maxsize=1 << 12)
def _bucket_prefixes(k: int, values: tuple[str, ...], les: tuple[str, ...]) -> tuple[str, ...]:
    name = _header(k)[0]
    _, before, after = _labels(label_names(k, len(values)), values)
    return tuple(f'{name}_bucket{{{before}le="{le}"{after}}} ' for le in les)


def _value(v: float) -> str:
    """floatToGoString, short-cut for the integer counts that most lines carry."""
    if type(v) is int and -10**15 < v < 10**15:
        return f"{v}.0"
    return floatToGoString(v)


def render(samples: Iterable[Sample], size: int = len(TABLE)) -> str:
    by_family: list[list[Sample]] = [[] for _ in range(size)]
    for sample in samples:
        by_family[sample[0]].append(sample)
    out: list[str] = []
    for k, rows in enumerate(by_family):
        if k in OPTIONAL and not rows:
            continue
        name, head, kind = _header(k)
        out.append(head)
        for _, values, args in rows:
            base = _labels(label_names(k, len(values)), tuple(values))[0]
            if kind != "histogram":
                out.append(f"{name}{{{base}}} {_value(args[0])}\n")
                continue
            buckets, total = args
            les, counts = zip(*buckets, strict=True)
            out += [f"{prefix}{_value(count)}\n"
                    for prefix, count in zip(_bucket_prefixes(k, tuple(values), les), counts,
                                             strict=True)]
            out.append(f"{name}_count{{{base}}} {_value(buckets[-1][1])}\n")
            out.append(f"{name}_sum{{{base}}} {_value(total)}\n")
    return "".join(out)
