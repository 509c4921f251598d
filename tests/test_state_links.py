"""``--check-links`` and ``--links`` with ``--state``: the links of a crawl are those of every
run of it. A crawl killed with ``kill -9`` and resumed lists the same broken links, and writes
the same ``--links`` file, as one never interrupted; a recrawl keeps the links of the pages that
did not change (a 304, the same body) and replaces those of the pages that did; a state made
before the ``edges`` table resumes. Run as a user runs it: ``python run.py`` on a real local
site."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minicrawl.demo.site import Request, Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "1", "--retries", "0", "--quiet"]
HTML = {"Content-Type": "text/html; charset=utf-8"}
PAGES = 36  # /p0 … /p35, a chain: each links to the next
KILL_AT = 14  # pages recorded when the first run is killed


def command(site, state: Path | None, links: Path, *extra: str,
            check: bool = True, quiet: bool = True) -> list[str]:
    return [sys.executable, str(ROOT / "run.py"), site.url("/"), "--links", str(links),
            *(["--check-links"] if check else []),
            *(["--state", str(state)] if state is not None else []),
            *(FAST if quiet else [a for a in FAST if a != "--quiet"]), *extra]


def run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def slow(resource: Resource, seconds: float = 0.03):
    def handler(request: Request) -> Resource:
        time.sleep(seconds)
        return resource
    return handler


def page(*lines: str) -> Resource:
    return Resource("\n".join(["<html><body>", *lines, "</body></html>"]).encode(), 200, HTML)


def fill(server) -> None:
    """Broken links early in the crawl (some linked only from its first pages) and late; a
    redirect chain whose middle hop a late page links to; a page robots.txt disallows; a
    missing #fragment of an early page linked from a late one."""
    pages = {
        "/robots.txt": Resource(b"User-agent: *\nDisallow: /private\n", 200,
                                {"Content-Type": "text/plain"}),
        "/": page('<a href="/p0">start</a>', '<img src="/logo.png" alt="Logo">',
                  '<img src="/missing.png" alt="Missing picture">',
                  '<a href="/r1">redirected</a>', '<a href="/private">private</a>'),
        "/logo.png": Resource(b"PNG", 200, {"Content-Type": "image/png"}),
        "/r1": Resource(status=301, headers={"Location": "/r2"}),
        "/r2": Resource(status=302, headers={"Location": "/r3"}),
        "/r3": Resource(b"gone away", 410),
    }
    for i in range(PAGES):
        lines = [f'<a href="/p{i + 1}">next</a>' if i + 1 < PAGES else '<a href="/">home</a>',
                 f'<h2 id="part{i}">Part {i}</h2>']
        if i < 3:  # broken links only the first pages have
            lines.append(f'<a href="/early-missing">early {i}</a>')
        if i % 6 == 0:
            lines.append(f'<a href="/missing-{i}">missing {i}</a>')
        if i % 5 == 1:
            lines.append('<a href="/down">down</a>')  # early and late
        if i == PAGES - 2:  # late: the middle of the chain, a fragment of an early page
            lines += ['<a href="/r2">the middle hop</a>', '<a href="/p1#part1">there</a>',
                      '<a href="/p1#nowhere">nowhere</a>', '<a href="/private">again</a>']
        pages[f"/p{i}"] = slow(page(*lines))
    pages["/down"] = Resource(b"down", 503)
    server.pages.update(pages)


def recorded(state: Path) -> int:
    db_path = state / "crawl.db"
    if not db_path.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as db:
            return db.execute("SELECT count(*) FROM pages").fetchone()[0]
    except sqlite3.Error:  # not made yet
        return 0


def lines_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def kill_9_midway(args: list[str], state: Path) -> None:
    """Run ``args`` and kill it with SIGKILL once KILL_AT pages are recorded in ``state``."""
    killed = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while recorded(state) < KILL_AT:
        assert killed.poll() is None, "the crawl ended before it was killed"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(killed.pid, signal.SIGKILL)
    killed.communicate(timeout=30)
    assert KILL_AT <= recorded(state) < PAGES


@pytest.mark.parametrize("check", [True, False], ids=["check-links", "links"])
def test_a_resume_after_kill_9_lists_what_an_uninterrupted_crawl_lists(server, tmp_path, check):
    fill(server)
    whole = run(command(server, tmp_path / "whole", tmp_path / "whole.jsonl", check=check))
    assert whole.returncode == check, whole.stderr  # 1: broken links
    assert "Traceback" not in whole.stderr
    if check:
        assert set(broken_targets(whole.stdout, server)) == {
            "/early-missing", "/down", "/missing.png", "/r1", "/r2",
            *(f"/missing-{i}" for i in range(0, PAGES, 6))}
    # The same crawl, killed with SIGKILL once KILL_AT pages are recorded, then resumed
    state, links = tmp_path / "state", tmp_path / "links.jsonl"
    kill_9_midway(command(server, state, links, check=check), state)
    resumed = run(command(server, state, links, check=check))
    assert "resuming the crawl" in resumed.stderr
    assert "Traceback" not in resumed.stderr
    assert resumed.returncode == check
    assert resumed.stdout == whole.stdout  # every broken URL, referrer, line and text
    # The --links file: every link of every page, in the order the pages were recorded
    assert lines_of(links) == lines_of(tmp_path / "whole.jsonl")
    records = lines_of(links)
    assert {r["page"] for r in records} >= {server.url(f"/p{i}") for i in range(PAGES)}
    hop = [r for r in records if r["href"] == "/r2"]
    assert [(r["status"], r["final_url"], r["broken"]) for r in hop] == [
        (410, server.url("/r3"), True)]
    if check:  # (the anchors are read with --check-links)
        assert [r["warning"] for r in records if r["href"].startswith("/p1#")] == [
            None, "fragment #nowhere not found"]
    assert {r["broken"] for r in records if r["href"] == "/private"} == {None}
    # And as a crawl never stopped has it: the same file without a state
    plain = run(command(server, None, tmp_path / "plain.jsonl", check=check))
    assert plain.stdout == whole.stdout
    assert sorted(map(str, lines_of(tmp_path / "plain.jsonl"))) == sorted(map(str, records))


def test_a_resumed_run_s_summary_says_its_problems_are_this_run_s_and_the_broken_the_crawl_s(
        server, tmp_path):
    """Resumed, the summary said "Problems: 7" (this run's fetches) above "Broken links: 11"
    (every run's links, joined from the state): read side by side, a contradiction. Each line
    now says whose count it is."""
    fill(server)
    state, links, stats = tmp_path / "state", tmp_path / "links.jsonl", tmp_path / "stats.json"
    kill_9_midway(command(server, state, links), state)
    resumed = run(command(server, state, links, "--stats", str(stats), quiet=False))
    assert resumed.returncode == 1, resumed.stderr
    assert "resuming the crawl" in resumed.stderr
    listed = len(broken_targets(resumed.stdout, server))  # the list: the whole crawl's
    assert listed == 5 + len(range(0, PAGES, 6))
    lines = resumed.stdout.splitlines()
    summary = lines[lines.index("", 1):]  # after the list, from the blank line it begins with
    assert len(summary) <= 12, resumed.stdout
    problems = json.loads(stats.read_text())["problems"]  # this run's fetches only
    assert 0 < problems < listed
    assert summary[1].startswith("Crawl finished: ") and " pages this run in " in summary[1]
    assert summary[2].startswith(f"Problems this run: {problems} — "), summary
    assert summary[3].startswith(f"Broken links in the whole crawl (all runs): {listed} URLs, "
                                 "linked "), summary
    assert "Problems:" not in resumed.stdout
    assert not any(line.startswith("Broken links: ") for line in summary)


class Nightly:
    """A site crawled twice: /etag answers 304 the second time, /same the same body; /changes
    has another body (it dropped a broken link, added one); /fixed was missing and is back,
    /flaky was fine and is missing."""

    def __init__(self, server) -> None:
        self.run = 1
        self.not_modified: list[str] = []
        server.pages.update({
            "/": self.index, "/etag": self.etag, "/same": self.same, "/changes": self.changes,
            "/flaky": self.flaky, "/fixed": self.fixed})

    def index(self, request: Request) -> Resource:
        return page('<a href="/etag">etag</a>', '<a href="/same">same</a>',
                    '<a href="/changes">changes</a>')

    def etag(self, request: Request) -> Resource:
        if request.headers.get("if-none-match") == '"e1"':
            self.not_modified.append("/etag")
            return Resource(b"", 304, {"ETag": '"e1"'})
        body = page('<a href="/missing-etag">missing from etag</a>',
                    '<a href="/flaky">flaky</a>', '<a href="/fixed">fixed</a>')
        return Resource(body.body, 200, {**HTML, "ETag": '"e1"'})

    def same(self, request: Request) -> Resource:
        return page('<a href="/missing-same">missing from same</a>')

    def changes(self, request: Request) -> Resource:
        if self.run == 1:
            return page('<a href="/missing-dropped">dropped later</a>', "<p>v1</p>")
        return page("<p>v2</p>", '<a href="/missing-new">new in v2</a>')

    def flaky(self, request: Request) -> Resource:
        return page("<p>fine</p>") if self.run == 1 else Resource(b"no more", 404)

    def fixed(self, request: Request) -> Resource:
        return Resource(b"not yet", 404) if self.run == 1 else page("<p>back</p>")


def broken_targets(stdout: str, server) -> dict[str, list[str]]:
    """The printed list: each broken target's path → its referrers' lines (the warnings that
    follow, a #fragment not found, are a list of their own)."""
    found: dict[str, list[str]] = {}
    target = ""
    for line in stdout.splitlines()[1:]:
        if line.startswith("Warnings:"):
            break
        if line.startswith(" "):
            found[target].append(line.strip().replace(server.origin, ""))
        else:
            target = line.split()[1].replace(server.origin, "")
            found[target] = []
    return found


def test_a_recrawl_keeps_the_links_of_unchanged_pages_and_replaces_changed_ones(server,
                                                                                 tmp_path):
    site = Nightly(server)
    state, links = tmp_path / "state", tmp_path / "links.jsonl"
    first = run(command(server, state, links))
    assert first.returncode == 1, first.stderr
    assert broken_targets(first.stdout, server) == {
        "/fixed": ['/etag  line 4  "fixed"  <a href="/fixed">'],
        "/missing-dropped": ['/changes  line 2  "dropped later"  <a href="/missing-dropped">'],
        "/missing-etag": ['/etag  line 2  "missing from etag"  <a href="/missing-etag">'],
        "/missing-same": ['/same  line 2  "missing from same"  <a href="/missing-same">']}
    site.run = 2
    report = tmp_path / "report.html"
    second = run(command(server, state, links, "--recrawl", "--report", str(report)))
    assert second.returncode == 1, second.stderr
    shown = report.read_text().split('<h2 id="broken">', 1)[1].split("<h2", 1)[0]
    # (the report's table of broken links: the same)
    assert all(f"/missing-{name}" in shown for name in ("etag", "same", "new"))
    assert "/missing-dropped" not in shown and "/fixed" not in shown
    assert site.not_modified == ["/etag"]  # a 304: its links were not read again
    assert broken_targets(second.stdout, server) == {
        "/flaky": ['/etag  line 3  "flaky"  <a href="/flaky">'],  # the latest status
        "/missing-etag": ['/etag  line 2  "missing from etag"  <a href="/missing-etag">'],
        "/missing-new": ['/changes  line 3  "new in v2"  <a href="/missing-new">'],
        "/missing-same": ['/same  line 2  "missing from same"  <a href="/missing-same">']}
    assert second.stdout.startswith("Broken links: 4 URLs, linked 4 times from 3 pages "
                                    "(of 8 links on 4 pages)")
    records = lines_of(links)
    assert sorted((r["page"].replace(server.origin, ""), r["href"], r["status"])
                  for r in records) == [
        ("/", "/changes", 200), ("/", "/etag", 304), ("/", "/same", 200),
        ("/changes", "/missing-new", 404),
        ("/etag", "/fixed", 200), ("/etag", "/flaky", 404), ("/etag", "/missing-etag", 404),
        ("/same", "/missing-same", 404)]
    # Nothing changed since: a third run lists the same
    third = run(command(server, state, links, "--recrawl"))
    assert third.stdout == second.stdout


def test_a_state_without_the_edges_table_resumes(server, tmp_path):
    """A state made by a minicrawl before the ``edges`` table: opened, the table made, the
    crawl resumed; the links are those of the pages this run recorded (the earlier ones'
    were never kept), and a resume after it has them all."""
    fill(server)
    state, links = tmp_path / "state", tmp_path / "links.jsonl"
    first = run(command(server, state, links, "--max-pages", "5"))
    assert first.returncode == 1, first.stderr
    with sqlite3.connect(state / "crawl.db") as db:
        db.execute("DROP TABLE edges")
    before = recorded(state)
    second = run(command(server, state, links, "--max-pages", "10"))
    assert "Traceback" not in second.stderr
    assert "resuming the crawl" in second.stderr
    assert recorded(state) > before
    with sqlite3.connect(state / "crawl.db") as db:
        kept = {row[0].replace(server.origin, "") for row in db.execute(
            "SELECT page FROM edges WHERE edges IS NOT NULL")}
    assert kept and len(kept) <= 10 and "/" not in kept  # this run's pages only
    assert {r["page"].replace(server.origin, "") for r in lines_of(links)} == kept
    third = run(command(server, state, links))
    assert third.returncode == 1 and "Traceback" not in third.stderr
    assert {r["page"].replace(server.origin, "") for r in lines_of(links)} >= kept
