"""The spilling ToDo (minicrawl/spill/): the memory budget, the order per host across the spill
and the refill, every host seen by politeness, and the disk part's temporary directory."""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from minicrawl.core.interfaces import Item
from minicrawl.politeness.hosts import Hosts
from minicrawl.politeness.todo import ToDo
from minicrawl.spill.todo import SpillingToDo, item_bytes, row_bytes


@pytest.fixture
def spill_dir(tmp_path: Path) -> str:
    return str(tmp_path)


def drain(todo: SpillingToDo) -> list[Item]:
    taken = []
    while (item := todo.take()) is not None:
        taken.append(item)
        todo.done(item)
    return taken


def test_memory_stays_within_the_budget_and_the_rest_waits_on_disk(spill_dir: str) -> None:
    items = [Item(f"http://a.test/{i:04d}", 1, "http://a.test/") for i in range(1000)]
    budget = 20 * item_bytes(items[0])
    todo = SpillingToDo(ToDo(), budget, temp_dir=spill_dir)
    todo.put_many(items)
    f = todo.figures()
    assert f["todo_in_memory"] == 20 and f["todo_memory_bytes"] <= budget
    assert f["todo_on_disk"] == 980 == f["todo_spilled"] and f["todo_disk_used_bytes"] > 0
    assert f["todo_disk_bytes"] == sum(row_bytes(i) for i in items[20:])
    assert f["todo_memory_bytes"] == sum(item_bytes(i) for i in items[:20])
    assert len(todo) == 1000 and todo.unfinished == 1000
    most = 0
    taken = []
    while (item := todo.take()) is not None:
        most = max(most, todo.figures()["todo_memory_bytes"])
        taken.append(item)
        todo.done(item)
    assert taken == items  # one host: first in, first out across the spill and the refills
    assert most <= budget
    assert todo.figures()["todo_on_disk"] == 0 and len(todo) == 0
    todo.close()


def test_each_hosts_line_stays_fifo_while_links_keep_spilling_and_refilling(spill_dir) -> None:
    """Items of five hosts put in random batches while others are taken: each host's items
    come out in the order they were put, every one once."""
    rng = random.Random(38)
    todo = SpillingToDo(ToDo(), 30 * item_bytes(Item("http://h0.test/0000")), temp_dir=spill_dir)
    put: dict[str, list[str]] = {}
    out: dict[str, list[str]] = {}
    n = 0
    for _ in range(300):
        batch = []
        for _ in range(rng.randrange(0, 12)):
            host = f"h{rng.randrange(5)}.test"
            url = f"http://{host}/{n:04d}"
            n += 1
            put.setdefault(host, []).append(url)
            batch.append(Item(url))
        todo.put_many(batch)
        for _ in range(rng.randrange(0, 8)):
            item = todo.take()
            if item is None:
                break
            out.setdefault(item.url.split("/")[2], []).append(item.url)
            todo.done(item)
    for item in drain(todo):
        out.setdefault(item.url.split("/")[2], []).append(item.url)
    assert todo.figures()["todo_spilled"] > n // 2  # it did spill, and refill
    assert out == put
    todo.close()


def test_a_host_whose_urls_are_on_disk_is_still_seen_by_politeness(spill_dir: str) -> None:
    """Memory full of host a's URLs (a rests 5 s between requests), host b's on disk but its
    first: b is handed out at once, and b's next comes back from disk when it is taken."""
    hosts = Hosts(per_host=1)  # a's gap is its own (a Crawl-delay, say): 5 s
    todo = SpillingToDo(ToDo(hosts), 10 * item_bytes(Item("http://a.test/000")),
                        temp_dir=spill_dir)
    todo.put_many([Item(f"http://a.test/{i:03d}") for i in range(50)])
    todo.put_many([Item(f"http://b.test/{i:03d}") for i in range(50)])
    assert todo.figures()["todo_in_memory"] == 11  # a's first ten, b's first one
    a0 = todo.take()
    hosts.take(a0, "a.test", 5.0, None)
    hosts.release(a0, "a.test", 5.0, 0.0)
    todo.done(a0)
    got = []
    started = time.monotonic()
    for _ in range(3):
        item = todo.take()
        got.append(item.url)
        hosts.take(item, "b.test", 0.0, None)
        hosts.release(item, "b.test", 0.0, 0.0)
        todo.done(item)
    assert got == ["http://b.test/000", "http://b.test/001", "http://b.test/002"]
    assert time.monotonic() - started < 2  # not waiting for a's gap
    todo.stop()
    todo.close()


def test_the_disk_part_is_made_at_the_first_spill_and_removed_on_close(spill_dir) -> None:
    todo = SpillingToDo(ToDo(), 1000, temp_dir=spill_dir)
    todo.put(Item("http://a.test/0"))
    assert todo.directory is None and list(Path(spill_dir).iterdir()) == []
    todo.put_many([Item(f"http://a.test/{i}") for i in range(1, 20)])
    directory = todo.directory
    assert directory is not None and directory.parent == Path(spill_dir)
    assert (directory / "todo-spill.db").exists()
    todo.close()
    assert not directory.exists() and list(Path(spill_dir).iterdir()) == []
    assert todo.figures()["todo_disk_peak_bytes"] > 0  # the bill stays readable
    todo.put_many([Item(f"http://a.test/late{i}") for i in range(20)])  # a straggler's links
    assert list(Path(spill_dir).iterdir()) == [] and todo.directory is None  # no new dir


def test_a_retry_waits_in_memory_and_keeps_its_time(spill_dir: str) -> None:
    todo = SpillingToDo(ToDo(), 0, temp_dir=spill_dir)
    todo.put_many([Item("http://a.test/0"), Item("http://a.test/1")])
    first = todo.take()
    todo.put(Item("http://a.test/0", attempt=1), not_before=time.monotonic() + 0.3)
    todo.done(first)
    assert (second := todo.take()).url == "http://a.test/1"  # the retry is not due yet
    todo.done(second)
    started = time.monotonic()
    retry = todo.take()
    assert retry.attempt == 1 and time.monotonic() - started >= 0.2
    todo.done(retry)
    assert todo.take() is None
    todo.close()
