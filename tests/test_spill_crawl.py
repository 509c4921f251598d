"""Crawls whose ToDo spills to disk (--frontier-memory, minicrawl/frontier/disk.py), against real
local servers: each host's URLs fetched first in first out and once, at 1 and 16 threads; kill -9
and resume with --state; nothing of the crawl left in TMPDIR (ToDo's and the duplicate-content map's
scratch files have no name) after a normal end, Ctrl-C, SIGTERM and kill -9; a disk that fails
(TMPDIR a file, missing, a file size limit): one warning, every page fetched once."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.console import Console

from minicrawl import Crawler
from minicrawl.demo.site import LocalSite, Resource, Slow
from minicrawl.options import Options
from minicrawl.watch.progress import read_progress
from minicrawl.watch.view import LiveView
from tests.test_spill import open_scratch_files
from tests.test_wrong_inputs import limited

ROOT = Path(__file__).resolve().parent.parent
TINY = 0.002  # MB: about eight URLs in memory, the rest of a small site on disk


def tree_pages(branching: int, depth: int, name: str) -> dict[str, Resource]:
    """A tree: "/" links "/00/", "/01/" … in order, "/00/" links "/00/10/" …, ``depth``
    levels (a segment names its level: no path repeats one, as a trap's would)."""
    pages: dict[str, Resource] = {}
    level = ["/"]
    for d in range(depth + 1):
        below = []
        for path in level:
            children = [f"{path}{d}{k}/" for k in range(branching)] if d < depth else []
            links = "".join(f'<a href="{c}">{c}</a>' for c in children)
            pages[path] = Resource(f"<title>{name}{path}</title>{links}".encode())
            below += children
        level = below
    return pages


def bfs(branching: int, depth: int) -> list[str]:
    order, level = [], ["/"]
    for d in range(depth + 1):
        order += level
        level = [f"{p}{d}{k}/" for p in level for k in range(branching)]
    return order


@pytest.fixture
def tree_hosts() -> Iterator:
    """``tree_hosts(n, branching, depth)``: ``n`` servers on 127.0.0.2, .3, … each a tree."""
    servers: list[LocalSite] = []

    def make(n: int, branching: int, depth: int) -> list[LocalSite]:
        for i in range(n):
            site = LocalSite(host=f"127.0.0.{i + 2}").start()
            site.pages.update(tree_pages(branching, depth, site.origin))
            servers.append(site)
        return servers[-n:]

    yield make
    for s in servers:
        s.stop()


def fetched(site: LocalSite) -> list[str]:
    return [r.path for r in site.requests if r.path != "/robots.txt"]


@pytest.mark.parametrize("threads", [1, 16])
def test_spilled_crawl_fetches_each_url_once_in_each_hosts_order(tree_hosts, threads) -> None:
    """Three hosts of 341 pages, ~8 URLs in memory: the rest spills and comes back. Requests
    to one host are one at a time (--per-host 1), so its request log is the order its line
    was taken in."""
    sites = tree_hosts(3, 4, 4)
    crawler = Crawler([s.url("/") for s in sites], threads=threads, delay=0, per_host=1,
                      ignore_robots=True, frontier_memory=TINY, visited="exact")
    stats = crawler.run()
    assert stats["todo_spilled"] > 500 and stats["todo_disk_peak_bytes"] > 0
    assert stats["todo_on_disk"] == 0 == stats["todo_left"]
    order = bfs(4, 4)
    for site in sites:
        log = fetched(site)
        assert sorted(log) == sorted(order)  # each page once
        if threads == 1:
            assert log == order  # first in, first out: breadth first
        else:  # a page's links are put together, in their order: they come out so
            position = {path: n for n, path in enumerate(log)}
            for path in order[: (len(order) - 1) // 4]:
                d = path.count("/") - 1
                children = [position[f"{path}{d}{k}/"] for k in range(4)]
                assert children == sorted(children), (path, children)
    assert crawler.todo.directory is None  # the disk part is gone


def test_the_option_is_checked_like_the_others() -> None:
    for bad, message in ((-1, "--frontier-memory must be at least 0, got -1"),
                         (2**21, "--frontier-memory must be at most 1048576"),
                         (float("nan"), "--frontier-memory must be a finite number")):
        with pytest.raises(ValueError, match=message):
            Options(frontier_memory=bad)
    result = subprocess.run([sys.executable, "run.py", "--frontier-memory", "lots",
                             "http://127.0.0.1:9/"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2 and "--frontier-memory" in result.stderr
    assert "Traceback" not in result.stderr


def run_py(args: list[str], tmpdir: Path, **kwargs: object) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir)}
    return subprocess.Popen([sys.executable, "run.py", *args], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            **kwargs)


def scratch_files(crawl: subprocess.Popen, tmpdir: Path, prefix: str) -> list[str]:
    """The scratch files named ``prefix…`` that the running ``crawl`` holds open under
    ``tmpdir`` (none once it ended)."""
    try:
        return [f for f in open_scratch_files(tmpdir, crawl.pid)
                if f.startswith(f"{tmpdir}/{prefix}")]
    except FileNotFoundError:  # (the process is gone)
        return []


def spilled(crawl: subprocess.Popen, tmpdir: Path) -> bool:
    """True once the crawl's ToDo has its scratch file (minicrawl.frontier.disk) open."""
    return bool(scratch_files(crawl, tmpdir, "minicrawl-todo-"))


def wait_for(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def slow_tree(server: LocalSite, seconds: float = 0.02) -> None:
    """A tree of 4**5 leaves whose pages take ``seconds`` each: a crawl of a few seconds."""
    for path, page in tree_pages(4, 5, "slow").items():
        server.pages[path] = Slow(page, seconds)


def test_kill_9_in_a_spilled_crawl_with_state_then_resume_loses_and_repeats_nothing(
        server, tmp_path) -> None:
    slow_tree(server)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    out = tmp_path / "out.jsonl"
    args = [server.url("/"), "--state", str(tmp_path / "state"), "--out", str(out),
            "--frontier-memory", str(TINY), "--threads", "2", "--delay", "0", "--quiet",
            "--ignore-robots"]
    first = run_py(args, tmpdir)
    wait_for(lambda: len(server.requests) >= 300 and spilled(first, tmpdir))
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert list(tmpdir.iterdir()) == []  # its scratch files had no name: gone with it
    done_before = len(server.requests)
    assert done_before < len(server.pages)  # killed mid-crawl, with URLs on disk
    second = run_py(args, tmpdir)
    assert second.wait(120) == 0, second.stderr.read() if second.stderr else ""
    counts = server.fetch_counts()
    assert set(counts) == set(server.pages)  # nothing lost
    assert sum(counts.values()) - len(counts) <= 2  # re-fetched: at most the pages in flight
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert len(urls) == len(set(urls)) == len(server.pages)  # one record each
    assert list(tmpdir.iterdir()) == []  # nor did the resume leave anything


@pytest.mark.parametrize("how", ["end", signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_nothing_of_the_crawl_is_left_in_tmpdir(server, tmp_path, how) -> None:
    """While the crawl runs, TMPDIR lists nothing: ToDo's and the duplicate-content map's
    scratch files are open (two descriptors each, SQLite's and the one for their size) with
    no name, and no other file of theirs (no journal); whatever ends the crawl, nothing
    remains — a kill -9 too."""
    slow_tree(server)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    crawl = run_py([server.url("/"), "--frontier-memory", str(TINY), "--delay", "0",
                    "--ignore-robots", "--quiet", "--threads", "4"]
                   + (["--max-pages", "150"] if how == "end" else []), tmpdir)
    held = {}

    def both_open() -> bool:
        held.update(todo=scratch_files(crawl, tmpdir, "minicrawl-todo-"),
                    digests=scratch_files(crawl, tmpdir, "minicrawl-digests-"))
        return bool(held["todo"] and held["digests"])

    wait_for(both_open)
    every = open_scratch_files(tmpdir, crawl.pid)
    if crawl.poll() is None:  # (not ended meanwhile)
        assert sorted(every) == sorted(held["todo"] + held["digests"]), every
    for files in held.values():
        assert len(files) == 2 and files[0] == files[1] and files[0].endswith(".db (deleted)")
    assert list(tmpdir.iterdir()) == []
    if how != "end":
        wait_for(lambda: len(server.requests) >= 100)
        crawl.send_signal(how)
    crawl.wait(60)
    assert list(tmpdir.iterdir()) == []
    assert len(server.fetch_counts()) < len(server.pages)  # it did stop early


@pytest.mark.parametrize("disk", ["a file", "missing", "a file size limit"])
def test_a_disk_that_fails_keeps_the_urls_in_memory_and_the_crawl_goes_on(server, tmp_path,
                                                                           disk) -> None:
    """TMPDIR a file or a missing directory (the first spill fails), or a file size limit
    (RLIMIT_FSIZE, as a full disk: a later spill fails, what waited on disk comes back): one
    warning line, then everything waits in memory; every page fetched once, exit status 0,
    counted in --stats. (--keep-duplicates: the duplicate-content map, which would say its
    own line for the same TMPDIR, is tested in test_duplicates.)"""
    server.pages.update(tree_pages(4, 5, "t"))  # 1,365 pages, up to ~1,000 URLs waiting
    tmpdir = tmp_path / "tmp"
    if disk == "a file":
        tmpdir.write_text("not a directory")
    elif disk == "a file size limit":
        tmpdir.mkdir()
    stats = tmp_path / "stats.json"
    crawl = run_py([server.url("/"), "--frontier-memory", str(TINY), "--delay", "0",
                    "--ignore-robots", "--quiet", "--threads", "4", "--keep-duplicates",
                    "--stats", str(stats)], tmpdir,
                   preexec_fn=limited(32768) if disk == "a file size limit" else None)
    _, err = crawl.communicate(timeout=300)
    assert crawl.returncode == 0 and "Traceback" not in err, err
    why = {"a file": "Not a directory", "missing": "No such file or directory",
           "a file size limit": "disk I/O error"}[disk]
    back = r"; the [\d,]+ waiting there came back into memory" if disk == "a file size limit" \
        else ""
    assert re.fullmatch(
        rf"WARNING ToDo cannot keep URLs on disk in {tmpdir}: {why}{back}; every waiting URL "
        r"stays in memory from now on, past --frontier-memory\n", err), err
    assert server.fetch_counts() == dict.fromkeys(server.pages, 1)  # every page, once
    figures = json.loads(stats.read_text())
    assert figures["todo_disk_failed"] == 1 and figures["todo_disk_lost"] == 0
    assert figures["pages"] == len(server.pages) and figures["todo_left"] == 0
    assert (figures["todo_spilled"] > 0) == (disk == "a file size limit")


def test_the_live_view_shows_todo_in_memory_and_on_disk(tree_hosts) -> None:
    site = tree_hosts(1, 4, 3)[0]
    crawler = Crawler([site.url("/")], threads=1, delay=0, ignore_robots=True,
                      frontier_memory=TINY, max_pages=20)
    seen: list[str] = []
    crawler.on_page = lambda page: seen.append(
        text_of(LiveView(crawler.watched, enabled=False).render()))
    stats = crawler.run()
    # mid-crawl: URLs in memory and on disk, and the file they take
    assert any(re.search(r"in memory\s+\d+ URLs ≈ [\d.]+ KB", t) and
               re.search(r"on disk\s+[1-9][\d,]* URLs ≈ [\d.]+ KB, [\d.]+ KB of disk used", t)
               for t in seen), seen[-1]
    p = read_progress(crawler.watched)  # stopped by --max-pages: what was left, where
    assert p.todo == stats["todo_left"] == p.todo_in_memory + p.todo_on_disk
    assert p.todo_on_disk == stats["todo_on_disk"] > 0
    assert p.todo_disk_used_bytes == 0 < stats["todo_disk_peak_bytes"]  # the disk part is gone


def test_the_live_view_says_when_the_disk_failed(tree_hosts, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "missing"))  # the first spill fails
    site = tree_hosts(1, 4, 3)[0]
    crawler = Crawler([site.url("/")], threads=1, delay=0, ignore_robots=True,
                      frontier_memory=TINY, keep_duplicates=True)
    seen: list[str] = []
    crawler.on_page = lambda page: seen.append(
        text_of(LiveView(crawler.watched, enabled=False).render()))
    stats = crawler.run()
    assert stats["pages"] == 85 and stats["todo_disk_failed"] == 1
    assert re.search(r"on disk\s+none: the disk failed, every URL waits in memory \(0 lost\)",
                     seen[-1]), seen[-1]
    assert re.search(r"in memory\s+\d+ URLs", seen[0]) and "the disk failed" not in seen[0]


def text_of(renderable: object) -> str:
    console = Console(file=io.StringIO(), width=140, color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_resume_reads_the_journal_as_it_enters_todo_not_all_at_once(server, tmp_path) -> None:
    """100,000 URLs journaled, resumed with ~8 in memory: the journal streams into ToDo (and
    on to disk) instead of coming back as one list."""
    n = 100_000
    server.pages["/"] = Resource(b"".join(b'<a href="/%d">x</a>' % i for i in range(n)))
    for i in range(3):
        server.pages[f"/{i}"] = Resource(b"leaf %d" % i)
    settings = dict(threads=1, delay=0, ignore_robots=True, frontier_memory=TINY,
                    state=str(tmp_path / "state"), max_pages=1)
    Crawler([server.url("/")], **settings).run()  # the root: its links journaled
    again = Crawler([server.url("/")], **settings)  # (Visited rebuilt from the state: not here)
    tracemalloc.start()
    try:
        stats = again.run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert stats["state_resumed"] == n and stats["todo_on_disk"] > n - 100
    assert peak < 20e6, f"{peak / 1e6:.1f} MB"  # 6.3 MB streamed, 53 MB as one list
