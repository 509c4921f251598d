"""The door's Visited remembers the URLs it asked about: Visited's answers, fewer questions."""

from __future__ import annotations

import random
import threading

from minicrawl import Crawler
from minicrawl.demo.site import Resource
from minicrawl.visited import ScalableBloomFilter
from minicrawl.visited.exact import ExactVisited
from minicrawl.visited.forgetting import ForgettingVisited
from minicrawl.visited.known import KnownVisited


class Asked(ExactVisited):
    """An exact Visited that keeps every URL it was asked about."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def add_new(self, urls: list[str]) -> list[str]:
        self.asked += urls
        return super().add_new(urls)


def test_its_answers_are_visiteds_and_a_url_is_asked_about_once() -> None:
    """Pages of links drawn from 300 URLs: every answer is a plain filter's, and the filter
    behind it is asked about each URL once."""
    rnd = random.Random(3)
    pages = [list(dict.fromkeys(f"http://h.test/p{rnd.randrange(300)}" for _ in range(40)))
             for _ in range(200)]
    plain = ScalableBloomFilter(initial_capacity=1000, error_rate=0.001)
    asked = Asked()
    known = KnownVisited(asked, asked.__len__)
    for page in pages:
        assert known.add_new(page) == plain.add_new(page)
    assert sorted(asked.asked) == sorted(set(asked.asked)) and len(asked.asked) == 300
    assert len(known) == 300 and "http://h.test/p0" in known  # Visited's, through it


def test_a_forgotten_page_is_new_once_through_it() -> None:
    """A recrawl's forgotten URL comes back once (its first offer reaches Visited), then is
    seen, as without it."""
    url = "http://h.test/gone"
    known = KnownVisited(ForgettingVisited(ExactVisited(), {url}))
    assert known.add_new([url, "http://h.test/a"]) == [url, "http://h.test/a"]
    assert known.add_new([url]) == [] and known.add_new(["http://h.test/a", url]) == []


def test_threads_offering_the_same_urls_get_each_once() -> None:
    urls = [f"http://h.test/{n}" for n in range(2000)]
    known = KnownVisited(ScalableBloomFilter(initial_capacity=100_000, error_rate=1e-6))
    got: list[str] = []
    lock = threading.Lock()

    def offer(seed: int) -> None:
        rnd = random.Random(seed)
        for _ in range(200):
            new = known.add_new(rnd.sample(urls, 40))
            with lock:
                got.extend(new)

    threads = [threading.Thread(target=offer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(got) == len(set(got))  # no URL new twice
    assert known.add_new(urls) == [u for u in urls if u not in set(got)]


def test_a_crawl_fetches_every_page_once_through_it(server) -> None:
    """200 pages each linking 30 others: the door's Visited is the known one, every page is
    fetched once, and Visited was asked about each URL once."""
    def page(n: int) -> Resource:
        return Resource("".join(f'<a href="/p/{(n * 7 + k) % 200}">x</a>'
                                for k in range(30)).encode())

    server.pages.update({f"/p/{n}": page(n) for n in range(200)})
    server.pages["/"] = Resource(b'<a href="/p/0">start</a>')
    crawler = Crawler([server.url("/")], threads=4, delay=0, per_host=4, ignore_robots=True)
    assert isinstance(crawler.door.visited, KnownVisited)
    crawler.run()
    counts = server.fetch_counts()
    assert len(counts) == 201 and all(c == 1 for c in counts.values())
    assert len(crawler.door.visited._known) == len(crawler.visited) == 201
