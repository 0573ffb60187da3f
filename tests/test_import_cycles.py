"""No import circle anywhere in backend/: every import counts, those under TYPE_CHECKING and
those inside functions too, relative ones resolved, and `from pkg import name` read as an import
of pkg.name where that is a module. Fails listing each group of modules that import each other."""

from __future__ import annotations

import ast
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1] / "backend"


def modules(root: Path) -> dict[str, Path]:
    """{dotted module name: file} of every module below `root` (a package is its __init__)."""
    out = {}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of `known` that module `name` imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets.add(base)
            targets.update(f"{base}.{alias.name}" for alias in node.names)
    found = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            found.add(target)  # (a module's own package is imported before it: no edge back)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two or more modules (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            child = next(edges, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def graph_of(root: Path) -> dict[str, set[str]]:
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def test_no_import_circle_in_the_backend() -> None:
    graph = graph_of(BACKEND)
    assert len(graph) > 100
    assert circles(graph) == []


def test_the_check_sees_a_circle_through_type_checking_and_relative_imports(
        tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import C\n")
    (pkg / "c.py").write_text("def f():\n    import pkg.a\n")
    (pkg / "d.py").write_text("import pkg.a\n")
    graph = graph_of(tmp_path)
    assert graph["pkg.a"] == {"pkg.sub", "pkg.sub.b"} and graph["pkg.sub.b"] == {"pkg.c"}
    assert circles(graph) == [["pkg.a", "pkg.c", "pkg.sub.b"]]
