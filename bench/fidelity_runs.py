"""bench/fidelity.py's table of the real runs in calibration.json: every run it can re-simulate,
E2E / TTFT / ITL at mean, p90 and p99, ours beside measured beside the other simulators'
predictions (their_prediction), and the median |error| per metric for the fit and held-out
splits (for the other simulators: over the same runs where they published a prediction)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from calibration_runs import METRICS, load_runs, simulate

TARGETS = {"e2e_mean": 7.0, "ttft_mean": 18.0, "itl_mean": 7.0}  # BLIS's held-out figures


def _pct(value: float | None, measured: float | None) -> float | None:
    if value is None or not measured:
        return None
    return 100.0 * (value / measured - 1.0)


def run_rows(stage_cap_s: float) -> list[dict[str, Any]]:
    rows = []
    for run in load_runs():
        row: dict[str, Any] = {"id": run.id, "role": run.role, "gpu": run.gpu,
                               "notes": run.notes}
        if run.role == "skipped":
            row["why_skipped"] = run.why_skipped
            rows.append(row)
            continue
        started = time.perf_counter()
        ours = simulate(run, None, stage_cap_s)
        row["seconds"] = time.perf_counter() - started
        row["metrics"] = {
            m: {"ours": ours.get(m), "measured": run.measured.get(m),
                "error_pct": _pct(ours.get(m), run.measured.get(m)),
                "theirs": {name: {"value": p.get(m), "error_pct": _pct(p.get(m),
                                                                        run.measured.get(m))}
                           for name, p in run.theirs.items() if p.get(m) is not None}}
            for m in METRICS if run.measured.get(m) is not None}
        rows.append(row)
    return rows


def medians(rows: list[dict[str, Any]], role: str) -> dict[str, dict[str, Any]]:
    """metric -> {"ours": median |error|, "n": runs, simulator: median |error| on its runs}."""
    out: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        ours: list[float] = []
        theirs: dict[str, list[float]] = {}
        for row in rows:
            cell = row.get("metrics", {}).get(metric)
            if row["role"] != role or cell is None or cell["error_pct"] is None:
                continue
            ours.append(abs(cell["error_pct"]))
            for name, p in cell["theirs"].items():
                if p["error_pct"] is not None:
                    theirs.setdefault(name, []).append(abs(p["error_pct"]))
        if ours:
            out[metric] = {"ours": float(np.median(ours)), "n": len(ours),
                           **{k: float(np.median(v)) for k, v in theirs.items()}}
    return out


def _fmt(value: float | None, width: int = 9) -> str:
    return f"{value:{width}.1f}" if value is not None else " " * (width - 1) + "-"


def _err(value: float | None) -> str:
    return f"{value:+6.1f}%" if value is not None else "      -"


def print_rows(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if row["role"] == "skipped":
            print(f"[skipped] {row['id']}: {row['why_skipped']}")
            continue
        print(f"\n[{row['role']}] {row['id']} ({row['gpu']}, {row['seconds']:.1f} s to simulate)")
        for note in row["notes"]:
            print(f"    note: {note}")
        print(f"    {'metric':10} {'ours':>9} {'measured':>9} {'error':>7}   other simulators")
        for metric, cell in row["metrics"].items():
            others = "  ".join(f"{name} {_fmt(p['value'], 1)} ({_err(p['error_pct']).strip()})"
                               for name, p in cell["theirs"].items())
            print(f"    {metric:10} {_fmt(cell['ours'])} {_fmt(cell['measured'])} "
                  f"{_err(cell['error_pct'])}   {others}")


def print_medians(rows: list[dict[str, Any]]) -> None:
    for role in ("fit", "held-out"):
        table = medians(rows, role)
        if not table:
            continue
        print(f"\nmedian |error| over the {role} runs (ServeScope; others on the runs they "
              "predicted)")
        for metric, cell in table.items():
            others = "  ".join(f"{k} {v:.1f}%" for k, v in cell.items() if k not in ("ours", "n"))
            target = f"  (target <= {TARGETS[metric]:.0f}%)" if metric in TARGETS else ""
            print(f"  {metric:10} ours {cell['ours']:6.1f}% over {cell['n']:2} runs{target}  "
                  f"{others}")
