"""ToDo's contract (interfaces.Frontier), run over every implementation — the core's, run.py's
host-aware one (and the same taken in turns, fed by a seed reader, and spilling to disk), and the
shared crawl's in Redis: FIFO hand-out, each item once, and the end of the crawl — empty *and*
no worker busy. Then run.py's richer ToDo (seams.PoliteFrontier), over each of its own: an item
held until its time, an item given back, what is waiting and unfinished, stopped, figures."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from minicrawl.core.interfaces import Frontier, Item
from minicrawl.core.todo import ToDo
from minicrawl.frontier.disk import SpillingToDo
from minicrawl.frontier.gate import TokenGate
from minicrawl.frontier.todo import ToDo as HostToDo
from minicrawl.frontier.turns import TakingTurns
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.todo import RedisToDo
from minicrawl.seams import PoliteFrontier
from minicrawl.seeds import SeedFeed

IMPLEMENTATIONS: dict[str, Callable[[], Frontier]] = {
    "core": ToDo,
    "run.py": HostToDo,  # no politeness asked: a plain breadth-first queue
    # run.py's workers take in turns (frontier/turns.py); 16 turns: the suite's most at once
    "turns": lambda: TakingTurns(HostToDo(), TokenGate(16)),
    # run.py's, spilling: a budget of none keeps only each host's next item in memory, one
    # of two items keeps spilling and refilling as the suite's queues grow and drain
    "spill-all": lambda: SpillingToDo(HostToDo(), memory_bytes=0),
    "spill-some": lambda: SpillingToDo(HostToDo(), memory_bytes=500),
    # run.py's while a thread reads seed files into it: here the feed has ended (until then
    # its take waits for the next chunk, not for the end: tests/test_seeds.py)
    "seed-feed": lambda: fed_all(SeedFeed(HostToDo())),
}
POLITE = ("run.py", "spill-all", "spill-some")  # run.py's PoliteFrontiers (and "redis")


def fed_all(feed: SeedFeed) -> SeedFeed:
    feed.finish()
    return feed


def make(name: str, request: pytest.FixtureRequest) -> Iterator[Frontier]:
    if name != "redis":
        todo = IMPLEMENTATIONS[name]()
        yield todo
        if isinstance(todo, SpillingToDo):
            todo.close()
        return
    url = request.getfixturevalue("redis_server").url  # the shared crawl's, in a real server
    conn = SharedRedis(url, "t" + uuid.uuid4().hex[:8])
    shared = RedisToDo(conn)
    yield shared
    shared.close()  # its heartbeat thread ends now (after stop(): at its next beat, 7.5 s on)
    conn.close()


@pytest.fixture(params=[*sorted(IMPLEMENTATIONS), "redis"])
def todo(request: pytest.FixtureRequest) -> Iterator[Frontier]:
    yield from make(request.param, request)


@pytest.fixture(params=[*POLITE, "redis"])
def polite(request: pytest.FixtureRequest) -> Iterator[PoliteFrontier]:
    yield from make(request.param, request)


# run.py's ToDos and the wrappers its workers take from: each honours an item's ``not_before``
# (the core's ToDo does not: the core never sets it)
@pytest.fixture(params=[*POLITE, "turns", "seed-feed", "redis"])
def holding(request: pytest.FixtureRequest) -> Iterator[Frontier]:
    yield from make(request.param, request)


def in_thread(fn) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    return t, out


def test_first_in_first_out(todo) -> None:
    items = [Item(f"http://a.test/{i}", depth=i) for i in range(5)]
    for item in items:
        todo.put(item)
    taken = [todo.take() for _ in items]
    assert taken == items
    for item in taken:
        todo.done(item)
    assert todo.take() is None


def test_empty_and_nobody_busy_is_the_end(todo) -> None:
    assert todo.take() is None


def test_waits_while_a_worker_is_busy_then_gets_its_link(todo) -> None:
    todo.put(Item("http://a.test/"))
    seed = todo.take()
    finish = threading.Event()

    def other_worker() -> Item | None:  # ToDo is empty, but the seed is in flight
        item = todo.take()
        finish.wait(5)
        if item is not None:
            todo.done(item)  # the worker that took an item is the one that finishes it
        return item

    t, out = in_thread(other_worker)
    time.sleep(0.2)
    assert t.is_alive() and out == []  # it waits rather than ending the crawl
    link = Item("http://a.test/x", 1, "http://a.test/")
    todo.put(link)  # the busy worker found a link
    todo.done(seed)
    finish.set()
    t.join(5)
    assert out == [link]
    assert todo.take() is None


def test_last_done_wakes_every_waiting_worker(todo) -> None:
    todo.put(Item("http://a.test/"))
    seed = todo.take()
    waiting = [in_thread(todo.take) for _ in range(8)]
    time.sleep(0.2)
    assert all(t.is_alive() for t, _ in waiting)
    todo.done(seed)  # nothing new was put: the crawl is over
    for t, out in waiting:
        t.join(5)
        assert out == [None]


def test_stop_ends_the_crawl_and_drops_the_rest(todo) -> None:
    todo.put(Item("http://a.test/1"))
    todo.put(Item("http://a.test/2"))
    first = todo.take()
    t, out = in_thread(lambda: (todo.take(), todo.take()))
    t.join(5)
    todo.stop()
    assert todo.take() is None
    todo.put(Item("http://a.test/3"))  # a worker finishing after stop: dropped
    todo.done(first)
    assert todo.take() is None


def test_every_item_taken_exactly_once_by_racing_workers(todo) -> None:
    """16 workers, each putting two children per item down to depth 8: every item is taken
    exactly once, and all workers see the end."""
    todo.put(Item("0"))
    taken: list[str] = []
    lock = threading.Lock()

    def work() -> None:
        while (item := todo.take()) is not None:
            with lock:
                taken.append(item.url)
            if item.depth < 8:
                for child in "ab":
                    todo.put(Item(item.url + child, item.depth + 1))
            todo.done(item)

    threads = [threading.Thread(target=work) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
        assert not t.is_alive()
    assert len(taken) == len(set(taken)) == 2 ** 9 - 1


def test_put_many_queues_a_pages_links_in_order_and_says_how_many(todo) -> None:
    items = [Item(f"http://a.test/{i}", 1, "http://a.test/") for i in range(4)]
    assert todo.put_many([]) == 0
    assert todo.put_many(items) == 4
    taken = [todo.take() for _ in items]
    assert taken == items
    for item in taken:
        todo.done(item)
    assert todo.take() is None


def test_after_stop_put_many_hands_nothing_out(todo) -> None:
    """A stopped ToDo may drop a late worker's links (the core's says it took none) or keep
    them (a shared one: for the other processes); it hands none out here."""
    todo.stop()
    assert todo.put_many([Item("http://a.test/late")]) in (0, 1)
    assert todo.take() is None


# -- run.py's ToDo: seams.PoliteFrontier ------------------------------------------------------

def test_an_item_put_with_not_before_waits_until_then(polite) -> None:
    polite.put(Item("http://a.test/retry", attempt=1, not_before=time.monotonic() + 0.3))
    started = time.monotonic()
    item = polite.take()  # (not in the assert: pytest would take again to explain a failure)
    assert item == Item("http://a.test/retry", attempt=1)  # (its not_before 0.0)
    assert time.monotonic() - started >= 0.25
    polite.done(item)
    assert polite.take() is None


def test_a_retry_in_put_many_waits_for_its_time_and_the_others_do_not(holding) -> None:
    """A retry goes back through the door (``Door.back``: ``put_many``) with its wait in the
    item: not handed out before its ``not_before``, handed out after it with ``not_before``
    0.0 (equal, and hashed, as any item: the one ``done`` is told of); an item beside it that
    is ready is not held with it. (Another host's: see test_spill.py for a host's own.)"""
    retry = Item("http://a.test/r", 1, "http://a.test/", attempt=1,
                 not_before=time.monotonic() + 0.3)
    ready = Item("http://b.test/", 1, "http://a.test/")
    assert holding.put_many([retry, ready]) == 2
    started = time.monotonic()
    assert holding.take() == ready and time.monotonic() - started < 0.25
    holding.done(ready)
    taken = holding.take()
    assert time.monotonic() - started >= 0.25
    assert taken == Item("http://a.test/r", 1, "http://a.test/", attempt=1)
    assert taken is not None and taken.not_before == 0.0
    holding.done(taken)
    assert holding.take() is None


def test_an_item_whose_not_before_is_over_is_taken_at_once(holding) -> None:
    holding.put(Item("http://a.test/r", attempt=1, not_before=time.monotonic() - 1))
    started = time.monotonic()
    taken = holding.take()
    assert taken == Item("http://a.test/r", attempt=1)
    assert time.monotonic() - started < 0.25
    holding.done(taken)
    assert holding.take() is None


def test_an_item_given_back_is_handed_out_again_once_not_before_its_time(polite) -> None:
    polite.put(Item("http://a.test/a"))
    item = polite.take()
    polite.put_back(item, time.monotonic() + 0.3)  # politeness said: not now
    polite.done(item)  # its worker is done with it (unfetched)
    started = time.monotonic()
    assert polite.take() == item
    assert time.monotonic() - started >= 0.25
    polite.done(item)
    assert polite.take() is None  # once: given back once, taken once more


def test_an_item_given_back_without_a_time_comes_back_at_once(polite) -> None:
    polite.put(Item("http://a.test/a"))
    item = polite.take()
    polite.put_back(item)
    polite.done(item)
    assert polite.take() == item
    polite.done(item)
    assert polite.take() is None


def test_len_counts_the_waiting_and_unfinished_those_in_flight_too(polite) -> None:
    assert len(polite) == polite.unfinished == 0
    polite.put_many([Item(f"http://a.test/{i}") for i in range(3)])
    polite.put(Item("http://b.test/later", not_before=time.monotonic() + 30))  # delayed: waits
    assert len(polite) == polite.unfinished == 4
    item = polite.take()
    assert (len(polite), polite.unfinished) == (3, 4)  # one in flight
    polite.done(item)
    assert (len(polite), polite.unfinished) == (3, 3)


def test_stopped_once_stop_was_called(polite) -> None:
    assert not polite.stopped
    polite.stop()
    assert polite.stopped and polite.take() is None


def test_figures_say_where_the_waiting_items_are(polite) -> None:
    """Each figure is a ``todo_*`` stat; those it gives add up to what is waiting."""
    polite.put_many([Item(f"http://a.test/{i:03d}") for i in range(40)])
    figures = polite.figures()
    assert all(k.startswith("todo_") and isinstance(v, int) for k, v in figures.items())
    if "todo_in_memory" in figures:  # (a shared ToDo's items wait in Redis: it says nothing)
        assert figures["todo_in_memory"] + figures.get("todo_on_disk", 0) == len(polite) == 40
