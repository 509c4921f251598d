"""docs/tutorial.md cannot rot: its commands run, its code runs, the code it points to exists.

Every ```sh block is run with ``bash -e`` (as a reader types it: no pipefail), in order, in
one scratch directory, with ``minicrawl`` and ``python`` meaning this checkout. A block whose
first line is ``# not run by the tests: …`` would touch the internet or a service; its
``minicrawl`` lines are still parsed by the real argument parser, so a renamed flag fails here.
Every ```python block is run too. Nothing here leaves 127.0.0.1.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from minicrawl.cli.main import build_parser

ROOT = Path(__file__).resolve().parent.parent
TUTORIAL = ROOT / "docs" / "tutorial.md"
SKIP = "# not run by the tests:"


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", TUTORIAL.read_text(), re.S | re.M)


def runnable_sh() -> list[str]:
    return [b for b in blocks("sh") if not b.startswith(SKIP)]


@pytest.fixture
def shell_env(tmp_path):
    """PATH with ``minicrawl`` and ``python`` for this checkout, as after ``pip install .``."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "minicrawl").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m minicrawl "$@"\n')
    (bin_dir / "minicrawl").chmod(0o755)
    # A script, not a symlink: a link to a virtual environment's python is not in it.
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    work = tmp_path / "work"
    work.mkdir()
    return env, work


def test_the_tutorial_has_commands_and_code():
    assert len(runnable_sh()) >= 8 and len(blocks("python")) >= 2
    assert any(b.startswith(SKIP) for b in blocks("sh"))


def test_every_sh_block_runs(shell_env):
    env, work = shell_env
    for n, block in enumerate(runnable_sh(), 1):
        result = subprocess.run(["bash", "-e", "-c", block], cwd=work, env=env,
                                capture_output=True, text=True, timeout=180)
        assert result.returncode == 0, (
            f"block {n} failed:\n{block}\n--- stdout\n{result.stdout[-3000:]}\n"
            f"--- stderr\n{result.stderr[-3000:]}")
        assert "Traceback" not in result.stderr, (block, result.stderr)
    assert (work / "report.html").stat().st_size > 50_000
    assert (work / "fp.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("n", range(len(blocks("python"))))
def test_every_python_block_runs(shell_env, n):
    env, work = shell_env
    result = subprocess.run([sys.executable, "-c", blocks("python")[n]], cwd=work, env=env,
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert re.search(r"\d+ pages", result.stdout), result.stdout


def test_every_excerpt_is_in_the_file_it_names():
    """Each ```py excerpt is copied from the last core file named before it: it must still be."""
    text = TUTORIAL.read_text()
    excerpts = re.finditer(r"^```py\n(.*?)^```", text, re.S | re.M)
    checked = 0
    for match in excerpts:
        named = re.findall(r"\*\*`(\w+\.py)`", text[:match.start()])
        assert named, match[1]
        assert match[1] in (ROOT / "minicrawl" / "core" / named[-1]).read_text(), (named[-1],
                                                                                  match[1])
        checked += 1
    assert checked >= 4


def test_commands_not_run_still_use_real_flags():
    parser = build_parser()
    checked = 0
    for block in blocks("sh"):
        if not block.startswith(SKIP):
            continue
        for line in block.splitlines():
            if line.startswith("minicrawl "):
                parser.parse_args(shlex.split(line)[1:])  # exits (fails) on an unknown flag
                checked += 1
    assert checked >= 4


def test_commands_that_run_stay_on_loopback():
    for block in runnable_sh() + blocks("python"):
        for url in re.findall(r"https?://[^\s\"')]+", block):
            assert urlsplit(url).hostname in ("127.0.0.1", "localhost"), (url, block)


def test_every_pointer_names_code_that_exists():
    """``minicrawl/x.py``: ``Name``, ``Class.method`` — each must be defined in that file."""
    text = TUTORIAL.read_text()
    pointers = re.findall(r"`(minicrawl/[\w/]+\.py)`:\s*((?:`[\w.]+`(?:,\s*)?)+)", text)
    assert len(pointers) >= 15
    for path, names in pointers:
        tree = ast.parse((ROOT / path).read_text())
        defined = set()
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                defined.add(node.name)
            if isinstance(node, ast.ClassDef):
                defined |= {f"{node.name}.{m.name}" for m in node.body
                            if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef)}
        for name in re.findall(r"`([\w.]+)`", names):
            assert name in defined, f"{path} has no {name}"
    for path in set(re.findall(r"`(minicrawl/[\w/]+\.py)`", text)):
        assert (ROOT / path).exists(), path
