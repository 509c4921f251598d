"""The README's promises: its Quick start test line is what CI runs, and its files exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_quick_start_has_exactly_two_command_lines():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert "--demo" in commands[0] and "pytest" in commands[1]


def test_ci_runs_the_readme_test_line_exactly():
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert quick_start_commands()[1] in ci_lines


def test_layout_named_by_the_readme_exists():
    for path in ("minicrawl", "tests", "seeds/example.txt", "seeds/README", "run.py",
                 "pyproject.toml", ".ci/run"):
        assert (ROOT / path).exists(), path
