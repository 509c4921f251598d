"""The crawl's points: :class:`Events` declares each one (typed, for type checkers) and no other."""

from minicrawl.events import POINTS, CrawlObserver, Events


def test_events_declares_every_point_of_crawl_observer():
    assert set(Events.__annotations__) == set(POINTS)
    assert all(callable(getattr(Events([CrawlObserver()]), point)) for point in POINTS)
