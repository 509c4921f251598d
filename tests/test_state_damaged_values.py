"""--state: a packed value damaged in ``crawl.db`` — a page's edges, anchors or redirect hops
(the ``edges`` table), what ``links_in`` counts of it (``linksin``) — is skipped, counted in one
line (and in ``--stats``), and the crawl goes on: never a traceback.

Run as a user runs it (``python run.py`` on a real local site): a crawl with ``--links``,
``--check-links``, ``--out`` and ``--report`` stops at a cap; its state is copied, and in one
copy a value of each column is damaged with sqlite3 (each test a kind of damage). Both copies are
resumed, then recrawled: the damaged one exits as the clean one does, says once how many values
it skipped, and its links file has the clean one's rows but those of the damaged values.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl.demo.site import Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "1", "--retries", "0", "--quiet"]
SAID = "damaged value"  # (the line: "N damaged value(s) skipped")


def page(*links: str, ids: tuple[str, ...] = ()) -> Resource:
    return Resource("".join([*(f'<h2 id="{i}">{i}</h2>' for i in ids),
                             *(f'<a href="{href}">{href}</a>' for href in links)]).encode())


def fill(server) -> None:
    """A site whose first pages have a row of each column to damage: /a its edges, /b its
    anchors (a link to #top, one to #nowhere), /r1 its redirect chain's hops (/r1 → /r2 → /t,
    the middle hop linked from a late page) and what its chain requested, /c its links; a
    broken link (--check-links exits 1), and a tail of pages the first run's cap leaves to the
    resume."""
    server.pages.update({
        "/": page("/r1", "/a", "/b#top", "/b#nowhere", "/c", "/missing", "/p0"),
        "/a": page("/", "/c", "/b"),
        "/b": page("/a", ids=("top",)),
        "/c": page("/a", "/b"),
        "/r1": Resource(b"", 301, {"Location": "/r2"}),
        "/r2": Resource(b"", 302, {"Location": "/t"}),
        "/t": page("/"),
        **{f"/p{i}": page(f"/p{i + 1}", "/a#top") for i in range(6)},
        "/p6": page("/r2", "/t", "/b#nowhere"),
    })


# Each kind of damage, as the value of a column that holds a list of URLs and of ``edges.edges``
# (a list of lists of nine)
KINDS = {
    "not JSON": ("not json [", "[[not json"),
    "a blob": (b"\xff\xfe\x00\x81garbage", b"\x80\x81[[]]"),
    "a dict": ('{"url": "/x"}', '{"edges": []}'),
    "wrong arity": ('[["/x", "/y"]]', '[["http://x/", null, "/x"]]'),
    "too deep": ("[" * 100_000 + "]" * 100_000, "[" * 100_000 + "]" * 100_000),
}


# Where each column's value is damaged: (the column, the page whose row)
COLUMNS = {"edges.edges": "/a", "edges.anchors": "/b", "edges.hops": "/r1",
           "linksin.links": "/c", "linksin.requested": "/r1"}


def damage(state: Path, server, kind: str, columns: tuple[str, ...]) -> None:
    urls, edges = KINDS[kind]
    with sqlite3.connect(state / "crawl.db") as db:
        for column in columns:
            table, name = column.split(".")
            value = edges if column == "edges.edges" else urls
            assert db.execute(f"UPDATE {table} SET {name} = ? WHERE url = ?",  # noqa: S608
                              (value, server.url(COLUMNS[column]))).rowcount == 1, column


def run(server, where: Path, *extra: str, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    """run.py on the site, its state and outputs in ``where`` (not ``quiet``: its summary)."""
    return subprocess.run(
        [sys.executable, str(ROOT / "run.py"), server.url("/"),
         *(FAST if quiet else [flag for flag in FAST if flag != "--quiet"]),
         "--state", str(where / "state"), "--links", str(where / "links.jsonl"),
         "--check-links", "--out", str(where / "pages.jsonl"),
         "--report", str(where / "report.html"), *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_run(server, clean: Path, damaged: Path, columns: tuple[str, ...], *extra: str,
              skipped: int) -> None:
    """The same run on both copies: the damaged one (``columns`` damaged) ends as the clean
    one does, says in one line it skipped ``skipped`` values, and its outputs hold the rest."""
    want = run(server, clean, *extra)
    assert "Traceback" not in want.stderr and SAID not in want.stderr, want.stderr
    before = len(lines_of(damaged / "pages.jsonl"))  # (the runs before's records)
    done = run(server, damaged, *extra)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == want.returncode == 1, (done.stderr, want.stderr)  # (/missing)
    said = [line for line in done.stderr.splitlines() if SAID in line]
    assert len(said) == 1, done.stderr
    assert f"{skipped} {SAID}{'s' if skipped > 1 else ''} skipped" in said[0]
    assert str(damaged / "state" / "crawl.db") in said[0]
    assert (damaged / "report.html").stat().st_size > 0

    # The links: the clean run's rows, but those of /a if its edges are damaged; a link to a
    # #fragment of /b (its anchors) or to /r2 (the hop) is there, its target maybe less known
    a = server.url("/a") if "edges.edges" in columns else None
    clean_rows, rows = lines_of(clean / "links.jsonl"), lines_of(damaged / "links.jsonl")
    assert any(row["page"] == server.url("/a") for row in clean_rows)

    def key(row: dict[str, object]) -> tuple[object, ...]:
        return row["page"], row["href"], row["line"]

    assert [key(r) for r in rows] == [key(r) for r in clean_rows if r["page"] != a]

    def untouched(row: dict[str, object]) -> bool:
        return "#" not in str(row["href"]) and row["url"] != server.url("/r2")

    assert [r for r in rows if untouched(r)] == \
        [r for r in clean_rows if r["page"] != a and untouched(r)]
    # --out: every record; with links_in's values damaged, this run's links_in null (the
    # counts would miss theirs; the file is not written again, so the records before keep the
    # counts they had), said once
    records, clean_records = lines_of(damaged / "pages.jsonl"), lines_of(clean / "pages.jsonl")
    assert [r["url"] for r in records] == [r["url"] for r in clean_records]
    assert None not in {r["links_in"] for r in clean_records}
    nulled = [line for line in done.stderr.splitlines() if "links_in left null" in line]
    if {"linksin.links", "linksin.requested"} & set(columns):
        assert len(records) > before and {r["links_in"] for r in records[before:]} == {None}
        assert len(nulled) == 1, done.stderr
    else:
        assert [r["links_in"] for r in records] == [r["links_in"] for r in clean_records]
        assert nulled == []


def crawl_and_damage(server, tmp_path: Path, kind: str,
                     columns: tuple[str, ...]) -> tuple[Path, Path]:
    """A first run that stops at a cap, its directory copied, ``columns`` damaged in the
    copy: (the clean one, the damaged one)."""
    fill(server)
    clean, damaged = tmp_path / "clean", tmp_path / "damaged"
    clean.mkdir()
    first = run(server, clean, "--max-pages", "10")
    assert first.returncode == 1 and "Traceback" not in first.stderr, first.stderr
    shutil.copytree(clean, damaged)
    damage(damaged / "state", server, kind, columns)
    return clean, damaged


@pytest.mark.parametrize("kind", list(KINDS))
def test_damaged_values_are_skipped_counted_and_the_crawl_goes_on(server, tmp_path, kind):
    """Every column damaged: the resume reads each; the recrawl that follows fetches /r1 again,
    which replaces its chain's values (its hops were read before, when it started)."""
    columns = tuple(COLUMNS)
    clean, damaged = crawl_and_damage(server, tmp_path, kind, columns)
    check_run(server, clean, damaged, columns, skipped=5)
    check_run(server, clean, damaged, columns, "--recrawl", skipped=4)


@pytest.mark.parametrize("column", list(COLUMNS))
def test_a_damaged_value_of_each_column_alone_is_skipped_and_counted(server, tmp_path, column):
    """One column's value damaged, the way no reader's exception would catch: JSON of another
    shape (a dict where a list is expected)."""
    clean, damaged = crawl_and_damage(server, tmp_path, "a dict", (column,))
    check_run(server, clean, damaged, (column,), skipped=1)
    # A recrawl reads it again, unless /r1 fetched again replaced it first (what its chain
    # requested, read at the end; its hops are read at the start)
    again = run(server, damaged, "--recrawl")
    said = [line for line in again.stderr.splitlines() if SAID in line]
    assert again.returncode == 1 and "Traceback" not in again.stderr, again.stderr
    if column == "linksin.requested":
        assert said == [], again.stderr
    else:
        assert len(said) == 1 and f"1 {SAID} skipped" in said[0] and f"1 in {column}" in said[0]


def test_the_values_skipped_are_a_counter_of_stats_and_verbose(server, tmp_path):
    """--stats writes how many values were skipped, the number the line says
    (``damaged_values_skipped``), and --verbose prints it; a run that skipped none has no such
    counter, as every counter that counted nothing."""
    clean, damaged = crawl_and_damage(server, tmp_path, "not JSON", tuple(COLUMNS))
    shutil.copytree(damaged, tmp_path / "verbose")
    for where, skipped in ((clean, 0), (damaged, 5)):
        done = run(server, where, "--stats", str(where / "stats.json"))
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert said_skipped(done.stderr) == skipped
        stats = json.loads((where / "stats.json").read_text())
        assert stats.get("damaged_values_skipped") == (skipped or None), stats
    verbose = run(server, tmp_path / "verbose", "-v", quiet=False)
    assert verbose.returncode == 1 and "Traceback" not in verbose.stderr, verbose.stderr
    assert said_skipped(verbose.stderr) == 5
    assert re.search(r"^  damaged_values_skipped +5$", verbose.stdout, re.M), verbose.stdout


def said_skipped(stderr: str) -> int:
    """How many values the run's line says it skipped (0: no line)."""
    said = [int(m[1]) for line in stderr.splitlines()
            if (m := re.search(rf"(\d+) {SAID}s? skipped", line))]
    assert len(said) <= 1, stderr
    return sum(said)
