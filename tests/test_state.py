"""--state DIR: resume after kill -9, SIGTERM or a page cap; refuse the wrong or a damaged dir."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.demo.site import Resource
from minicrawl.options import Options
from minicrawl.state.opening import peek
from minicrawl.state.store import FILTER_NAME, CrawlState, StateError, crawl_config
from minicrawl.visited.make import make_visited

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")

ROOT = Path(__file__).resolve().parent.parent
THREADS = 16
FAST = ["--delay", "0", "--per-host", str(THREADS), "--threads", str(THREADS), "--quiet"]
# A fixed Bloom filter, whose checkpoint file the state keeps (the default scalable filter is
# rebuilt from crawl.db when a crawl resumes)
CHECKPOINTED = ["--visited", "bloom"]


def start(*args: str, tmpdir: Path | None = None) -> subprocess.Popen:
    """run.py in the background; with ``tmpdir`` as its TMPDIR (where its scratch files would
    be, if they had names: a test sees nothing is left there)."""
    env = {**os.environ, "TMPDIR": str(tmpdir)} if tmpdir is not None else None
    return subprocess.Popen([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=timeout)


def wait_for_requests(server, count: int, proc: subprocess.Popen, limit: float = 60) -> None:
    """Until the server has seen ``count`` requests (or the crawl ended)."""
    deadline = time.monotonic() + limit
    while len(server.requests) < count and proc.poll() is None:
        assert time.monotonic() < deadline, "the crawl made no progress"
        time.sleep(0.002)


def journal_rows(state_dir: Path) -> int:
    with sqlite3.connect(state_dir / "crawl.db") as db:
        return db.execute("SELECT count(*) FROM todo").fetchone()[0]


def test_kill_9_at_random_moments_then_resume_loses_nothing(make_site, tmp_path):
    server, site = make_site(pages=2000)
    expected = set(site.reachable())
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    args = [server.url("/"), "--state", str(state), "--out", str(out), *FAST]
    # A fixed seed keeps CI reproducible; MINICRAWL_KILL_SEED=... tries other moments (soak).
    rng = random.Random(int(os.environ.get("MINICRAWL_KILL_SEED", "20261122")))
    kills = 0
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    for _ in range(4):
        # A random moment: after a random number of further requests, so the kill lands
        # mid-crawl however fast this machine is.
        proc = start(*args, tmpdir=tmpdir)
        wait_for_requests(server, len(server.requests) + rng.randrange(30, 500), proc)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=30)
    assert kills >= 3
    assert list(tmpdir.iterdir()) == []  # the duplicate-content maps' files went with them
    assert len(server.fetch_counts()) < len(expected)  # really interrupted
    final = run(*args)
    assert final.returncode == 0, final.stderr
    counts = server.fetch_counts()
    missed = expected - set(counts)
    assert not missed, f"{len(missed)} reachable pages never fetched, e.g. {sorted(missed)[:3]}"
    assert set(counts) == expected
    duplicates = sum(c - 1 for c in counts.values())
    print(f"{kills} kills, {duplicates} duplicate fetches (bound {THREADS} per kill)")
    assert duplicates <= THREADS * kills
    assert journal_rows(state) == 0
    # --out was continued after each kill from its last complete line: every line parses, and
    # no page has two (kill -9 may lose the lines still buffered; the database has them all)
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert len(urls) == len(set(urls))
    # and a completed crawl run again fetches nothing
    before = len(server.requests)
    again = run(*args)
    assert again.returncode == 0 and "is complete" in again.stderr
    assert len(server.fetch_counts()) == len(counts) and sum(
        server.fetch_counts().values()) == sum(counts.values())
    assert len(server.requests) - before <= 1  # robots.txt at most


def test_sigterm_finishes_pages_in_flight_and_resume_fetches_nothing_twice(make_site, tmp_path):
    server, site = make_site(pages=1000)
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    args = [server.url("/"), "--state", str(state), "--out", str(out), *FAST]
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = start(*args, tmpdir=tmpdir)
    wait_for_requests(server, 200, proc)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert list(tmpdir.iterdir()) == []  # nothing of the crawl left in its TMPDIR
    assert journal_rows(state) > 0  # the rest stayed journaled
    assert run(*args).returncode == 0
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable())
    assert max(counts.values()) == 1  # in-flight pages were recorded, not lost nor repeated
    # --out kept growing across the two runs: one line per record
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert len(urls) == len(set(urls))
    with sqlite3.connect(state / "crawl.db") as db:
        assert db.execute("SELECT count(*) FROM pages").fetchone()[0] == len(urls)


def test_max_pages_runs_continue_where_the_last_one_stopped(make_site, tmp_path):
    server, site = make_site(pages=150)
    state = tmp_path / "state"
    runs = 0
    while True:
        stats = Crawler([server.url("/")], threads=4, delay=0, state=str(state),
                        max_pages=40).run()
        runs += 1
        if stats.get("pages", 0) < 40:
            break
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable()) and max(counts.values()) == 1
    assert runs >= len(site.reachable()) // 40


def test_a_capped_run_journals_every_link_for_the_runs_after_it(server, tmp_path):
    """--max-pages with --state is one run's cap, not the crawl's: the runs after it fetch the
    links it journaled, so Visited is sized as without the cap. The page's links are chosen so
    that a one-page crawl's filter (sized for --max-pages 1: 0.25, where a lost link costs no
    page) takes five of them for seen; with --state every one is journaled and fetched later.
    (A URL's bits depend on the server's port: with the port's links, a test of 100,000 links
    lost one on 1 port of 600.)"""
    n = 1000  # --expected-urls: a small filter, so that the links are found in a moment
    seed = server.url("/")
    one_page = make_visited(Options(expected_urls=n, max_pages=1))  # the filter of before
    whole = make_visited(Options(expected_urls=n))  # the crawl's, as with --state
    links: list[str] = []
    dropped, i = 0, 0
    for visited in (one_page, whole):
        visited.add_new([seed])
    while dropped < 5:
        url, i = server.url(f"/{i}"), i + 1
        if whole.add_new([url]):  # one the crawl's own filter takes for seen is left out
            links.append(url)
            dropped += not one_page.add_new([url])
    server.pages["/"] = Resource("".join(f'<a href="{u}">x</a>' for u in links).encode())
    for url in links:
        server.pages[url.removeprefix(server.origin)] = Resource(b"leaf")
    settings = dict(threads=1, delay=0, ignore_robots=True, expected_urls=n,
                    state=str(tmp_path / "state"))
    first = Crawler([seed], max_pages=1, **settings).run()
    assert first["links_new"] == len(links) and journal_rows(tmp_path / "state") == len(links)
    rest = Crawler([seed], **settings).run()
    assert rest["state_resumed"] == len(links) and rest["pages"] == len(links)
    assert server.fetch_counts() == {"/": 1, **{u.removeprefix(server.origin): 1 for u in links}}


def test_a_link_seen_only_by_an_unrecorded_page_is_not_in_the_checkpoint(tmp_path):
    """The checkpoint is a shadow of committed URLs: a link that a page in flight put in the
    live Visited must not survive a crash, or the re-fetched page would find it 'seen'."""
    options = Options(state=str(tmp_path / "s"))
    config = crawl_config(options, ["http://h/"])
    state = CrawlState(options.state, options, config)
    state.visited.add("http://h/")
    state.journal([Item("http://h/", 0)])
    state.visited.add("http://h/in-flight-link")  # a worker's add_many, page not committed yet
    with state._lock:
        state._checkpoint()
    state.close(checkpoint=False)  # the crash: no final save
    again = CrawlState(options.state, options, config)
    assert "http://h/" in again.visited
    assert "http://h/in-flight-link" not in again.visited
    items, counts = again.start(recrawl=False)
    assert [i.url for i in items] == ["http://h/"] and counts == {"state_resumed": 1}
    again.close()


def test_rows_written_after_the_checkpoint_are_replayed(tmp_path, server):
    from minicrawl.demo.site import Resource

    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b'<a href="/b">b</a>')
    server.pages["/b"] = Resource(b"end")
    state_dir = tmp_path / "s"
    Crawler([server.url("/")], threads=1, delay=0, state=str(state_dir)).run()
    # Put the checkpoint back to an empty filter saved "before" everything: the database alone
    # must bring Visited back.
    options = Options(state=str(state_dir))
    from minicrawl.visited import BloomFilter

    BloomFilter(capacity=options.expected_urls,
                error_rate=options.error_rate).save(state_dir / FILTER_NAME)
    with sqlite3.connect(state_dir / "crawl.db") as db:
        db.execute("UPDATE meta SET value = '0' WHERE key = 'filter_seq'")
    stats = Crawler([server.url("/")], threads=1, delay=0, state=str(state_dir)).run()
    assert stats.get("pages", 0) == 0
    assert max(server.fetch_counts().values()) == 1


# -- refusing the wrong directory, reporting a damaged one ------------------------------------


@pytest.fixture
def crawled(server, tmp_path):
    from minicrawl.demo.site import Resource

    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"end")
    state = tmp_path / "state"
    result = run(server.url("/"), "--state", str(state), *FAST, *CHECKPOINTED)
    assert result.returncode == 0, result.stderr
    return server, state


def test_a_different_configuration_is_refused(crawled):
    server, state = crawled
    for extra, named in ((["--exclude", "/a"], "exclude"), (["--visited", "exact"], "visited"),
                         (["--max-depth", "3"], "max_depth")):
        result = run(server.url("/"), "--state", str(state), *FAST, *extra)
        assert result.returncode == 2
        assert "another configuration" in result.stderr and named in result.stderr
    other_seed = run(server.url("/a"), "--state", str(state), *FAST)
    assert other_seed.returncode == 2 and "seeds" in other_seed.stderr


def test_an_incompatible_format_is_refused(crawled):
    server, state = crawled
    with sqlite3.connect(state / "crawl.db") as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'format'")
    result = run(server.url("/"), "--state", str(state), *FAST)
    assert result.returncode == 2 and "format '99'" in result.stderr


# A meta table's config damaged: JSON nested past the parser's depth (a RecursionError, no
# ValueError), and JSON that is no object
CONFIGS = {"too deep": "[" * 100_000, "deep and closed": "[" * 100_000 + "]" * 100_000,
           "an array": '["seeds"]', "a string": '"seeds"'}


@pytest.mark.parametrize("config", list(CONFIGS))
def test_a_corrupt_config_is_one_line_and_peek_reads_no_state(crawled, config):
    """Refused as any corrupt meta table (exit 2, one line, no traceback), its rows left as
    they were; peek, which reads a state without opening it (the demo's), finds none there."""
    server, state = crawled
    assert peek(state) is not None
    with sqlite3.connect(state / "crawl.db") as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'config'", (CONFIGS[config],))
    held = rows(state)
    result = run(server.url("/"), "--state", str(state), *FAST)
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert f"{state / 'crawl.db'}: corrupt meta table" in result.stderr
    assert peek(state) is None
    assert rows(state) == held


def rows(state: Path) -> list[tuple[object, ...]]:
    """Every row of the state's meta, pages and todo tables."""
    with sqlite3.connect(state / "crawl.db") as db:
        return [row for table in ("meta", "pages", "todo")
                for row in db.execute(f"SELECT * FROM {table} ORDER BY 1")]  # noqa: S608


@pytest.mark.parametrize("damage", ["garbage", "truncate", "middle"])
def test_a_corrupt_database_is_reported_and_left_alone(crawled, damage):
    server, state = crawled
    db = state / "crawl.db"
    # A crawl that ended closed its database: no write-ahead log is left whose pages SQLite
    # would read instead of the damaged file's
    for leftover in ("crawl.db-wal", "crawl.db-shm"):
        assert not (state / leftover).exists(), f"{leftover} left after the crawl ended"
    data = bytearray(db.read_bytes())
    if damage == "garbage":
        data[:100] = b"\xff" * 100
    elif damage == "truncate":
        data = data[: len(data) // 3]
    else:
        for i in range(4096, len(data), 97):  # scribble over every page after the first
            data[i] = (data[i] + 1) % 256
    db.write_bytes(bytes(data))
    result = run(server.url("/"), "--state", str(state), *FAST)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "crawl.db" in result.stderr and ("corrupt" in result.stderr or
                                            "not a minicrawl" in result.stderr)
    assert db.read_bytes() == bytes(data)  # never silently reset


@pytest.mark.parametrize("recrawl", [[], ["--recrawl"]], ids=["resume", "recrawl"])
@pytest.mark.parametrize("damage", ["flip", "truncate", "missing"])
def test_a_corrupt_filter_file_is_reported(crawled, damage, recrawl):
    """A damaged checkpoint is refused, never reset: by a recrawl too, which does not use it
    (it rebuilds Visited without the crawl before's hops) but would overwrite it."""
    server, state = crawled
    path = state / FILTER_NAME
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[:100]))
    else:
        path.unlink()
    result = run(server.url("/"), "--state", str(state), *FAST, *CHECKPOINTED, *recrawl)
    assert result.returncode == 2, result.stderr
    assert FILTER_NAME in result.stderr
    assert {"flip": "checksum", "truncate": "truncated", "missing": "missing"}[damage] \
        in result.stderr


def test_a_foreign_directory_and_a_busy_one_are_refused(crawled, tmp_path):
    server, state = crawled
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "cat.jpg").write_bytes(b"meow")
    result = run(server.url("/"), "--state", str(foreign), *FAST)
    assert result.returncode == 2 and "not empty" in result.stderr
    options = Options(state=str(state), visited="bloom")  # as crawled made it
    holder = CrawlState(state, options, crawl_config(options, [server.url("/")]))
    try:
        with pytest.raises(StateError, match="in use"):
            CrawlState(state, options, crawl_config(options, [server.url("/")]))
    finally:
        holder.close()


def test_recrawl_needs_a_state_dir_and_state_excludes_redis(server, tmp_path):
    result = run(server.url("/"), "--recrawl", *FAST)
    assert result.returncode == 2 and "--state" in result.stderr
    with pytest.raises(StateError, match="--redis"):
        Crawler([server.url("/")], state=str(tmp_path / "s"), redis="redis://127.0.0.1:1/0")


def test_a_redirect_chain_resumes_at_its_last_hop(server, tmp_path):
    """A crash while a redirect hop waits in ToDo: the resumed run fetches the hop, not the
    chain's start again (its journal row was replaced by the hop's)."""
    from minicrawl.demo.site import Resource

    server.pages.update({"/": Resource(b'<a href="/old">old</a>'),
                         "/old": Resource(b"", 301, {"Location": "/mid"}),
                         "/mid": Resource(b"", 302, {"Location": "/new"}),
                         "/new": Resource(b"<p>here</p>")})
    options = Options(state=str(tmp_path / "s"))
    config = crawl_config(options, [server.url("/")])
    state = CrawlState(options.state, options, config)
    state.journal([Item(server.url("/old"), 1, server.url("/"))])
    state.hop(server.url("/old"), Item(server.url("/mid"), 1, server.url("/old")),
              server.url("/old"))
    state.close(checkpoint=False)  # the crash, with /mid waiting in ToDo
    again = CrawlState(options.state, options, config)
    items, _ = again.start(recrawl=False)
    assert [i.url for i in items] == [server.url("/mid")]
    assert server.url("/old") in again.visited  # the chain's start is not found "new" again
    again.close()
    # and a whole crawl through a two-hop chain leaves no journal row behind
    Crawler([server.url("/")], threads=2, delay=0, state=str(tmp_path / "t")).run()
    assert journal_rows(tmp_path / "t") == 0
    assert server.fetch_counts() == {"/": 1, "/old": 1, "/mid": 1, "/new": 1}


def test_a_failing_database_stops_the_crawl_and_keeps_the_journal(make_site, tmp_path,
                                                                  monkeypatch):
    server, site = make_site(pages=150)
    state = tmp_path / "state"
    real = CrawlState._commit_batch
    commits = {"n": 0}

    def failing(self, batch):
        commits["n"] += 1
        if commits["n"] > 10:
            raise StateError("cannot write crawl.db: disk I/O error (simulated)")
        return real(self, batch)

    monkeypatch.setattr(CrawlState, "_commit_batch", failing)
    with pytest.raises(StateError, match="simulated"):
        Crawler([server.url("/")], threads=4, delay=0, per_host=4, state=str(state)).run()
    fetched_before = sum(server.fetch_counts().values())
    assert 0 < fetched_before < len(site.reachable())  # it stopped early
    monkeypatch.undo()
    Crawler([server.url("/")], threads=4, delay=0, per_host=4, state=str(state)).run()
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable())
    assert sum(c - 1 for c in counts.values()) <= 4  # at most one page per worker repeated


def test_a_state_that_cannot_record_an_internal_error_page_stops_the_crawl(server, tmp_path,
                                                                          monkeypatch):
    """A bug on one page makes an internal-error record; if the state cannot commit that either,
    the crawl stops with the state's error (as for any page), rather than going on unjournaled."""
    from minicrawl import Crawler
    from minicrawl.demo.site import Resource
    from minicrawl.state.db import StateError
    from minicrawl.state.store import CrawlState
    from minicrawl.visit.hooks import CrawlHooks

    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a>')
    server.pages["/a"] = Resource(b"a")
    server.pages["/b"] = Resource(b"b")
    real_before, real_commit = CrawlHooks.before, CrawlState.commit

    def before(self, item):
        if item.url.endswith("/a"):
            raise RuntimeError("a bug on this page")
        return real_before(self, item)

    def commit(self, page, items):
        if page.url.endswith("/a"):
            raise StateError("the state cannot write (disk full)")
        return real_commit(self, page, items)

    monkeypatch.setattr(CrawlHooks, "before", before)
    monkeypatch.setattr(CrawlState, "commit", commit)
    crawler = Crawler([server.url("/")], threads=1, state=str(tmp_path / "s"), delay=0,
                      ignore_robots=True)
    with pytest.raises(StateError, match="disk full"):
        crawler.run()


# -- a redirect chain's hops after a kill -9: Visited holds every URL the crawl requested ----


def chain_site(server) -> None:
    """A site whose redirect chain /r1 → /r2 → /t is reached early, and whose page /d, four
    links deep, links the chain's middle hop /r2 (and its start /r1) late."""
    html = {"Content-Type": "text/html; charset=utf-8"}

    def page(*paths: str) -> Resource:
        return Resource("".join(f'<a href="{p}">{p}</a>' for p in paths).encode(), 200, html)

    server.pages.update({
        "/": page("/r1", "/a"), "/a": page("/b"), "/b": page("/c"), "/c": page("/d"),
        "/d": page("/r2", "/r1", "/t"), "/t": page("/"),
        "/r1": Resource(b"", 302, {"Location": "/r2"}),
        "/r2": Resource(b"", 302, {"Location": "/t"})})


def slowly(resource: Resource, seconds: float = 0.5) -> Callable[[object], Resource]:
    """``resource``, answered after ``seconds``: a page in flight when a run is killed."""
    def handler(request: object) -> Resource:
        time.sleep(seconds)
        return resource
    return handler


def kill_9_once(args: list[str], ready: Callable[[], bool]) -> None:
    """Run ``args`` and kill it with SIGKILL as soon as ``ready()`` says so."""
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while not ready():
        assert proc.poll() is None, f"the crawl ended before it was killed: {proc.stderr}"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)


def recorded_urls(state: Path) -> set[str]:
    """The URLs ``state`` has a record of (none while its database is being made)."""
    try:
        with sqlite3.connect(f"file:{state / 'crawl.db'}?mode=ro", uri=True) as db:
            return {row[0] for row in db.execute("SELECT url FROM pages")}
    except sqlite3.Error:
        return set()


def out_records(path: Path) -> list[tuple]:
    """The ``--out`` file's records, as an uninterrupted crawl must have them too (not when,
    how fast, in which commit)."""
    keys = ("url", "final_url", "status", "depth", "referrer", "links", "new", "redirects",
            "error", "change")
    return sorted(tuple(json.dumps(record[k]) for k in keys)
                  for record in map(json.loads, path.read_text().splitlines()))


def one_worker_crawl(server, tmp_path: Path, visited: list[str]) -> Callable[[str], list[str]]:
    """The command of a crawl of ``server`` by one worker (a known order), with the state and
    ``--out`` named ``name`` under ``tmp_path``."""
    one = ["--delay", "0", "--threads", "1", "--quiet", *visited]

    def crawl(name: str) -> list[str]:
        return [sys.executable, str(ROOT / "run.py"), server.url("/"), *one,
                "--state", str(tmp_path / name), "--out", str(tmp_path / f"{name}.jsonl")]
    return crawl


def whole_crawl(crawl: Callable[[str], list[str]], server) -> dict[str, int]:
    """What an uninterrupted crawl ("whole") requests, each path's count (the log then
    cleared)."""
    whole = run(*crawl("whole")[2:])
    assert whole.returncode == 0, whole.stderr
    expected = server.fetch_counts()
    server.requests.clear()
    return expected


@pytest.mark.parametrize("visited", [[], CHECKPOINTED], ids=["default", "bloom"])
def test_a_link_to_a_middle_hop_of_a_chain_recorded_before_a_kill_fetches_nothing(
        server, tmp_path, visited):
    """The chain /r1 → /r2 → /t is recorded by the first run (under /r1, ending at /t), which is
    then killed; a page the resumed run crawls links /r2. A crawl never stopped has /r2 in
    Visited since its hop was put in ToDo, so the link is seen and nothing is fetched. The resume
    did not: the hop's journal row had gone with the chain's record, which names only /r1 and
    /t, so the rebuilt Visited (or a Bloom filter killed before its checkpoint) lacked /r2 and
    the resumed run fetched it again and gave it a record of its own."""
    chain_site(server)
    server.pages["/c"] = slowly(server.pages["/c"])
    crawl = one_worker_crawl(server, tmp_path, visited)
    expected = whole_crawl(crawl, server)
    # an uninterrupted crawl: the link to the middle hop is seen (Visited has its hop item)
    assert expected == {p: 1 for p in ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2")}
    state = tmp_path / "state"
    kill_9_once(crawl("state"), lambda: server.url("/r1") in recorded_urls(state))
    assert "/d" not in server.fetch_counts()  # the link to the middle hop: the resume's
    if visited:  # killed before the filter's first checkpoint: rebuilt from the database
        assert not (state / FILTER_NAME).exists()
    resumed = run(*crawl("state")[2:])
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the crawl" in resumed.stderr
    counts = server.fetch_counts()
    assert counts["/r2"] == 1  # not fetched again
    # each URL as often as by the uninterrupted crawl; /c again if it was in flight at the kill
    assert counts["/c"] in (1, 2)
    assert {**counts, "/c": 1} == expected
    assert out_records(tmp_path / "state.jsonl") == out_records(tmp_path / "whole.jsonl")


@pytest.mark.parametrize("visited", [[], CHECKPOINTED], ids=["default", "bloom"])
def test_the_last_hop_of_a_chain_that_ends_at_a_page_seen_is_not_fetched_again(
        server, tmp_path, visited):
    """The chain /r1 → /r2 → /t ends at /r2's redirect, /t having been crawled before: /r2 is
    requested, yet it replaced no journal row (no hop of it was queued) and the chain's record
    names /r1 and /t. Recorded before a kill, and linked by a page of the resumed run, /r2 was
    fetched again, where a crawl never stopped has it in Visited since /r1 redirected to it."""
    chain_site(server)
    server.pages["/"] = Resource(b'<a href="/t">t</a><a href="/r1">r1</a><a href="/a">a</a>',
                                 200, {"Content-Type": "text/html; charset=utf-8"})
    server.pages["/b"] = slowly(server.pages["/b"])  # the page after /r1's record: the kill's
    crawl = one_worker_crawl(server, tmp_path, visited)
    expected = whole_crawl(crawl, server)
    assert expected == {p: 1 for p in ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2")}
    state = tmp_path / "state"
    kill_9_once(crawl("state"), lambda: server.url("/r1") in recorded_urls(state))
    assert "/d" not in server.fetch_counts()  # the link to the last hop: the resume's
    resumed = run(*crawl("state")[2:])
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming the crawl" in resumed.stderr
    counts = server.fetch_counts()
    assert counts["/r2"] == 1  # not fetched again
    assert counts["/b"] in (1, 2)  # (again if it was in flight at the kill)
    assert {**counts, "/b": 1} == expected
    assert out_records(tmp_path / "state.jsonl") == out_records(tmp_path / "whole.jsonl")


def test_the_hops_of_a_chain_in_flight_at_a_kill_are_not_fetched_again(server, tmp_path):
    """A kill while the chain /r1 → /r2 → /r3 → /t is at /r3: the resumed run carries it on at
    /r3 (recorded under /r3, as the README says), and is killed in turn; a page of the third
    run links /r1 and /r2. Neither is fetched again: /r2 had left the journal for /r3's row,
    and /r1 was named only by that row, gone with /r3's record."""
    chain_site(server)
    server.pages.update({"/r2": Resource(b"", 302, {"Location": "/r3"}),
                         "/r3": slowly(Resource(b"", 302, {"Location": "/t"})),  # in flight at
                         "/d": slowly(server.pages["/d"])})  # the first kill, at the second
    state = tmp_path / "state"
    args = [sys.executable, str(ROOT / "run.py"), server.url("/"), "--delay", "0",
            "--threads", "1", "--quiet", "--state", str(state)]
    kill_9_once(args, lambda: "/r3" in server.fetch_counts())
    assert server.url("/r1") not in recorded_urls(state)  # the chain was under way
    kill_9_once(args, lambda: server.url("/r3") in recorded_urls(state))
    assert server.url("/d") not in recorded_urls(state)  # its links: the third run's
    final = run(*args[2:])
    assert final.returncode == 0, final.stderr
    counts = server.fetch_counts()
    assert counts["/r1"] == counts["/r2"] == 1
    # the rest as a crawl never stopped, but for the pages in flight at the kills
    assert counts["/r3"] == 2 and counts["/d"] in (1, 2)
    assert {**counts, "/r3": 1, "/d": 1} == {
        p: 1 for p in ("/", "/a", "/b", "/c", "/d", "/t", "/r1", "/r2", "/r3")}
