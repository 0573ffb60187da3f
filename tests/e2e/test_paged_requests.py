"""A trace longer than one page of the request list (10,500 Azure rows; a page holds 10,000)
in a real Chromium: init says only how many requests run, the page reads the list in pages,
and after a seek past the first page's arrivals the queues show requests of the second page,
each with its own colour and prompt length, and the timeline counts all 10,500."""

from __future__ import annotations

import json
import urllib.request
import uuid

import pytest
from pagestate import wait_ready, wait_requests

pytestmark = pytest.mark.e2e

ROWS, RATE = 10_500, 200.0  # arrivals a second: an unloaded server keeps up with them
SEEK_S = 51.5  # request az10300 arrives at 51.5 s


def azure_csv() -> bytes:
    lines = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for k in range(ROWS):
        s = k / RATE
        lines.append(f"2023-11-16 18:{int(s // 60):02d}:{s % 60:010.7f},{8 + k % 97},2")
    return ("\n".join(lines) + "\n").encode()


def upload(server_url: str) -> tuple[str, str]:
    """The uploaded trace's id and the upload token that owns it."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"paged.csv\"\r\nContent-Type: text/csv\r\n\r\n").encode() + \
        azure_csv() + f"\r\n--{boundary}--\r\n".encode()
    req = urllib.request.Request(server_url + "/api/traces", data=body, method="POST", headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}"})
    with urllib.request.urlopen(req, timeout=60) as res:
        data = json.loads(res.read())
    assert data["num_requests"] == ROWS
    return str(data["trace_id"]), str(data["upload_token"])


SHOWN = """() => {
  const p = window.__servescope.store.panes[0];
  const chips = [...document.querySelectorAll('.lanes .chips [data-request]')]
    .map((c) => c.dataset.request);
  const spec = (id) => p.run.reqs[p.run.index.get(id)]?.spec ?? null;
  return { chips, index: chips.map((id) => p.run.index.get(id) ?? null),
    specs: chips.map((id) => [id, spec(id)?.prompt_len ?? null]) };
}"""


def test_a_trace_over_one_request_page_shows_its_later_requests(page, server_url):
    trace_id, token = upload(server_url)  # as another client: the link carries its token
    page.goto(f"{server_url}/?trace={trace_id}&upload_token={token}&max_num_seqs=64"
              "&num_gpu_blocks=4096")
    page.wait_for_function("() => window.__servescope?.store?.panes[0]?.init?.trace",
                           timeout=30000)
    init = page.evaluate("() => window.__servescope.store.panes[0].init")
    assert init["num_requests"] == ROWS
    wait_ready(page)
    wait_requests(page, timeout_ms=60000)
    page.evaluate("(t) => window.__servescope.api.send({type: 'seek', time_s: t})", SEEK_S)
    page.wait_for_function(
        "(t) => (window.__servescope.store.panes[0].run.record?.time_s ?? -1) > t - 1",
        arg=SEEK_S, timeout=120000)
    page.wait_for_function(f"() => ({SHOWN})().chips.length > 0", timeout=20000)
    shown = page.evaluate(SHOWN)
    late = [i for i in shown["chips"] if i.startswith("az") and int(i[2:]) >= 10_000]
    assert late and late == shown["chips"], shown["chips"]
    # each chip is its request: its index in the list (its colour) and its prompt length
    assert shown["index"] == [int(i[2:]) for i in shown["chips"]]
    for rid, prompt_len in shown["specs"]:
        assert prompt_len == 8 + int(rid[2:]) % 97, rid
    page.wait_for_function("() => document.getElementById('timeline-info').textContent"
                           f".includes('{ROWS} requests')", timeout=20000)
    assert page.errors == [], page.errors
