"""llm-d's EndpointPickerConfig YAML (llm-d-inference-scheduler's deploy/config/*.yaml, commit
520af478) as a router_config for the llm-d routers (core/routers/llm_d.py).

    apiVersion: llm-d.ai/v1alpha1
    kind: EndpointPickerConfig
    plugins: [{type, name?, parameters?}, ...]
    schedulingProfiles: [{name, plugins: [{pluginRef, weight?}, ...]}, ...]

The profile named "default" (else the first) gives the scorers and their weights; a pluginRef
names a plugin's `name`, which defaults to its `type`. Filters and pickers the router applies
itself (decode-filter, max-score-picker) and plugins that only feed data (token-producer,
metrics sources, the profile handler) are left out; any other scorer type is refused by name.
The approximate prefix producer's `lruCapacityPerServer` and `maxPrefixBlocksToMatch` become
`lru_capacity_per_server` and `max_prefix_blocks`. Read with the bounded YAML reader.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servescope.traces._yaml import load_mapping
from servescope.traces.errors import TraceFormatError, shown

KIND = "EndpointPickerConfig"
PRODUCER = "approx-prefix-cache-producer"
PRODUCER_KEYS = {"lruCapacityPerServer": "lru_capacity_per_server",
                 "maxPrefixBlocksToMatch": "max_prefix_blocks"}


def read_router_config(path: Path) -> dict[str, Any]:
    """The router_config an EndpointPickerConfig file describes (TraceFormatError otherwise)."""
    doc = load_mapping(path, f"expected a {KIND} mapping")
    if doc.get("kind") != KIND:
        raise TraceFormatError(0, "kind", f"expected {KIND}, got {shown(doc.get('kind'))}")
    types = _plugin_types(doc.get("plugins") or [])
    profile = _profile(doc.get("schedulingProfiles"))
    config: dict[str, Any] = {"scorers": [
        {"pluginRef": types.get(ref, ref), "weight": weight} for ref, weight in profile]}
    for plugin in doc.get("plugins") or []:
        if plugin.get("type") == PRODUCER:
            params = plugin.get("parameters") or {}
            config.update({ours: params[theirs] for theirs, ours in PRODUCER_KEYS.items()
                           if params.get(theirs)})
    return config


def _plugin_types(plugins: Any) -> dict[str, str]:
    """Each plugin's name -> its type (the name defaults to the type)."""
    if not isinstance(plugins, list):
        raise TraceFormatError(0, "plugins", "expected a list of {type, name?, parameters?}")
    types = {}
    for plugin in plugins:
        if not isinstance(plugin, dict) or not isinstance(plugin.get("type"), str):
            raise TraceFormatError(0, "plugins", f"expected {{type: ...}}, got {shown(plugin)}")
        types[str(plugin.get("name", plugin["type"]))] = plugin["type"]
    return types


def _profile(profiles: Any) -> list[tuple[str, float]]:
    """(pluginRef, weight) of the default (else first) scheduling profile's plugins."""
    if not isinstance(profiles, list) or not profiles or \
            not all(isinstance(p, dict) for p in profiles):
        raise TraceFormatError(0, "schedulingProfiles", "expected a list of {name, plugins}")
    chosen = next((p for p in profiles if p.get("name") == "default"), profiles[0])
    refs = chosen.get("plugins")
    if not isinstance(refs, list) or not all(isinstance(r, dict) and "pluginRef" in r
                                             for r in refs):
        raise TraceFormatError(0, "schedulingProfiles.plugins", "expected {pluginRef, weight?}")
    return [(str(r["pluginRef"]), r.get("weight", 1)) for r in refs]
