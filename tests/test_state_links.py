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


def links_in(path: Path, server) -> dict[str, int | None]:
    """Each --out record's links_in, by its URL's path (one record a URL; a URL only checked
    has its own, its path and " check": the nofollow link's target here is both)."""
    records = lines_of(path)
    counts = {r["url"].replace(server.origin, "") + (" check" if r.get("check") else ""):
              r["links_in"] for r in records}
    assert len(counts) == len(records)
    return counts


def fill_for_links_in(server) -> None:
    """``fill``'s site, its home page with links the crawl does not follow (a <link
    rel=author>, a nofollow link) to pages linked from one page besides."""
    fill(server)
    server.pages["/"] = page(
        '<a href="/p0">start</a>', '<img src="/logo.png" alt="Logo">',
        '<a href="/r1">redirected</a>', '<a href="/private">private</a>',
        '<link rel="author" href="/p5">', '<a href="/p7" rel="nofollow">not followed</a>')
    # A late link to the end of the chain /r1 starts (not to its middle hop, /r2: a resumed
    # crawl whose Visited is rebuilt from the state fetches a hop of a chain recorded before it
    # again, and records it: not these tests' matter)
    server.pages[f"/p{PAGES - 2}"] = slow(page(
        f'<a href="/p{PAGES - 1}">next</a>', '<a href="/r3">the end of a chain</a>'))


@pytest.mark.parametrize("check", [True, False], ids=["check-links", "links"])
def test_links_in_of_a_crawl_killed_and_resumed_is_that_of_one_never_stopped(server, tmp_path,
                                                                             check):
    """With --check-links or --links the state keeps each page's links: links_in is counted
    from there, over every run, as links_in counts — the links the crawl follows (not a
    nofollow one, not a <link rel=author>, though the --links file has both), and to every URL
    a redirect chain requested — so a crawl killed with kill -9 and resumed has the counts of
    one never stopped, with a state or without."""
    fill_for_links_in(server)

    def crawl(state: Path | None, out: Path, *extra: str) -> list[str]:
        return command(server, state, out.with_suffix(".links"), "--out", str(out), *extra,
                       check=check)

    plain = tmp_path / "plain.jsonl"
    done = run(crawl(None, plain))
    assert done.returncode == check and "links_in left null" not in done.stderr, done.stderr
    want = links_in(plain, server)
    assert want["/p5"] == want["/p7"] == 1  # from /p4, /p6: not from / (author, nofollow)
    if check:  # (the URLs only checked: the same URLs' records)
        assert want["/p5 check"] == want["/p7 check"] == 1
    assert want["/r1"] == 2  # from / (its start) and /p34 (its end, /r3)
    assert want["/p0"] == 1 and want["/"] == 1 and None not in want.values()
    whole = tmp_path / "whole.jsonl"  # never stopped, with a state
    done = run(crawl(tmp_path / "whole", whole))
    assert done.returncode == check and "links_in left null" not in done.stderr, done.stderr
    assert links_in(whole, server) == want

    state, out = tmp_path / "state", tmp_path / "pages.jsonl"
    kill_9_midway(crawl(state, out), state)
    assert set(links_in(out, server).values()) == {None}  # (killed: never written)
    resumed = run(crawl(state, out))
    assert resumed.returncode == check, resumed.stderr
    assert "resuming the crawl" in resumed.stderr and "links_in left null" not in resumed.stderr
    assert links_in(out, server) == want  # every line, the first run's too

    # A recrawl of the same site: its pages unchanged keep their links. (It revisits the end
    # of the chain under its own URL, first: the chain stops there, and the link to it is its)
    again = tmp_path / "again.jsonl"
    recrawl = run(crawl(state, again, "--recrawl"))
    assert recrawl.returncode == check, recrawl.stderr
    assert "links_in left null" not in recrawl.stderr, recrawl.stderr
    assert links_in(again, server) == {**want, "/r1": 1, "/r3": 1}


def test_links_in_of_runs_that_stop_at_a_cap_is_of_the_crawl_so_far(server, tmp_path):
    """A run that ends at --max-pages writes the counts of the crawl so far (the links of the
    pages recorded); the run that goes on with the same --out writes the file again, every line,
    with the counts of the whole crawl."""
    fill_for_links_in(server)
    plain = tmp_path / "plain.jsonl"
    assert run(command(server, None, tmp_path / "plain.links", "--out", str(plain))
               ).returncode == 1
    want = links_in(plain, server)
    state, out = tmp_path / "state", tmp_path / "pages.jsonl"
    capped = run(command(server, state, tmp_path / "links.jsonl", "--out", str(out),
                         "--max-pages", "12"))
    assert capped.returncode == 1 and "links_in left null" not in capped.stderr, capped.stderr
    so_far = links_in(out, server)
    assert None not in so_far.values() and len(so_far) < len(want)
    assert so_far["/p0"] == 1 and so_far["/r1"] == 1  # (/p34, which links to /r3: not yet)
    done = run(command(server, state, tmp_path / "links.jsonl", "--out", str(out)))
    assert done.returncode == 1 and "links_in left null" not in done.stderr, done.stderr
    assert links_in(out, server) == want


def test_links_in_stays_null_when_the_state_has_pages_without_their_links(server, tmp_path):
    """A state whose first run did not record links: a run with --check-links that resumes it
    has not the links of the pages before it, so links_in stays null, said in one line."""
    fill(server)
    state, out = tmp_path / "state", tmp_path / "pages.jsonl"
    first = run([sys.executable, str(ROOT / "run.py"), server.url("/"), "--state", str(state),
                 "--out", str(out), "--max-pages", "5", *FAST])  # no --links, no --check-links
    assert first.returncode == 0, first.stderr
    resumed = run(command(server, state, tmp_path / "links.jsonl", "--out", str(out)))
    assert resumed.returncode == 1, resumed.stderr
    said = [line for line in resumed.stderr.splitlines() if "links_in left null" in line]
    assert len(said) == 1 and "links_in left null: the state holds pages of earlier runs" in \
        said[0] and "--check-links from its first run" in said[0], resumed.stderr
    assert set(links_in(out, server).values()) == {None}


def test_a_state_from_before_the_linksin_table_resumes(server, tmp_path):
    """A state made with --check-links by a minicrawl before the state kept what links_in
    counts: the table is made, the crawl resumes with its links, and links_in stays null (the
    pages before it have not theirs), said in one line."""
    fill(server)
    state, out = tmp_path / "state", tmp_path / "pages.jsonl"
    first = run(command(server, state, tmp_path / "links.jsonl", "--max-pages", "5"))
    assert first.returncode == 1, first.stderr
    with sqlite3.connect(state / "crawl.db") as db:  # as that minicrawl left it
        db.execute("DELETE FROM meta WHERE key = 'links_in'")
        db.execute("DROP TABLE linksin")
    resumed = run(command(server, state, tmp_path / "links.jsonl", "--out", str(out)))
    assert resumed.returncode == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "resuming the crawl" in resumed.stderr
    assert resumed.stdout.startswith("Broken links: ")
    said = [line for line in resumed.stderr.splitlines() if "links_in left null" in line]
    assert len(said) == 1 and "the state holds pages of earlier runs" in said[0], said
    assert set(links_in(out, server).values()) == {None}
    with sqlite3.connect(state / "crawl.db") as db:
        kept = db.execute("SELECT count(*) FROM linksin").fetchone()[0]
        marked = db.execute("SELECT 1 FROM meta WHERE key = 'links_in'").fetchone()
    assert kept == 0 and marked is None  # (never: the pages before have none)


def test_the_state_keeps_the_links_its_page_carries_whoever_commits_it(tmp_path):
    """A page's edges and anchors travel with it (``CrawledPage.edges``, ``.anchors``) and the
    state packs them at the page's commit. They were a stash of the worker thread, filled at
    ``page_edges``/``page_anchors`` and taken by that thread's next commit: a page committed on
    another thread than the one that told its links, or two pages whose points interleave on
    one thread, lost theirs."""
    from threading import Thread

    from minicrawl.core.interfaces import Item
    from minicrawl.events import Events
    from minicrawl.options import Options
    from minicrawl.page import CrawledPage
    from minicrawl.records.edges import PAGE, LinkEdge
    from minicrawl.state.store import CrawlState, crawl_config

    seed = "http://site.test/"
    options = Options(state=str(tmp_path / "s"), check_links=True)
    state = CrawlState(options.state, options, crawl_config(options, [seed]))
    events = Events([state])

    def page(path: str) -> CrawledPage:
        url = seed + path
        edge = LinkEdge(url, seed, None, "/", f"home from {path}", "a", "href", 3, PAGE, False)
        return CrawledPage(url, 1, seed, url, status=200, edges=[edge],
                           anchors=frozenset({f"part-{path}"}))

    a, b = page("a"), page("b")
    state.journal([Item(a.url, 1, seed), Item(b.url, 1, seed)])
    for told in (a, b):  # both pages' points first, on this thread
        events.page_edges(told, told.edges)
        events.page_anchors(told, told.anchors)
    other = Thread(target=events.page_kept, args=(a, []))  # a's commit on another thread
    other.start()
    other.join()
    events.page_kept(b, [])
    state.close()
    edges = {page: edges[0][3] for page, edges in state.recorded.edges()}  # (read back)
    anchors = {page: json.loads(packed) for page, packed in state.recorded.anchors()}
    assert edges == {a.url: "home from a", b.url: "home from b"}
    assert anchors == {a.url: ["part-a"], b.url: ["part-b"]}
