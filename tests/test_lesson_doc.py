"""docs/lesson.md stays true: every `servescope` command it quotes parses (a renamed flag breaks
this), and its exercise tables are what the exercises compute now."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from servescope.cli import build_parser, exercise

LESSON = Path(__file__).resolve().parents[1] / "docs" / "lesson.md"


def _commands() -> list[str]:
    lines = LESSON.read_text().splitlines()
    commands, current = [], ""
    for line in lines:
        text = line.strip()
        if current:
            current += " " + text
        elif line.startswith("    servescope "):
            current = text
        if current and not current.endswith("\\"):
            commands.append(current)
            current = ""
        elif current:
            current = current[:-1]
    return commands


def test_the_lesson_quotes_commands_that_parse() -> None:
    commands = _commands()
    assert len(commands) >= 10
    parser = build_parser()
    for command in commands:
        args = parser.parse_args(shlex.split(command)[1:])
        assert callable(args.func), command


def _exercise_tables() -> dict[str, list[list[str]]]:
    """The body rows of the table that follows each `servescope exercise NAME` line."""
    tables: dict[str, list[list[str]]] = {}
    name, header_seen = None, False
    for line in LESSON.read_text().splitlines():
        if line.startswith("    servescope exercise "):
            name, header_seen = line.split()[2], False
            tables[name] = []
        elif name and line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-:") for c in cells):
                continue
            if header_seen:
                tables[name].append(cells)
            header_seen = True
        elif name and tables[name] and not line.strip():
            name = None
    return tables


def _agrees(cell: str, value: float) -> bool:
    """The doc's figure is the value rounded to as many decimals as the doc shows."""
    text = cell.replace(",", "")
    scale = 100.0 if text.endswith("%") else 1.0
    text = text.rstrip("%")
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value * scale) <= 0.5 * 10.0 ** -decimals + 1e-9


def test_the_lesson_tables_are_what_the_exercises_print(tmp_path: Path, capsys) -> None:
    tables = _exercise_tables()
    assert set(tables) == set(exercise.NAMES)
    parser = build_parser()
    for name, doc_rows in tables.items():
        out = tmp_path / f"{name}.json"
        args = parser.parse_args(["exercise", name, "--json", str(out)])
        assert args.func(args) == 0
        result = json.loads(out.read_text())
        columns = exercise.COLUMNS[name]
        assert len(doc_rows) == len(result["rows"]), name
        for doc_row, row in zip(doc_rows, result["rows"], strict=True):
            for cell, key in zip(doc_row[1:], columns[1:], strict=True):
                assert _agrees(cell, float(row[key])), (name, doc_row[0], key, cell, row[key])
