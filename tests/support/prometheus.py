"""A real Prometheus (Debian's, installed by `make prometheus`) on a free loopback port, with
its own config and data directory, queried through its HTTP API; and promtool."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from support.server import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"


class Prometheus:
    def __init__(self, workdir: Path, targets: list[str] | None = None,
                 scrape_interval: str = "1s", data_dir: Path | None = None,
                 scrape_extra: str = "") -> None:
        """`scrape_extra`: YAML lines added to the scrape job (indented 4 spaces), e.g. its
        metric_relabel_configs."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        scrape = "" if not targets else (
            "scrape_configs:\n  - job_name: servescope\n"
            f"    scrape_interval: {scrape_interval}\n"
            f"    static_configs:\n      - targets: {json.dumps(targets)}\n{scrape_extra}")
        config.write_text(f"global:\n  scrape_interval: {scrape_interval}\n{scrape}")
        self.log = (workdir / "prometheus.log").open("wb")
        self.proc = subprocess.Popen(
            [PROMETHEUS, f"--config.file={config}",
             f"--storage.tsdb.path={data_dir or workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                urllib.request.urlopen(self.url + "/-/ready", timeout=2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError("prometheus did not become ready") from None
                time.sleep(0.2)

    def api(self, path: str, **params: Any) -> Any:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.loads(r.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        return list(self.api("query", query=expr)["result"])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.log.close()


def backfill(openmetrics_file: Path, data_dir: Path) -> str:
    """promtool tsdb create-blocks-from openmetrics; its output."""
    done = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics",
                           str(openmetrics_file), str(data_dir)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout
