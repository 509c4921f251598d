"""The permissions of what a crawl writes, seen from outside: ``python run.py`` run with a known
umask on a real local site, each output file then stat'ed. Every one is created as a plain
``open()`` creates a file (0666 & ~umask), whether it is written as it comes (``--out``,
``--trace``) or at the end through a temporary file renamed over it (``--links``, ``--report``,
``--stats``: ``mkstemp`` made those 0600 before, unreadable by a web server serving a CI
artifact); the mirror's files too. A file that existed keeps its own mode, as an editor keeps
it."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--retries", "0", "--quiet"]
SITE = {"/": Resource(b'<a href="/a.html">a</a> <img src="/i.png" alt="i">'),
        "/a.html": Resource(b"<p>a</p>"),
        "/i.png": Resource(b"PNG", 200, {"Content-Type": "image/png"})}


def run(umask: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, preexec_fn=lambda: os.umask(umask))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def outputs(tmp: Path) -> dict[str, Path]:
    return {flag: tmp / name for flag, name in (
        ("--out", "out.jsonl"), ("--links", "links.jsonl"), ("--report", "report.html"),
        ("--stats", "stats.json"), ("--trace", "trace.txt"))}


def test_each_output_is_created_as_open_creates_a_file(tmp_path) -> None:
    files = outputs(tmp_path)
    mirror = tmp_path / "mirror"
    with LocalSite(dict(SITE)) as site:
        args = [a for flag, path in files.items() for a in (flag, str(path))]
        for umask, expected in ((0o002, 0o664), (0o027, 0o640)):
            for path in files.values():
                path.unlink(missing_ok=True)
            done = run(umask, site.url("/"), *args, "--mirror", str(mirror), "--check-links",
                       *FAST)
            assert done.returncode == 0, done.stdout + done.stderr
            assert {flag: oct(mode(path)) for flag, path in files.items()} == \
                {flag: oct(expected) for flag in files}
            copies = [p for p in mirror.rglob("*") if p.is_file()]
            assert len(copies) >= 4  # the table, /, /a.html, /i.png
            assert {p.name: oct(mode(p)) for p in copies} == \
                {p.name: oct(expected) for p in copies}
            # (its folders as mkdir makes them: 0777 & ~umask)
            assert {oct(mode(p)) for p in mirror.rglob("*") if p.is_dir()} == \
                {oct(0o777 & ~umask)}
            for p in [*mirror.rglob("*")][::-1]:
                p.rmdir() if p.is_dir() else p.unlink()


def test_an_existing_output_keeps_its_mode(tmp_path) -> None:
    files = outputs(tmp_path)
    with LocalSite(dict(SITE)) as site:
        for path in files.values():
            path.write_text("")
            path.chmod(0o604)
        args = [a for flag, path in files.items() for a in (flag, str(path))]
        done = run(0o022, site.url("/"), *args, "--check-links", *FAST)
        assert done.returncode == 0, done.stdout + done.stderr
        assert {flag: oct(mode(path)) for flag, path in files.items()} == \
            {flag: "0o604" for flag in files}
        assert all(path.stat().st_size for path in files.values())
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
