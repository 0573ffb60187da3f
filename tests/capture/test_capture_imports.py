"""Only servescope.capture (and the generator of the committed `vllm serve` flag list) may import
vLLM, and importing either must not."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "backend" / "servescope"
ALLOWED = {"capture/scheduler.py", "capture/driver.py", "capture/outputs.py",
           "vllm_import/flag_list.py"}  # inside the generator only (`make vllm-flags`)


def _imports_vllm(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n == "vllm" or n.startswith("vllm.") for n in names):
            return True
    return False


def test_only_the_capture_modules_import_vllm() -> None:
    offenders = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")
                 if str(p.relative_to(PACKAGE)) not in ALLOWED and _imports_vllm(p)]
    assert offenders == []
    assert _imports_vllm(PACKAGE / "capture" / "scheduler.py")  # the check can see an import


def test_importing_capture_loads_no_vllm() -> None:
    code = ("import sys, servescope.capture as c, servescope.capture.replay;"
            "import servescope.vllm_import.flag_list as f; f.known_dests();"
            "assert not any(m == 'vllm' or m.startswith('vllm.') for m in sys.modules), 'vllm';"
            "print(c.CLASS_NAMES)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "RecordingScheduler" in done.stdout
