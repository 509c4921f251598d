"""The library as a user meets it: pages(), on_page, Page, one Options shared with the CLI."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from minicrawl import Crawler, Options, Page
from minicrawl.cli.main import build_parser, options_from_args
from minicrawl.cli.outpaths import OutputPathError
from minicrawl.demo.site import Resource, chain
from minicrawl.options import option_fields
from minicrawl.state.store import StateError

ROOT = Path(__file__).resolve().parent.parent
# Loopback servers need no politeness pacing (the politeness tests cover it).
FAST = {"delay": 0, "per_host": 64}


def small_site(server) -> None:
    server.pages["/"] = Resource(b'<a href="/a">a</a> <a href="/b">b</a>')
    server.pages["/a"] = Resource(b'<a href="/b">b</a> <a href="/c.txt">c</a>')
    server.pages["/b"] = Resource(b"<p>no links</p>")
    server.pages["/c.txt"] = Resource(b"plain", 200, {"Content-Type": "text/plain"})


def test_pages_iterator_yields_typed_pages(server):
    small_site(server)
    pages = {p.url: p for p in Crawler([server.url("/")], threads=2, **FAST).pages()}
    assert set(pages) == {server.url(p) for p in ("/", "/a", "/b", "/c.txt")}
    root = pages[server.url("/")]
    assert isinstance(root, Page)
    assert root.status == 200 and root.depth == 0 and root.referrer is None
    assert isinstance(root.body, bytes) and b'href="/a"' in root.body
    assert root.headers["content-type"].startswith("text/html")
    assert root.links == [server.url("/a"), server.url("/b")]
    assert pages[server.url("/c.txt")].content_type == "text/plain"
    assert pages[server.url("/c.txt")].links == []  # links are only read from HTML


def test_breaking_out_of_pages_stops_the_crawl(server):
    server.pages.update(chain(500))
    crawler = Crawler([server.url("/")], threads=2, **FAST)
    for i, _page in enumerate(crawler.pages()):
        if i == 4:
            break
    assert crawler.stats["pages"] < 20  # the workers stopped soon after the caller did
    assert not any(t.name.startswith("worker-") for t in threading.enumerate())


def test_a_crawler_closed_without_running_frees_its_state_and_mirror_folders(server, tmp_path):
    """A Crawler made and never run holds its state directory's lock and its mirror folder's:
    another crawl of them is refused until close() (the end of a ``with`` block) lets go of
    them. Closing a crawler that runs meanwhile is refused; after its run, close() does
    nothing, as it does again."""
    small_site(server)
    dirs = {"state": str(tmp_path / "state"), "mirror": str(tmp_path / "mirror")}
    with Crawler([server.url("/")], **dirs, **FAST):
        with pytest.raises(StateError, match="in use by another crawl"):
            Crawler([server.url("/")], **dirs, **FAST)
        with pytest.raises(OutputPathError, match="another crawl is writing"):
            Crawler([server.url("/")], mirror=dirs["mirror"], **FAST)
    crawler = Crawler([server.url("/")], **dirs, **FAST)
    pages = crawler.pages()
    next(pages)
    with pytest.raises(RuntimeError, match="running already"):
        crawler.close()
    assert len([1, *pages]) == 4
    crawler.close()
    crawler.close()
    with pytest.raises(RuntimeError, match="this Crawler is closed"):
        crawler.run()
    assert Crawler([server.url("/")], **dirs, recrawl=True, **FAST).run()["pages"] == 4



def test_a_state_directory_made_by_a_crawler_never_run_goes_with_its_close(server, tmp_path):
    # Made and never run, it would bind the directory to these options: the next crawl with
    # others would be refused. A directory that was there, or a crawl's, stays.
    small_site(server)
    state = tmp_path / "state"
    with Crawler([server.url("/")], state=str(state), max_depth=1, **FAST):
        assert state.is_dir()
    assert not state.exists()
    crawler = Crawler([server.url("/")], state=str(state), **FAST)
    assert crawler.run()["pages"] == 4
    crawler.close()
    assert (state / "crawl.db").is_file()
    Crawler([server.url("/")], state=str(state), recrawl=True, **FAST).close()
    assert (state / "crawl.db").is_file()


def test_on_page_is_called_once_per_page_from_worker_threads(server):
    small_site(server)
    seen: list[tuple[str, str]] = []
    stats = Crawler([server.url("/")], threads=3, **FAST,
                    on_page=lambda page: seen.append((page.url, threading.current_thread().name))
                    ).run()
    assert len(seen) == stats["pages"] == 4
    assert all(name.startswith("worker-") for _, name in seen)


def test_library_and_command_line_share_one_options_object():
    args = build_parser().parse_args(["http://example.org/", "--threads", "3", "--max-depth",
                                      "2", "--exclude", "a", "--exclude", "b", "--sort-query",
                                      "--trace", "t.txt", "--report", "r.html"])
    assert options_from_args(args) == Options(threads=3, max_depth=2, exclude=["a", "b"],
                                              sort_query=True, trace="t.txt", report="r.html")
    assert options_from_args(build_parser().parse_args([])) == Options()  # same defaults
    crawler = Crawler(["http://example.org/"], Options(threads=3), max_pages=5)
    assert (crawler.options.threads, crawler.options.max_pages) == (3, 5)


def test_trace_without_a_file_means_stdout():
    args = build_parser().parse_args(["http://example.org/", "--trace"])
    assert options_from_args(args).trace == "-"


def test_every_option_has_a_one_line_help_and_a_group():
    for f in option_fields():
        help_text = f.metadata.get("help", "")
        assert help_text and "\n" not in help_text, f.name
        assert f.metadata.get("group"), f.name
        assert f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def test_help_shows_a_default_for_every_option():
    env = {**os.environ, "COLUMNS": "1000"}  # one line per option, nothing wrapped
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), "--help"], capture_output=True,
                            text=True, timeout=60, cwd=ROOT, env=env)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    groups = {line[:-1] for line in lines if re.fullmatch(r"[A-Z][\w ]*:", line)}
    assert {"Run", "Workers", "Visited", "Scope", "Output"} <= groups
    flags = {"--demo", "--quiet"} | {"--" + f.name.replace("_", "-") for f in option_fields()}
    entries: dict[str, str] = {}  # flag → its help, joined when argparse put it on a new line
    for line in lines:
        if m := re.match(r"  (--[\w-]+)", line):
            flag = m.group(1)
            entries[flag] = line
        elif line.startswith("   ") and entries:
            entries[flag] += " " + line.strip()
    for flag in flags:
        entry = " ".join(entries[flag].split())
        assert re.search(r"\(default: .+\)$", entry), entry
        assert len(entry.split(flag, 1)[1].strip()) > 30, entry  # an explanation, not a name
    assert "(default: None)" not in result.stdout and "(default: [])" not in result.stdout
