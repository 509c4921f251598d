"""The spilling ToDo (minicrawl/frontier/disk.py): the memory budget, the order per host across
the spill and the refill, every host seen by politeness, the disk part's nameless scratch file,
and a disk that fails (the URLs stay in memory, said once, a loss counted)."""

from __future__ import annotations

import logging
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from minicrawl.core.interfaces import Item
from minicrawl.frontier.disk import SpillingToDo, item_bytes, row_bytes
from minicrawl.frontier.hosts import Hosts
from minicrawl.frontier.todo import ToDo

ROOT = Path(__file__).resolve().parent.parent


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


def test_an_item_to_check_comes_back_from_the_disk_still_to_check(spill_dir: str) -> None:
    # --check-links: a URL to check and the same URL to crawl are two items; the spill keeps
    # which is which (else an image would be crawled, or a page only checked).
    items = [Item(f"http://a.test/{i // 2:04d}", 1, "http://a.test/", check=bool(i % 2))
             for i in range(200)]
    todo = SpillingToDo(ToDo(), 10 * item_bytes(items[0]), temp_dir=spill_dir)
    todo.put_many(items)
    assert todo.figures()["todo_on_disk"] > 100
    assert drain(todo) == items
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
    hosts.take(a0, "a.test", 5.0)
    hosts.release(a0, "a.test", 5.0, 0.0)
    todo.done(a0)
    got = []
    started = time.monotonic()
    for _ in range(3):
        item = todo.take()
        got.append(item.url)
        hosts.take(item, "b.test", 0.0)
        hosts.release(item, "b.test", 0.0, 0.0)
        todo.done(item)
    assert got == ["http://b.test/000", "http://b.test/001", "http://b.test/002"]
    assert time.monotonic() - started < 2  # not waiting for a's gap
    todo.stop()
    todo.close()


def open_scratch_files(directory: str | Path, pid: int | str = "self") -> list[str]:
    """What process ``pid`` holds open under ``directory``, as /proc names it (an unlinked
    file: ``path (deleted)``), sorted."""
    held = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile (the listing's own descriptor)
            continue
        if target.startswith(f"{directory}/"):
            held.append(target)
    return sorted(held)


def test_the_disk_part_is_a_file_without_a_name_made_at_the_first_spill(spill_dir) -> None:
    """The scratch file is unlinked as soon as SQLite has it open: the directory never lists
    it, so nothing is left whatever ends the process; two descriptors hold it (SQLite's, and
    the one whose size is the disk used) and no other file is opened, until ``close``."""
    todo = SpillingToDo(ToDo(), 1000, temp_dir=spill_dir)
    todo.put(Item("http://a.test/0"))
    assert todo.directory is None and open_scratch_files(spill_dir) == []
    todo.put_many([Item(f"http://a.test/{i}") for i in range(1, 2000)])
    assert todo.directory == Path(spill_dir) and list(Path(spill_dir).iterdir()) == []
    held = open_scratch_files(spill_dir)
    assert len(held) == 2 and held[0] == held[1], held
    assert re.fullmatch(rf"{spill_dir}/minicrawl-todo-\w+\.db \(deleted\)", held[0]), held
    used = todo.figures()["todo_disk_used_bytes"]
    assert used > 50_000  # ~1,990 rows of ~50 bytes: the file's size, from its descriptor
    assert drain(todo)[-1].url == "http://a.test/1999"
    assert open_scratch_files(spill_dir) == held  # the same file, reused
    todo.close()
    assert open_scratch_files(spill_dir) == [] and todo.directory is None
    assert todo.figures()["todo_disk_peak_bytes"] >= used  # the bill stays readable
    todo.put_many([Item(f"http://a.test/late{i}") for i in range(20)])  # a straggler's links
    assert open_scratch_files(spill_dir) == [] and list(Path(spill_dir).iterdir()) == []
    assert todo.figures()["todo_in_memory"] == 20  # stay in memory


def failed_todo(temp_dir: str | Path, budget_items: int = 10) -> SpillingToDo:
    return SpillingToDo(ToDo(), budget_items * item_bytes(Item("http://h0.test/00000")),
                        temp_dir=str(temp_dir))


def put_and_take(todo: SpillingToDo, n: int, hosts: int = 3) -> tuple[dict, dict]:
    """``n`` items of ``hosts`` hosts put in batches of ten, about one taken per batch, the
    rest drained: each host's items as put and as taken."""
    put: dict[str, list[str]] = {}
    out: dict[str, list[str]] = {}
    for start in range(0, n, 10):
        batch = [Item(f"http://h{i % hosts}.test/{i:05d}") for i in range(start, start + 10)]
        for item in batch:
            put.setdefault(item.url.split("/")[2], []).append(item.url)
        todo.put_many(batch)
        if (item := todo.take()) is not None:
            out.setdefault(item.url.split("/")[2], []).append(item.url)
            todo.done(item)
    for item in drain(todo):
        out.setdefault(item.url.split("/")[2], []).append(item.url)
    return put, out


def todo_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the spilling ToDo logged (another test's stray thread may log meanwhile)."""
    return [r.getMessage() for r in caplog.records
            if Path(r.pathname).parts[-2:] == ("frontier", "disk.py")]


@pytest.mark.parametrize("where", ["a file", "missing"])
def test_a_disk_that_cannot_be_made_keeps_every_url_in_memory(tmp_path, caplog, where) -> None:
    """TMPDIR a file, or a directory that does not exist: one warning naming it and why at
    the first spill, then every URL waits in memory (past the budget), none lost, in order."""
    temp_dir = tmp_path / "tmp"
    if where == "a file":
        temp_dir.write_text("not a directory")
    todo = failed_todo(temp_dir)
    with caplog.at_level(logging.WARNING, logger="minicrawl"):
        put, out = put_and_take(todo, 3000)
    assert out == put  # every item, each host's in order
    why = "Not a directory" if where == "a file" else "No such file or directory"
    assert todo_warnings(caplog) == [
        f"ToDo cannot keep URLs on disk in {temp_dir}: {why}; every waiting URL stays in "
        "memory from now on, past --frontier-memory"]
    f = todo.figures()
    assert f["todo_disk_failed"] == 1 and f["todo_disk_lost"] == 0 == f["todo_spilled"]
    assert todo.failure == f"ToDo cannot keep URLs on disk in {temp_dir}: {why}"
    todo.close()


FILLS = """
import logging, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
logging.basicConfig(format="%(levelname)s %(message)s")
sys.path.insert(0, "tests")
from test_spill import failed_todo, put_and_take
todo = failed_todo(sys.argv[1], budget_items=50)
put, out = put_and_take(todo, 30_000)
print(out == put, sum(map(len, out.values())), sorted(todo.figures().items()))
"""


def test_a_disk_that_fills_later_brings_its_urls_back_into_memory(tmp_path) -> None:
    """The file may not grow past 64 KB (RLIMIT_FSIZE, as a full disk): when an append fails,
    what waited on disk is read back into memory, said in one line; no URL lost, each host's
    line still first in, first out, and nothing spills any more."""
    done = subprocess.run([sys.executable, "-c", FILLS, str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert re.fullmatch(
        rf"WARNING ToDo cannot keep URLs on disk in {tmp_path}: disk I/O error; the [\d,]+ "
        "waiting there came back into memory; every waiting URL stays in memory from now "
        "on, past --frontier-memory\n", done.stderr), done.stderr
    same, taken, figures = done.stdout.split(" ", 2)
    assert same == "True" and taken == "30000"
    f = dict(eval(figures))
    assert f["todo_disk_failed"] == 1 and f["todo_disk_lost"] == 0
    assert 0 < f["todo_spilled"] < 30_000 and 50_000 < f["todo_disk_peak_bytes"] <= 65536
    assert list(tmp_path.iterdir()) == []


def test_urls_that_cannot_be_read_back_are_counted_lost(spill_dir, caplog) -> None:
    """The file emptied under SQLite (as a disk that fails to read): the refill fails, the
    rows still readable come back, the rest are counted lost, said in one line; every item
    taken is one that was put, once, in its host's order."""
    todo = failed_todo(spill_dir)
    items = [Item(f"http://h{i % 3}.test/{i:05d}") for i in range(60_000)]
    for start in range(0, len(items), 10):
        todo.put_many(items[start:start + 10])
    on_disk = todo.figures()["todo_on_disk"]
    assert on_disk > 59_000
    os.ftruncate(todo._disk._scratch._fd, 0)  # (the descriptor kept for the file's size)
    with caplog.at_level(logging.WARNING, logger="minicrawl"):
        taken = drain(todo)
    f = todo.figures()
    assert f["todo_disk_failed"] == 1 and f["todo_disk_lost"] > 40_000  # beyond SQLite's cache
    (said,) = todo_warnings(caplog)
    assert f"{f['todo_disk_lost']:,} waiting there could not be read back and are lost " \
           "to this run (with --state its journal keeps them: run it again to fetch them)" in said
    assert len(taken) + f["todo_disk_lost"] == len(items)
    assert len({i.url for i in taken}) == len(taken)  # once each
    for host in ("h0.test", "h1.test", "h2.test"):
        line = [i.url for i in taken if f"//{host}/" in i.url]
        assert line == sorted(line)
    assert len(todo) == 0 and todo.unfinished == 0  # the crawl can end
    todo.close()


def test_a_retry_waits_in_memory_and_keeps_its_time(spill_dir: str) -> None:
    todo = SpillingToDo(ToDo(), 0, temp_dir=spill_dir)
    todo.put_many([Item("http://a.test/0"), Item("http://a.test/1")])
    first = todo.take()
    todo.put_many([Item("http://a.test/0", attempt=1, not_before=time.monotonic() + 0.3)])
    assert todo.figures()["todo_on_disk"] == 0  # (the disk keeps no time)
    todo.done(first)
    assert (second := todo.take()).url == "http://a.test/1"  # the retry is not due yet
    todo.done(second)
    started = time.monotonic()
    retry = todo.take()
    assert retry == Item("http://a.test/0", attempt=1)  # (its not_before 0.0 again)
    assert time.monotonic() - started >= 0.2
    todo.done(retry)
    assert todo.take() is None
    todo.close()
