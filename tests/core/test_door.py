"""The door's URLs to check (run.py's --check-links): they enter ToDo marked ``check``, no
admission rule asks of them, and Visited keeps them apart from the URLs to crawl — a URL can be
checked once and crawled once, each only once."""

from __future__ import annotations

from minicrawl.core.door import Door
from minicrawl.core.interfaces import Item
from minicrawl.core.todo import ToDo
from minicrawl.core.visited import BloomVisited


class RefuseAll:
    def refuses(self, url: str, depth: int) -> str | None:
        return "out_of_scope"


def queued(todo: ToDo) -> list[Item]:
    return list(todo._items)


def test_a_url_to_check_enters_marked_and_no_rule_asks_of_it() -> None:
    todo = ToDo()
    door = Door(todo, BloomVisited(), [RefuseAll()])
    entry = door.enter(["http://x.test/a"], 2, "http://s.test/", checks=["http://x.test/img.png"])
    assert entry.refused == {"http://x.test/a": "out_of_scope"}
    assert entry.new == [Item("http://x.test/img.png", 2, "http://s.test/", check=True)]
    assert queued(todo) == entry.new and entry.queued == 1


def test_a_url_is_checked_once_and_crawled_once_each_apart() -> None:
    todo = ToDo()
    door = Door(todo, BloomVisited())
    url = "http://s.test/login"
    first = door.enter([], 1, "http://s.test/", checks=[url, url])  # a nofollow link, twice
    assert first.new == [Item(url, 1, "http://s.test/", check=True)]
    assert door.enter([], 1, "http://s.test/b", checks=[url]).new == []  # checked once
    crawled = door.enter([url], 1, "http://s.test/c")  # a link that is followed: a page
    assert crawled.new == [Item(url, 1, "http://s.test/c")]
    assert door.enter([url], 1, "http://s.test/d", checks=[url]).new == []
    assert [(i.url, i.check) for i in queued(todo)] == [(url, True), (url, False)]
