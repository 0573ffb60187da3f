"""tests/support/find_python.py, which `make test` runs to give inference-perf a Python >= 3.12:
on hand-made interpreters (shell scripts that answer the probe as a Python of some version
would, or fail as a pyenv shim for an unselected version does)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.find_python import find

SCRIPT = Path(__file__).resolve().parents[1] / "support" / "find_python.py"


def fake_python(path: Path, version: str | None) -> Path:
    """An executable that prints `major minor` as the probe does, or exits 127 (version None),
    as `pyenv: python3.12: command not found` does."""
    path.parent.mkdir(parents=True, exist_ok=True)
    body = f"echo {version.replace('.', ' ')}" if version else "exit 127"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


def test_on_path_a_failing_shim_is_passed_over_for_a_new_enough_python(tmp_path: Path) -> None:
    shims = tmp_path / "shims"
    fake_python(shims / "python3", "3.11")
    fake_python(shims / "python3.12", None)
    wanted = fake_python(shims / "python3.13", "3.13")
    environ = {"PATH": str(shims), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    assert find((3, 12), environ) == wanted


def test_pyenv_versions_when_path_has_none_the_oldest_new_enough_first(tmp_path: Path) -> None:
    versions = tmp_path / "pyenv" / "versions"
    fake_python(versions / "3.11.7" / "bin" / "python3", "3.11")
    oldest = fake_python(versions / "3.12.1" / "bin" / "python3", "3.12")
    fake_python(versions / "3.13.0" / "bin" / "python3", "3.13")
    environ = {"PATH": str(tmp_path / "empty"), "PYENV_ROOT": str(tmp_path / "pyenv")}
    assert find((3, 12), environ) == oldest


def test_perf_python_is_taken_first_but_only_when_new_enough(tmp_path: Path) -> None:
    on_path = fake_python(tmp_path / "bin" / "python3", "3.12")
    chosen = fake_python(tmp_path / "chosen" / "python", "3.13")
    old = fake_python(tmp_path / "old" / "python", "3.10")
    base = {"PATH": str(tmp_path / "bin"), "PYENV_ROOT": str(tmp_path / "no-pyenv")}
    assert find((3, 12), {**base, "PERF_PYTHON": str(chosen)}) == chosen
    assert find((3, 12), {**base, "PERF_PYTHON": str(old)}) == on_path


def test_none_found_the_script_says_why_and_exits_1(tmp_path: Path) -> None:
    fake_python(tmp_path / "bin" / "python3", "3.11")
    environ = {"PATH": str(tmp_path / "bin"), "PYENV_ROOT": str(tmp_path / "no-pyenv"),
               "HOME": str(tmp_path)}
    assert find((3, 12), environ) is None
    done = subprocess.run([sys.executable, str(SCRIPT), "3.12"], env=environ,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert "no Python >= 3.12" in done.stderr
