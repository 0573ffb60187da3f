"""The package's floors: each wing imports only from wings below it (core <- traces <-
scenarios <- api, cli), and nothing but __init__ and exports lies loose at the package root."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "backend" / "servescope"
# wing -> the wings it may import from (besides itself and the package root's modules)
BELOW = {
    "core": set(),
    "traces": {"core"},
    "capture": {"core", "traces"},
    "vllm_import": {"core"},
    "scenarios": {"core", "traces"},
    "api": {"core", "traces", "scenarios", "vllm_import"},
    "cli": {"core", "traces", "scenarios", "vllm_import", "capture", "api"},
}
ROOT_MODULES = {"__init__", "exports"}


def _servescope_imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0
                 else [])
        out += [n for n in names if n.split(".")[0] == "servescope"]
    return out


def _wing(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in BELOW else None


def test_nothing_imports_upward() -> None:
    offences = []
    for wing, allowed in BELOW.items():
        for path in sorted((PACKAGE / wing).rglob("*.py")):
            for name in _servescope_imports(path):
                target = _wing(name)
                if target is not None and target != wing and target not in allowed:
                    offences.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert offences == []


def test_no_loose_modules_at_the_package_root() -> None:
    loose = {p.stem for p in PACKAGE.glob("*.py")} - ROOT_MODULES
    assert loose == set()
    wings = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert wings == set(BELOW)
    assert all(ast.get_docstring(ast.parse((PACKAGE / w / "__init__.py").read_text()))
               for w in wings)


def test_the_check_sees_an_upward_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from servescope.api.session import Session\nimport servescope.core.engine\n")
    assert [_wing(n) for n in _servescope_imports(bad)] == ["api", "core"]
