"""The crawler's link memories: bounded by what Visited holds, never more than an exact set."""

from __future__ import annotations

from minicrawl import Crawler, memo
from minicrawl.demo.site import Resource
from minicrawl.memo import Memo


def test_a_memo_holds_a_share_of_the_budget_and_forgets_its_older_half():
    size = [0]
    m = Memo(10**9, lambda k, v: 1, budget=lambda: size[0], share=0.5)
    last = 4 * memo.FLOOR  # past the floor: the share bounds
    for n in range(last + 1):
        size[0] = n  # Visited grows by one URL per entry
        m.put(n, str(n))
        assert len(m) <= max(memo.FLOOR, n // 2)
    assert m.data.get(last) == str(last) and 0 not in m.data  # the newest stay
    capped = Memo(100, lambda k, v: 1)  # no Visited: only the bytes bound it
    for n in range(1000):
        capped.put(n, n)
    assert len(capped) <= 100 and 999 in capped.data


def test_a_memo_holds_at_most_its_bytes_as_its_size_estimates_them():
    """Entries of all sizes: what is held never passes ``max_bytes``, the newest stays, and an
    entry over a sixteenth of the bytes is answered but not remembered."""
    m = Memo(10_000, lambda k, v: 10 + len(v))
    for n in range(5000):
        m.put(n, "x" * (n % 500))
        assert m.held == sum(10 + len(v) for v in m.data.values()) <= 10_000
        assert n in m.data or 10 + n % 500 > 10_000 // 16
    assert m.held >= 10_000 // 4  # it forgot only what it had to
    assert m.put("big", "x" * 700) == "x" * 700 and "big" not in m.data


def test_a_bloom_crawl_holds_fewer_url_strings_than_an_exact_set_would(server, monkeypatch):
    """300 pages, each linking 30 others and 20 pages of its own: after the crawl, the memories
    together hold no more entries than Visited holds URLs; every page was fetched once."""
    monkeypatch.setattr(memo, "FLOOR", 16)  # so a small site shows the bound

    def page(n: int) -> Resource:
        links = [f"/p/{(n * 7 + k) % 300}" for k in range(30)] + [f"/q/{n}/{k}" for k in
                                                                   range(20)]
        return Resource("".join(f'<a href="{h}">x</a>' for h in links).encode())

    server.pages.update({f"/p/{n}": page(n) for n in range(300)})
    server.pages["/"] = Resource(b'<a href="/p/0">start</a>')
    crawler = Crawler([server.url("/")], threads=4, delay=0, per_host=4, visited="bloom",
                      expected_urls=100_000, ignore_robots=True)
    crawler.run()
    counts = server.fetch_counts()
    assert all(c == 1 for c in counts.values())
    assert len(counts) == 1 + 300 + 300 * 20  # /q/ pages answer 404, still fetched once
    resolver = crawler.resolver
    held = len(resolver._by_href) + len(resolver._by_target)
    assert held <= len(crawler.visited) + 3 * memo.FLOOR, (held, len(crawler.visited))



def test_a_thread_writing_while_another_forgets_the_older_half_breaks_nothing(monkeypatch):
    """Forgetting copies the dict, and a copy is not one step: on Python 3.11 a garbage
    collection during it may run another thread. Here the copy yields between entries, and the
    budget grows with each question (as Visited does), so a second thread finds room and writes
    while the first still copies: no RuntimeError may escape, and the bound still holds."""
    import itertools
    import threading
    import time

    class SlowToCopy(dict):
        def items(self):  # the copy, yielding the GIL after each entry
            for item in super().items():
                time.sleep(0.0005)
                yield item

    monkeypatch.setattr(memo, "FLOOR", 16)
    growing = itertools.count(100)
    m = Memo(10**9, lambda k, v: 1, budget=lambda: next(growing), share=1)
    m.data = SlowToCopy((n, n) for n in range(100))
    m.room = 100
    errors: list[BaseException] = []

    def write(key: str) -> None:
        try:
            m.put(key, key)
        except BaseException as e:  # noqa: BLE001 - the test reports any failure
            errors.append(e)

    halving = threading.Thread(target=write, args=("first",))
    halving.start()
    time.sleep(0.01)  # the first thread is copying now
    write("second")
    halving.join()
    assert errors == []
    assert m.data.get("first") == "first" and len(m) <= m.capacity()
