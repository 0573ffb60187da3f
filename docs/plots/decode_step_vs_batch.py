"""Draw docs/plots/decode_step_vs_batch.svg from the cost model (plain SVG, no plotting library).

Decode step time against batch size for Llama 3.1 8B (BF16) and Llama 3.3 70B (FP8) on H100 and
H200, each request holding 512 tokens of context. Solid: the calibrated step time; dashed: the
GPU roofline alone (overheads set to 0). A curve ends where the batch's KV no longer fits.
Usage: python docs/plots/decode_step_vs_batch.py
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from servescope.core import catalog, cost_model
from servescope.core.config import EngineConfig

OUT = Path(__file__).with_suffix(".svg")
CONTEXT = 512
BATCHES = [int(b) for b in np.unique(np.rint(np.logspace(0, 10, 41, base=2)))]
L8B, L70B = "meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"
SERIES = (("Llama 3.1 8B BF16, H100", L8B, "H100", None, "#0072b2"),
          ("Llama 3.1 8B BF16, H200", L8B, "H200", None, "#56b4e9"),
          ("Llama 3.3 70B FP8, H100", L70B, "H100", "fp8", "#d55e00"),
          ("Llama 3.3 70B FP8, H200", L70B, "H200", "fp8", "#e69f00"))
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 460, 70, 230, 40, 60
Y_MIN, Y_MAX = 2.0, 400.0


def config_of(model: str, gpu: str, quantization: str | None) -> EngineConfig:
    return EngineConfig(model=model, gpu=gpu, quantization=quantization, max_model_len=CONTEXT)


def fitting_batches(model: str, gpu: str, quantization: str | None) -> list[int]:
    """Batch sizes whose KV (batch x context) fits the GPU: the curve stops at the memory wall."""
    capacity = cost_model.memory_breakdown(config_of(model, gpu, quantization))
    return [b for b in BATCHES if b * (CONTEXT + 1) <= capacity["kv_capacity_tokens"]]


def curve(model: str, gpu: str, quantization: str | None, roofline_only: bool) -> list[float]:
    config = config_of(model, gpu, quantization)
    calibration = catalog.calibration(catalog.gpu(gpu).key)
    if roofline_only:
        calibration = dataclasses.replace(calibration, step_overhead_ms=0.0,
                                          per_request_overhead_ms=0.0)
    fn = cost_model.make_step_time(config, calibration)
    return [fn(np.ones(b, dtype=np.int64), np.full(b, CONTEXT, dtype=np.int64))
            for b in fitting_batches(model, gpu, quantization)]


def x_of(batch: float) -> float:
    return LEFT + (W - LEFT - RIGHT) * math.log2(batch) / 10


def y_of(ms: float) -> float:
    span = math.log10(Y_MAX) - math.log10(Y_MIN)
    frac = (math.log10(min(max(ms, Y_MIN), Y_MAX)) - math.log10(Y_MIN)) / span
    return H - BOTTOM - (H - TOP - BOTTOM) * frac


def axes() -> list[str]:
    parts = [f'<rect x="{LEFT}" y="{TOP}" width="{W - LEFT - RIGHT}" '
             f'height="{H - TOP - BOTTOM}" fill="none" stroke="#444"/>']
    for p in range(0, 11, 2):
        x = x_of(2 ** p)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{H - BOTTOM}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{x:.1f}" y="{H - BOTTOM + 18}" text-anchor="middle">{2 ** p}'
                     '</text>')
    for ms in (2, 5, 10, 20, 50, 100, 200, 400):
        y = y_of(ms)
        parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{W - RIGHT}" y2="{y:.1f}" '
                     'stroke="#ddd"/>')
        parts.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{ms}</text>')
    parts.append(f'<text x="{(LEFT + W - RIGHT) / 2}" y="{H - 18}" text-anchor="middle">'
                 f'batch size (decodes per step, {CONTEXT} tokens of context each)</text>')
    parts.append(f'<text x="18" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 18 {(TOP + H - BOTTOM) / 2})">decode step time (ms)'
                 '</text>')
    parts.append(f'<text x="{LEFT}" y="24" font-weight="bold">Decode step time against batch '
                 'size (ServeScope cost model)</text>')
    return parts


def series(label: str, values: list[float], colour: str, dashed: bool) -> str:
    points = " ".join(f"{x_of(b):.1f},{y_of(v):.1f}" for b, v in zip(BATCHES, values, strict=False))
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    return (f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} '
            f'points="{points}"><title>{label}</title></polyline>')


def legend() -> list[str]:
    parts = []
    for i, (label, *_, colour) in enumerate(SERIES):
        y = TOP + 14 + 22 * i
        parts.append(f'<line x1="{W - RIGHT + 14}" y1="{y}" x2="{W - RIGHT + 40}" y2="{y}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        parts.append(f'<text x="{W - RIGHT + 46}" y="{y + 4}">{label}</text>')
    y = TOP + 14 + 22 * len(SERIES)
    parts.append(f'<line x1="{W - RIGHT + 14}" y1="{y}" x2="{W - RIGHT + 40}" y2="{y}" '
                 'stroke="#444" stroke-width="2" stroke-dasharray="5 4"/>')
    parts.append(f'<text x="{W - RIGHT + 46}" y="{y + 4}">roofline only</text>')
    return parts


def main() -> None:
    parts = axes()
    for label, model, gpu, quantization, colour in SERIES:
        parts.append(series(label, curve(model, gpu, quantization, False), colour, False))
        parts.append(series(label + " (roofline only)", curve(model, gpu, quantization, True),
                            colour, True))
    parts += legend()
    svg = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">'
           f'<rect width="{W}" height="{H}" fill="white"/>' + "".join(parts) + "</svg>\n")
    OUT.write_text(svg)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
