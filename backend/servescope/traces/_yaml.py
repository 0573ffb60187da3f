"""A small YAML document read within bounds: its size, its number of nodes, and no aliases
(`*name`), so a "billion laughs" (aliases of aliases, 10^9 leaves in a kilobyte) is refused
while it is parsed instead of expanded by whoever walks or prints the value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from servescope.traces._io import open_text
from servescope.traces.errors import TraceDependencyError, TraceFormatError

# A load profile (inference-perf's config.yaml) is a few dozen lines; these are 1,000x that.
MAX_YAML_BYTES = 1024 * 1024
MAX_YAML_NODES = 100_000


def load_mapping(path: Path, not_mapping: str) -> dict[str, Any]:
    """The YAML mapping in `path`; TraceFormatError when it is not YAML, too large, uses an
    alias, or is not a mapping (then saying `not_mapping`)."""
    try:
        import yaml
    except ImportError as err:  # pragma: no cover - PyYAML is a dependency
        raise TraceDependencyError("reading YAML needs PyYAML") from err
    with open_text(path) as handle:
        try:
            text = handle.read(MAX_YAML_BYTES + 1)
        except UnicodeDecodeError:
            raise TraceFormatError(0, "", "not UTF-8 text") from None
    if len(text) > MAX_YAML_BYTES:
        raise TraceFormatError(0, "", f"a YAML file over {MAX_YAML_BYTES:,} characters")
    try:
        value = yaml.load(text, Loader=_loader_class(yaml))  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        raise TraceFormatError(line, "", f"not YAML: {getattr(err, 'problem', None) or err}") \
            from None
    if not isinstance(value, dict):
        raise TraceFormatError(0, "", not_mapping)
    return value


def _loader_class(yaml: Any) -> type:
    class BoundedLoader(yaml.SafeLoader):  # type: ignore[misc, name-defined]
        """SafeLoader that refuses aliases and counts the nodes it composes."""

        num_nodes = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                line = self.peek_event().start_mark.line + 1
                raise TraceFormatError(line, "", "YAML aliases (*name) are not accepted: "
                                                 "write each value out")
            self.num_nodes += 1
            if self.num_nodes > MAX_YAML_NODES:
                raise TraceFormatError(0, "", f"more than {MAX_YAML_NODES:,} YAML nodes")
            return super().compose_node(parent, index)

    return BoundedLoader
