"""One reader for workload rows: a socket's `requests`, a preset's and a recording header's all
keep prefixes and priorities as `servescope sim --workload` does, and name a bad row."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from servescope.api.errors import BuildError
from servescope.api.sessions.build import resolve
from servescope.api.wire import protocol as P
from servescope.scenarios.presets import PresetError, load_preset
from servescope.traces import workload_json
from servescope.traces.report import TraceReport

ROWS = [
    {"id": "a", "arrival_step": 0, "prompt_len": 40, "output_len": 3,
     "shared_prefix": {"id": "sys", "len": 32}},
    {"id": "b", "arrival_s": 0.5, "prompt_len": 48, "output_len": 2, "priority": 2,
     "prefix": [["sys", 32], ["doc", 8]]},
]


def _from_file(tmp_path: Path) -> list:
    path = tmp_path / "w.json"
    path.write_text(json.dumps(ROWS))
    return list(workload_json.read(path, TraceReport("workload-json", "requests")))


def test_socket_requests_read_as_the_file_is(tmp_path: Path) -> None:
    workload, _ = asyncio.run(resolve(P.WorkloadSpec(requests=ROWS), [{}], store=None))  # type: ignore[arg-type]
    assert workload.specs == _from_file(tmp_path)
    assert workload.specs[0].prefix == (("sys", 32),)
    assert workload.specs[1].priority == 2


def test_a_bad_socket_row_is_named() -> None:
    rows = [ROWS[0], {"id": "c", "arrival_step": 0, "output_len": 2}]
    with pytest.raises(BuildError) as err:
        asyncio.run(resolve(P.WorkloadSpec(requests=rows), [{}], store=None))  # type: ignore[arg-type]
    assert "prompt_len" in str(err.value) and "line 2" in str(err.value)


def test_preset_requests_keep_prefixes_and_are_checked(tmp_path: Path) -> None:
    preset = {"config": {"num_gpu_blocks": 64}, "workload": {"requests": ROWS}}
    (tmp_path / "p.json").write_text(json.dumps(preset))
    _, specs, _ = load_preset("p", tmp_path)
    assert specs == _from_file(tmp_path)
    preset["workload"]["requests"] = [{**ROWS[0], "id": "a"}, {**ROWS[1], "id": "a"}]
    (tmp_path / "q.json").write_text(json.dumps(preset))
    with pytest.raises(PresetError, match="duplicate id"):
        load_preset("q", tmp_path)
