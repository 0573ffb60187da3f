"""One lesson, one set of figures: the lesson presets (as the explorer's sessions run them),
`servescope compare`, `servescope exercise` and the README's table draw the same requests from
one generator and give the same summaries. (The page showed 1,585 tok/s for continuous batching
where the README said 1,410: the presets drew the same seed in another order.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.server import ORIGIN, make_settings

from servescope.api.app import create_app
from servescope.cli import compare as compare_cli
from servescope.scenarios import exercises, presets
from servescope.traces.synthetic import lesson_workload

README = Path(__file__).resolve().parents[1] / "README.md"
MODEL, GPU = compare_cli.DEFAULT_SETUPS[0][:2]  # the README's first table: 8B on an H100
FIGURES = ("output_throughput", "mean_ttft_ms", "p99_itl_ms")


def _specs(specs):
    return [(s.id, s.prompt_len, s.output_len, s.arrival_s, s.arrival_step) for s in specs]


@pytest.mark.parametrize(("preset", "num_requests", "rate"),
                         [("lesson-static-vs-continuous", 60, 40.0),
                          ("lesson-budget-sweep", 120, 60.0)])
def test_the_lesson_presets_draw_the_lesson_generators_requests(preset, num_requests, rate):
    _, specs, _ = presets.load_preset(preset)
    assert _specs(specs) == _specs(lesson_workload(num_requests, rate, 0))


def test_the_lesson_presets_variants_are_the_exercises_modes():
    _, _, data = presets.load_preset("lesson-static-vs-continuous")
    assert [(v["name"], v["set"]) for v in data["variants"]] == list(exercises.MODES)


@pytest.fixture(scope="module")
def cli_rows():
    specs = lesson_workload()
    by_compare = compare_cli.compare(exercises.lesson_config(MODEL, GPU), specs)["rows"]
    by_exercise = exercises.static_vs_continuous(specs, exercises.lesson_config(MODEL, GPU))
    return by_compare, by_exercise["rows"]


def test_compare_and_exercise_give_the_same_summaries(cli_rows):
    by_compare, by_exercise = cli_rows
    assert [r["mode"] for r in by_compare] == [r["mode"] for r in by_exercise]
    for a, b in zip(by_compare, by_exercise, strict=True):
        assert {k: a[k] for k in FIGURES} == {k: b[k] for k in FIGURES}, a["mode"]


def test_the_explorers_lesson_preset_gives_compares_summaries(tmp_path, cli_rows):
    """The session the page runs for the preset's four variants, summarized by the server."""
    _, _, data = presets.load_preset("lesson-static-vs-continuous")
    with TestClient(create_app(make_settings(tmp_path)), headers=ORIGIN) as client:
        summaries = _session_summaries(client, [v["set"] for v in data["variants"]])
    by_compare, _ = cli_rows
    for row, engine in zip(by_compare, summaries, strict=True):
        assert {k: engine["summary"][k] for k in FIGURES} == {k: row[k] for k in FIGURES}, \
            row["mode"]


def _session_summaries(client: TestClient, configs: list[dict]) -> list[dict]:
    r = client.post("/api/sessions", json={"workload": {"preset": "lesson-static-vs-continuous"},
                                           "configs": configs})
    assert r.status_code == 201, r.text
    answer: list[dict] = client.get(f"/api/sessions/{r.json()['session_id']}/summary").json()
    return answer


def _readme_rows() -> dict[str, list[str]]:
    """The body rows of the README's first table under "The lesson's comparison"."""
    text = README.read_text().split("## The lesson's comparison", 1)[1]
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        if rows and not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith(
            "|") else []
        if cells and not re.fullmatch(r"[-:| ]+", line) and not cells[0].endswith("H100"):
            rows[cells[0]] = cells[1:]
    return rows


def _agrees(cell: str, value: float) -> bool:
    text = cell.replace(",", "").rstrip("%")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value) <= 0.5 * 10.0 ** -decimals + 1e-9


def test_the_readme_table_is_what_compare_prints(cli_rows):
    names = {"naive": "naive", "static": "static", "continuous": "continuous (V0)",
             "continuous+chunked": "continuous + chunked (V1)"}
    doc = _readme_rows()
    by_compare, _ = cli_rows
    assert set(doc) == set(names.values())
    for row in by_compare:
        cells = doc[names[row["mode"]]]
        for cell, key in zip(cells, (*FIGURES, "kv_waste_pct"), strict=True):
            assert _agrees(cell, row[key]), (row["mode"], key, cell, row[key])
