"""What a point costs: GPU-hours of its replicas over the run, in dollars from the GPU price
table (data/gpu_prices.json, sourced and dated) or the user's --gpu-price overrides."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from importlib import resources
from typing import Any

from servescope.core import catalog
from servescope.core.config import ConfigError


class PriceError(ValueError):
    """A bad --gpu-price; `field` names the GPU (or "gpu_price")."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def price_table() -> dict[str, Any]:
    text = resources.files("servescope").joinpath("data/gpu_prices.json").read_text()
    data: dict[str, Any] = json.loads(text)
    return data


def prices(overrides: Iterable[str] = ()) -> dict[str, float]:
    """GPU key -> $ per GPU-hour: the table's, then `GPU=USD` overrides (any GPU name the
    catalog knows, e.g. H100 or 'NVIDIA H100 80GB HBM3')."""
    out = {key: float(p["usd_per_hour"]) for key, p in price_table()["prices"].items()}
    for item in overrides:
        name, sep, raw = item.partition("=")
        if not sep:
            raise PriceError("gpu_price", f"{item!r}: write a price as GPU=USD, e.g. H100=2.49")
        try:
            key = catalog.gpu(name.strip()).key
        except ConfigError as err:
            raise PriceError(name.strip(), str(err)) from None
        try:
            value = float(raw)
        except ValueError:
            raise PriceError(key, f"{key}: {raw!r} is not a price in dollars") from None
        if not 0 <= value < float("inf"):
            raise PriceError(key, f"{key}: a price must be a non-negative number, got {raw!r}")
        out[key] = value
    return out


def point_cost(gpu_key: str, num_gpus: int, duration_s: float, output_tokens: int,
               table: Mapping[str, float]) -> dict[str, Any]:
    """{num_gpus, gpu_hours, usd_per_gpu_hour, usd, usd_per_m_output_tokens}; the dollar
    figures are None for a GPU with no price."""
    gpu_hours = num_gpus * duration_s / 3600.0
    price = table.get(gpu_key)
    usd = None if price is None else gpu_hours * price
    per_m = None if usd is None or output_tokens == 0 else usd / output_tokens * 1e6
    return {"num_gpus": num_gpus, "gpu_hours": gpu_hours, "usd_per_gpu_hour": price,
            "usd": usd, "usd_per_m_output_tokens": per_m}
