"""Every upload format's sample, mutated (bytes flipped, cut, repeated, numbers made NaN or
huge, gzipped whole or cut): a fixed, derandomized set of cases, each answered 201 (and listed)
or a 4xx naming what is wrong (and nothing stored), never a 5xx."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.format_samples import SAMPLES
from support.server import ORIGIN, UPLOADS, make_settings

from servescope.api.app import create_app

NUMBERS = [b"NaN", b"Infinity", b"-1", b"1e999", b"99999999999999999999999", b"0", b"\"\""]


def flip(body: bytes, at: int, byte: int) -> bytes:
    at %= max(1, len(body))
    return body[:at] + bytes([byte]) + body[at + 1:]


def cut(body: bytes, at: int, _: int) -> bytes:
    return body[:at % max(1, len(body))]


def repeat(body: bytes, at: int, times: int) -> bytes:
    at %= max(1, len(body))
    return body[:at] + body[at:] * (1 + times % 3)


def renumber(body: bytes, at: int, pick: int) -> bytes:
    """Replace the digits found at or after `at` with a hostile number."""
    at %= max(1, len(body))
    start = next((k for k in range(at, len(body)) if body[k:k + 1].isdigit()), None)
    if start is None:
        return body
    end = start
    while end < len(body) and body[end:end + 1] in b"0123456789.":
        end += 1
    return body[:start] + NUMBERS[pick % len(NUMBERS)] + body[end:]


def zipped(body: bytes, at: int, _: int) -> bytes:
    whole = gzip.compress(body)
    return whole if at % 2 else whole[:max(10, len(whole) - 1 - at % 20)]


MUTATIONS = [flip, cut, repeat, renumber, zipped]


@pytest.fixture(scope="module")
def bodies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, bytes]]:
    tmp = Path(tmp_path_factory.mktemp("samples"))
    return {name: (s.filename, s.body) for name, make in SAMPLES.items()
            for s in [make(tmp)]}


def test_mutated_samples_of_every_format_never_5xx_and_store_only_201s(tmp_path, bodies):
    names = sorted(bodies)
    settings_ = make_settings(tmp_path, max_upload_bytes=200_000)
    statuses: dict[int, int] = {}
    with TestClient(create_app(settings_), headers={**ORIGIN, **UPLOADS}) as client:
        answered: set[str] = set()

        @settings(max_examples=150, derandomize=True, database=None, deadline=None,
                  suppress_health_check=list(HealthCheck))
        @given(st.sampled_from(names), st.lists(st.tuples(st.sampled_from(MUTATIONS),
                                                          st.integers(0, 10**6),
                                                          st.integers(0, 255)),
                                                min_size=1, max_size=3))
        def check(name, mutations):
            filename, body = bodies[name]
            for mutate, at, arg in mutations:
                body = mutate(body, at, arg)
            r = client.post("/api/traces", files={"file": (filename, body)})
            statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
            assert r.status_code in (201, 400, 413), (name, mutations, r.text[:300])
            if r.status_code == 201:
                answered.add(r.json()["trace_id"])
            else:
                assert r.json()["detail"]["message"]
            assert {t["trace_id"] for t in client.get("/api/traces").json()} == answered

        check()
    print("mutated uploads by status:", statuses)
    assert statuses.get(400, 0) > 0 and statuses.get(201, 0) > 0
    data = tmp_path / "data"
    assert sorted(p.name for p in (data / "blobs").iterdir()) == sorted(answered)
    assert list((data / "tmp").iterdir()) == []
