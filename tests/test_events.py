"""The crawl's points: :class:`Events` declares each one (typed, for type checkers) and no other."""

from minicrawl.events import POINTS, CrawlObserver, Events


def test_events_declares_every_point_of_crawl_observer():
    assert set(Events.__annotations__) == set(POINTS)
    assert all(callable(getattr(Events([CrawlObserver()]), point)) for point in POINTS)


def test_a_watcher_failing_mid_page_costs_no_page_and_no_link(server, caplog):
    """A watcher that raises while a page's links are being decided (after Visited marked them)
    is told in one line and counted; the page is recorded and its links still crawled."""
    from minicrawl import Crawler
    from minicrawl.demo.site import Resource
    from minicrawl.events import CrawlObserver

    class Broken(CrawlObserver):
        def links_decided(self, page, decisions):
            raise RuntimeError("a bug in a watcher")

    server.pages["/"] = Resource(b'<a href="/a">a</a><a href="/b">b</a>')
    server.pages["/a"] = Resource(b"a")
    server.pages["/b"] = Resource(b"b")
    crawler = Crawler([server.url("/")], threads=2, delay=0, ignore_robots=True)
    crawler._observers = lambda: [Broken()]  # one more watcher, as --trace would be
    stats = crawler.run()
    assert server.fetch_counts() == {"/": 1, "/a": 1, "/b": 1}
    assert stats["pages"] == 3 and stats.get("error_internal", 0) == 0
    assert stats["observer_errors"] == 3
    assert "Broken failed at links_decided: RuntimeError: a bug in a watcher" in caplog.text
