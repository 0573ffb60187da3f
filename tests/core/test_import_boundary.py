"""The core is a pure function of (config, requests, seed): no web, I/O or clock imports."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "backend" / "servescope" / "core"
FORBIDDEN = {
    "os", "io", "pathlib", "socket", "asyncio", "logging", "subprocess", "threading", "tempfile",
    "shutil", "sqlite3", "urllib", "http", "time", "datetime", "random", "pickle", "glob",
    "fastapi", "starlette", "uvicorn", "websockets", "pydantic", "jinja2", "httpx", "requests",
}
ALLOWED_THIRD_PARTY = {"numpy"}
# checkpoint.py pickles an engine to bytes in memory (no file, no clock): the server keeps them
EXCEPTIONS = {"checkpoint.py": {"io", "pickle"}}


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def test_core_imports_only_stdlib_numpy_and_core() -> None:
    offences = []
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 8
    for path in modules:
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "servescope":
                ok = name.startswith("servescope.core")
            else:
                ok = top in EXCEPTIONS.get(path.name, ()) or top not in FORBIDDEN and (
                    top in sys.stdlib_module_names or top in ALLOWED_THIRD_PARTY)
            if not ok:
                offences.append(f"{path.relative_to(CORE)} imports {name}")
    assert offences == []


def test_the_check_sees_a_forbidden_import(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nfrom fastapi import FastAPI\n")
    assert _imports(bad) == ["os", "fastapi"]
