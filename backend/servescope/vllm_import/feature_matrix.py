"""The versioned feature-compatibility matrix (data/feature_matrix.json) and the check."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

DEFAULT_VERSION = "0.33.0"


@cache
def load_matrix() -> dict[str, Any]:
    text = resources.files("servescope").joinpath("data/feature_matrix.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def parse_version(text: str) -> tuple[int, ...]:
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def applies(entry: dict[str, Any], version: str) -> bool:
    """Whether a pair entry covers `version` (bounds inclusive; null is open)."""
    v = parse_version(version)
    low, high = entry.get("applies_from"), entry.get("applies_to")
    return (low is None or parse_version(low) <= v) and (high is None or v <= parse_version(high))


def check(features: set[str], version: str = DEFAULT_VERSION) -> list[dict[str, Any]]:
    """Documented problems between enabled features at `version`, plus enabled features the
    simulator does not model. Each item: kind, features, status, note, sources (URLs)."""
    matrix = load_matrix()
    sources = matrix["sources"]
    unknown = sorted(f for f in features if f not in matrix["features"])
    if unknown:
        raise KeyError(f"unknown features: {', '.join(unknown)}")
    issues: list[dict[str, Any]] = []
    for entry in matrix["pairs"]:
        pair = entry["features"]
        if entry["status"] == "compatible" or not set(pair) <= features:
            continue
        if not applies(entry, version):
            continue
        issues.append({
            "kind": "compatibility", "features": list(pair), "status": entry["status"],
            "note": entry["note"], "sources": [sources[s] for s in entry["documented_in"]],
        })
    for name in sorted(features):
        spec = matrix["features"][name]
        if not spec["modelled"] and name != "cuda_graph":
            issues.append({
                "kind": "not_modelled", "features": [name], "status": "not_modelled",
                "note": spec.get("note", f"{spec['name']} is not simulated."), "sources": [],
            })
    return issues


def pair_status(a: str, b: str, version: str = DEFAULT_VERSION) -> str | None:
    """The documented status of one pair at `version`, or None when the matrix is silent."""
    for entry in load_matrix()["pairs"]:
        if set(entry["features"]) == {a, b} and applies(entry, version):
            return str(entry["status"])
    return None
