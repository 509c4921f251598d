"""The per-host pace as the servers see it: gaps never shorter than asked, and no longer than
asked plus a little while the host has URLs waiting (no URL loses its turn, no slot is wasted).

Each host is a real server on its own loopback address (127.0.0.2, .3, …): the crawler paces
them as different hosts. The evidence is each server's log of request arrival times.
"""

from __future__ import annotations

import statistics
from urllib.parse import urlsplit

from minicrawl import Crawler
from minicrawl.demo.site import LocalSite, Resource, Slow

# Three gaps in four must be within this much of the delay: a worker's wake-up and the request's
# way to the server (on a quiet machine the mean gap is 0.21 s at --delay 0.2; on this 2-core
# machine shared at a load of 24, three in four were within 0.053 s). Not the mean: at that load
# a crawl thread starved for 1.6 s once. A crawl losing every other slot is at twice the delay.
SLACK = 0.08
# With --per-host 1 the gap runs from the previous answer's end, which the server has seen: its
# gaps are exact. With more in flight the gap runs between starts as the client books them; a
# request then reaches the server a little after its booked start (the worker's remaining steps,
# and the server thread's turn to run to stamp it): at a load of 20 on this 2-core machine, up
# to 0.2 s. Single gaps are then not exact, but a few together are, within that.
STAMP_DELAY = 0.25


def spans(times: list[float], k: int = 5) -> list[float]:
    """The time ``k`` gaps took, for each run of ``k`` consecutive gaps."""
    return [b - a for a, b in zip(times, times[k:], strict=False)]


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">{h}</a>' for h in hrefs).encode())


def gaps(site: LocalSite) -> list[float]:
    times = [r.time for r in site.requests]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def quartile3(values: list[float]) -> float:
    """The value three quarters of ``values`` are at or below."""
    return statistics.quantiles(values, n=4)[2]


def crawl(sites: list[LocalSite], **settings) -> dict:
    crawler = Crawler([s.url("/") for s in sites], timeout=5, **settings)
    stats = crawler.run()
    assert crawler.worker_failures == []
    return stats


def test_four_hosts_each_get_the_asked_rate_in_breadth_first_order(loopback_hosts):
    sites = loopback_hosts(4, 12)
    stats = crawl(sites, threads=8, delay=0.2, per_host=1)
    for site in sites:
        # robots.txt is a request to the host too: it is paced like the pages.
        assert [r.path for r in site.requests] == \
            ["/robots.txt", "/", *[f"/{k}" for k in range(1, 13)]]
        g = gaps(site)
        assert min(g) >= 0.2, (site.host, sorted(g)[:3])
        # From its first request to its last the host always had URLs waiting.
        assert quartile3(g) <= 0.2 + SLACK, (site.host, sorted(g))
    # A URL waits in its host's line; only the URL behind a robots.txt fetch is put back.
    assert stats.get("politeness_waits", 0) <= 4


def test_one_host_at_a_quarter_second_gets_four_pages_a_second(loopback_hosts):
    [site] = loopback_hosts(1, 15)
    crawl([site], threads=4, delay=0.25, per_host=2)  # the defaults, but for the delay
    g = gaps(site)
    assert len(g) == 16
    assert min(spans([r.time for r in site.requests])) >= 5 * 0.25 - STAMP_DELAY
    assert quartile3(g) <= 0.25 + SLACK, sorted(g)


def test_per_host_n_keeps_n_in_flight_at_the_gap(loopback_hosts):
    """Slow answers (0.3 s), gap 0.1 s, --per-host 3: three requests in flight, one starting
    every 0.1 s — not one every 0.3 s, and never four at once."""
    [site] = loopback_hosts(1, 15)
    slow = Slow(html(), 0.3)
    site.pages.update({f"/{k}": slow for k in range(1, 16)})
    crawl([site], threads=6, delay=0.1, per_host=3, ignore_robots=True)
    pages = [r.time for r in site.requests if r.path != "/"]
    g = [b - a for a, b in zip(pages, pages[1:], strict=False)]
    assert slow.peak == 3
    assert min(spans(pages)) >= 5 * 0.1 - STAMP_DELAY, sorted(spans(pages))[:3]
    # The median, not the third quartile: a start now and then misses its 0.1 s slot by one
    # slot (0.2 s; 5 runs in 6 alone, before and after issue 38), while the failure this test
    # is for, one request at a time, makes every gap 0.3 s.
    assert statistics.median(g) <= 0.1 + SLACK, sorted(g)


def test_a_retry_after_pauses_the_host_and_then_the_pace_resumes(loopback_hosts):
    [site] = loopback_hosts(1, 6)
    answered = []

    def busy_once(request):
        answered.append(request.time)
        if len(answered) == 1:
            return Resource(b"", 503, {"Retry-After": "1"})
        return html()

    site.pages["/3"] = busy_once
    crawl([site], threads=4, delay=0.1, per_host=1, retry_backoff=0.05)
    times = [r.time for r in site.requests]
    after = [t for t in times if t > answered[0]]
    assert after and after[0] - answered[0] >= 0.95  # nothing on the host for a second
    assert [urlsplit(r.path).path for r in site.requests].count("/3") == 2
    assert min(gaps(site)) >= 0.1


def test_a_crawl_delay_raises_the_gap_from_the_robots_request_on(loopback_hosts):
    """Crawl-delay 0.3 with the default --per-host 2: the page after robots.txt waits the new
    gap too (the gap was raised while robots.txt was being fetched), and so do the rest."""
    [site] = loopback_hosts(1, 8)
    site.pages["/robots.txt"] = Resource(b"User-agent: *\nCrawl-delay: 0.3\n", 200,
                                         {"Content-Type": "text/plain"})
    crawl([site], threads=4, delay=0.0, per_host=2)
    times = [r.time for r in site.requests]
    g = gaps(site)
    assert len(times) == 10 and g[0] >= 0.3 - STAMP_DELAY, g  # robots.txt → / (not 0.003)
    assert min(spans(times)) >= 5 * 0.3 - STAMP_DELAY, sorted(spans(times))[:3]
    assert quartile3(g) <= 0.3 + SLACK, sorted(g)
