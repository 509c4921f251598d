"""Politeness against real servers: robots.txt, per-host pacing and concurrency, retries' rules.

What the server saw (its request log, with arrival times) is the evidence: disallowed URLs never
appear in it, and requests to one host are spaced as asked.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from urllib.parse import urlsplit

import pytest

from minicrawl import Crawler
from minicrawl.core.interfaces import Item, Response
from minicrawl.demo.site import LocalSite, Resource, Slow, hang, reset, sequence
from minicrawl.visit.retry import backoff, is_retryable, retry_after, wait_before_retry
from minicrawl.visit.robots import Verdict, robots_token

# Timeouts stay generous (a loaded machine must not turn a good page into a retry); the tests
# of failing robots.txt lower them.
QUICK = {"delay": 0, "per_host": 8, "timeout": 5, "retry_backoff": 0.05}
# One request in flight per host, and the gap runs from the end of the previous answer too:
# the server sees the previous request before the client ends it, so its gaps are exact.
TOLERANCE = 0.001


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">{h}</a>' for h in hrefs).encode())


def robots(text: str) -> Resource:
    return Resource(text.encode(), 200, {"Content-Type": "text/plain"})


def crawl(seeds, **settings):
    pages: dict[str, object] = {}
    crawler = Crawler(seeds, on_page=lambda p: pages.setdefault(urlsplit(p.url).path, p),
                      **{**QUICK, **settings})
    stats = crawler.run()
    assert crawler.worker_failures == []
    return pages, stats


def paths(server: LocalSite) -> list[str]:
    return [r.path for r in server.requests]


def gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in zip(times, times[1:], strict=False)]


# -- robots.txt --------------------------------------------------------------------------------

def test_disallowed_urls_are_recorded_and_never_requested(server):
    server.pages.update({
        # Our group (minicrawl) is the one that counts; the * group does not apply to us.
        "/robots.txt": robots("User-agent: *\nDisallow: /\n\n"
                              "User-agent: minicrawl\nDisallow: /secret\nAllow: /secret/ok\n"
                              "Disallow: /*.pdf$\n"),
        "/": html("/a", "/secret/x", "/secret/y", "/secret/ok", "/doc.pdf", "/doc.pdf?v=1",
                  "/go"),
        "/a": html(), "/secret/x": html(), "/secret/y": html(), "/secret/ok": html(),
        "/doc.pdf": html(), "/doc.pdf?v=1": html(),
        "/go": Resource(b"", 302, {"Location": "/secret/z"}),  # a redirect into it
        "/secret/z": html(),
    })
    pages, stats = crawl([server.url("/")], threads=4)
    requested = paths(server)
    assert requested.count("/robots.txt") == 1
    assert not [p for p in requested if p.startswith("/secret/") and p != "/secret/ok"]
    assert "/doc.pdf" not in requested and "/doc.pdf?v=1" in requested
    for path in ("/secret/x", "/secret/y", "/doc.pdf"):
        assert pages[path].error == "robots.txt disallows" and pages[path].status is None
    go = pages["/go"]
    assert go.final_url == server.url("/secret/z") and go.error == "robots.txt disallows"
    assert stats["robots_disallowed"] == 4 and stats.get("errors", 0) == 0
    assert server.fetch_counts()["/a"] == 1 and server.fetch_counts()["/secret/ok"] == 1


def test_a_custom_user_agent_is_matched_by_its_own_product_token(server):
    server.pages.update({"/robots.txt": robots("User-agent: OtherBot\nDisallow: /\n"),
                         "/": html("/a"), "/a": html()})
    pages, _ = crawl([server.url("/")], user_agent="OtherBot/2.0 (+https://example.org/bot)")
    assert paths(server) == ["/robots.txt"] and pages["/"].error == "robots.txt disallows"
    assert robots_token("minicrawl/0.1.0 (+https://pypi.org/project/minicrawl/)") == "minicrawl"
    assert robots_token("OtherBot/2.0") == "otherbot"


@pytest.mark.parametrize("status", [404, 403, 410])
def test_robots_4xx_means_everything_is_allowed(server, status):
    server.pages.update({"/robots.txt": Resource(b"Disallow: /", status),
                         "/": html("/a"), "/a": html()})
    pages, _ = crawl([server.url("/")])
    assert server.fetch_counts() == {"/": 1, "/a": 1}


@pytest.mark.parametrize("answer", [Resource(b"down", 500), Resource(b"slow", 429), hang(),
                                    reset()], ids=["500", "429", "timeout", "reset"])
def test_unreachable_robots_means_nothing_is_fetched_then_the_host_is_given_up(server,
                                                                                answer):
    server.pages.update({"/robots.txt": answer, "/": html("/a"), "/a": html()})
    pages, stats = crawl([server.url("/")], retries=1, threads=4, timeout=0.3)
    assert paths(server) == ["/robots.txt", "/robots.txt"]  # asked again once, then given up
    assert pages["/"].error.startswith("robots.txt unreachable: ")
    assert stats["robots_unreachable"] == 1 and stats["errors"] == 1


def test_robots_that_fail_once_are_asked_again_and_then_obeyed(server):
    server.pages.update({
        "/robots.txt": sequence(Resource(b"", 503), robots("User-agent: *\nDisallow: /b\n")),
        "/": html("/a", "/b"), "/a": html(), "/b": html(),
    })
    pages, stats = crawl([server.url("/")])
    assert paths(server)[:2] == ["/robots.txt", "/robots.txt"]
    assert server.fetch_counts() == {"/": 1, "/a": 1}
    assert pages["/b"].error == "robots.txt disallows"


@pytest.mark.parametrize(("hops", "obeyed"), [(5, True), (6, False)])
def test_robots_redirects_are_followed_up_to_five(server, hops, obeyed):
    for n in range(hops):
        server.pages["/robots.txt" if n == 0 else f"/robots{n}"] = Resource(
            b"", 301, {"Location": f"/robots{n + 1}"})
    server.pages[f"/robots{hops}"] = robots("User-agent: *\nDisallow: /b\n")
    server.pages.update({"/": html("/b"), "/b": html()})
    crawl([server.url("/")])
    assert ("/b" not in server.fetch_counts()) is obeyed  # too many hops: no robots.txt


def test_only_one_worker_fetches_robots_and_the_others_wait_without_a_lock(server):
    def slow_robots(request):
        time.sleep(0.3)
        return robots("User-agent: *\nDisallow: /x\n")

    server.pages["/robots.txt"] = slow_robots
    server.pages.update({f"/{n}": html("/x") for n in range(20)})
    pages, _ = crawl([server.url(f"/{n}") for n in range(20)], threads=8)
    assert paths(server).count("/robots.txt") == 1 and paths(server)[0] == "/robots.txt"
    assert len(server.fetch_counts()) == 20 and "/x" not in server.fetch_counts()


def test_ignore_robots_never_asks_for_it(server):
    server.pages.update({"/robots.txt": robots("User-agent: *\nDisallow: /\n"),
                         "/": html("/a"), "/a": html()})
    crawl([server.url("/")], ignore_robots=True)
    assert paths(server) == ["/", "/a"]


# -- pacing -------------------------------------------------------------------------------------

def test_the_delay_spaces_the_requests_to_a_host(server):
    server.pages.update({"/": html(*[f"/{n}" for n in range(1, 8)]),
                         **{f"/{n}": html() for n in range(1, 8)}})
    crawl([server.url("/")], threads=4, delay=0.12, per_host=1)
    times = [r.time for r in server.requests]  # robots.txt counts as a request too
    assert len(times) == 9 and min(gaps(times)) >= 0.12 - TOLERANCE, gaps(times)


@pytest.mark.parametrize(("crawl_delay", "cap", "gap"), [("0.25", 10.0, 0.25), ("30", 0.15, 0.15)],
                         ids=["honoured", "capped"])
def test_crawl_delay_is_honoured_up_to_the_cap(server, crawl_delay, cap, gap):
    server.pages.update({
        "/robots.txt": robots(f"User-agent: *\nCrawl-delay: {crawl_delay}\n"),
        "/": html(*[f"/{n}" for n in range(1, 5)]), **{f"/{n}": html() for n in range(1, 5)},
    })
    crawl([server.url("/")], threads=4, max_crawl_delay=cap, per_host=1)
    times = [r.time for r in server.requests]
    assert len(times) == 6 and min(gaps(times)) >= gap - TOLERANCE, gaps(times)


def test_per_host_caps_the_requests_in_flight(server):
    slow = Slow(html(), 0.1)
    server.pages["/"] = html(*[f"/{n}" for n in range(12)])
    server.pages.update({f"/{n}": slow for n in range(12)})
    crawl([server.url("/")], threads=8, per_host=2)
    assert len(server.fetch_counts()) == 13 and slow.peak == 2


def test_waiting_for_a_slow_host_does_not_stall_the_others(server):
    """One worker, two hosts: while the polite host's gap runs, the fast host is crawled."""
    slow_host = LocalSite(host="localhost").start()
    try:
        slow_host.pages.update({"/robots.txt": robots("User-agent: *\nCrawl-delay: 0.5\n"),
                                "/": html("/1", "/2", "/3"), "/1": html(), "/2": html(),
                                "/3": html()})
        server.pages.update({"/": html(*[f"/{n}" for n in range(20)]),
                             **{f"/{n}": html() for n in range(20)}})
        # One at a time (--per-host 1): the gap runs from the end, so the server sees it whole.
        crawl([slow_host.url("/"), server.url("/")], threads=1, per_host=1)
        slow = [r.time for r in slow_host.requests]  # robots.txt, /, /1, /2, /3
        fast = [r.time for r in server.requests]
        assert len(slow) == 5 and min(gaps(slow)) >= 0.5 - TOLERANCE
        # A worker sleeping out the gaps would fetch /1, /2, /3 before the fast host's pages
        # (they were queued first); ours crawls the fast host within the slow host's gaps.
        assert len(fast) == 22 and max(fast) < slow[3]
    finally:
        slow_host.stop()


def test_max_pages_per_host(server):
    server.pages.update({"/": html(*[f"/{n}" for n in range(20)]),
                         **{f"/{n}": html() for n in range(20)}})
    pages, stats = crawl([server.url("/")], threads=4, max_pages_per_host=5)
    assert sum(server.fetch_counts().values()) == 5
    assert stats.get("host_full", 0) + stats.get("links_host_full", 0) > 0


# -- retry rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("status", "error", "transient", "retry"), [
    (200, None, False, False), (404, None, False, False), (408, None, False, True),
    (429, None, False, True), (500, None, False, True), (503, None, False, True),
    (501, None, False, False), (None, "ReadTimeout: x", True, True),
    (None, "SSLError: bad cert", False, False), (200, "body larger than max_bytes", False, False),
])
def test_what_is_retried(status, error, transient, retry):
    assert is_retryable(Response("http://h/", status, error=error, transient=transient)) is retry


def test_retry_after_in_seconds_or_as_an_http_date():
    now = datetime(2026, 1, 1, tzinfo=UTC)
    assert retry_after({"retry-after": "120"}) == 120.0
    date = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert retry_after({"retry-after": date}, now=now) == 90.0
    assert retry_after({"retry-after": "soon"}) is None and retry_after({}) is None
    capped = Response("http://h/", 429, headers={"retry-after": "86400"})
    assert wait_before_retry(capped, 0, base=1.0, cap=60.0) == 60.0


def test_backoff_doubles_with_jitter_and_is_capped():
    import random

    rng = random.Random(1)
    for attempt in range(6):
        nominal = min(30.0, 1.0 * 2 ** attempt)
        waits = [backoff(attempt, 1.0, 30.0, rng) for _ in range(50)]
        assert all(nominal / 2 <= w <= nominal for w in waits) and len(set(waits)) > 1


def test_backoff_leaves_the_global_random_state_alone():
    """The jitter is drawn from the crawl's own generator, never the global ``random``: a worker
    thread moving it mid-draw made Hypothesis warn "Do not use the `random` module inside
    strategies" for tests that use none (tests/test_bloom.py's, in CI), and a program that
    seeds ``random`` for its own runs must not have a crawl reorder them."""
    import random

    state = random.getstate()
    waits = [backoff(attempt, 1.0, 30.0) for attempt in range(6) for _ in range(20)]
    waits.append(wait_before_retry(Response("http://h/", 503), 2, base=1.0, cap=60.0))
    assert random.getstate() == state
    assert len(set(waits)) > 6  # jittered all the same


def test_robots_and_host_records_are_bounded_and_a_forgotten_origin_is_asked_again():
    """Five hosts, room for two: the records stay within the bound, an origin forgotten and
    seen again has its robots.txt fetched again, and its rules are still obeyed."""
    sites = [LocalSite(host=f"127.0.0.{i + 2}").start() for i in range(5)]
    try:
        for i, site in enumerate(sites):
            site.pages.update({
                "/robots.txt": robots("User-agent: *\nDisallow: /secret\n"),
                # each root links to the next host's pages: hosts come back after others
                "/": html(*[s.url(p) for s in sites[i:] + sites[:i] for p in ("/a", "/secret")]),
                "/a": html(*[s.url("/b") for s in sites]), "/b": html(), "/secret": html(),
            })
        crawler = Crawler([s.url("/") for s in sites], threads=1, **QUICK)
        crawler.politeness.max_origins = 2
        crawler.pace.max_hosts = 2
        sizes: list[tuple[int, int]] = []
        crawler.on_page = lambda page: sizes.append((len(crawler.politeness._robots),
                                                     len(crawler.pace)))
        crawler.run()
        assert max(r for r, _ in sizes) <= 2
        assert len(crawler.pace) <= 2
        robots_asked = sum(paths(s).count("/robots.txt") for s in sites)
        assert robots_asked > 5  # forgotten origins were asked again
        for site in sites:
            assert site.fetch_counts() == {"/": 1, "/a": 1, "/b": 1}  # never /secret
    finally:
        for site in sites:
            site.stop()


def test_a_host_is_unreachable_after_failures_in_a_row_each_asked_after_the_last():
    """The gate's rule for a host that makes no connection: failures that happened together
    (asked before the last one was counted) count once; after ``retries`` + 1 counted, its URLs
    are denied without a request; any answer from it forgets them; a reset is no such failure."""
    crawler = Crawler(["http://127.0.0.1:1/"], **{**QUICK, "retries": 1, "retry_backoff": 0.01})
    gate = crawler.politeness
    item = Item("http://dead.test/a")
    refused = "ConnectionError: [Errno 111] Connection refused"

    def admitted() -> Verdict:  # GO or DENY, once the host's quiet time is over
        while (answer := gate.admit(item, None)).verdict is Verdict.WAIT:  # type: ignore[arg-type]
            time.sleep(max(0.0, answer.not_before - time.monotonic()))
        return answer.verdict

    def failed(elapsed: float) -> None:
        assert admitted() is Verdict.GO
        gate.done(item, 0.0, Response(item.url, None, error=refused, transient=True,
                                      elapsed=elapsed))

    def denied() -> bool:
        verdict = admitted()
        if verdict is Verdict.GO:
            gate.done(item)
        return verdict is Verdict.DENY

    crawler.politeness.obey_robots = False
    failed(0.0)
    failed(10.0)  # asked 10 s ago: before the first was counted — the same failure
    assert not denied()
    gate.done(item, 0.0, Response(item.url, None, error="ConnectionError: [Errno 104] "
                                  "Connection reset by peer", transient=True))
    assert not denied()  # a reset neither counts nor forgives
    failed(0.0)
    assert denied()
    assert gate.admit(item, None).reason == (  # type: ignore[arg-type]
        f"host unreachable: {refused} (2 tries in a row)")
    gate._unreachable.clear()  # as if forgotten; then one failure, then an answer
    failed(0.0)
    gate.done(item, 0.0, Response(item.url, 404))
    failed(0.0)
    assert not denied()
