"""Duplicate content: the same bytes under two URLs are recorded with ``duplicate_of``, their
links are not extracted again and they are not saved again — in one process, across resumes
with ``--state``, and across the processes of a shared crawl."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.demo.site import LocalSite, Resource, Slow
from minicrawl.options import Options
from minicrawl.page import Page
from minicrawl.records.digests import LocalDigests
from minicrawl.state.recrawl import body_md5
from minicrawl.state.store import CrawlState, crawl_config
from tests.test_spill import open_scratch_files

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")

ROOT = Path(__file__).resolve().parent.parent
FAST = {"delay": 0, "per_host": 8, "threads": 4}
HTML = {"Content-Type": "text/html"}
ARTICLE = b'<html><body><h1>Article</h1><a href="/next.html">next</a><a href="more.html">m</a>'


def map_files() -> list[str]:
    """The duplicate-content map's scratch files this process holds open under TMPDIR: each
    ``minicrawl-digests-….db (deleted)`` (it has no name from the moment it is open)."""
    return [f for f in open_scratch_files(tempfile.gettempdir()) if "/minicrawl-digests-" in f
            and f.endswith(".db (deleted)")]


def duplicate_site(server: LocalSite) -> dict[str, list[str]]:
    """Pages whose bodies repeat; returns body group name → the paths serving it."""
    article = Resource(ARTICLE + b"</body></html>")
    home = b"<html><body><a href='/index.html'>home</a>" + b"".join(
        f'<a href="{p}">x</a>'.encode() for p in (
            "/article.html", "/article.html?ref=nav", "/print/article.html",
            "/mirror/article.html", "/logo1.png", "/logo2.png", "/gone1", "/gone2",
            "/cut.html", "/cut2.html")) + b"</body></html>"
    server.pages.update({
        "/": Resource(home), "/index.html": Resource(home),
        "/article.html": article, "/article.html?ref=nav": article,
        "/print/article.html": article, "/mirror/article.html": article,
        "/next.html": Resource(b"<p>next</p>"), "/more.html": Resource(b"<p>more</p>"),
        "/print/more.html": Resource(b"<p>print more</p>"),
        "/mirror/more.html": Resource(b"<p>mirror more</p>"),
        # identical non-HTML files and identical error pages are not "duplicate content"
        "/logo1.png": Resource(b"\x89PNG same", headers={"Content-Type": "image/png"}),
        "/logo2.png": Resource(b"\x89PNG same", headers={"Content-Type": "image/png"}),
        "/gone1": Resource(b"<p>gone</p>", 404), "/gone2": Resource(b"<p>gone</p>", 404),
        # bodies cut at max_bytes are incomplete: never a duplicate, never a holder
        "/cut.html": Resource(b"<p>" + b"x" * 5000), "/cut2.html": Resource(b"<p>" + b"x" * 5000),
    })
    return {"home": ["/", "/index.html"],
            "article": ["/article.html", "/article.html?ref=nav", "/print/article.html",
                        "/mirror/article.html"]}


def check_groups(records: list[dict], groups: dict[str, list[str]], origin: str) -> None:
    """In each group exactly one URL holds the content; every other names it."""
    by_url = {r["url"].removeprefix(origin): r for r in records}
    for name, paths in groups.items():
        holders = [p for p in paths if by_url[p]["duplicate_of"] is None]
        assert len(holders) == 1, (name, [(p, by_url[p]["duplicate_of"]) for p in paths])
        for p in paths:
            if p != holders[0]:
                assert by_url[p]["duplicate_of"] == origin + holders[0], (p, by_url[p])
                assert by_url[p]["links"] == 0 and by_url[p]["new"] == 0  # not extracted


def test_duplicates_are_recorded_not_followed_not_saved_and_fetched_once(server, tmp_path):
    groups = duplicate_site(server)
    out, pages_dir, trace = tmp_path / "out.jsonl", tmp_path / "pages", tmp_path / "trace.txt"
    held: list[list[str]] = []  # the map's scratch file, open in this process, at each page
    crawler = Crawler([server.url("/")], out=str(out), save_pages=str(pages_dir),
                      trace=str(trace), max_bytes=4000, **FAST,
                      on_page=lambda page: held.append(map_files()))
    digests = crawler.duplicates.digests
    stats = crawler.run()
    made = {tuple(files) for files in held if files}
    assert len(made) == 1 and len(made.pop()) == 2  # one file (two descriptors), no name
    assert map_files() == [] and digests.directory is None  # closed at the end
    records = [json.loads(line) for line in out.read_text().splitlines()]
    check_groups(records, groups, server.origin)
    counts = server.fetch_counts()
    assert max(counts.values()) == 1  # each URL fetched exactly once
    # The duplicates' own relative links (more.html in /print/ and /mirror/) resolve to pages
    # of their own; they are not extracted, so at most one of those pages is fetched.
    assert sum(counts[p] for p in ("/more.html", "/print/more.html", "/mirror/more.html")) == 1
    assert stats["content_duplicates"] == 1 + 3
    by_path = {r["url"].removeprefix(server.origin): r for r in records}
    for same in (("/logo1.png", "/logo2.png"), ("/gone1", "/gone2"), ("/cut.html", "/cut2.html")):
        assert all(by_path[p]["duplicate_of"] is None for p in same), same
    # --save-pages wrote each body once: the holders, never a duplicate
    saved = sorted(p for p in pages_dir.rglob("*") if p.is_file())
    assert all(r["saved"] is None for r in records if r["duplicate_of"])
    assert len([p for p in saved if p.read_bytes().startswith(ARTICLE)]) == 1
    assert len([p for p in saved if b"home" in p.read_bytes()]) == 1
    lines = [line for line in trace.read_text().splitlines() if "DUPLICATE OF" in line]
    assert len(lines) == 4
    assert all("→ links not extracted, not saved" in line for line in lines)


def test_keep_duplicates_turns_it_off(server, tmp_path):
    groups = duplicate_site(server)
    out, pages_dir = tmp_path / "out.jsonl", tmp_path / "pages"
    stats = Crawler([server.url("/")], out=str(out), save_pages=str(pages_dir),
                    keep_duplicates=True, **FAST).run()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["duplicate_of"] is None for r in records)
    assert "content_duplicates" not in stats
    saved = [p for p in pages_dir.rglob("*") if p.is_file()]
    assert len([p for p in saved if p.read_bytes().startswith(ARTICLE)]) == len(groups["article"])
    counts = server.fetch_counts()
    assert counts["/print/more.html"] == counts["/mirror/more.html"] == 1  # links followed


def test_duplicates_are_known_across_resume_and_recrawl(server, tmp_path):
    groups = duplicate_site(server)
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    settings = {"state": str(state), "out": str(out), **FAST, "threads": 1, "max_bytes": 4000}
    # One page per run: each run must know the digests recorded by the earlier ones.
    runs = 0
    while Crawler([server.url("/")], max_pages=1, **settings).run().get("pages", 0):
        runs += 1
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert runs == len(records) and runs > 10
    check_groups(records, groups, server.origin)
    assert max(server.fetch_counts().values()) == 1
    with sqlite3.connect(state / "crawl.db") as db:
        held = dict(db.execute("SELECT digest, url FROM digests").fetchall())
    by_path = {r["url"].removeprefix(server.origin): r for r in records}
    holder = next(p for p in groups["article"] if by_path[p]["duplicate_of"] is None)
    assert held[body_md5(ARTICLE + b"</body></html>")] == server.origin + holder
    # A recrawl gets the same answers: the holder is not a duplicate of itself.
    out.unlink()
    stats = Crawler([server.url("/")], recrawl=True, **settings).run()
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["url"]: r["duplicate_of"] for r in again} == {
        r["url"]: r["duplicate_of"] for r in records}
    assert stats["content_duplicates"] == 4


def test_a_holder_fetched_again_after_a_crash_is_not_its_own_duplicate(server, tmp_path):
    """The crash the state's resume argument allows: B, recorded as a duplicate of A, was
    committed; A, in flight, was not. On resume A is fetched again and finds itself holding
    the digest (B's transaction wrote it): it must be recorded as the original, not as a
    duplicate of itself — the answer it would have had without the crash."""
    body = b"<html><body>the same</body></html>"
    server.pages.update({"/": Resource(body), "/b": Resource(body)})
    seed = server.url("/")
    options = Options(state=str(tmp_path / "state"), **FAST)
    state = CrawlState(options.state, options, crawl_config(options, [seed]))
    state.journal([Item(seed, 0)])
    page_b = Page(server.url("/b"), 1, seed, server.url("/b"), status=200, headers=HTML,
                  body=body, fetched_at="2026-01-01T00:00:00.000Z", change="new",
                  duplicate_of=seed, digest=body_md5(body))
    state.commit(page_b, [])
    state.close()
    pages: list[Page] = []
    Crawler([seed], options, on_page=pages.append).run()
    assert [(p.url, p.duplicate_of) for p in pages] == [(seed, None)]


def test_the_first_claim_wins_under_contention(tmp_path):
    import threading

    digests = LocalDigests(temp_dir=str(tmp_path))
    digest = body_md5(b"the same body")
    barrier = threading.Barrier(16)
    answers: list[str] = []

    def claim(n: int) -> None:
        barrier.wait()
        answers.append(digests.claim(digest, f"http://h/{n}"))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(answers)) == 1 and digests.holder(digest) == answers[0]
    digests.close()


def test_the_map_answers_as_a_first_wins_dict_from_a_file_gone_on_close(tmp_path):
    digests = LocalDigests(temp_dir=str(tmp_path))
    assert digests.holder(body_md5(b"0")) is None
    assert digests.directory is None and list(tmp_path.iterdir()) == []  # made at a first claim
    rng = random.Random(38)
    want: dict[str, str] = {}
    for n in range(5000):
        digest, url = body_md5(b"%d" % rng.randrange(1000)), f"http://h/{n}"
        assert digests.claim(digest, url) == want.setdefault(digest, url)
    assert all(digests.holder(d) == url for d, url in want.items())
    assert digests.holder(body_md5(b"never claimed")) is None and len(digests) == len(want)
    assert digests.directory == tmp_path and list(tmp_path.iterdir()) == []  # it has no name
    assert len(open_scratch_files(tmp_path)) == 2  # SQLite's descriptor and the one for size
    # The rows wait in SQLite's cache, in a transaction never committed: nothing is written yet.
    assert digests.size() == 0
    digests.close()
    assert open_scratch_files(tmp_path) == [] and digests.directory is None
    # A straggler after the crawl's end finds no holder and makes no new file.
    assert digests.claim(next(iter(want)), "http://h/late") == "http://h/late"
    assert list(tmp_path.iterdir()) == []
    # Filled from a state's rows (streamed): they hold their digests from the start.
    known = LocalDigests(((d, url) for d, url in want.items()), temp_dir=str(tmp_path))
    assert len(known) == len(want)
    assert all(known.claim(d, "http://h/new") == url for d, url in want.items())
    known.close()


def sqlite_memory_used() -> int:
    """Bytes SQLite has allocated in this process now (its own allocator: tracemalloc does not
    see it), from the library the ``sqlite3`` module is linked with."""
    import _sqlite3
    import ctypes

    used = ctypes.CDLL(_sqlite3.__file__).sqlite3_memory_used
    used.restype = ctypes.c_int64
    return int(used())


def test_the_maps_memory_does_not_grow_with_the_pages(tmp_path):
    """200,000 claims (a 100k-page crawl's worth and more) add under a few MB, Python's and
    SQLite's together; the dict it replaces added ~40 MB."""
    digests = LocalDigests(temp_dir=str(tmp_path))
    urls = [f"http://tree.test/{n}/" for n in range(200_000)]  # the pages' own, not the map's
    keys = [body_md5(b"%d" % n) for n in range(200_000)]
    digests.claim(keys[0], urls[0])  # the file opened
    sqlite_before = sqlite_memory_used()
    tracemalloc.start()
    try:
        for key, url in zip(keys[1:], urls[1:], strict=True):
            assert digests.claim(key, url) == url
        python = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    sqlite = sqlite_memory_used() - sqlite_before
    assert python < 1e6, f"{python / 1e6:.1f} MB"
    assert sqlite < 4e6, f"{sqlite / 1e6:.1f} MB"  # the page cache, CACHE_KB
    assert digests.size() > 10e6  # the rows are on disk
    digests.close()


# -- kill -9 and resume ----------------------------------------------------------------------


def test_kill_9_then_resume_keeps_one_holder_per_content(make_site, tmp_path):
    server, site = make_site(pages=600, duplicates=40)
    assert len(site.copies) == 40
    state, out = tmp_path / "state", tmp_path / "out.jsonl"
    args = [sys.executable, str(ROOT / "run.py"), server.url("/"), "--state", str(state),
            "--out", str(out), "--delay", "0", "--per-host", "16", "--threads", "16",
            "--quiet"]
    tmpdir = tmp_path / "tmp"  # the crawls' TMPDIR: nothing may be left in it
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    rng = random.Random(1616)
    kills = 0
    for _ in range(3):
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
        target = len(server.requests) + rng.randrange(40, 250)
        deadline = time.monotonic() + 60
        while len(server.requests) < target and proc.poll() is None:
            assert time.monotonic() < deadline
            time.sleep(0.002)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.communicate(timeout=30)
    final = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert final.returncode == 0 and "Traceback" not in final.stderr, final.stderr
    assert kills >= 2
    assert list(tmpdir.iterdir()) == []  # the kill -9s' scratch files went with them
    assert set(server.fetch_counts()) == set(site.reachable())
    # The state holds one holder per content, one of the group; every record the --out file
    # kept (kill -9 may lose its last buffered lines, not the state's) names that holder.
    with sqlite3.connect(state / "crawl.db") as db:
        held = dict(db.execute("SELECT digest, url FROM digests").fetchall())
    by_url = {}
    for line in out.read_text().splitlines():
        record = json.loads(line)
        assert record["url"] not in by_url  # recorded once
        by_url[record["url"]] = record
    for copy, original in site.copies.items():
        group = (server.url(original), server.url(copy))
        holder = held[body_md5(server.pages[original].body)]
        assert holder in group
        for url in group:
            if url in by_url:
                assert (by_url[url]["duplicate_of"] or url) == holder, by_url[url]
    assert sum(1 for r in by_url.values() if r["duplicate_of"]) >= 30


GIVEN_UP = """
import logging, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
logging.basicConfig(format="%(levelname)s %(message)s")
from minicrawl.records.digests import LocalDigests
from minicrawl.state.recrawl import body_md5
digests = LocalDigests(temp_dir=sys.argv[1])
for n in range(100_000):  # 50,000 bodies, each claimed twice: the cache spills to the file
    print(digests.claim(body_md5(b"%d" % (n % 50_000)), f"http://h/{n}"))
print(digests.holder(body_md5(b"0")), digests.directory)
"""


def test_a_map_whose_disk_fails_is_given_up_in_one_line_and_claims_go_on(tmp_path):
    """Its file may not grow past 64 KB (RLIMIT_FSIZE, as a full disk): when SQLite's cache
    spills, the map is given up, said once, its file closed; every later claim holds
    its own content (duplicates are crawled, no page lost), with no traceback."""
    done = subprocess.run([sys.executable, "-c", GIVEN_UP, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(
        f"WARNING cannot keep the duplicate-content map in {tmp_path}: "), \
        done.stderr
    assert "disk I/O error" in done.stderr or "disk is full" in done.stderr  # SQLite's words
    answers = done.stdout.splitlines()
    assert answers[-1] == "None None" and list(tmp_path.iterdir()) == []
    assert answers[:100_000][50_000:] == [f"http://h/{n}" for n in range(50_000, 100_000)]


def test_a_content_claimed_before_a_kill_9_is_a_duplicate_after_the_resume(server, tmp_path):
    """"/" is recorded (its digest with it), "/b" with the same body is in flight when the crawl
    is killed: the resumed crawl's map, filled from the state, finds "/b" a duplicate of "/"."""
    body = b"<html><body><a href='/b'>the same</a></body></html>"
    server.pages.update({"/": Resource(body), "/b": Slow(Resource(body), 60)})
    state, out, tmpdir = tmp_path / "state", tmp_path / "out.jsonl", tmp_path / "tmp"
    tmpdir.mkdir()
    args = [sys.executable, "run.py", server.url("/"), "--state", str(state), "--out", str(out),
            "--threads", "2", "--delay", "0", "--quiet", "--ignore-robots"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmpdir)}
    first = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while "/b" not in server.fetch_counts():
        assert time.monotonic() < deadline and first.poll() is None
        time.sleep(0.01)
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    assert list(tmpdir.iterdir()) == []  # its map's scratch file (open: "/" claimed) went too
    server.pages["/b"] = Resource(body)
    second = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert second.returncode == 0 and "Traceback" not in second.stderr, second.stderr
    records = {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records[server.url("/b")]["duplicate_of"] == server.url("/")
    assert records[server.url("/")]["duplicate_of"] is None
    assert server.fetch_counts() == {"/": 1, "/b": 2}  # "/" not fetched again: it was recorded


# -- a shared crawl ------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_a_shared_crawl_shares_the_digests_first_wins(redis_server, make_site, tmp_path,
                                                       closing):
    import uuid

    from minicrawl.redis.conn import SharedRedis

    server, site = make_site(pages=400, duplicates=30)
    name = "d" + uuid.uuid4().hex[:8]
    procs = [subprocess.Popen(
        [sys.executable, "run.py", server.url("/"), "--redis", redis_server.url, "--crawl",
         name, "--threads", "4", "--quiet", "--expected-urls", "100000", "--delay", "0",
         "--per-host", "16", "--out", str(tmp_path / f"out{n}.jsonl")],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for n in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=100)
        assert proc.returncode == 0 and "Traceback" not in err, err
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable()) and max(counts.values()) == 1
    records = [json.loads(line) for n in range(3)
               for line in (tmp_path / f"out{n}.jsonl").read_text().splitlines()]
    assert sum(1 for n in range(3) if (tmp_path / f"out{n}.jsonl").stat().st_size) >= 2
    by_path = {r["url"].removeprefix(server.origin): r for r in records}
    check_groups(records, {page: [page, copy] for copy, page in site.copies.items()},
                 server.origin)
    assert sum(1 for r in by_path.values() if r["duplicate_of"]) == 30
    shared = closing(SharedRedis(redis_server.url, name))
    stats = shared.client.hgetall(shared.key("stats"))
    assert int(stats["content_duplicates"]) == 30
    holders = [r for r in by_path.values() if r["status"] == 200 and not r["error"]
               and "html" in (r["content_type"] or "") and r["duplicate_of"] is None]
    assert shared.client.hlen(shared.key("digests")) == len(holders)


def test_a_new_digest_is_claimed_without_asking_the_file(tmp_path):
    """A claim of a digest never claimed asks SQLite nothing (each call lets go of the GIL the
    workers wait for): its Bloom filter says "new" for sure, and claims are written FLUSH at a
    time. A digest claimed before, or a false positive of the filter, is read from the file:
    with a filter far too small (every answer "maybe"), every answer is still first-wins."""
    from minicrawl.records.digests import FLUSH

    for expected in (1_000_000, 1):
        digests = LocalDigests(temp_dir=str(tmp_path), expected=expected)
        digests.claim(body_md5(b"first"), "http://h/first")  # the file made
        assert digests._db is not None
        statements: list[str] = []
        digests._db.set_trace_callback(statements.append)
        rng = random.Random(expected)
        want: dict[str, str] = {body_md5(b"first"): "http://h/first"}
        asked_when_new = 0
        for n in range(3 * FLUSH):
            digest, url = body_md5(b"%d" % rng.randrange(4 * FLUSH)), f"http://h/{n}"
            new = digest not in want
            before = len(statements)
            assert digests.claim(digest, url) == want.setdefault(digest, url)
            asked_when_new += new and any(not s.startswith("INSERT")
                                          for s in statements[before:])
        inserts = sum(s.startswith("INSERT") for s in statements)
        assert all(digests.holder(d) == url for d, url in want.items())
        assert inserts <= len(want)  # each digest written once, claims FLUSH at a time
        if expected == 1:  # the filter full at once: nearly every new digest looked up
            assert asked_when_new > 0.9 * len(want)
        else:  # only the filter's false positives (1 % at its size)
            assert asked_when_new <= 0.03 * len(want)
        digests.close()
