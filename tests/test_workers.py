"""How many workers work at once: as many as keep the CPU busy, between the cores and --threads."""

from __future__ import annotations

import threading

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.core.todo import ToDo
from minicrawl.demo.site import Resource, Slow
from minicrawl.frontier.gate import TokenGate
from minicrawl.frontier.turns import TakingTurns
from minicrawl.workers import CROWDED_LOOKS, PERIOD, WAITED_LOOKS, WorkLimit


class Clocks:
    """A CPU clock and a wall clock the test moves by hand."""

    def __init__(self) -> None:
        self.cpu_s = self.wall_s = 0.0

    def look(self, limit: WorkLimit, cores_used: float) -> int:
        self.wall_s += PERIOD
        self.cpu_s += PERIOD * cores_used
        limit.adjust()
        return limit.width

    def cpu(self) -> float:
        return self.cpu_s

    def clock(self) -> float:
        return self.wall_s


def take_all(gate: TokenGate) -> None:
    while gate.free:
        gate.__enter__()


def test_idle_cpu_with_every_turn_taken_widens_fast_up_to_the_threads():
    clocks = Clocks()
    limit = WorkLimit(16, cores=2, cpu=clocks.cpu, clock=clocks.clock)
    assert limit.width == 2  # starts at the cores
    assert clocks.look(limit, 0.1) == 2  # idle, but a turn is free: nobody waits for one
    widths = []
    for _ in range(7):
        take_all(limit.gate)  # all workers at work, the CPU idle: they wait on the network
        widths.append(clocks.look(limit, 0.1))
    assert widths == [4, 8, 16, 16, 16, 16, 16]  # doubles: a short crawl has no time to lose


def test_under_one_core_with_every_turn_taken_means_waiting_on_the_network():
    """Parsing runs beside the GIL, so workers that only wait on the CPU keep more than one core
    busy; at 0.9 cores they also wait on the network, and more of them help."""
    clocks = Clocks()
    limit = WorkLimit(16, cores=2, cpu=clocks.cpu, clock=clocks.clock)
    take_all(limit.gate)
    assert clocks.look(limit, 0.9) == 4
    take_all(limit.gate)
    assert clocks.look(limit, 1.05) == 4  # busy enough: stays


def test_a_crowded_cpu_narrows_only_when_it_lasts_and_never_under_the_cores():
    clocks = Clocks()
    limit = WorkLimit(16, cores=2, cpu=clocks.cpu, clock=clocks.clock)
    limit.gate.widen(14)
    assert limit.width == 16
    for _ in range(5):  # short peaks (one large page) between calm looks: no change
        assert clocks.look(limit, 1.5) == 16
        assert clocks.look(limit, 0.9) == 16
    widths = [clocks.look(limit, 1.5) for _ in range(CROWDED_LOOKS * 9)]
    assert widths[CROWDED_LOOKS - 2] == 16 and widths[CROWDED_LOOKS - 1] == 12
    assert widths[-1] == 2 and min(widths) == 2  # down to the cores, not under
    take_all(limit.gate)
    assert clocks.look(limit, 1.05) == 2  # busy enough: stays


def test_turns_held_waiting_on_todo_are_given_up_and_not_widened_again_for_a_while():
    """Two workers wait inside ToDo for a whole look (their host is BUSY): the CPU is idle and
    every turn is taken, but more turns would only wait too; the two are given up, and the
    gate widens again only ``WAITED_LOOKS`` looks later, when nobody waited."""
    clocks = Clocks()
    limit = WorkLimit(16, cores=2, cpu=clocks.cpu, clock=clocks.clock)
    limit.gate.widen(2)  # 4 turns
    take_all(limit.gate)
    waiters = [threading.Thread(target=limit.waiting.begin) for _ in range(2)]
    for thread in waiters:  # each thread starts its wait (begin() returns at once)
        thread.start()
        thread.join()
    assert clocks.look(limit, 0.1) == 2  # 2 turns waited the whole look: given up
    assert limit.waiting.total() > 0
    limit.waiting = type(limit.waiting)(clocks.clock)  # nobody waits any more
    limit._last = (clocks.cpu(), clocks.clock(), 0.0)
    take_all(limit.gate)
    widths = [clocks.look(limit, 0.1) for _ in range(WAITED_LOOKS)]
    assert widths == [2] * (WAITED_LOOKS - 1) + [4]  # held back, then doubles as before


def test_a_wait_inside_todo_counts_while_it_lasts():
    clocks = Clocks()
    limit = WorkLimit(16, cores=2, cpu=clocks.cpu, clock=clocks.clock)
    limit.waiting.begin()
    clocks.wall_s += 0.25
    assert abs(limit.waiting.total() - 0.25) < 1e-9  # not over yet, counted already
    limit.waiting.end()
    clocks.wall_s += 1.0
    assert abs(limit.waiting.total() - 0.25) < 1e-9


def test_one_core_and_one_thread_need_no_adjusting():
    clocks = Clocks()
    alone = WorkLimit(1, cores=8, cpu=clocks.cpu, clock=clocks.clock)
    take_all(alone.gate)
    assert [clocks.look(alone, u) for u in (0.0, 2.0, 2.0, 2.0, 2.0)] == [1] * 5


def test_with_latency_the_server_sees_all_threads_at_work(server):
    """Each page answers after 0.1 s: the workers wait on the network, the CPU idles, so the
    crawl widens from the cores to all 16 threads; the server counts its busiest moment."""
    slow = Slow(Resource(b"<p>leaf</p>"), 0.1)
    server.pages["/"] = Resource("".join(f'<a href="/p/{n}">p</a>' for n in range(240)).encode())
    for n in range(240):
        server.pages[f"/p/{n}"] = slow
    crawler = Crawler([server.url("/")], threads=16, delay=0, per_host=16, ignore_robots=True)
    crawler.run()
    counts = server.fetch_counts()
    assert len(counts) == 241 and set(counts.values()) == {1}
    assert slow.peak >= 14, slow.peak  # 2 at work would have taken 12 s instead of ~2


def test_one_host_two_per_host_keeps_the_turns_near_what_can_be_in_flight(server):
    """One host, at most 2 requests in flight to it (run.py's default), pages slow to answer:
    the CPU idles, yet more turns would only wait inside ToDo for the host. The gate stays
    near 2 (it may try 4 now and then) instead of widening to all 16 threads."""
    slow = Slow(Resource(b"<p>leaf</p>"), 0.02)
    server.pages["/"] = Resource("".join(f'<a href="/p/{n}">p</a>' for n in range(150)).encode())
    for n in range(150):
        server.pages[f"/p/{n}"] = slow
    crawler = Crawler([server.url("/")], threads=16, delay=0, per_host=2, ignore_robots=True)
    widths: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(PERIOD / 4):
            widths.append(crawler.workers.at_work.width)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    crawler.run()
    done.set()
    watcher.join(5)
    counts = server.fetch_counts()
    assert len(counts) == 151 and set(counts.values()) == {1}
    assert slow.peak <= 2
    assert widths and max(widths) <= 4, widths  # without the waiting measured: 16


def test_taking_turns_lets_at_most_the_gates_width_of_workers_work_at_once():
    """The ToDo taken in turns, 2 turns: two workers hold an item each; a third worker waits
    for a turn (not for an item) until one of them is done and the gate narrows; a worker keeps
    its turn from item to item while the gate keeps its width."""
    todo = TakingTurns(ToDo(), TokenGate(2))
    for n in range(5):
        todo.put(Item(f"http://a.test/{n}"))
    got: dict[str, list[Item | None]] = {"a": [], "b": [], "c": []}
    finish = {name: threading.Event() for name in got}

    def worker(name: str) -> None:  # takes one item, holds it until told, takes the next
        got[name].append(item := todo.take())
        finish[name].wait(5)
        todo.done(item)
        got[name].append(todo.take())

    threads = {name: threading.Thread(target=worker, args=(name,), daemon=True) for name in got}
    threads["a"].start()
    threads["b"].start()
    threads["b"].join(0.2)
    threads["c"].start()
    threads["c"].join(0.3)
    assert got["c"] == []  # items are waiting, but no turn is free
    finish["a"].set()
    threads["a"].join(5)  # "a" kept its turn: the next item is its own
    assert got["a"] == [Item("http://a.test/0"), Item("http://a.test/2")] and got["c"] == []
    todo.gate.narrow(1)  # one turn now: "b" hands its turn over when done, not on to "c"
    finish["b"].set()
    threads["b"].join(0.3)
    assert len(got["b"]) == 1 and got["c"] == []  # "b" gave its turn back: it waits now
    todo.gate.widen(2)
    threads["c"].join(5)
    threads["b"].join(5)
    assert got["c"][0] is not None and got["b"][1] is not None  # both through the widened gate


def test_the_end_of_the_crawl_gives_back_every_turn():
    todo = TakingTurns(ToDo(), TokenGate(2))
    todo.put(Item("http://a.test/"))
    item = todo.take()
    todo.done(item)
    assert [todo.take() for _ in range(5)] == [None] * 5  # no turn kept by a None
    assert todo.gate.free == 2
