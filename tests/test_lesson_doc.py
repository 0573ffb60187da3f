"""Every `servescope` command quoted in docs/lesson.md parses (a renamed flag breaks this)."""

from __future__ import annotations

import shlex
from pathlib import Path

from servescope.cli import build_parser

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
