"""The crawl model end to end, against real servers on 127.0.0.1."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from minicrawl import Crawler, ExactVisited
from minicrawl.demo.site import Resource
from minicrawl.seeds import NoValidSeeds

# Loopback servers need no politeness: no gap between requests, no per-host limit below the
# thread count (robots.txt is still asked for; LocalSite answers 404: everything allowed).
FAST = {"delay": 0, "per_host": 64}


def crawl_site(make_site, site_kwargs=None, **settings):
    settings = {**FAST, **settings}
    server, site = make_site(**(site_kwargs or {}))
    pages = []
    stats = Crawler([server.url(site.start)], on_page=pages.append, **settings).run()
    return server, site, pages, stats


@pytest.mark.parametrize("threads", [1, 8, 32])
@pytest.mark.parametrize("visited", ["bloom", "exact"])
def test_every_reachable_page_fetched_exactly_once(make_site, threads, visited):
    server, site, pages, stats = crawl_site(make_site, threads=threads, visited=visited)
    expected = site.reachable()
    counts = server.fetch_counts()
    assert set(counts) == set(expected), "fetched set differs from the BFS of the site graph"
    assert all(c == 1 for c in counts.values()), {p: c for p, c in counts.items() if c > 1}
    # Redirect hops are part of the page that led to them, so pages == records, not requests.
    assert stats["pages"] == len(pages)
    assert "/secret.html" not in counts  # linked only from a text/plain file
    assert stats["links_out_of_scope"] > 0 and stats["links_not_http"] > 0
    assert stats["links_filtered"] > 0  # Visited dropped the repeated links
    assert stats["status_4xx"] == sum(1 for p in expected if p.startswith("/missing/"))
    assert stats["todo_left"] == 0


def test_repeated_crawls_with_32_threads_never_fetch_twice(make_site):
    """Shake out races between the Visited check and ToDo: same site, many runs."""
    for run in range(12):
        server, site = make_site(pages=120, seed=run)
        Crawler([server.url("/")], threads=32, **FAST).run()
        counts = server.fetch_counts()
        assert set(counts) == set(site.reachable()), f"run {run}"
        assert max(counts.values()) == 1, f"run {run}: {counts.most_common(3)}"


def test_bloom_and_exact_visited_fetch_the_same_pages(make_site):
    fetched = {}
    for kind in ("bloom", "exact"):
        server, site, pages, _ = crawl_site(make_site, threads=8, visited=kind)
        fetched[kind] = {urlsplit(p.url).path for p in pages}
    assert fetched["bloom"] == fetched["exact"]


def test_nothing_out_of_scope_is_fetched(make_site):
    server, site, pages, stats = crawl_site(make_site, threads=8)
    origin = server.origin
    assert all(p.url.startswith(origin + "/") for p in pages)
    assert stats["links_out_of_scope"] >= len(pages) - stats["status_4xx"] - 2
    # and allow_domain/include/exclude narrow or widen it
    server2, site2 = make_site(pages=60)
    pages2: list = []
    Crawler([server2.url("/")], exclude=[r"/section3/"], on_page=pages2.append, **FAST).run()
    assert pages2 and not any("/section3/" in p.url for p in pages2)


@pytest.mark.parametrize("max_depth", [0, 1, 2, 3])
def test_max_depth_is_exact_with_one_thread(make_site, max_depth):
    server, site, pages, _ = crawl_site(make_site, {"redirects": False}, threads=1,
                                        max_depth=max_depth)
    expected = site.reachable(max_depth=max_depth)
    assert set(server.fetch_counts()) == set(expected)
    assert {urlsplit(p.url).path: p.depth for p in pages} == expected


def test_max_depth_never_exceeded_with_many_threads(make_site):
    server, site, pages, _ = crawl_site(make_site, {"redirects": False}, threads=16,
                                        max_depth=2)
    assert pages and max(p.depth for p in pages) <= 2
    assert set(server.fetch_counts()) <= set(site.reachable())


@pytest.mark.parametrize("cap", [1, 37])
def test_max_pages_is_a_hard_cap_even_with_32_threads(make_site, cap):
    server, site, pages, stats = crawl_site(make_site, threads=32, max_pages=cap)
    assert sum(server.fetch_counts().values()) == cap
    assert stats["pages"] == len(pages) <= cap


def test_output_records_and_stats_file(make_site, tmp_path):
    out, stats_file = tmp_path / "out.jsonl", tmp_path / "stats.json"
    server, site, pages, stats = crawl_site(make_site, {"pages": 80}, threads=4, out=str(out),
                                            stats=str(stats_file))
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == stats["pages"] == len(pages)
    fields = {"url", "final_url", "status", "depth", "referrer", "content_type", "bytes",
              "links", "new", "elapsed_ms", "fetched_at", "error", "change", "saved", "seq",
              "duplicate_of", "title", "description", "canonical", "lang", "words", "links_in",
              "redirects"}
    assert all(set(r) == fields for r in records)
    assert all(r["change"] is None and r["saved"] is None and r["seq"] is None
               for r in records)  # no --state here
    by_url = {r["url"]: r for r in records}
    root = by_url[server.url("/")]
    assert root["depth"] == 0 and root["referrer"] is None and root["links"] > 5
    assert sum(r["new"] for r in records) == len(records) - 1  # every page but the seed was new
    redirect = next(r for r in records if "/old/" in r["url"])
    assert redirect["final_url"] != redirect["url"]
    missing = next(r for r in records if "/missing/" in r["url"])
    assert missing["status"] == 404 and missing["links"] == 0
    saved = json.loads(stats_file.read_text())
    assert saved["pages"] == stats["pages"]
    for key in ("links_extracted", "links_filtered", "links_out_of_scope", "bytes",
                "pages_per_s", "visited_fill_ratio", "visited_current_fp_rate"):
        assert key in saved


def test_redirect_to_an_already_visited_page_is_not_fetched_again(server):
    server.pages.update({
        "/": Resource(b'<a href="/a">a</a> <a href="/b">b</a> <a href="/go">go</a>'),
        "/a": Resource(b"a"), "/b": Resource(b"b"),
        "/go": Resource(b"", 302, {"Location": "/a"}),
        "/loop1": Resource(b"", 301, {"Location": "/loop2"}),
        "/loop2": Resource(b"", 301, {"Location": "/loop1"}),
    })
    server.pages["/b"] = Resource(b'<a href="/loop1">l</a>')
    pages: list = []
    Crawler([server.url("/")], threads=1, on_page=pages.append, **FAST).run()
    counts = server.fetch_counts()
    assert counts["/a"] == 1 and counts["/go"] == 1
    go = next(p for p in pages if p.url.endswith("/go"))
    assert go.final_url == server.url("/a") and go.error is None
    loop = next(p for p in pages if p.url.endswith("/loop1"))
    assert loop.error == "redirect loop" and counts["/loop1"] == counts["/loop2"] == 1


def test_charset_and_base_href_are_honoured(server):
    server.pages.update({
        "/": Resource('<html><head><meta charset="windows-1251"><base href="/deep/">'
                      '</head><a href="страница">x</a><area href="../area"><iframe src="fr">'
                      .encode("windows-1251"), 200, {"Content-Type": "text/html"}),
    })
    pages: list = []
    Crawler([server.url("/")], threads=2, on_page=pages.append, **FAST).run()
    fetched = set(server.fetch_counts())
    assert "/deep/%D1%81%D1%82%D1%80%D0%B0%D0%BD%D0%B8%D1%86%D0%B0" in fetched
    assert {"/area", "/deep/fr"} <= fetched


class ExplodingVisited(ExactVisited):
    """A real Visited that fails on one page's links, to prove a worker survives it."""

    def add_many(self, urls):
        urls = list(urls)
        if any(u.endswith("/boom") for u in urls):
            raise RuntimeError("boom")
        return super().add_many(urls)


def test_a_worker_exception_is_recorded_and_the_crawl_goes_on(server):
    server.pages.update({
        "/": Resource(b'<a href="/ok">ok</a> <a href="/bad">bad</a>'),
        "/bad": Resource(b'<a href="/boom">boom</a>'),
        "/ok": Resource(b'<a href="/ok2">ok2</a>'), "/ok2": Resource(b"fine"),
    })
    pages: list = []
    crawler = Crawler([server.url("/")], threads=1, **FAST,
                      visited_filter=ExplodingVisited(),
                      on_page=pages.append)
    stats = crawler.run()
    bad = [p for p in pages if p.url.endswith("/bad")]
    assert bad and bad[-1].error.startswith("internal error: RuntimeError: boom")
    assert stats["error_internal"] == 1
    assert server.fetch_counts()["/ok2"] == 1  # the single worker carried on
    assert crawler.worker_failures == []


def test_a_failing_on_page_callback_does_not_stop_the_crawl(make_site):
    server, site = make_site(pages=40)

    def explode(page):
        raise ValueError("caller bug")

    stats = Crawler([server.url("/")], threads=4, on_page=explode, **FAST).run()
    assert stats["pages"] == len(site.reachable()) == stats["callback_errors"]


def test_dead_server_is_recorded_not_fatal():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pages: list = []
    # The page's own failure, not robots.txt's (tests/test_politeness.py has that), not retried.
    stats = Crawler([f"http://127.0.0.1:{port}/"], on_page=pages.append, timeout=2,
                    ignore_robots=True, retries=0).run()
    assert stats["pages"] == 1 and stats["errors"] == 1
    assert pages[0].error.startswith("ConnectionError")


def test_pages_iterator_yields_typed_pages(make_site):
    server, site = make_site(pages=50)
    seen = []
    for page in Crawler([server.url("/")], threads=4, **FAST).pages():
        seen.append(page)
    assert {urlsplit(p.url).path for p in seen} == set(site.reachable())
    html = next(p for p in seen if p.url == server.url("/"))
    assert html.status == 200 and html.body.startswith(b"<!DOCTYPE html>") and html.links


def test_pages_iterator_stops_the_crawl_when_the_caller_stops(make_site):
    server, site = make_site(pages=200)
    for n, _ in enumerate(Crawler([server.url("/")], threads=4, **FAST).pages(), 1):
        if n == 5:
            break
    fetched = sum(server.fetch_counts().values())
    assert fetched < len(site.reachable())


@pytest.mark.timeout(60)
def test_pages_iterator_raises_the_crawls_error_instead_of_hanging(server):
    """If the crawl itself fails (here: a step before the workers), the caller of pages() gets
    that error; before, the iterator waited forever for an end mark that never came."""
    server.pages["/"] = Resource(b"<p>x</p>")

    class Failing(Crawler):
        def _put_seeds(self) -> None:
            raise RuntimeError("the crawl broke")

    with pytest.raises(RuntimeError, match="the crawl broke"):
        list(Failing([server.url("/")], threads=2, **FAST).pages())


@pytest.mark.timeout(60)
def test_pages_iterator_raises_a_failure_that_stopped_the_crawl(server, tmp_path, monkeypatch):
    """A failure in the middle of the crawl stops it (here the state refusing to record, as a
    full disk would): pages() raises it once the pages in flight are yielded, and ends."""
    from minicrawl.state.store import CrawlState, StateError

    commit = CrawlState._commit_batch

    def refusing(self, batch):
        if any(write.page is not None for write in batch):
            raise StateError("disk full (simulated)")
        return commit(self, batch)

    monkeypatch.setattr(CrawlState, "_commit_batch", refusing)
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"<p>a</p>")
    crawler = Crawler([server.url("/")], state=str(tmp_path / "st"), threads=2, **FAST)
    with pytest.raises(StateError, match="disk full"):
        list(crawler.pages())


def test_no_valid_seed_is_an_error():
    with pytest.raises(NoValidSeeds, match="not a valid http"):
        Crawler(["ftp://example.org/", "not a url"])


def test_a_fixed_filter_past_capacity_warns_once_and_scalable_does_not(make_site, caplog):
    server, site = make_site(pages=120)
    reachable = site.reachable()
    stats = Crawler([server.url("/")], threads=4, delay=0, per_host=64, expected_urls=50,
                    visited="bloom").run()
    warnings = [r for r in caplog.records if "sized for" in r.getMessage()]
    assert len(warnings) == 1 and stats["visited_over_capacity"] is True
    assert stats["visited_expected_fp_rate"] < stats["visited_current_fp_rate"]
    caplog.clear()
    server2, site2 = make_site(pages=120)
    pages: list = []
    # p tiny, so that no page of the 133 is lost to a false positive by chance (at p = 0.001
    # that happens in about one crawl in ten: the rate is per new URL, not per crawl).
    stats = Crawler([server2.url("/")], threads=4, delay=0, per_host=64, expected_urls=50,
                    error_rate=1e-7, visited="scalable", on_page=pages.append).run()
    assert not [r for r in caplog.records if "sized for" in r.getMessage()]
    assert stats["visited_over_capacity"] is False
    assert stats["visited_kind"] == "ScalableBloomFilter"
    # Nothing lost to false hits (said first, with the errors, should a page fail on a busy box)
    assert set(server2.fetch_counts()) == set(site2.reachable()), [
        (p.url, p.error) for p in pages if p.error]
    assert stats["visited_count"] >= len(reachable) > 50


class CountingVisited(ExactVisited):
    """An exact Visited that remembers every URL it was asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def add_new(self, urls):
        self.asked += urls
        return super().add_new(urls)


def test_a_visited_of_ones_own_is_asked_about_every_link_through_add_new(make_site):
    """The crawl asks Visited through the core's SeenSet door only (``add_new``): seeds, every
    page's in-scope links, redirect targets; each reachable page is fetched once."""
    visited = CountingVisited()
    server, site = make_site()
    stats = Crawler([server.url(site.start)], visited_filter=visited, threads=1, **FAST).run()
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable()) and set(counts.values()) == {1}
    assert set(visited.asked) == set(visited._seen)
    assert len(visited.asked) == stats["links_filtered"] + stats["links_new"] + stats["seeds"] \
        + stats.get("redirects_followed", 0) + stats.get("redirects_to_visited", 0)


def test_a_links_fragment_never_makes_it_malformed(server):
    """The fragment never reaches the server and is not part of the canonical URL, so a huge or
    odd one does not make a link malformed: p.html#<3,000 characters> is p.html."""
    fragment = "x" * 3000
    server.pages["/"] = Resource(f'<a href="p.html#{fragment}">p</a><a href="#top">top</a>'
                                 f'<a href="q.html#a&#1;b">q</a><a href="http://[::1/x">bad</a>'.encode())
    server.pages["/p.html"] = Resource(b"p")
    server.pages["/q.html"] = Resource(b"q")
    stats = Crawler([server.url("/")], threads=1, **FAST).run()
    assert {"/p.html", "/q.html"} <= set(server.fetch_counts())
    assert stats["links_malformed"] == 1  # only the unbalanced IPv6 bracket


def test_ctrl_c_waits_for_every_worker_even_the_one_being_joined(make_site, tmp_path,
                                                                  monkeypatch):
    """After Ctrl-C, run() returns only once every worker has recorded its page. (CPython 3.11's
    Thread.join, interrupted by Ctrl-C, marks the thread it was joining as stopped while it still
    runs: waiting that way closed the output under worker 1's last record.)"""
    import signal
    import threading
    import time

    from minicrawl.core.door import Door

    started_late: list[str] = []  # pages worker 1 began to record after Ctrl-C
    recorded_late: list[str] = []
    enter = Door.enter

    def slow_to_finish(door, urls, depth, referrer, keep=None, checks=()):
        """A page's links through the door, where its record is kept (the ``keep`` step)."""
        late = crawler._stopping.is_set() and threading.current_thread().name == "worker-1"
        if late:
            started_late.append(referrer)
            time.sleep(1.0)  # the page worker 1 holds when Ctrl-C comes is slow to record
        entry = enter(door, urls, depth, referrer, keep, checks)
        if late:
            recorded_late.append(referrer)
        return entry

    monkeypatch.setattr(Door, "enter", slow_to_finish)
    server, site = make_site(pages=1000)
    out = tmp_path / "out.jsonl"
    crawler = Crawler([server.url(site.start)], threads=4, out=str(out), **FAST)

    def interrupt() -> None:
        while len(server.requests) < 50:
            time.sleep(0.005)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    stats = crawler.run()
    assert stats["interrupted"] == 1
    # (worker 1 is nearly always mid-page at Ctrl-C; between two pages it has nothing to record)
    assert recorded_late == started_late, "run() returned before worker 1 recorded its page"
    lines = [json.loads(line)["url"] for line in out.read_text().splitlines()]
    assert set(recorded_late) <= set(lines) and stats["pages"] == len(lines)


def test_a_seed_given_twice_is_crawled_once(server):
    """The seeds go through the same Visited step as links: a seed listed twice (or spelled two
    ways that canonicalize alike) is queued and fetched once, and neither copy is lost."""
    server.pages["/"] = Resource(b'<a href="/a">a</a>')
    server.pages["/a"] = Resource(b"end")
    seeds = [server.url("/a"), server.url("/"), server.url("/a"), server.url("/#top")]
    stats = Crawler(seeds, threads=2, **FAST).run()
    assert server.fetch_counts() == {"/": 1, "/a": 1}
    assert stats["seeds"] == 2 and stats["pages"] == 2


def test_ctrl_c_while_the_workers_start_still_finishes_the_crawl(make_site):
    """A Ctrl-C that comes while the workers are still being started (the first ones already
    fetching) stops the crawl like any other: run() returns the stats, it does not raise
    KeyboardInterrupt out of a half-done Thread.start()."""
    import signal
    import threading
    import time

    server, site = make_site(pages=600)
    crawler = Crawler([server.url(site.start)], threads=200, **FAST)

    def interrupt() -> None:  # as soon as the first worker asked for a page
        while not server.requests:
            time.sleep(0.0005)
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    stats = crawler.run()
    assert stats["interrupted"] == 1 and stats["pages"] > 0
    assert crawler.worker_failures == []
