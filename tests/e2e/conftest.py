"""Real headless Chromium (Debian's) against a real uvicorn process serving the page."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("SERVESCOPE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
SCREENSHOTS = ROOT / "docs" / "screenshots"


def _app_target() -> tuple[str, list[str]]:
    """The real app factory."""
    return "servescope.api.app:create_app", []


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def server_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's output (warnings and errors, with their tracebacks)."""
    return tmp_path_factory.mktemp("server") / "server.log"


@pytest.fixture(scope="session")
def server_url(server_log: Path):
    target, extra = _app_target()
    port = _free_port()
    log = server_log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", target, "--host", "127.0.0.1",
         "--port", str(port), "--workers", "1", "--log-level", "warning", *extra],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a bound only against hanging when broken
    while True:
        try:
            urllib.request.urlopen(url + "/", timeout=1).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"server did not start: {server_log.read_text()[-2000:]}")
            time.sleep(0.2)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.fixture(autouse=True)
def no_server_errors(server_log: Path):
    """Each test fails on a server error logged while it ran (a 500 logs its traceback)."""
    start = server_log.stat().st_size if server_log.exists() else 0
    yield
    if server_log.exists():
        with server_log.open("rb") as f:
            f.seek(start)
            logged = f.read().decode(errors="replace")
        assert "Traceback" not in logged, f"the server failed during this test:\n{logged[-4000:]}"


# one per module: Playwright's sync API holds an event loop in the main thread while it runs, so
# it is stopped after each browser test module and the tests after them may asyncio.run
@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}; apt-get install chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


def new_page(browser, width: int, height: int):
    """A page in its own context whose script errors gather in `page.errors`."""
    context = browser.new_context(viewport={"width": width, "height": height})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    return context, pg


@pytest.fixture
def page(browser):
    context, pg = new_page(browser, 1500, 1000)
    pg.on("dialog", lambda d: (pg.errors.append(f"dialog: {d.message}"), d.dismiss()))
    yield pg
    context.close()


@pytest.fixture
def small_page(browser):
    """A page in a laptop-sized window (the fleet and P/D views' lanes at their tightest)."""
    context, pg = new_page(browser, 1280, 720)
    yield pg
    context.close()


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the e2e tests save their screenshots: docs/screenshots (the README's) only when
    SERVESCOPE_SCREENSHOTS=docs is set (`make screenshots`), else a temporary folder."""
    if os.environ.get("SERVESCOPE_SCREENSHOTS") == "docs":
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS
    return tmp_path_factory.mktemp("screenshots")


@pytest.fixture
def fresh_url(server_url) -> str:
    """The page on a session of its own (a fresh demo run), so no other test's play shows."""
    body = json.dumps({"workload": {"preset": "demo"}}).encode()
    req = urllib.request.Request(server_url + "/api/sessions", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as res:
        session = json.loads(res.read())
    return f"{server_url}{session['drive_url']}"
