import hashlib
import http.server
import json
import threading

import pytest
from support.paths import shared_path

from servescope.cli import main

BODY = b"Timestamp,Request tokens,Response tokens\n1,5,2\n4,6,0\n"


def test_list_inspect_and_fetch(tmp_path, capsys):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler())
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        cat = tmp_path / "catalog.json"
        cat.write_text(json.dumps({"traces": [{
            "name": "tiny", "title": "tiny", "format": "burstgpt", "licence": "CC-BY-4.0",
            "attribution": "x", "filename": "tiny.csv", "sha256": hashlib.sha256(BODY).hexdigest(),
            "url": f"http://127.0.0.1:{httpd.server_address[1]}/tiny.csv"}]}))
        args = ["--catalog", str(cat), "--data-dir", str(tmp_path / "d")]
        assert main(["traces", "list", "--json", *args]) == 0
        assert json.loads(capsys.readouterr().out)[0]["cached"] is False
        assert main(["traces", "fetch", "tiny", *args]) == 0
        path = capsys.readouterr().out.strip()
        assert main(["traces", "inspect", path, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["format"] == "burstgpt" and out["summary"]["num_requests"] == 1
        assert out["skipped"] == {"failed": 1}
        assert main(["traces", "fetch", "nope", *args]) == 2
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_inspect_reports_bad_lines_in_one_line(tmp_path, capsys):
    path = tmp_path / "b.csv"
    path.write_text("Timestamp,Request tokens,Response tokens\n1,5,2\n2,x,1\n")
    assert main(["traces", "inspect", str(path)]) == 2
    err = capsys.readouterr().err
    assert "line 3" in err and "Request tokens" in err and "Traceback" not in err


def test_inspect_shared_trace_with_options(capsys):
    path = shared_path("traces", "conversation_trace.jsonl")
    assert main(["traces", "inspect", str(path), "--window", "0:60", "--sample", "20",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["num_requests"] == 20


def _handler():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, *args):
            pass
    return Handler


def test_inspect_draws_sharegpt_requests_at_a_rate(tmp_path, capsys):
    path = tmp_path / "sharegpt_stats.csv"
    path.write_text("num_prefill_tokens,num_decode_tokens\n" +
                    "".join(f"{10 + i},{1 + i % 7}\n" for i in range(50)))
    assert main(["traces", "inspect", str(path), "--format", "sharegpt-stats", "--sample",
                 "400", "--rate-per-s", "20", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["num_requests"] == 400
    assert 400 / summary["arrival_span"] == pytest.approx(20, rel=0.2)
    assert main(["traces", "inspect", str(path), "--format", "sharegpt-stats"]) == 0
    assert "num_requests: 1000" in capsys.readouterr().out  # the reader's default, all at 0
    bursty = tmp_path / "b.csv"
    bursty.write_text(BODY.decode())
    assert main(["traces", "inspect", str(bursty), "--rate-per-s", "5"]) == 2
    assert "sharegpt-stats only" in capsys.readouterr().err
