"""Finds a Python new enough for a client that needs a newer one than ServeScope does
(inference-perf requires Python >= 3.12), without assuming pyenv: the PERF_PYTHON variable, then
`python3.N` and `python3` on PATH, then pyenv's versions (`$PYENV_ROOT`, else ~/.pyenv). A
candidate counts only if it runs, is new enough and can make a virtual environment with pip
(ensurepip). `make test` runs it as a script to build .venv-perf; it prints the path, or nothing
and why on stderr (exit 1), so a machine without one skips that client's test instead of failing.

    python tests/support/find_python.py 3.12"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

# asks a candidate for its version and whether it can `python -m venv` with pip
PROBE = ("import sys, ensurepip, venv; "
         "print(sys.version_info[0], sys.version_info[1])")
NEWEST_MINOR = 20  # python3.N names tried on PATH, 12 <= N <= this (ours: well past 3.14)


def candidates(environ: dict[str, str]) -> Iterator[Path]:
    """Where a Python may be, most explicit first; of several, the oldest that qualifies comes
    first (the version inference-perf's own floor names, so the one it is tested on)."""
    if environ.get("PERF_PYTHON"):
        yield Path(environ["PERF_PYTHON"])
    for folder in environ.get("PATH", "").split(os.pathsep):
        if not folder:
            continue
        yield Path(folder) / "python3"
        for minor in range(12, NEWEST_MINOR + 1):
            yield Path(folder) / f"python3.{minor}"
    root = Path(environ["PYENV_ROOT"]) if environ.get("PYENV_ROOT") else Path.home() / ".pyenv"
    versions = root / "versions"
    if versions.is_dir():
        for version in sorted(versions.iterdir()):
            yield version / "bin" / "python3"


def version_of(python: Path) -> tuple[int, int] | None:
    """(major, minor) of a Python that runs and can make a venv with pip, else None (a pyenv
    shim for a version not selected exits non-zero, as does one without ensurepip)."""
    if not (python.is_file() and os.access(python, os.X_OK)):
        return None
    try:
        done = subprocess.run([str(python), "-c", PROBE], capture_output=True, text=True,
                              timeout=30)  # a bound against a wedged interpreter only
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    if done.returncode != 0 or len(words) != 2:
        return None
    return int(words[0]), int(words[1])


def find(at_least: tuple[int, int], environ: dict[str, str]) -> Path | None:
    """The first candidate at least `at_least`, or None."""
    seen: set[Path] = set()
    for python in candidates(environ):
        if python in seen:
            continue
        seen.add(python)
        version = version_of(python)
        if version is not None and version >= at_least:
            return python
    return None


def main(argv: list[str]) -> int:
    wanted = tuple(int(part) for part in argv[1].split("."))
    found = find((wanted[0], wanted[1]), dict(os.environ))
    if found is None:
        print(f"no Python >= {argv[1]} with venv and pip: set PERF_PYTHON, or put python3.12+ "
              "on PATH or in pyenv", file=sys.stderr)
        return 1
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
