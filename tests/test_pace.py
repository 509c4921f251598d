"""The per-host pace as the servers see it: gaps never shorter than asked, and no longer than
asked plus a little while the host has URLs waiting (no URL loses its turn, no slot is wasted).

Each host is a real server on its own loopback address (127.0.0.2, .3, …): the crawler paces
them as different hosts. The evidence is each server's log of request arrival times.
"""

from __future__ import annotations

import statistics
import threading
import time
from urllib.parse import urlsplit

from minicrawl import Crawler
from minicrawl.localsite import LocalSite, Resource

# The mean gap may exceed the delay by this much: a worker's wake-up and the request's way to
# the server, on a busy 2-core machine. A crawl that loses every other slot is at 2x the delay.
SLACK = 0.05


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">{h}</a>' for h in hrefs).encode())


def start_hosts(n: int, pages: int) -> list[LocalSite]:
    """``n`` servers on 127.0.0.2…, each a root linking to /1…/pages."""
    sites = []
    for i in range(n):
        site = LocalSite(host=f"127.0.0.{i + 2}").start()
        site.pages.update({"/": html(*[f"/{k}" for k in range(1, pages + 1)]),
                           **{f"/{k}": html() for k in range(1, pages + 1)}})
        sites.append(site)
    return sites


def gaps(site: LocalSite) -> list[float]:
    times = [r.time for r in site.requests]
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def crawl(sites: list[LocalSite], **settings) -> dict:
    crawler = Crawler([s.url("/") for s in sites], timeout=5, **settings)
    stats = crawler.run()
    assert crawler.worker_failures == []
    return stats


def test_four_hosts_each_get_the_asked_rate_in_breadth_first_order():
    sites = start_hosts(4, 12)
    try:
        stats = crawl(sites, threads=8, delay=0.2, per_host=1)
        for site in sites:
            # robots.txt is a request to the host too: it is paced like the pages.
            assert [r.path for r in site.requests] == \
                ["/robots.txt", "/", *[f"/{k}" for k in range(1, 13)]]
            g = gaps(site)
            assert min(g) >= 0.2, (site.host, sorted(g)[:3])
            # From its first request to its last the host always had URLs waiting.
            assert statistics.mean(g) <= 0.2 + SLACK, (site.host, statistics.mean(g))
        # A URL waits in its host's line; only the URL behind a robots.txt fetch is put back.
        assert stats.get("politeness_waits", 0) <= 4
    finally:
        for site in sites:
            site.stop()


def test_one_host_at_a_quarter_second_gets_four_pages_a_second():
    [site] = start_hosts(1, 15)
    try:
        crawl([site], threads=4, delay=0.25, per_host=2)
        g = gaps(site)
        assert len(g) == 16 and min(g) >= 0.25, sorted(g)[:3]
        assert statistics.mean(g) <= 0.25 + SLACK, statistics.mean(g)
    finally:
        site.stop()


def test_per_host_n_keeps_n_in_flight_at_the_gap():
    """Slow answers (0.3 s), gap 0.1 s, --per-host 3: three requests in flight, one starting
    every 0.1 s — not one every 0.3 s, and never four at once."""
    [site] = start_hosts(1, 15)
    lock = threading.Lock()
    busy, peak = [0], [0]

    def slow(request):
        with lock:
            busy[0] += 1
            peak[0] = max(peak[0], busy[0])
        time.sleep(0.3)
        with lock:
            busy[0] -= 1
        return html()

    site.pages.update({f"/{k}": slow for k in range(1, 16)})
    try:
        crawl([site], threads=6, delay=0.1, per_host=3, ignore_robots=True)
        pages = [r.time for r in site.requests if r.path != "/"]
        g = [b - a for a, b in zip(pages, pages[1:], strict=False)]
        assert peak[0] == 3
        # Starts are spaced at the client (a request may start before the previous ones end,
        # so the server's arrival stamps carry its threads' scheduling delay: 80 ms once on a
        # loaded machine). Over five gaps that delay is small against the time asked.
        spans = [b - a for a, b in zip(pages, pages[5:], strict=False)]
        assert min(spans) >= 5 * 0.1 - 0.1, sorted(spans)[:3]
        assert statistics.mean(g) <= 0.1 + SLACK, statistics.mean(g)
    finally:
        site.stop()


def test_a_retry_after_pauses_the_host_and_then_the_pace_resumes():
    [site] = start_hosts(1, 6)
    answered = []

    def busy_once(request):
        answered.append(request.time)
        if len(answered) == 1:
            return Resource(b"", 503, {"Retry-After": "1"})
        return html()

    site.pages["/3"] = busy_once
    try:
        crawl([site], threads=4, delay=0.1, per_host=2, retry_backoff=0.05)
        times = [r.time for r in site.requests]
        after = [t for t in times if t > answered[0]]
        assert after and after[0] - answered[0] >= 0.95  # nothing on the host for a second
        assert [urlsplit(r.path).path for r in site.requests].count("/3") == 2
        assert min(gaps(site)) >= 0.1
    finally:
        site.stop()
