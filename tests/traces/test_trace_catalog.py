import hashlib
import http.server
import json
import threading
from pathlib import Path

import pytest
from support.paths import shared_path

from servescope.traces import catalog, registry
from servescope.traces.catalog import CatalogError, Entry

BODY = b"Timestamp,Request tokens,Response tokens\n1,5,2\n"


@pytest.fixture
def server():
    """A local HTTP server on 127.0.0.1 serving /good, /big and 404 elsewhere."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/good":
                self.send_response(200)
                self.end_headers()
                self.wfile.write(BODY)
            else:
                self.send_error(404)

        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def entry(url, **kw):
    base = dict(name="t", title="t", format="burstgpt", url=url, filename="t.csv",
                licence="CC-BY-4.0", attribution="someone",
                sha256=hashlib.sha256(BODY).hexdigest())
    return Entry(**{**base, **kw})


def test_fetch_verifies_and_renames_into_place(server, tmp_path):
    path, found = catalog.fetch(entry(f"{server}/good"), tmp_path)
    assert path == tmp_path / "traces" / "t.csv" and path.read_bytes() == BODY
    assert found["sha256"] == hashlib.sha256(BODY).hexdigest()
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.csv"]
    assert registry.detect(path) == "burstgpt"


def test_cached_copy_is_reused_without_the_network(server, tmp_path):
    catalog.fetch(entry(f"{server}/good"), tmp_path)
    path, _ = catalog.fetch(entry("http://127.0.0.1:9/unreachable"), tmp_path)
    assert path.read_bytes() == BODY


@pytest.mark.parametrize("kw, url", [
    (dict(sha256="0" * 64), "/good"),
    (dict(git_blob_sha1="0" * 40), "/good"),
    (dict(bytes=10), "/good"),
    (dict(bytes=len(BODY) + 5), "/good"),
    ({}, "/missing"),
])
def test_a_bad_download_leaves_nothing_behind(server, tmp_path, kw, url):
    with pytest.raises(CatalogError):
        catalog.fetch(entry(server + url, **kw), tmp_path)
    assert list((tmp_path / "traces").iterdir()) == []


def test_unpinned_files_need_allow_unverified(server, tmp_path):
    unpinned = entry(f"{server}/good", sha256=None)
    with pytest.raises(CatalogError, match="allow-unverified"):
        catalog.fetch(unpinned, tmp_path)
    path, _ = catalog.fetch(unpinned, tmp_path, allow_unverified=True)
    assert path.read_bytes() == BODY


def test_git_blob_id_matches_git():
    # `printf 'hello\n' | git hash-object --stdin`
    path = Path(__file__).with_name("_blob.txt")
    path.write_bytes(b"hello\n")
    try:
        assert catalog.digests(path)["git_blob_sha1"] == "ce013625030ba8dba906f756967f9e9ca394464a"
    finally:
        path.unlink()


def test_the_shipped_catalog_is_complete_and_pins_the_shared_copies():
    entries = catalog.load_catalog()
    names = {e.name for e in entries}
    assert {"azure-2023-code", "azure-2024-conv", "burstgpt-1", "mooncake-conversation",
            "sharegpt-stats"} <= names
    for e in entries:
        assert e.format in registry.FORMATS and e.licence and e.attribution
        assert e.url.startswith("https://")
        if "raw.githubusercontent.com" in e.url:
            assert e.upstream["commit"] in e.url and len(e.upstream["commit"]) == 40
    by_file = {e.upstream.get("path", "").rsplit("/", 1)[-1]: e for e in entries}
    checked = 0
    for name in ("AzureLLMInferenceTrace_code.csv", "conversation_trace.jsonl",
                 "sharegpt_8k_filtered_stats_llama2_tokenizer.csv"):
        found = catalog.check(by_file[name], shared_path("traces", name))
        assert found["sha256"] == by_file[name].sha256
        checked += 1
    assert checked == 3


def test_repository_ships_no_trace_data():
    root = Path(__file__).resolve().parents[2] / "traces"
    assert not [p for p in root.rglob("*") if p.suffix in (".csv", ".gz", ".bin")]
    assert json.loads((root / "catalog.json").read_text())["traces"]
