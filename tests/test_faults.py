"""A crawl against a server that misbehaves on purpose, and the fetch limits one by one.

Every fault is a real socket-level misbehaviour of a LocalSite on 127.0.0.1 (resets, silence,
slow drips, lies in Content-Length, bombs). Whatever the server does, the crawl must end, fetch
each good page exactly once, record every failure with a reason and lose no worker.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
import zlib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl import Crawler
from minicrawl.core.links import base_url, extract_links
from minicrawl.core.urls import canonicalize, resolve
from minicrawl.demo.site import (
    LocalSite,
    Resource,
    drip,
    endless,
    hang,
    reset,
    sequence,
    truncated,
)
from minicrawl.http.fetch import Fetcher
from minicrawl.options import Options

ROOT = Path(__file__).resolve().parent.parent
MiB = 1 << 20
# Small timeouts and backoffs keep the whole file a few seconds long (a timeout of 1 s, not
# less: on a loaded machine a good page must not time out and be fetched twice).
QUICK = {"delay": 0, "per_host": 8, "timeout": 1.0, "retries": 2, "retry_backoff": 0.05,
         "max_bytes": MiB}


def html(*hrefs: str, extra: str = "") -> Resource:
    return Resource(("<html><body>" + "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
                     + extra + "</body></html>").encode())


def bomb(mebibytes: int, wbits: int = 31) -> bytes:
    """``mebibytes`` MiB of zeros, gzip (wbits 31) or zlib/deflate (15) compressed ~1000:1."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = bytes(MiB)
    return b"".join([c.compress(block) for _ in range(mebibytes)] + [c.flush()])


# Every shape of broken link we could think of; each must be skipped and counted, never fatal.
MALFORMED = [
    "http://example.com:99999/", "http://example.com:-1/", "http://example.com:8o/",
    "http://example.com: 80/", "http://[::1/", "http://::1]/", "http://[zz::1]/",
    "http://[::1]x/", "http://exa mple.com/", "http://exa\x01mple.com/",
    "/" + "a" * 3000, "http://xn--a.com\u00e9/",
    "http://%00ab/", "http://:80/",  # (%41%42 is the host "ab": valid)
    "http://user@/", "http://[::1]:99999/", "http://h\u0000st/", "http://\u2603:80:80/",
    "http://example.com:\u00b2/", "http://example.com:\u0661\u0662/x",
]
# Malformed to run.py's old canonicalizer, URLs to the URL Standard (and so to browsers): /a%7Fb
# (on this site), a 64-character label and an empty one (on no host of the crawl's).
STANDARD = ["/a\x7fb", "http://" + "\u00e9" * 64 + ".com/", "http://a..b/"]
NOT_HTTP = ["javascript:alert(1)", "mailto:a@b.c", "ftp://example.com/", "data:text/html,x",
            "tel:+1", "file:///etc/passwd", "ws://example.com/"]


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    return bomb(64)  # 64 MiB of zeros in ~65 KB


def faulty_site(server: LocalSite, gzip_bomb: bytes) -> tuple[set[str], dict[str, str]]:
    """Serve the faults; return the good paths and, per failing path, its expected error."""
    good = {f"/good/{i}" for i in range(8)} | {"/", "/good/drip", "/good/charset",
                                               "/good/th", "/good/m", "/trap/a/a/a/"}
    pages = {p: html() for p in good}
    fails = {
        "/reset": "ConnectionError", "/hang": "ReadTimeout", "/always-503": "HTTP 503",
        "/drip": "body too slow", "/bomb": "body larger than max_bytes",
        "/huge": "body larger than max_bytes", "/huge-cl": "Content-Length 1000000000000",
        "/truncated": "IncompleteRead", "/r/0": "more than 10 redirects",
        "/loop/a": "redirect loop", "/bad-location": "bad redirect location",
    }
    pages.update({
        "/": html(*sorted(good - {"/"}), *fails, "/flaky-reset", "/flaky-500", "/binary",
                  "/bad-charset", "/utf16", "/empty", "/truncated-html", "/image.png",
                  "/malformed", "/trap/"),
        "/reset": reset(), "/hang": hang(), "/always-503": Resource(b"busy", 503),
        "/flaky-reset": sequence(reset(), html()), "/flaky-500": sequence(
            Resource(b"oops", 500), Resource(b"oops", 502), html()),
        "/drip": drip(b'<a href="/good/drip">first</a>' + b" " * 1000, every=0.01, size=1),
        "/bomb": Resource(gzip_bomb, 200, {"Content-Type": "text/html",
                                           "Content-Encoding": "gzip"}),
        "/huge": endless(),
        "/huge-cl": drip(b"x" * 10, every=0.5, content_length=10 ** 12),
        "/truncated": truncated(b'<a href="/before-the-cut">', 10_000),
        "/binary": Resource(bytes(range(256)) * 64 + b"\x00<a href=\xff\xfe>", 200,
                            {"Content-Type": "text/html"}),
        "/bad-charset": Resource(b'<a href="/good/charset">\xff\xfe\xfd</a>', 200,
                                 {"Content-Type": "text/html; charset=no-such-charset"}),
        "/utf16": Resource('<a href="/good/0">x</a>'.encode("utf-16-le"), 200,
                           {"Content-Type": "text/html; charset=utf-8"}),
        "/empty": Resource(b"", 200, {"Content-Type": "text/html"}),
        "/truncated-html": Resource(b'<html><body><a href="/good/th">x</a><a href="/good/', 200,
                                    {"Content-Type": "text/html"}),
        "/image.png": Resource(b'\x89PNG\r\n<a href="/never-parsed">', 200,
                               {"Content-Type": "image/png"}),
        "/malformed": html(*MALFORMED, *STANDARD, *NOT_HTTP, "/good/m"),
        "/loop/a": Resource(b"", 302, {"Location": "/loop/b"}),
        "/loop/b": Resource(b"", 302, {"Location": "/loop/a"}),
        "/bad-location": Resource(b"", 301, {"Location": "http://[::1/"}),
        # a relative link that keeps adding a segment: /trap/a/, /trap/a/a/, ...
        **{"/trap/" + "a/" * n: html("a/") for n in range(8)},
    })
    for n in range(12):  # a chain of 12 redirects: followed for 10 hops, then given up
        pages[f"/r/{n}"] = Resource(b"", 301, {"Location": f"/r/{n + 1}"})
    server.pages.update(pages)
    return good, fails


def test_a_crawl_of_every_fault_ends_with_each_good_page_once_and_each_failure_recorded(
        server, gzip_bomb):
    good, fails = faulty_site(server, gzip_bomb)
    records = {}
    crawler = Crawler([server.url("/")], threads=4, on_page=lambda p: records.setdefault(
        urlsplit(p.url).path, p), **QUICK)
    stats = crawler.run()
    assert crawler.worker_failures == []
    assert stats["todo_left"] == 0
    counts = server.fetch_counts()
    # Good pages, including those behind a flaky first answer: fetched, exactly once each.
    for path in good | {"/flaky-reset", "/flaky-500", "/binary", "/bad-charset", "/utf16",
                        "/empty", "/truncated-html"}:
        assert records[path].error is None and records[path].status == 200, path
    assert all(counts[p] == 1 for p in good), {p: counts[p] for p in good if counts[p] != 1}
    assert counts["/flaky-reset"] == 2 and counts["/flaky-500"] == 3
    # Failures: one record each, with the reason; retried only when retrying can help.
    for path, reason in fails.items():
        assert records[path].error and reason in records[path].error, (path, records[path].error)
    for path in ("/reset", "/hang", "/always-503", "/truncated"):
        assert counts[path] == 3 and "gave up after 3 attempts" in records[path].error
    for path in ("/drip", "/bomb", "/huge", "/huge-cl"):
        assert counts[path] == 1, path  # a size cap or a deadline is not worth another try
    assert records["/bomb"].body == records["/huge"].body[:0] + bytes(MiB)
    assert len(records["/huge"].body) == MiB and records["/huge-cl"].body == b""
    # Links before the cut of a cut body are still followed; non-HTML is never parsed.
    # (also a body cut by a lost connection: its last attempt's bytes are kept, with the error)
    assert counts["/good/drip"] == 1 and counts["/good/th"] == 1 and counts["/before-the-cut"] == 1
    assert records["/truncated"].body == b'<a href="/before-the-cut">'
    assert "/never-parsed" not in counts
    # Redirects: 10 hops followed, then given up; loops end; each chain is one record.
    assert [counts[f"/r/{n}"] for n in range(12)] == [1] * 11 + [0]
    assert records["/r/0"].final_url.endswith("/r/11")
    assert counts["/loop/a"] == counts["/loop/b"] == 1
    # Traps and malformed links: skipped and counted.
    assert counts["/trap/a/a/a/"] == 1 and "/trap/a/a/a/a/" not in counts
    assert stats["links_trap"] == 1
    assert stats["links_malformed"] == len(MALFORMED)
    assert counts["/a%7Fb"] == 1  # STANDARD's link on this site: a 404, as in a browser
    assert stats["links_not_http"] >= len(NOT_HTTP)
    assert stats["retries"] == 2 * 4 + 1 + 2  # four hopeless URLs, flaky-reset, flaky-500
    assert stats["errors"] == len(fails)
    assert stats["pages"] == len(records)


@pytest.mark.parametrize("wbits", [31, 15], ids=["gzip", "deflate"])
def test_a_compression_bomb_is_cut_without_inflating_it(server, wbits):
    import tracemalloc

    server.pages["/bomb"] = Resource(bomb(64, wbits), 200, {
        "Content-Type": "text/html", "Content-Encoding": "gzip" if wbits == 31 else "deflate"})
    fetcher = Fetcher(Options(max_bytes=MiB))
    tracemalloc.start()
    try:
        response = fetcher.fetch(server.url("/bomb"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        fetcher.close()
    assert len(response.body) == MiB and "max_bytes" in response.error
    assert peak < 8 * MiB, f"peak {peak / MiB:.1f} MiB while reading a 64 MiB bomb"


def test_a_slow_drip_ends_at_the_deadline_not_after_the_whole_body(server):
    # 1 byte per 0.02 s: each read is quick (no read timeout), the whole body would take 40 s;
    # the deadline is 3 timeouts (1.5 s).
    server.pages["/drip"] = drip(b"x" * 2000, every=0.02)
    fetcher = Fetcher(Options(timeout=0.5))
    response = fetcher.fetch(server.url("/drip"))
    fetcher.close()
    assert response.error == "body too slow (over the 1.5 s deadline)"
    assert 0 < len(response.body) < 2000


def test_a_retry_does_not_hold_the_worker(server):
    """One worker: while /busy waits out its Retry-After, the other pages are fetched."""
    server.pages.update({
        "/": html("/busy", *[f"/p{i}" for i in range(5)]),
        "/busy": sequence(Resource(b"", 503, {"Retry-After": "1"}), html()),
        **{f"/p{i}": html() for i in range(5)},
    })
    other = LocalSite(host="localhost").start()  # another host: not paused by the 503
    try:
        other.pages.update({f"/q{i}": html() for i in range(5)})
        server.pages["/"] = html("/busy", *[f"/p{i}" for i in range(5)],
                                 *[other.url(f"/q{i}") for i in range(5)])
        pages: list = []
        Crawler([server.url("/")], threads=1, on_page=pages.append,
                allow_domain=["localhost"], **{**QUICK, "retries": 1}).run()
        busy = [r.time for r in server.requests if r.path == "/busy"]
        others = [r.time for r in other.requests if r.path.startswith("/q")]
        assert len(busy) == 2 and busy[1] - busy[0] >= 0.95  # Retry-After honoured
        assert len(others) == 5 and max(others) < busy[1]  # meanwhile the worker went on
        # The 503 asked the host to wait: nothing else on it was requested in that second.
        assert not [r for r in server.requests if busy[0] < r.time < busy[0] + 0.95]
        assert next(p for p in pages if p.url.endswith("/busy")).status == 200
    finally:
        other.stop()


@pytest.mark.parametrize("todo", ["memory", "spilling", "redis"])
def test_run_py_fetches_a_retried_page_after_its_backoff(server, request, tmp_path, todo):
    """From outside: ``python run.py`` against a page that answers 503 twice, then 200. No
    Retry-After, so the host is not paused: the wait is the retry's own (--retry-backoff 0.4:
    0.2-0.4 s before the second request, 0.4-0.8 s before the third), held by ToDo — in memory,
    spilling to disk, or in Redis — while the worker goes on. The server sees the gaps."""
    server.pages.update({
        "/": html("/flaky", *[f"/p{i}" for i in range(3)]),
        "/flaky": sequence(Resource(b"", 503), Resource(b"", 503), html()),
        **{f"/p{i}": html() for i in range(3)},
    })
    where = ["--redis", request.getfixturevalue("redis_server").url, "--crawl",
             "t" + uuid.uuid4().hex[:8]] if todo == "redis" else \
        ["--frontier-memory", "0"] if todo == "spilling" else []
    out = tmp_path / "out.jsonl"
    done = subprocess.run(
        [sys.executable, "run.py", server.url("/"), "--retries", "2", "--retry-backoff", "0.4",
         "--delay", "0", "--threads", "2", "--quiet", "--out", str(out), *where],
        cwd=ROOT, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    flaky = [r.time for r in server.requests if r.path == "/flaky"]
    assert len(flaky) == 3, server.fetch_counts()
    # (the server's arrival times: the first answer left after it, the wait began later still)
    assert flaky[1] - flaky[0] >= 0.2 and flaky[2] - flaky[1] >= 0.4, flaky
    assert all(server.fetch_counts()[f"/p{i}"] == 1 for i in range(3))
    records = {r["url"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert records[server.url("/flaky")]["status"] == 200


def test_a_redirect_chain_is_one_record_and_each_hop_is_paced(server):
    server.pages.update({
        "/": html("/r1"), "/r1": Resource(b"", 301, {"Location": "/r2"}),
        "/r2": Resource(b"", 302, {"Location": "/end"}), "/end": html(),
    })
    pages: list = []
    Crawler([server.url("/")], threads=2, on_page=pages.append, delay=0.15, per_host=1,
            timeout=1).run()
    times = [r.time for r in server.requests]  # robots.txt, /, /r1, /r2, /end
    assert len(times) == 5
    assert all(b - a >= 0.15 for a, b in zip(times, times[1:], strict=False)), times
    r1 = next(p for p in pages if p.url.endswith("/r1"))
    assert r1.final_url == server.url("/end") and r1.status == 200 and r1.error is None
    assert len(pages) == 2  # "/" and the chain


def test_a_redirect_to_a_page_already_seen_is_not_fetched_again(server):
    server.pages.update({
        "/": html("/a", "/go"), "/a": html(), "/go": Resource(b"", 302, {"Location": "/a"}),
    })
    pages: list = []
    Crawler([server.url("/")], threads=1, on_page=pages.append, **QUICK).run()
    assert server.fetch_counts()["/a"] == 1
    go = next(p for p in pages if p.url.endswith("/go"))
    assert go.final_url == server.url("/a") and go.error is None and go.status == 302


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(
    st.text(max_size=40),
    st.builds(lambda s, h, p, r: f"{s}://{h}{p}{r}",
              st.sampled_from(["http", "https", "HTTP", "ftp", "javascript", ""]),
              st.text(alphabet="ab.-[]:1@%\u00e9 \x00", max_size=12),
              st.sampled_from(["", ":80", ":0", ":65536", ":x", ":"]),
              st.text(alphabet="/.a%2e?#&= \t\n\u00e9", max_size=20))), max_size=12),
    st.sampled_from(["utf-8", "latin-1", "utf-16", "no-such-charset"]))
def test_extraction_and_canonicalization_never_raise(hrefs, charset):
    body = "".join(f"<a href='{h.replace(chr(39), '')}'>x</a>" for h in hrefs)
    try:
        data = body.encode(charset)
    except (LookupError, UnicodeEncodeError):
        data = body.encode("utf-8", "surrogatepass")
    extracted = extract_links(data, {"Content-Type": f"text/html; charset={charset}"})
    base = base_url("http://example.com/dir/page.html", extracted)
    for href in extracted.hrefs:
        if (url := resolve(base, href, extracted.encoding)) is None:
            continue
        assert url.startswith(("http://", "https://")) and url.isascii()
        assert canonicalize(url) == url
