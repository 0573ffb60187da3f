"""Sessions that come and go leave the server no more malloc arenas than api/jobs/arenas.py
bounds them to: each session simulates ahead on a thread of its own, and without the bound
glibc gave each concurrent one an arena of its own that kept what the session freed (the soak,
bench/soak.py, grew 8-16 MB a minute so). Counted in a fresh process: pytest's own threads
have made arenas of their own before any test runs."""

from __future__ import annotations

import subprocess
import sys

import pytest
from support.server import ROOT

from servescope.api.jobs.arenas import MAX_ARENAS, num_arenas

SESSIONS = 6  # more than MAX_ARENAS simulating at once
SCRIPT = """
import sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
from fastapi.testclient import TestClient
from support.server import ORIGIN, FakeClock, make_settings
from servescope.api.app import create_app
from servescope.api.jobs.arenas import num_arenas

clock = FakeClock()
with tempfile.TemporaryDirectory() as tmp:
    settings = make_settings(Path(tmp))
    with TestClient(create_app(settings, clock=clock), headers=ORIGIN) as client:
        made = [client.post("/api/sessions", json={"workload": {"synthetic": {
            "num_requests": 800, "seed": k}}}).json()["session_id"]
                for k in range(int(sys.argv[1]))]
        for sid in made:  # the summary answers once the session's run has ended
            assert client.get(f"/api/sessions/{sid}/summary").status_code == 200
        clock.advance(settings.session_grace_s + 1)  # their grace is over: all are freed
        registry = client.app.state.registry
        assert sorted(registry.reap()) == sorted(made) and not registry.sessions
        print(num_arenas())
"""


@pytest.mark.skipif(num_arenas() is None, reason="malloc is not glibc's")
def test_sessions_that_come_and_go_leave_at_most_the_bounded_arenas():
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(SESSIONS)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600,
                          env={"PYTHONPATH": str(ROOT / "backend")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert 1 <= int(done.stdout.split()[-1]) <= MAX_ARENAS
