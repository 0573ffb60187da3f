"""Fair shares of uploads and storage (issue 33, part 3): uploads per client an hour, the bytes
a client keeps stored, the data directory's total quota (run stores counted) and retention.
A client with an upload token (X-Upload-Token) is another client than its address."""

from __future__ import annotations

import time

from support.hostile_shares import call, multipart, trace_of

MIB = 1024 * 1024


def upload(server, text: str, token: str | None = None):
    body, kind = multipart(text)
    return call(server, "POST", "/api/traces", raw=body, kind=kind,
                headers={"x-upload-token": token} if token else None)


def test_uploads_an_hour_per_client(serve):
    server = serve(client_max_uploads_per_hour=2)
    assert upload(server, trace_of(200, "a"))[0] == 201
    assert upload(server, trace_of(200, "b"))[0] == 201
    t0 = time.monotonic()
    status, body, headers = upload(server, trace_of(200, "c"))
    assert status == 429 and body["detail"]["field"] == "file", body
    assert "client_max_uploads_per_hour" in body["detail"]["message"]
    assert 0 < int(headers["retry-after"]) <= 3600
    assert time.monotonic() - t0 < 5
    assert upload(server, trace_of(200, "c"), token="a-token-of-its-own")[0] == 201


def test_stored_bytes_per_client(serve):
    server = serve(client_max_stored_mb=1)
    assert upload(server, trace_of(MIB * 6 // 10, "a"))[0] == 201
    status, body, _ = upload(server, trace_of(MIB * 6 // 10, "b"))  # past what is left
    assert status == 413 and "quota" in body["detail"]["message"], body
    assert upload(server, trace_of(MIB * 3 // 10, "c"))[0] == 201  # what is left fits
    status, body, _ = upload(server, trace_of(MIB // 5, "d"))
    assert status == 413 and "quota" in body["detail"]["message"], body
    assert upload(server, trace_of(MIB // 5, "d"), token="another-client-0001")[0] == 201


def test_the_data_directory_quota_counts_run_stores(serve):
    """Over data_quota_mb (here by a run store's bytes), uploads and new sessions are 507."""
    server = serve(data_quota_mb=1)
    runs = server.data_dir / "runs"
    runs.mkdir(exist_ok=True)
    (runs / "filler.sqlite3").write_bytes(b"\0" * (MIB + 1))
    status, body, _ = upload(server, trace_of(200))
    assert status == 507 and "data_quota_mb" in body["detail"]["message"], body
    status, body, _ = call(server, "POST", "/api/sessions", {"workload": {"preset": "demo"}})
    assert status == 507 and body["detail"]["code"] == "storage_full", body
    (runs / "filler.sqlite3").unlink()
    assert upload(server, trace_of(200))[0] == 201


def test_uploads_expire_after_the_retention_time(serve):
    server = serve(upload_retention_s=1, session_grace_s=0.4)  # the reaper runs every 0.1 s
    status, stored, _ = upload(server, trace_of(200))
    assert status == 201
    tid = stored["trace_id"]
    t0 = time.monotonic()
    mine = {"x-upload-token": stored["upload_token"]}
    assert call(server, "GET", f"/api/traces/{tid}", headers=mine)[0] == 200
    while call(server, "GET", f"/api/traces/{tid}", headers=mine)[0] == 200:
        assert time.monotonic() - t0 < 20, "the upload outlived its retention"
        time.sleep(0.2)
    assert not (server.data_dir / "blobs" / tid).exists()
