"""A room opening the page at once: 60 page loads in a burst each ask a real server for the
same session's overview and percentiles (as ui/overview.js does, one after the other). With 2
heavy jobs at once and a line of 8, half of them used to get a 503 "busy" naming exports and
diagnoses; the run's answers are now shared (api/jobs/shared.py), so all are answered."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PAGES = 60


def _post(server, path: str, body: dict) -> dict:
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def _status(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=120) as r:  # a bound against hanging only
            r.read()
            return r.status, ""
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode(errors="replace")


def test_sixty_page_loads_in_a_burst_all_get_the_overview_and_percentiles(server):
    sid = _post(server, "/api/sessions", {"workload": {"preset": "demo"}})["session_id"]
    with urllib.request.urlopen(f"{server.url}/api/sessions/{sid}/summary", timeout=60):
        pass  # the run is stored whole: every page asks about the same run
    base = f"{server.url}/api/sessions/{sid}"

    def page_load(_: int) -> list[tuple[int, str]]:
        return [_status(f"{base}/overview?bins=600"), _status(f"{base}/percentiles?")]

    with ThreadPoolExecutor(PAGES) as pool:
        answers = [a for pair in pool.map(page_load, range(PAGES)) for a in pair]
    refused = [text for code, text in answers if code != 200]
    assert refused == [], f"{len(refused)} of {len(answers)} refused, e.g. {refused[0]}"
