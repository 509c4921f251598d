"""The whole model at work against real local servers: every page exactly once (seen from the
server), redirects through Visited, the page cap, the delay, the scope and the end of a crawl."""

from __future__ import annotations

import threading

import pytest

from minicrawl.core.crawler import Crawler
from minicrawl.core.fetch import Fetcher
from minicrawl.core.interfaces import Page
from minicrawl.core.limits import SameHost
from minicrawl.demo.site import LocalSite, Resource, Slow, chain


class Pages:
    """An observer keeping every page it is told about."""

    def __init__(self) -> None:
        self.pages: list[Page] = []
        self._lock = threading.Lock()

    def on_page(self, page: Page) -> None:
        with self._lock:
            self.pages.append(page)

    def by_url(self) -> dict[str, Page]:
        return {p.url: p for p in self.pages}


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">x</a>' for h in hrefs).encode())


@pytest.mark.parametrize("threads", [1, 16])
def test_demo_site_every_reachable_page_exactly_once(make_site, threads: int) -> None:
    """The demo site spells links many ways (relative, absolute, upper case, %70 for p, dot
    segments, fragments, <base>): each reachable path is requested once, nothing else is."""
    server, site = make_site()
    seen = Pages()
    summary = Crawler([server.url("/")], threads=threads, admission=[SameHost([server.origin])],
                      observers=[seen]).run()
    counts = server.fetch_counts(exclude=())
    assert set(counts) == set(site.reachable())
    assert max(counts.values()) == 1
    assert summary.pages == len(seen.pages) == len(counts)
    assert summary.errors == 0


def test_redirect_target_goes_through_visited(server: LocalSite) -> None:
    """/a redirects to /b, which / also links: /b is fetched once; a loop /x → /y → /x ends."""
    server.pages.update({
        "/": html("/a", "/b", "/x"),
        "/a": Resource(status=301, headers={"Location": "/b"}),
        "/b": html(),
        "/x": Resource(status=302, headers={"Location": "/y"}),
        "/y": Resource(status=302, headers={"Location": server.url("/x")}),
    })
    seen = Pages()
    Crawler([server.url("/")], threads=4, observers=[seen]).run()
    assert server.fetch_counts(exclude=()) == {"/": 1, "/a": 1, "/b": 1, "/x": 1, "/y": 1}
    pages = seen.by_url()
    assert pages[server.url("/a")].redirect == server.url("/b")
    assert pages[server.url("/y")].redirect == server.url("/x")
    assert pages[server.url("/y")].new == 0  # /x was seen: the loop ends there


def test_redirect_target_keeps_the_depth(server: LocalSite) -> None:
    server.pages.update({"/": html("/r"), "/r": Resource(status=301, headers={"Location": "/t"}),
                         "/t": html()})
    seen = Pages()
    Crawler([server.url("/")], threads=2, observers=[seen]).run()
    depths = {p.url.rsplit("/", 1)[1]: p.depth for p in seen.pages}
    assert depths == {"": 0, "r": 1, "t": 1}
    assert seen.by_url()[server.url("/t")].referrer == server.url("/r")


@pytest.mark.parametrize("threads", [1, 16])
def test_page_cap_is_exact_with_many_threads(server: LocalSite, threads: int) -> None:
    server.pages.update({"/": html(*(f"/{n}" for n in range(100))),
                         **{f"/{n}": html(f"/{n}/a", f"/{n}/b") for n in range(100)}})
    summary = Crawler([server.url("/")], threads=threads, max_pages=10).run()
    assert sum(server.fetch_counts(exclude=()).values()) == 10
    assert summary.pages == 10


def test_seeds_enter_through_the_door_and_each_worker_has_one_fetcher(server: LocalSite) -> None:
    """A fetcher per worker, none more: seeds go through the door without one. A seed is the
    user's word: no admission rule refuses it (``outside``, unanswered, is still a page), but
    Visited drops a repeat (``/#top`` is ``/``)."""
    server.pages.update({"/": html("/a"), "/a": html()})
    made: list[Fetcher] = []

    def fetcher() -> Fetcher:
        made.append(Fetcher(timeout=5))
        return made[-1]

    outside = "http://127.0.0.2:1/"
    crawler = Crawler([server.url("/"), outside, server.url("/#top")], threads=3,
                      fetcher=fetcher, admission=[SameHost([server.url("/")])])
    summary = crawler.run()
    assert (summary.pages, summary.errors, len(made)) == (3, 1, 3)
    assert server.fetch_counts(exclude=()) == {"/": 1, "/a": 1}


def test_delay_spaces_requests_to_a_host(server: LocalSite) -> None:
    """With --delay 0.2 and 8 workers, the server sees requests at least ~0.2 s apart."""
    server.pages.update(chain(1) | {"/": html(*(f"/{n}" for n in range(6)))})
    server.pages.update({f"/{n}": html() for n in range(6)})
    Crawler([server.url("/")], threads=8, delay=0.2).run()
    times = sorted(r.time for r in server.requests)
    assert len(times) == 7
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    # Arrivals as the server sees them: on a busy machine a request may leave its worker late,
    # so one gap shrinks as the one before it grows. The middle gap and the whole span do not.
    assert gaps[len(gaps) // 2] >= 0.18 and times[-1] - times[0] >= 6 * 0.2 - 0.03, gaps


def test_scope_keeps_the_crawl_on_the_seeds_hosts(server: LocalSite) -> None:
    with LocalSite(host="127.0.0.2") as other:
        other.pages["/"] = html("/deeper")
        server.pages["/"] = html(other.url("/"), "/mine")
        server.pages["/mine"] = html()
        seen = Pages()
        Crawler([server.url("/")], threads=4, admission=[SameHost([server.url("/")])],
                observers=[seen]).run()
        assert other.requests == []
        assert server.fetch_counts(exclude=()) == {"/": 1, "/mine": 1}
        assert seen.by_url()[server.url("/")].links == [other.url("/"), server.url("/mine")]
        assert seen.by_url()[server.url("/")].new == 1


def test_bad_and_dead_inputs_are_pages_with_errors_not_crashes(server: LocalSite) -> None:
    """A dead host, a broken page, binary junk and a bad seed: the crawl goes on and ends."""
    server.pages.update({
        "/": html("http://127.0.0.1:1/dead", "/broken", "/binary", "mailto:x@y.test", "http://[::1"),
        "/broken": Resource(b"<html><a href='/ok'>ok</a><div><p><<<\x00\xff"),
        "/binary": Resource(bytes(range(256)) * 64, headers={"Content-Type": "text/html"}),
        "/ok": html(),
    })
    seen = Pages()
    crawler = Crawler([server.url("/"), "ftp://nope.test/", "not a url"], threads=4,
                      observers=[seen])
    assert crawler.bad_seeds == ["ftp://nope.test/", "not a url"]
    summary = crawler.run()
    pages = seen.by_url()
    assert pages["http://127.0.0.1:1/dead"].status is None
    assert pages["http://127.0.0.1:1/dead"].error.startswith("ConnectionError: ")
    assert server.fetch_counts(exclude=()) == {"/": 1, "/broken": 1, "/binary": 1, "/ok": 1}
    assert summary.pages == 5 and summary.errors == 1


def test_slow_pages_keep_every_worker_busy_and_the_crawl_ends(server: LocalSite) -> None:
    """ToDo's end rule under load: 40 pages taking 0.1 s each, 8 workers: they overlap (the
    server sees 8 at once) and run() returns when the last is done."""
    slow = Slow(html(), 0.1)
    server.pages.update({"/": html(*(f"/{n}" for n in range(40))),
                         **{f"/{n}": slow for n in range(40)}})
    summary = Crawler([server.url("/")], threads=8).run()
    assert summary.pages == 41
    assert slow.peak == 8


def test_ctrl_c_waits_for_the_page_in_flight_even_on_the_thread_being_joined(
        server: LocalSite) -> None:
    """Ctrl-C: the pages in flight finish, then KeyboardInterrupt is raised. worker-1, the
    thread the main thread waits on first, is slow to record its last page: run() must not
    raise before it has. (CPython 3.11's Thread.join, interrupted, takes it for ended.)"""
    import signal
    import time

    late_started: list[str] = []
    late_recorded: list[str] = []
    stopping = threading.Event()

    class SlowToRecord:
        def on_page(self, page: Page) -> None:
            if stopping.is_set() and threading.current_thread().name == "worker-1":
                late_started.append(page.url)
                time.sleep(1.0)
                late_recorded.append(page.url)

    server.pages.update({"/": html(*(f"/{n}" for n in range(1, 400)))})
    server.pages.update({f"/{n}": html() for n in range(1, 400)})
    crawler = Crawler([server.url("/")], threads=4, observers=[SlowToRecord()])

    def interrupt() -> None:
        while len(server.requests) < 50:
            time.sleep(0.002)
        stopping.set()
        time.sleep(0.05)  # worker-1 is now in its slow record
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        crawler.run()
    assert late_started and late_recorded == late_started
    assert not [t for t in threading.enumerate() if t.name.startswith("worker-")]


def test_a_thread_the_system_refuses_stops_the_crawl_and_leaves_none_crawling(
        server: LocalSite, monkeypatch) -> None:
    """The third thread cannot start (the system's limit): run() raises that error, but only
    after ToDo stopped and the two workers already crawling ended."""
    server.pages.update(chain(200))
    real_start = threading.Thread.start
    started: list[str] = []

    def start(self: threading.Thread) -> None:
        if self.name.startswith("worker-"):  # (the server's threads start meanwhile)
            if len(started) == 2:
                raise RuntimeError("can't start new thread")
            started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    with pytest.raises(RuntimeError, match="can't start new thread"):
        Crawler([server.url("/")], threads=4).run()
    assert not [t for t in threading.enumerate() if t.name.startswith("worker-")]
