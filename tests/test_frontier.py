"""ToDo: FIFO order, delayed items, and the termination rule."""

from __future__ import annotations

import threading
import time

from minicrawl.core.interfaces import Item
from minicrawl.frontier.hosts import Hosts
from minicrawl.frontier.todo import ToDo


def test_fifo_is_breadth_first():
    todo = ToDo()
    todo.put_many([Item(f"u{i}", 0) for i in range(3)])
    todo.put(Item("deeper", 1))
    assert [todo.take().url for _ in range(4)] == ["u0", "u1", "u2", "deeper"]


def test_get_returns_none_only_when_empty_and_no_worker_busy():
    todo = ToDo()
    todo.put(Item("seed", 0))
    seed = todo.take()
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(todo.take()))
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive(), "an empty queue with a busy worker is not the end"
    todo.put(Item("child", 1))  # the busy worker found a link
    todo.done(seed)
    waiter.join(2)
    assert result[0].url == "child"
    todo.done(result[0])
    assert todo.take() is None and todo.unfinished == 0


def test_delayed_items_wait_without_blocking_ready_ones():
    todo = ToDo()
    todo.put(Item("later", 0, not_before=time.monotonic() + 0.3))
    todo.put(Item("now", 0))
    assert (now := todo.take()).url == "now"
    todo.done(now)
    started = time.monotonic()
    assert (later := todo.take()).url == "later"
    assert time.monotonic() - started >= 0.25
    todo.done(later)
    assert todo.take() is None


def test_a_retry_is_handed_out_as_any_item_and_done_finds_it():
    """Held by its time, queued with ``not_before`` 0.0: the item taken is the item ``done``
    and ``put_back`` look up by value (``_taken`` is keyed by the item)."""
    todo = ToDo()
    todo.put_many([Item("http://a.test/r", attempt=1, not_before=time.monotonic() + 0.1)])
    taken = todo.take()
    assert taken == Item("http://a.test/r", attempt=1)
    todo.put_back(Item("http://a.test/r", attempt=1))  # an equal item, not the same one
    assert len(todo) == 0  # found as taken: back in line only once its worker is done
    todo.done(taken)
    assert todo.take() == taken
    todo.done(taken)
    assert todo.take() is None and todo.unfinished == 0


def test_stop_wakes_every_waiting_worker():
    todo = ToDo()
    todo.put(Item("busy", 0))
    todo.take()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(todo.take())) for _ in range(5)]
    for t in threads:
        t.start()
    todo.stop()
    for t in threads:
        t.join(2)
    assert results == [None] * 5


# -- hosts: per-host lines, paced slots ---------------------------------------------------------

def test_a_host_is_handed_out_once_its_gap_is_over_and_others_meanwhile():
    hosts = Hosts(per_host=1, delay=0.2)
    todo = ToDo(hosts)
    todo.put_many([Item("http://a/1", 0), Item("http://a/2", 0), Item("http://b/1", 0)])
    assert (a1 := todo.take()).url == "http://a/1"
    assert hosts.take(a1, "a", 0.2) == 0.0  # the slot take() gave: the request starts
    hosts.release(a1, "a", 0.2, 0.0)
    todo.done(a1)
    assert (b1 := todo.take()).url == "http://b/1"  # a must wait its gap; b need not
    hosts.take(b1, "b", 0.2)
    hosts.release(b1, "b", 0.2, 0.0)
    todo.done(b1)
    started = time.monotonic()
    assert (a2 := todo.take()).url == "http://a/2"
    assert time.monotonic() - started >= 0.18
    todo.done(a2)
    assert todo.take() is None and todo.unfinished == 0


def test_per_host_slots_and_breadth_first_order_across_hosts():
    todo = ToDo(Hosts(per_host=2))
    todo.put_many([Item(f"http://a/{i}", 0) for i in range(3)] + [Item("http://b/0", 0)])
    got = [todo.take() for _ in range(3)]
    assert [i.url for i in got] == ["http://a/0", "http://a/1", "http://b/0"]  # a's third waits
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(todo.take()))
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive()
    todo.done(got[0])  # frees one of a's slots (an unused slot costs no gap)
    waiter.join(2)
    assert result[0].url == "http://a/2"


def test_a_url_put_back_keeps_its_turn_and_an_unused_slot_costs_no_gap():
    hosts = Hosts(per_host=1, delay=5.0)
    todo = ToDo(hosts)
    todo.put_many([Item(f"http://a/{i}", 0) for i in range(3)])
    first = todo.take()
    todo.put_back(first)  # e.g. robots.txt is being fetched: not now
    todo.done(first)
    assert (again := todo.take()).url == "http://a/0"  # at once (no request was made), first
    todo.done(again)  # refused (robots.txt disallows): again no gap
    assert (a1 := todo.take()).url == "http://a/1"
    assert hosts.take(a1, "a", 5.0) == 0.0
    hosts.release(a1, "a", 5.0, 0.0)
    todo.done(a1)
    assert hosts.take(Item("http://a/x"), "a", 5.0) > 4.9  # now the host's gap runs


def test_an_item_put_back_rejoins_its_line_when_its_worker_is_done_not_before():
    """Another worker must not take it while its first taker still holds it (that taker's
    done would be counted for it); an item put back that no worker held is in line at once."""
    todo = ToDo()
    todo.put(Item("http://a/0", 0))
    first = todo.take()
    todo.put_back(first)
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(todo.take()))
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive()  # not handed out again yet
    todo.done(first)
    waiter.join(2)
    assert result == [first]
    todo.done(first)
    stray = Item("http://b/0", 0)
    todo.put_back(stray)  # never taken here
    assert todo.take() == stray
    todo.done(stray)
    assert todo.take() is None and todo.unfinished == 0


def test_idle_host_records_are_bounded():
    hosts = Hosts(max_hosts=10)
    todo = ToDo(hosts)
    for n in range(100):
        todo.put(Item(f"http://h{n}/", 0))
        todo.done(todo.take())
    assert len(hosts) <= 10
    assert todo.take() is None
