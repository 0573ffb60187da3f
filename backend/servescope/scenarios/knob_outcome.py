"""What a re-simulated knob did: the before and after of every p99 and the throughput, each
change called better, worse or negligible, and one outcome for the knob:

  confirmed      its targets moved the right way by more than NEGLIGIBLE, nothing else worsened
  trade_off      its targets improved, but another figure worsened by more than NEGLIGIBLE
  negligible     nothing it targets moved by more than NEGLIGIBLE, nothing else worsened
  not_confirmed  a target moved the wrong way, or only other figures moved, for the worse, or
                 no target could be measured
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Reported for every knob, whatever it targets: the four p99s the SLOs are set on, and output
# tokens a second.
REPORTED = ("p99_ttft_ms", "p99_itl_ms", "p99_tpot_ms", "p99_e2el_ms", "output_throughput")
HIGHER_IS_BETTER = ("output_throughput", "request_throughput", "request_goodput")
# Relative change under which a figure counts as unchanged. Our choice: a p99 over a few
# thousand requests moves by a few percent between repeated `vllm bench serve` runs of the same
# config, so a smaller simulated change is not one a user could measure, nor worth a restart.
NEGLIGIBLE = 0.05


def outcome(before: Mapping[str, Any], after: Mapping[str, Any],
            targets: Sequence[Sequence[str]]) -> dict[str, Any]:
    """{outcome, metrics: {name: {before, after, change, effect}}, improved, worsened, text}
    for a knob meant to move `targets` ([metric, "down"|"up"])."""
    wanted = {m: d for m, d in targets}
    names = list(dict.fromkeys([*wanted, *REPORTED]))
    metrics = {m: _figure(before.get(m), after.get(m), m, wanted.get(m)) for m in names}
    improved = [m for m in wanted if metrics[m]["effect"] == "better"]
    harmed = [m for m in wanted if metrics[m]["effect"] == "worse"]
    worsened = [m for m in names if m not in wanted and metrics[m]["effect"] == "worse"]
    unmeasured = all(metrics[m]["effect"] == "unknown" for m in wanted)
    if harmed or (worsened and not improved) or unmeasured:
        kind = "not_confirmed"
    elif improved and worsened:
        kind = "trade_off"
    else:
        kind = "confirmed" if improved else "negligible"
    return {"outcome": kind, "metrics": metrics, "improved": improved,
            "worsened": harmed + worsened,
            "text": _text(kind, metrics, list(wanted), improved, harmed + worsened)}


def _figure(before: Any, after: Any, metric: str, direction: str | None) -> dict[str, Any]:
    """One figure's change; `direction` the way the knob means to move it (None: the way that
    is better for the user)."""
    if before is None or after is None:
        return {"before": before, "after": after, "change": None, "effect": "unknown"}
    before, after = float(before), float(after)
    if before == after:
        change = 0.0
    else:
        change = (after - before) / abs(before) if before else float("inf") * (after - before)
    up_is_good = direction == "up" if direction else metric in HIGHER_IS_BETTER
    if abs(change) < NEGLIGIBLE:
        effect = "negligible"
    else:
        effect = "better" if (change > 0) == up_is_good else "worse"
    shown = round(change, 4) if abs(change) != float("inf") else None
    return {"before": before, "after": after, "change": shown, "effect": effect}


def _text(kind: str, metrics: Mapping[str, Any], wanted: list[str], improved: list[str],
          worsened: list[str]) -> str:
    """One line: what moved, and at what cost."""
    gains = ", ".join(_moved(m, metrics[m]) for m in improved)
    aims = ", ".join(_moved(m, metrics[m]) for m in wanted if metrics[m]["change"] is not None)
    costs = ", ".join(_moved(m, metrics[m]) for m in worsened)
    if kind == "trade_off":
        return f"trade-off: {gains}, but {costs}"
    if kind == "confirmed":
        return f"confirmed: {gains}; no other p99 or throughput worse by {NEGLIGIBLE:.0%}"
    if kind == "negligible":
        return f"negligible: no p99 or throughput moved by {NEGLIGIBLE:.0%} or more"
    return f"not confirmed: {aims or 'its target unmeasured'}; worse: {costs}"


def _moved(metric: str, figure: Mapping[str, Any]) -> str:
    change = figure["change"]
    pct = f"{change:+.0%}" if change is not None else "from 0"
    return f"{metric} {figure['before']:.4g} -> {figure['after']:.4g} ({pct})"
