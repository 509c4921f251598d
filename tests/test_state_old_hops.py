"""--state made before the ``hops`` table: opening it fills the table from the chains it recorded.

A state of a minicrawl older than the table has no row for the URLs its redirect chains left
behind, so a resume rebuilt Visited without them and fetched one again when a page linked it.
Such a state is made here as that minicrawl left it: a real crawl (run.py against a local
server), then the table dropped — the one difference of the schema before it (every other table,
and the meta rows, as they were).
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from minicrawl.demo.site import Resource
from tests.test_state import (
    ROOT,
    chain_site,
    kill_9_once,
    out_records,
    recorded_urls,
    run,
    slowly,
)


def three_hop_site(server) -> None:
    """test_state's chain site with the chain /r1 → /r2 → /r3 → /t (two middle hops), which
    /d, crawled late, links (/r2 and /r3, its start and its end)."""
    chain_site(server)
    server.pages.update({
        "/r2": Resource(b"", 302, {"Location": "/r3"}),
        "/r3": Resource(b"", 302, {"Location": "/t"}),
        "/d": Resource(b"".join(f'<a href="{p}">{p}</a>'.encode()
                                for p in ("/r2", "/r3", "/r1", "/t")),
                       200, {"Content-Type": "text/html; charset=utf-8"})})


def made_before_hops(state: Path) -> None:
    """``state`` as a minicrawl before the hops table left it: the table gone, with its rows."""
    with sqlite3.connect(state / "crawl.db") as db:
        db.execute("DROP TABLE hops")


def hops_of(state: Path) -> set[str]:
    with sqlite3.connect(state / "crawl.db") as db:
        return {row[0] for row in db.execute("SELECT url FROM hops")}


def crawl_args(server, state: Path, *extra: str, links: bool = True) -> list[str]:
    """run.py with one worker (a known order), keeping the links (the ``edges`` table)."""
    return [sys.executable, str(ROOT / "run.py"), server.url("/"), "--delay", "0",
            "--threads", "1", "--quiet", "--state", str(state), *extra,
            *(["--links", str(state.parent / f"{state.name}-links.csv")] if links else [])]


def test_resuming_a_state_made_before_the_hops_table_fetches_no_middle_hop_again(
        server, tmp_path):
    """A crawl that kept its links is killed after its chain /r1 → /r2 → /r3 → /t is recorded,
    and its state made as an older minicrawl left it; a page of the resumed run links /r2 and
    /r3. A crawl never stopped has them in Visited since their hops were queued: the resume
    must too (from the chain's hops in ``edges``), not fetch them again."""
    three_hop_site(server)
    server.pages["/d"] = slowly(server.pages["/d"])  # the page after /r1's record: the kill's

    def crawl(name: str) -> list[str]:
        return crawl_args(server, tmp_path / name, "--out", str(tmp_path / f"{name}.jsonl"))

    whole = run(*crawl("whole")[2:])
    assert whole.returncode == 0, whole.stderr
    expected = server.fetch_counts()
    assert expected == {p: 1 for p in ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2", "/r3")}
    server.requests.clear()
    state = tmp_path / "state"
    kill_9_once(crawl("state"), lambda: server.url("/r1") in recorded_urls(state))
    assert server.url("/d") not in recorded_urls(state)  # its links: the resume's
    assert hops_of(state) == {server.url("/r2"), server.url("/r3")}  # (this minicrawl's rows)
    made_before_hops(state)
    resumed = run(*crawl("state")[2:])
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the crawl" in resumed.stderr
    counts = server.fetch_counts()
    assert counts["/r2"] == counts["/r3"] == 1  # not fetched again
    assert counts["/d"] in (1, 2)  # (again if it was in flight at the kill)
    assert {**counts, "/d": 1} == expected
    assert out_records(tmp_path / "state.jsonl") == out_records(tmp_path / "whole.jsonl")


@pytest.mark.parametrize("links", [False, True], ids=["opening", "opening-and-links"])
def test_unreadable_hops_in_a_state_made_before_the_hops_table_do_not_stop_its_opening(
        server, tmp_path, links):
    """The ``edges`` hops of some pages of an old state are damaged, each its own way: the state
    opens, those are skipped and counted in one line, the chain's readable ones are kept. With
    --links the links' join reads the same hops again: each is still counted once, in the
    same line."""
    three_hop_site(server)
    state = tmp_path / "state"
    first = run(*crawl_args(server, state)[2:])
    assert first.returncode == 0, first.stderr
    made_before_hops(state)
    damaged = {"/": "not json", "/a": '["/r2", 3]', "/b": '{"x": "/r2"}',
               "/c": b"\xff\xfe\x00", "/d": "[" * 100_000}  # (/d: too deep for the parser)
    with sqlite3.connect(state / "crawl.db") as db:
        for path, hops in damaged.items():
            assert db.execute("UPDATE edges SET hops = ? WHERE url = ?",
                              (hops, server.url(path))).rowcount == 1
    again = run(*crawl_args(server, state, links=links)[2:])
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert "is complete" in again.stderr  # (opened, and nothing left to do)
    lines = [line for line in again.stderr.splitlines() if "damaged value" in line]
    assert len(lines) == 1, again.stderr
    assert f"{len(damaged)} damaged values skipped" in lines[0]
    assert f"{state / 'crawl.db'}: {len(damaged)} in edges.hops" in lines[0]
    assert hops_of(state) == {server.url("/r2"), server.url("/r3")}  # /r1's chain, readable
    assert set(server.fetch_counts().values()) == {1}  # and nothing fetched again


def test_a_recrawl_in_progress_in_a_state_made_before_the_hops_table_follows_its_chain_again(
        server, tmp_path):
    """A recrawl follows each chain again, as one never stopped does: an old state's recrawl
    killed before it reached /r1 has /r1's record (and its hops) from the crawl before, which
    must not keep /r2 and /r3 in Visited, or the resumed recrawl would stop /r1's chain at /r2
    ("seen") and fetch neither."""
    three_hop_site(server)

    def crawl(state: Path, *extra: str) -> list[str]:
        return crawl_args(server, state, *extra)

    for name in ("whole", "state"):
        first = run(*crawl(tmp_path / name)[2:])
        assert first.returncode == 0, first.stderr
    server.requests.clear()
    whole = run(*crawl(tmp_path / "whole", "--recrawl")[2:])
    assert whole.returncode == 0, whole.stderr
    expected = server.fetch_counts()  # the recrawl's requests: every URL, every hop again
    assert expected == {p: 1 for p in ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2", "/r3")}
    server.requests.clear()
    server.pages["/a"] = slowly(server.pages["/a"])  # (queued before /r1: in flight at the kill)
    state = tmp_path / "state"
    kill_9_once(crawl(state, "--recrawl"), lambda: "/a" in server.fetch_counts())
    assert "/r1" not in server.fetch_counts()
    made_before_hops(state)
    resumed = run(*crawl(state, "--recrawl")[2:])
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the recrawl" in resumed.stderr
    counts = server.fetch_counts()
    assert counts["/a"] in (1, 2)  # (again if it was in flight at the kill)
    assert {**counts, "/a": 1} == expected


def test_a_checked_chain_of_a_state_made_before_the_hops_table_is_not_checked_again(
        server, tmp_path):
    """With --check-links, an image's chain /i1 → /i2 → /i3 → /img is checked (never crawled):
    Visited knows its URLs as a check's. An old state killed after the chain's record, then
    resumed: /d's images /i2 and /i3 are not checked again, as by a crawl never stopped."""
    three_hop_site(server)
    server.pages.update({
        "/": Resource(b'<img src="/i1"><a href="/r1">r1</a><a href="/a">a</a>', 200,
                      {"Content-Type": "text/html; charset=utf-8"}),
        "/i1": Resource(b"", 302, {"Location": "/i2"}),
        "/i2": Resource(b"", 302, {"Location": "/i3"}),
        "/i3": Resource(b"", 302, {"Location": "/img"}),
        "/img": Resource(b"GIF89a", 200, {"Content-Type": "image/gif"}),
        # (a page more before /d: the image's chain, a fetch behind, is recorded before it)
        "/c": Resource(b'<a href="/e">e</a>', 200, {"Content-Type": "text/html; charset=utf-8"}),
        "/e": Resource(b'<a href="/d">d</a>', 200, {"Content-Type": "text/html; charset=utf-8"})})
    server.pages["/d"] = slowly(Resource(
        b'<img src="/i2"><img src="/i3"><a href="/r2">r2</a>', 200,
        {"Content-Type": "text/html; charset=utf-8"}))

    def crawl(name: str) -> list[str]:
        return crawl_args(server, tmp_path / name, "--check-links", links=False)

    whole = run(*crawl("whole")[2:])
    assert whole.returncode == 0, whole.stderr
    expected = server.fetch_counts()
    assert set(expected.values()) == {1} and {"/i2", "/i3", "/img", "/e"} <= set(expected)
    server.requests.clear()
    state = tmp_path / "state"
    kill_9_once(crawl("state"), lambda: "check " + server.url("/i1") in recorded_urls(state))
    assert server.url("/d") not in recorded_urls(state)  # its links: the resume's
    assert hops_of(state) >= {"check " + server.url("/i2"), "check " + server.url("/i3")}
    made_before_hops(state)
    resumed = run(*crawl("state")[2:])
    assert resumed.returncode == 0, resumed.stderr
    counts = server.fetch_counts()
    assert counts["/i2"] == counts["/i3"] == 1  # not checked again
    assert counts["/d"] in (1, 2)  # (again if it was in flight at the kill)
    assert {**counts, "/d": 1} == expected
