"""The package's floors: each wing imports only from wings below it (core <- traces <-
scenarios <- sweep <- api, cli), and nothing but __init__ and exports lies loose at the
package root. Inside api/ the same holds for its own wings (wire and uploads at the bottom,
then records and jobs, leaps, sessions, and reports and web on top), with only app, settings,
deps and errors loose beside them."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "backend" / "servescope"
# wing -> the wings it may import from (besides itself and the package root's modules)
BELOW = {
    "core": set(),
    "traces": {"core"},
    "capture": {"core", "traces"},
    "vllm_import": {"core"},
    "scenarios": {"core", "traces"},
    "sweep": {"core", "traces", "scenarios"},
    "observability": set(),
    "api": {"core", "traces", "scenarios", "vllm_import", "sweep", "observability"},
    "cli": {"core", "traces", "scenarios", "vllm_import", "capture", "api", "sweep",
            "observability"},
}
ROOT_MODULES = {"__init__", "exports"}
API = PACKAGE / "api"
# api's wing -> the api wings it may import from (besides itself and API_BASE)
API_BELOW = {
    "wire": set(),
    "uploads": set(),
    "records": {"wire"},
    "jobs": {"wire"},
    "leaps": {"wire", "records", "jobs"},
    "sessions": {"wire", "uploads", "records", "jobs", "leaps"},
    "reports": {"wire", "uploads", "records", "jobs", "leaps", "sessions"},
    "web": {"wire", "uploads", "records", "jobs", "leaps", "sessions"},
    "routes": {"wire", "uploads", "records", "jobs", "leaps", "sessions", "reports", "web",
               "deps"},
    "openai": set(),  # the OpenAI API on live engines: core only (its own app, beside `app`)
}
API_BASE = {"settings", "errors"}  # loose modules every wing may use: they import no wing
API_TOP = {"app", "deps"}  # loose modules above every wing


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


def _upward(root: Path, below: dict[str, set[str]], part: Callable[[str], str | None],
            also: set[str] = frozenset()) -> list[str]:
    """Imports from each wing under `root` of a wing not below it (`part` names the wing an
    import is of, None for none; `also`: what every wing may import besides)."""
    offences = []
    for wing, allowed in below.items():
        for path in sorted((root / wing).rglob("*.py")):
            for name in _servescope_imports(path):
                target = part(name)
                if target not in (None, wing) and target not in allowed | also:
                    offences.append(f"{path.relative_to(PACKAGE)} imports {name}")
    return offences


def test_nothing_imports_upward() -> None:
    assert _upward(PACKAGE, BELOW, _wing) == []


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


def _api_part(name: str) -> str | None:
    """The api wing (or loose module) an import names, None outside api."""
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "api" else None


def test_api_wings_import_only_downward() -> None:
    offences = _upward(API, API_BELOW, _api_part, API_BASE)
    for base in API_BASE:
        offences += [f"api/{base}.py imports {n}" for n in _servescope_imports(API / f"{base}.py")
                     if _api_part(n) is not None]
    assert offences == []


def test_api_has_only_its_wings_and_four_loose_modules() -> None:
    loose = {p.stem for p in API.glob("*.py")} - {"__init__"}
    assert loose == API_BASE | API_TOP
    wings = {p.name for p in API.iterdir() if (p / "__init__.py").is_file()}
    assert wings == set(API_BELOW)
    assert all(ast.get_docstring(ast.parse((API / w / "__init__.py").read_text()))
               for w in wings)


def test_the_api_check_sees_a_wing_and_a_loose_module() -> None:
    assert _api_part("servescope.api.sessions.session") == "sessions"
    assert _api_part("servescope.api.errors") == "errors"
    assert _api_part("servescope.core.engine") is None
