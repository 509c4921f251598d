"""The trip's contract (core.trip.Trip.visit), with each crawler's hooks (interfaces.Hooks: the
core's CoreHooks, run.py's CrawlHooks), against a real local server: when ``visit`` returns, the
page's unseen links are in ToDo and Visited, one request was made, a redirect's target waits in
ToDo at the page's depth, a dead server is a page's error, not an exception. And the core's
Worker loop around a trip: None is no page for the observers, a hook that raises costs the page
(its error), and every item taken is done."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from minicrawl import Crawler
from minicrawl.core.door import Door
from minicrawl.core.fetch import Fetcher
from minicrawl.core.interfaces import Entry, Frontier, Go, Item, Links, Page, Response, SeenSet
from minicrawl.core.todo import ToDo
from minicrawl.core.trip import CoreHooks, Trip
from minicrawl.core.visited import BloomVisited
from minicrawl.core.worker import Worker
from minicrawl.demo.site import LocalSite, Resource


@dataclass
class Visit:
    """A trip with one crawler's hooks, with the ToDo and Visited it puts links into."""

    trip: Trip
    todo: Frontier
    visited: SeenSet


def core_trip(seed: str) -> Iterator[Visit]:
    todo, visited = ToDo(), BloomVisited()
    yield Visit(Trip(Door(todo, visited), Fetcher(timeout=2)), todo, visited)


def run_py_trip(seed: str) -> Iterator[Visit]:
    """run.py's trip (minicrawl/visit/hooks.py) over the parts of a run.py crawl of ``seed``."""
    crawler = Crawler([seed], ignore_robots=True, retries=0, delay=0, timeout=2)
    trip = crawler.trip(1)
    yield Visit(trip, crawler.todo, crawler.visited)
    trip.hooks.close()  # type: ignore[attr-defined]  # run.py's: its connections


IMPLEMENTATIONS: dict[str, Callable[[str], Iterator[Visit]]] = {
    "core": core_trip, "run.py": run_py_trip}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def make_visit(request: pytest.FixtureRequest) -> Iterator[Callable[[str], Visit]]:
    opened: list[Iterator[Visit]] = []

    def make(seed: str) -> Visit:
        made = IMPLEMENTATIONS[request.param](seed)
        opened.append(made)
        return next(made)

    yield make
    for made in opened:
        next(made, None)  # close what it opened


def drain(todo: Frontier) -> list[Item]:
    """Everything waiting in ToDo (each taken and done)."""
    items = []
    while (item := todo.take()) is not None:
        items.append(item)
        todo.done(item)
    return items


def html(*hrefs: str) -> Resource:
    return Resource("".join(f'<a href="{h}">x</a>' for h in hrefs).encode())


def visit_one(visit: Visit, url: str) -> Page | None:
    """Take ``url`` from ToDo as a worker would, visit it, and say it is done."""
    visit.todo.put(Item(url))
    item = visit.todo.take()
    assert item is not None and item.url == url
    try:
        return visit.trip.visit(item)
    finally:
        visit.todo.done(item)


def test_unseen_links_are_in_todo_when_visit_returns(server: LocalSite, make_visit) -> None:
    server.pages["/"] = html("/a", "/b", "a", "/c#x")
    server.pages.update({f"/{path}": html() for path in "abc"})
    visit = make_visit(server.url("/"))
    visit.visited.add_new([server.url("/"), server.url("/b")])  # /b: seen before
    visit_one(visit, server.url("/"))
    queued = drain(visit.todo)
    assert [item.url for item in queued] == [server.url("/a"), server.url("/c")]
    assert {(item.depth, item.referrer) for item in queued} == {(1, server.url("/"))}
    assert server.fetch_counts() == {"/": 1}
    assert visit.visited.add_new([server.url("/a"), server.url("/c")]) == []  # remembered


def test_redirect_target_waits_in_todo_at_the_pages_depth(server: LocalSite,
                                                          make_visit) -> None:
    server.pages.update({"/old": Resource(status=301, headers={"Location": "/new"}),
                         "/new": html()})
    visit = make_visit(server.url("/old"))
    visit.visited.add_new([server.url("/old")])
    visit_one(visit, server.url("/old"))
    queued = drain(visit.todo)
    assert [(item.url, item.depth) for item in queued] == [(server.url("/new"), 0)]
    assert server.fetch_counts() == {"/old": 1}


def test_a_dead_server_is_no_exception(make_visit) -> None:
    visit = make_visit("http://127.0.0.1:9/")  # nothing listens on the discard port
    visit.visited.add_new(["http://127.0.0.1:9/"])
    page = visit_one(visit, "http://127.0.0.1:9/")
    assert page is None or page.error
    assert drain(visit.todo) == []


class Scripted:
    """Hooks answering from a script, before any fetch: a page, None (back to ToDo), or an
    exception (the core's own ``failed`` makes it the page's error)."""

    robot = "minicrawl"

    def __init__(self, answers: dict[str, str]) -> None:
        self.answers = answers

    def before(self, item: Item) -> Go | Page | None:
        answer = self.answers[item.url]
        if answer == "raise":
            raise RuntimeError("a bug in the hooks")
        return Page(item.url, item.depth, item.referrer, item.url, 200) if answer == "page" \
            else None

    def after(self, item: Item, answer: Response) -> Page | None:
        raise AssertionError("never fetched")

    def follows(self, page: Page) -> bool:
        return True

    def resolve(self, page: Page, links: Links) -> list[str]:
        return []

    def keep(self, page: Page, entry: Entry) -> None:
        pass

    def failed(self, item: Item, error: Exception) -> Page | None:
        return CoreHooks().failed(item, error)


class Told:
    def __init__(self) -> None:
        self.pages: list[Page] = []

    def on_page(self, page: Page) -> None:
        self.pages.append(page)


def test_worker_tells_observers_of_pages_only_and_finishes_every_item() -> None:
    todo, told = ToDo(), Told()
    for url in ("http://a.test/page", "http://a.test/later", "http://a.test/bug"):
        todo.put(Item(url))
    hooks = Scripted({"http://a.test/page": "page", "http://a.test/later": "none",
                      "http://a.test/bug": "raise"})
    trip = Trip(Door(todo, BloomVisited()), Fetcher(timeout=2), hooks=hooks)
    Worker(todo, trip, [told]).run()  # returns: every item taken was done
    assert [page.url for page in told.pages] == ["http://a.test/page", "http://a.test/bug"]
    assert told.pages[1].error == "internal error: RuntimeError('a bug in the hooks')"
