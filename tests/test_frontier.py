"""ToDo: FIFO order, delayed items, and the termination rule."""

from __future__ import annotations

import threading
import time

from minicrawl.todo import Item, ToDo


def test_fifo_is_breadth_first():
    todo = ToDo()
    todo.put_many([Item(f"u{i}", 0) for i in range(3)])
    todo.put(Item("deeper", 1))
    assert [todo.get().url for _ in range(4)] == ["u0", "u1", "u2", "deeper"]


def test_get_returns_none_only_when_empty_and_no_worker_busy():
    todo = ToDo()
    todo.put(Item("seed", 0))
    todo.get()
    result: list = []
    waiter = threading.Thread(target=lambda: result.append(todo.get()))
    waiter.start()
    time.sleep(0.1)
    assert waiter.is_alive(), "an empty queue with a busy worker is not the end"
    todo.put(Item("child", 1))  # the busy worker found a link
    todo.task_done()
    waiter.join(2)
    assert result[0].url == "child"
    todo.task_done()
    assert todo.get() is None and todo.unfinished == 0


def test_delayed_items_wait_without_blocking_ready_ones():
    todo = ToDo()
    todo.put(Item("later", 0), not_before=time.monotonic() + 0.3)
    todo.put(Item("now", 0))
    assert todo.get().url == "now"
    todo.task_done()
    started = time.monotonic()
    assert todo.get().url == "later"
    assert time.monotonic() - started >= 0.25
    todo.task_done()
    assert todo.get() is None


def test_close_wakes_every_waiting_worker():
    todo = ToDo()
    todo.put(Item("busy", 0))
    todo.get()
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(todo.get())) for _ in range(5)]
    for t in threads:
        t.start()
    todo.close()
    for t in threads:
        t.join(2)
    assert results == [None] * 5


def test_drain_returns_what_was_left():
    todo = ToDo()
    todo.put(Item("a", 0))
    todo.put(Item("b", 0), not_before=time.monotonic() + 60)
    assert [i.url for i in todo.drain()] == ["a", "b"]
    assert len(todo) == 0 and todo.unfinished == 0
