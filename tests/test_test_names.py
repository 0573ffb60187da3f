"""pytest imports test files by basename (rootdir-relative without __init__.py): two test files
of one name in different folders stop the whole run at collection."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).parent


def test_no_two_test_files_share_a_basename() -> None:
    names = Counter(p.name for p in TESTS.rglob("test_*.py") if "node_modules" not in p.parts)
    assert [name for name, count in names.items() if count > 1] == []
