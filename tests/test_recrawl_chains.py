"""--recrawl follows each redirect chain again, whichever Visited the crawl keeps.

The crawl before left its chains' middle hops in Visited (its ``hops`` table; a Bloom filter's
checkpoint, ``--visited bloom``): a recrawl that took them for seen would stop the chain
/r1 → /r2 → /r3 → /t at /r2, record /r1 as redirecting there (``changed``) and /t as ``new``.
Each test is a contract over the kinds of Visited, from outside: run.py against a local server
that logs its requests, then what it requested and the records ``--out`` wrote.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from minicrawl.demo.site import Resource
from tests.test_state import ROOT, kill_9_once, out_records, run, slowly
from tests.test_state_old_hops import three_hop_site

KINDS = {"default": [], "exact": ["--visited", "exact"], "bloom": ["--visited", "bloom"]}
EVERY_PATH = ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2", "/r3")
HTML = {"Content-Type": "text/html; charset=utf-8"}


def changing_site(server) -> dict[str, int]:
    """test_state_old_hops' site (the chain /r1 → /r2 → /r3 → /t, reached early), whose /d,
    crawled late, changes with each run (``run["n"]``) and links the chain's middle hop /r2: the
    recrawl reads its links again (a page unchanged gives none)."""
    three_hop_site(server)
    run_number = {"n": 1}
    server.pages["/d"] = lambda request: Resource(
        f'<p>run {run_number["n"]}</p><a href="/r2">r2</a><a href="/t">t</a>'.encode(), 200, HTML)
    return run_number


def crawl_args(server, state: Path, out: Path, kind: str, *extra: str) -> list[str]:
    """run.py with one worker (a known order), its records in ``out``."""
    return [sys.executable, str(ROOT / "run.py"), server.url("/"), "--delay", "0",
            "--threads", "1", "--quiet", "--state", str(state), "--out", str(out),
            *KINDS[kind], *extra]


def runs(server, tmp_path: Path, kind: str, links: bool) -> list[tuple[dict[str, int], list]]:
    """A crawl, then two recrawls (the second's hops are the first recrawl's own, kept when its
    chain stopped at a page seen): each run's requests and its ``--out`` records."""
    site = changing_site(server)
    state = tmp_path / kind
    extra = ["--links", str(tmp_path / f"{kind}-links.csv")] if links else []
    seen = []
    for n in (1, 2, 3):
        site["n"] = n
        server.requests.clear()
        out = tmp_path / f"{kind}-{n}.jsonl"
        done = run(*crawl_args(server, state, out, kind, *(["--recrawl"] if n > 1 else []),
                               *extra)[2:])
        assert done.returncode == 0, done.stderr
        seen.append((dict(server.fetch_counts()), out_records(out)))
    return seen


def changes(records: list[tuple]) -> dict[str, tuple[str, str, list[str]]]:
    """Each record's path → (its change, its final path, the paths that redirected), from
    out_records' tuples (url, final_url, …, redirects, error, change: JSON each)."""
    def path(url: str) -> str:  # (one server: its paths say which URL)
        return "/" + url.split("/", 3)[3]

    seen = {}
    for record in records:
        url, final_url, redirects, change = (json.loads(record[i]) for i in (0, 1, 7, 9))
        seen[path(url)] = (change, path(final_url), [path(hop["url"]) for hop in redirects])
    return seen


@pytest.mark.parametrize("links", [False, True], ids=["hops-table", "with-links"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_a_recrawl_follows_each_chain_again_whichever_visited(server, tmp_path, kind, links):
    """The crawl requests each URL once; each recrawl too — /r2 and /r3 as hops of /r1's chain
    again, /t under its own URL (a chain's end is revisited so; the chain stops there, seen) —
    and finds every page but /d unchanged: /r1 still redirects to /t. The middle hops are known
    to the state by its ``hops`` table alone, or (``--links``) by the chain's edges too."""
    first, *recrawls = runs(server, tmp_path, kind, links)
    assert first[0] == {path: 1 for path in EVERY_PATH}
    for counts, records in recrawls:
        assert counts == {path: 1 for path in EVERY_PATH}
        assert changes(records) == {
            "/": ("unchanged", "/", []), "/a": ("unchanged", "/a", []),
            "/b": ("unchanged", "/b", []), "/c": ("unchanged", "/c", []),
            "/d": ("changed", "/d", []), "/t": ("unchanged", "/t", []),
            "/r1": ("unchanged", "/t", ["/r1", "/r2", "/r3"])}


def test_a_bloom_recrawl_writes_what_the_default_one_writes(server, tmp_path):
    """The same crawl and recrawls, one state per kind of Visited, against one server: the same
    requests and the same ``--out`` records, run by run."""
    seen = {kind: runs(server, tmp_path, kind, links=False) for kind in KINDS}
    assert seen["bloom"] == seen["exact"] == seen["default"]


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_recrawl_killed_before_its_first_checkpoint_follows_the_chain_when_resumed(
        server, tmp_path, kind):
    """A recrawl killed before it reached /r1 — before a Bloom filter's first checkpoint of it —
    then resumed: it follows /r1's chain through /r2 and /r3 as the recrawl never stopped does
    (the filter's file must not be the crawl before's, which holds those hops)."""
    three_hop_site(server)
    state = tmp_path / "state"
    first = run(*crawl_args(server, state, tmp_path / "1.jsonl", kind)[2:])
    assert first.returncode == 0, first.stderr
    server.requests.clear()
    server.pages["/a"] = slowly(server.pages["/a"])  # (queued before /r1: in flight at the kill)
    args = crawl_args(server, state, tmp_path / "2.jsonl", kind, "--recrawl")
    kill_9_once(args, lambda: "/a" in server.fetch_counts())
    assert "/r1" not in server.fetch_counts()
    resumed = run(*args[2:])
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the recrawl" in resumed.stderr
    counts = server.fetch_counts()
    assert counts["/a"] in (1, 2)  # (again if it was in flight at the kill)
    assert {**counts, "/a": 1} == {path: 1 for path in EVERY_PATH}
    assert changes(out_records(tmp_path / "2.jsonl"))["/r1"] == (
        "unchanged", "/t", ["/r1", "/r2", "/r3"])
