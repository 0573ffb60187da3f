"""No file uses another's private members: `obj._name` where obj is not self, cls or super(),
or `from m import _name`, is an offence unless `_name` is defined in the same file (a class's
own private attributes on another instance of it) or is listed below with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1] / "backend" / "servescope"
# (file, attribute): why a third-party object's private member is used there
EXEMPT = {
    ("api/web/edge.py", "_body"):
        "Starlette's Request caches a read body there; BaseHTTPMiddleware replays it",
    ("capture/scheduler.py", "_maybe_evict_cached_block"):
        "vLLM's own BlockPool method, which capture wraps to record evictions",
    ("vllm_import/flag_list.py", "_actions"):
        "argparse keeps a parser's arguments only there (vLLM's serve parser, listed)",
}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.AST) -> set[str]:
    """Names the file itself defines: functions, classes, assigned names and attributes of
    self or cls (its own objects' private members)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
              and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
    return names


def _is_super(node: ast.expr) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "super")


def offences(source: str) -> list[tuple[int, str]]:
    """(line, member) of every private member the source uses but does not define."""
    tree = ast.parse(source)
    own = _defined(tree)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            value = node.value
            if not (isinstance(value, ast.Name) and value.id in ("self", "cls")) \
                    and not _is_super(value):
                out.append((node.lineno, node.attr))
        elif isinstance(node, ast.ImportFrom):
            out += [(node.lineno, a.name) for a in node.names if _private(a.name)]
    return out


def test_no_private_member_is_used_from_another_file() -> None:
    found = []
    for path in sorted(BACKEND.rglob("*.py")):
        rel = path.relative_to(BACKEND).as_posix()
        found += [f"{rel}:{line} uses {name}" for line, name in offences(path.read_text())
                  if (rel, name) not in EXEMPT]
    assert found == []


def test_every_exemption_is_still_needed() -> None:
    for (rel, name), why in EXEMPT.items():
        assert why and name in {n for _, n in offences((BACKEND / rel).read_text())}, rel


def test_the_check_sees_a_foreign_private_member_and_allows_ones_own() -> None:
    source = (
        "from pkg.mod import _helper\n"
        "class A:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
        "    def same(self, other):\n"
        "        return other._own + super()._base()\n"
        "def f(engine):\n"
        "    return engine._pending\n"
    )
    assert offences(source) == [(1, "_helper"), (8, "_pending")]
