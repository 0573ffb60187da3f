"""Uploads that ask for more than they weigh (issue 33, part 1), sent to a real server on
127.0.0.1: each answered 4xx quickly, with a short error and bounded memory growth, and the
server still healthy. Sizes are the issue's "done when"; times are generous for a loaded CI."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.hostile_bounds import Watched, upload

pytestmark = pytest.mark.hostile

LENGTHS = ("data:\n  type: random\n  input_distribution: {min: 1, max: 8, mean: 4}\n"
           "  output_distribution: {min: 1, max: 8, mean: 4}\n")


@pytest.fixture(scope="module")
def watched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watched]:
    server = Watched(tmp_path_factory.mktemp("bounds") / "data")
    # warm: one real profile read and stored, so growth counts the attack only
    assert upload(server.server.url, "ok.yaml", profile(rate=2, duration=2)).status == 201
    yield server
    server.stop()


def profile(rate: object, duration: object) -> bytes:
    return (f"load:\n  type: constant\n  stages:\n    - rate: {rate}\n"
            f"      duration: {duration}\n{LENGTHS}").encode()


def laughs(levels: int) -> bytes:
    """A YAML alias chain: `levels` lists of ten aliases of the one before, 10**levels leaves
    in under a kilobyte."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * 10) + "]"]
    for k in range(1, levels):
        lines.append(f"l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 10) + "]")
    return ("\n".join(lines) + "\n").encode() + profile(f"*l{levels - 1}", 10)


def test_a_billion_laughs_profile_is_refused_quickly_and_briefly(watched: Watched) -> None:
    watched.rebase()
    data = laughs(8)  # 10**8 leaves
    assert len(data) < 1024
    answer = upload(watched.server.url, "laughs.yaml", data)
    assert answer.status == 400, answer.body[:500]
    assert "alias" in answer.json()["detail"]["message"]
    assert answer.seconds < 5 and len(answer.body) < 64 * 1024
    assert watched.growth_mb() < 300
    assert watched.healthy()


def test_a_profile_asking_1e8_requests_is_413_with_the_window_that_fits(
        watched: Watched) -> None:
    watched.rebase()
    answer = upload(watched.server.url, "huge.yaml", profile(rate=100_000_000, duration=1))
    assert answer.status == 413, answer.body[:500]
    detail = answer.json()["detail"]
    assert detail["num_requests"] == 100_000_000 and detail["max_requests"] == 1_000_000
    # 10^8 a second, evenly: the first million have arrived by 0.01 s
    assert detail["fits_end_s"] == pytest.approx(0.01)
    assert answer.seconds < 5 and watched.growth_mb() < 200
    assert watched.healthy()


def test_a_gzip_inside_a_gzip_is_refused_not_inflated_twice(watched: Watched) -> None:
    watched.rebase()
    inner = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    zeros = bytes(1 << 20)
    packed = b"".join(inner.compress(zeros) for _ in range(256)) + inner.flush()  # 256 MiB
    data = gzip.compress(packed, 9)
    answer = upload(watched.server.url, "t.jsonl.gz", data)
    assert answer.status == 400, answer.body[:500]
    assert "gzip file inside a gzip file" in answer.json()["detail"]["message"]
    assert answer.seconds < 10 and watched.growth_mb() < 200
    assert watched.healthy()


def test_the_readers_inflate_a_gzip_only_once(tmp_path: Path) -> None:
    from servescope.traces._io import open_text
    from servescope.traces.errors import TraceFormatError

    path = tmp_path / "twice.gz"
    path.write_bytes(gzip.compress(gzip.compress(b'{"id": "a"}\n')))
    with pytest.raises(TraceFormatError, match="gzip file inside a gzip file"):
        open_text(path)
    once = tmp_path / "once.gz"
    once.write_bytes(gzip.compress(b"x\n"))
    with open_text(once) as handle:
        assert handle.read() == "x\n"
