"""One door: every URL run.py's crawl fetches entered ToDo through the core's door
(``minicrawl.core.door.Door``) — seeds, streamed seeds, links, redirect targets, sitemap URLs,
a resumed journal — and only there. The door is watched (its calls recorded, nothing replaced)
while a library crawl runs against a real local site; the server's log says what was fetched."""

from __future__ import annotations

import ast
import threading
import time
from pathlib import Path

import pytest

import minicrawl
from minicrawl import Crawler
from minicrawl.core.door import Door, Entry
from minicrawl.core.interfaces import Item
from minicrawl.demo.site import LocalSite, Resource, sequence

PACKAGE = Path(minicrawl.__file__).parent


def html(*links: str) -> Resource:
    return Resource("".join(f'<a href="{link}">x</a>' for link in links).encode())


class Watched:
    """What came out of the door: the URLs it let into ToDo."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.passed: list[str] = []
        self._lock = threading.Lock()
        enter, seed, back = Door.enter, Door.seed, Door.back

        def watched_enter(door: Door, urls, depth, referrer, keep=None, checks=()) -> Entry:  # type: ignore[no-untyped-def]
            entry = enter(door, urls, depth, referrer, keep, checks)
            self._note([item.url for item in entry.new])
            return entry

        def watched_seed(door: Door, urls, keep=None) -> Entry:  # type: ignore[no-untyped-def]
            entry = seed(door, urls, keep)
            self._note([item.url for item in entry.new])
            return entry

        def watched_back(door: Door, items) -> int:  # type: ignore[no-untyped-def]
            self._note([item.url for item in items])
            return back(door, items)

        monkeypatch.setattr(Door, "enter", watched_enter)
        monkeypatch.setattr(Door, "seed", watched_seed)
        monkeypatch.setattr(Door, "back", watched_back)

    def _note(self, urls: list[str]) -> None:
        with self._lock:
            self.passed += urls


@pytest.fixture
def site() -> LocalSite:
    pages: dict[str, Resource] = {
        "/": html("/a", "/moved", "/b?x=1", "/loop1"),
        "/a": html("/", "/c", "/gone"),
        "/moved": Resource(status=301, headers={"Location": "/target"}),
        "/target": html("/d"),
        "/b?x=1": html("/a"),
        "/loop1": Resource(status=302, headers={"Location": "/loop2"}),
        "/loop2": Resource(status=302, headers={"Location": "/loop1"}),
        "/c": html(), "/d": html(), "/listed": html("/e"), "/e": html(),
        "/gone": Resource(b"<a href='/never'>x</a>", status=404),
        "/sitemap.xml": Resource(
            b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            b"<url><loc>/listed</loc></url><url><loc>http://elsewhere.test/x</loc></url>"
            b"</urlset>", headers={"Content-Type": "application/xml"}),
        "/seeded": html(),
    }
    pages.update({f"/many/{n}": html(f"/many/{n + 1}") for n in range(40)})
    pages["/c"] = html("/many/0")
    with LocalSite(pages) as running:
        yield running


def fetched(site: LocalSite) -> list[str]:
    return [site.url(r.path) for r in site.requests
            if r.path not in ("/robots.txt", "/sitemap.xml")]


def test_every_url_fetched_passed_the_door(site: LocalSite, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    watched = Watched(monkeypatch)
    seeds = tmp_path / "seeds.txt"
    seeds.write_text(site.url("/") + "\n" + site.url("/seeded") + "\n" + site.url("/") + "\n")
    Crawler([str(seeds)], threads=4, delay=0, retries=0, sitemaps=True).run()
    requested = fetched(site)
    assert len(requested) == len(set(requested))  # each once
    assert sorted(requested) == sorted(watched.passed)  # and each came through the door
    # the sources: seeds (a repeat dropped), a streamed seed, links, a redirect target, a
    # sitemap URL and what it links to; the loop's second hop back to the first is not new
    assert {site.url(p) for p in ("/", "/seeded", "/a", "/target", "/listed", "/e",
                                  "/loop2", "/many/39")} <= set(requested)
    assert site.url("/never") not in requested  # a 404's links are not followed


def test_a_resumed_crawl_takes_its_journal_through_the_door(site: LocalSite, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    state = tmp_path / "state"
    Crawler([site.url("/")], threads=2, delay=0, retries=0, state=str(state), max_pages=5).run()
    first = fetched(site)
    watched = Watched(monkeypatch)
    Crawler([site.url("/")], threads=2, delay=0, retries=0, state=str(state)).run()
    later = fetched(site)[len(first):]
    assert later and set(later) <= set(watched.passed)
    assert not set(first) & set(later)  # nothing fetched twice across the runs


def test_only_the_door_puts_in_todo() -> None:
    """Outside the door, the ToDos and their wrappers, nothing puts in a ToDo (``put``,
    ``put_many``): a new URL enters through ``Door.enter`` or ``Door.seed``, an item that passed
    the door before (a retry, its backoff in ``Item.not_before``; a redirect back into its
    chain; a resumed journal) through ``Door.back``. A ToDo is only given back an item it
    handed out and that was not fetched (``put_back``: politeness said wait)."""
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("put", "put_many", "put_back") \
                    and "todo" in ast.unparse(node.func.value).lower():
                calls.append((str(path.relative_to(PACKAGE)), node.func.attr))
    wrappers = {"frontier/disk.py", "frontier/turns.py", "seeds.py", "redis/todo.py"}
    outside = [c for c in calls if c[0] not in wrappers and c[0] != "core/door.py"]
    assert outside and all(method == "put_back" for _, method in outside), outside
    assert ("core/door.py", "put_many") in calls


def test_a_retry_goes_back_through_the_door_with_its_wait(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """A page that answers 503, then 200: its retry is put back by ``Door.back``, the item
    carrying its attempt and its ``not_before``; the server sees it no sooner than that."""
    backed: list[tuple[Item, float]] = []
    back = Door.back

    def watched_back(door: Door, items: list[Item]) -> int:
        backed.extend((item, time.monotonic()) for item in items)
        return back(door, items)

    monkeypatch.setattr(Door, "back", watched_back)
    pages = {"/": html("/flaky"), "/flaky": sequence(Resource(status=503), html())}
    with LocalSite(pages) as site:
        Crawler([site.url("/")], threads=2, delay=0, retries=1, retry_backoff=0.4).run()
        flaky = [r.time for r in site.requests if r.path == "/flaky"]
        url = site.url("/flaky")
    [(item, when)] = backed
    assert (item.url, item.attempt) == (url, 1)
    assert 0.2 - 0.01 <= item.not_before - when <= 0.4 + 0.01  # the backoff: 0.2-0.4 s
    assert len(flaky) == 2 and flaky[1] >= item.not_before
