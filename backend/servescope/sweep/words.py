"""A sweep's answer in words: the cheapest config that meets the SLOs, and why the next cheaper
one does not (each SLO it misses with the diagnosis's verdict on that latency and its evidence).
Over a grid of fleets (`replicas`, `router`) it names the fleet as a capacity planner would:
"4 replicas with prefix-approx routing meet p99 TTFT 2 s at $X per million output tokens;
round-robin needs 6"."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from servescope.sweep.grid import FLEET_GRID_KEYS
from servescope.sweep.results import Report, cost_of, cost_unit, ranked

MAX_CONFIG_CHARS = 60  # a router_config shown in the answer beyond this is cut with "..."


def answer(points: Sequence[Report], slos: Mapping[str, float]) -> str:
    """The cheapest config meeting the SLOs and why the next cheaper one fails."""
    unit = cost_unit(points)
    ran = ranked(points, unit)
    if not ran:
        return "No point ran: every config failed or does not fit."
    name = fleet_label if any(k in p["point"] for p in ran for k in FLEET_GRID_KEYS) else label
    if not slos:
        return (f"No SLOs given: every config that ran meets them; the cheapest is "
                f"{name(ran[0])} at {_money(ran[0], unit)}.")
    meeting = [p for p in ran if p["meets_slo"]]
    if not meeting:
        best = max(ran, key=lambda p: p["request_goodput"])
        return (f"No config meets the SLOs. The highest goodput is {name(best)}, which "
                f"misses {_misses(best)}.")
    cheapest = meeting[0]
    if name is label:
        text = (f"Cheapest config meeting the SLOs: {label(cheapest)} at "
                f"{_money(cheapest, unit)}, goodput {cheapest['request_goodput']:.2f} req/s.")
    else:
        text = (f"{fleet_label(cheapest)} {_verb(cheapest)} {slo_words(slos)} at "
                f"{_money(cheapest, unit)} (point {cheapest['index']}, goodput "
                f"{cheapest['request_goodput']:.2f} req/s){_other_routers(ran, cheapest)}.")
    cheaper = [p for p in ran if cost_of(p, unit) < cost_of(cheapest, unit)]  # type: ignore[operator]
    if not cheaper:
        return text + " It is also the cheapest config that ran."
    nxt = _next_cheaper(cheaper, cheapest, unit)
    return (text + f" The next cheaper one, {name(nxt)} at {_money(nxt, unit)}, "
            f"misses {_misses(nxt)}.")


def _next_cheaper(cheaper: Sequence[Report], cheapest: Report, unit: str) -> Report:
    """The dearest of the cheaper points; of several at that cost, one with the cheapest's
    router (what fewer of the chosen fleet's replicas miss), else the last."""
    tied = [p for p in cheaper if cost_of(p, unit) == cost_of(cheaper[-1], unit)]
    return next((p for p in tied if p.get("router") == cheapest.get("router")), tied[-1])


def label(point: Report) -> str:
    values = ", ".join(f"{k}={v}" for k, v in point["point"].items())
    return f"point {point['index']} ({values})"


def fleet_label(point: Report) -> str:
    """'4 replicas with round-robin routing', then the point's other grid values."""
    n = int(point["replicas"])
    text = f"{n} replica{'' if n == 1 else 's'} with {point['router']} routing"
    if "router_config" in point["point"]:
        config = json.dumps(point["point"]["router_config"], sort_keys=True)
        cut = config[:MAX_CONFIG_CHARS] + ("..." if len(config) > MAX_CONFIG_CHARS else "")
        text += f" (router_config {cut})"
    others = _others(point)
    return text + (f" ({others})" if others else "")


def _others(point: Report) -> str:
    return ", ".join(f"{k}={v}" for k, v in point["point"].items() if k not in FLEET_GRID_KEYS)


def _verb(point: Report) -> str:
    return "meets" if int(point["replicas"]) == 1 else "meet"


def slo_words(slos: Mapping[str, float]) -> str:
    """{'p99_ttft_ms': 2000} -> 'p99 TTFT 2 s'."""
    words = []
    for metric, ms in slos.items():
        stat, latency, _ = metric.split("_")
        amount = f"{ms / 1000:g} s" if ms >= 1000 else f"{ms:g} ms"
        words.append(f"{stat} {latency.upper()} {amount}")
    return " and ".join(words)


def _other_routers(ran: Sequence[Report], cheapest: Report) -> str:
    """'; round-robin needs 6' for each other router of the grid: the fewest replicas (its
    cheapest point) with which it meets the SLOs too, or that it meets them at no size tried."""
    parts = []
    for router in dict.fromkeys(p["router"] for p in ran):
        if router == cheapest["router"]:
            continue
        own = [p for p in ran if p["router"] == router]
        best = next((p for p in own if p["meets_slo"]), None)
        if best is None:
            most = max(int(p["replicas"]) for p in own)
            parts.append(f"{router} meets them with none of the fleets tried (up to {most} "
                         f"replica{'' if most == 1 else 's'})")
            continue
        others = _others(best)
        same = others == _others(cheapest)
        parts.append(f"{router} needs {best['replicas']}" + ("" if same else f" ({others})"))
    return "".join(f"; {part}" for part in parts)


def _money(point: Report, unit: str) -> str:
    if unit == "usd":
        return f"${point['cost']['usd_per_m_output_tokens']:.3f} per million output tokens"
    return f"{point['cost']['gpu_hours']:.3f} GPU-hours (no price for its GPU)"


def _misses(point: Report) -> str:
    """Each SLO missed and the evidence for why: '; '-joined. A fleet's evidence is its
    worst replica's run (sweep/point.py), which is said."""
    n = int(point.get("replicas", 1))
    return "; ".join(
        f"{w['metric']} {w['value']:.1f} ms > {w['target']:.1f} ms, " + (
            f"because of {w['kind']} ({w['title']}{_on(w, n)}): {w['headline']}"
            if w["kind"] else f"which no verdict of the diagnosis{_on(w, n)} explains")
        for w in point["why_fails"])


def _on(why: Report, replicas: int) -> str:
    """' on replica 2, the worst of 4' when the evidence is one replica's of several."""
    if replicas == 1 or why.get("replica") is None:
        return ""
    return f" on replica {why['replica']}, the worst of {replicas}"
