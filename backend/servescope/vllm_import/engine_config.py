"""An engine-config JSON as `sim --config` takes it: EngineConfig fields and vLLM engine-argument
names together, resolved as vLLM 0.33 resolves them (core/resolve.py) where they are left out,
and every argument the simulator does not model named, never silently dropped."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from servescope.core.config import ConfigError, EngineConfig
from servescope.core.resolve import resolve_config
from servescope.vllm_import.feature_matrix import load_matrix
from servescope.vllm_import.flags import NO_EFFECT, NOT_MODELLED

FIELDS = frozenset(f.name for f in dataclasses.fields(EngineConfig))
NULLABLE = frozenset(f.name for f in dataclasses.fields(EngineConfig) if "None" in str(f.type))


@dataclass
class LoadedConfig:
    config: EngineConfig
    not_modelled: list[str] = field(default_factory=list)  # sentences, one per argument
    ignored: list[str] = field(default_factory=list)  # arguments with no effect on scheduling
    defaults: dict[str, str] = field(default_factory=dict)  # vLLM defaults filled in: why
    given: dict[str, Any] = field(default_factory=dict)  # the EngineConfig settings the file set


def load_engine_config(data: dict[str, Any]) -> LoadedConfig:
    """EngineConfig fields are taken as they are; other vLLM arguments are sorted into no
    effect and not modelled; anything else is a ConfigError naming the key."""
    values: dict[str, Any] = {}
    out = LoadedConfig(EngineConfig())
    for key, value in data.items():
        name = key.replace("-", "_")
        if name in FIELDS:
            if value is None and name not in NULLABLE:
                continue  # vLLM's JSON dumps write null for "the default"
            values[name] = value
        elif name in NOT_MODELLED:
            if _enabled(value):
                out.not_modelled.append(_sentence(name, value))
        elif name in NO_EFFECT:
            out.ignored.append(name)
        else:
            raise ConfigError(key, "unknown config key: neither an engine config field nor a "
                              "vLLM engine argument ServeScope knows")
    resolved = resolve_config(values)
    out.config, out.defaults, out.given = resolved.config, resolved.defaults, values
    return out


def _enabled(value: Any) -> bool:
    return value not in (None, False, 0, "", 1) or value is True


def _sentence(name: str, value: Any) -> str:
    feature = NOT_MODELLED[name]
    spec = load_matrix()["features"].get(feature or "", {})
    note = spec.get("note") or "changes scheduling or memory in a way the simulator does not " \
        "model"
    return f"{name}={value!r} is not modelled: {note}"
