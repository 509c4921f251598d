"""The worker threads: start them, let as many work at once as help, and wait for the last.

``--threads N`` starts N workers, but only ``at_work.width`` of them work at once (each takes a
turn around taking a ToDo item and visiting it: :mod:`minicrawl.frontier.turns`). Threads help while
workers wait on the network; once the CPU is busy they only make each other wait for the GIL
(on the Java API docs at 0 ms latency, 16 workers at once took 1.4× the CPU of one and more
wall time, 2 at once 0.7× the wall time). So every ``PERIOD`` the main thread looks at the CPU
the crawl used meanwhile: under one core means workers wait on the network (workers that only
wait for the CPU keep more than a core busy, since parsing runs beside the GIL), so more may work
if all turns are taken, twice as many at once; well over one core, for a while, means they crowd
the GIL, so fewer. It never goes under the number of cores, nor over N. (Widening by half, every
0.2 s, from under 0.7 cores made the 20 ms bench-site crawl, 2.7 s long, 30 % slower than
16 workers from the start: its workers were still 8 when its CPU-bound part began.)

The CPU alone cannot tell waiting on the network from waiting on ToDo: with one host and
``--per-host 2`` (run.py's default), two requests are in flight at most, and workers beyond them
wait inside ToDo for the host while holding a turn. So the turns' waiting is measured too
(:class:`~minicrawl.frontier.turns.Waiting`): turns held on average by workers waiting for an item
are given up (down to the cores), and the gate does not widen while any are, nor for
``WAITED_LOOKS`` looks after. (On the Java API docs at per-host 2, 16 workers drifted up to
16 turns with 14 of them waiting — every item handed over by a wake-up — at 1.2× the CPU and
1.1× the wall time of 2 threads.)

The main thread waits on an Event that the last worker sets, not on ``Thread.join``: a Ctrl-C
that interrupts CPython 3.11's join can leave the joined thread marked as stopped while it still
runs, and the crawl's files would then be closed under a worker writing its last page.

The limit is not the model's: without it every worker works at once and the crawl does the same
(Java API docs, 16 threads: the limit takes 12 % less memory and 8 % less time;
``bench/README.md``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence

from minicrawl.frontier.gate import TokenGate
from minicrawl.frontier.turns import Waiting

log = logging.getLogger("minicrawl")

PERIOD = 0.1  # seconds between two looks at the CPU
# The first looks come sooner: a crawl starts waiting on the network (its seeds' first answers),
# and at a look a PERIOD the gate took 0.3 s to open from the cores to 16 workers and 0.5 s to
# 64, the seeds' requests a few at a time meanwhile. Five looks 25 ms apart open it to 64 in
# 0.125 s (manyhosts at 50 ms, A/B: ×16/2 0.97 of the wall, ×64/8 0.95 with three such looks and
# 0.96 of that with five). A crawl that keeps the CPU busy is not widened at them either.
EARLY = (0.025,) * 5
IDLE = 1.0  # cores used under which more workers may work (and all turns are taken)
# Cores used over which fewer should: the GIL runs one thread's Python at a time, and only
# parsing and hashing run beside it. Only when it lasts (CROWDED_FOR seconds of looks in a row):
# a large page makes a short peak, and narrowing on it costs a crawl with latency its overlap.
CROWDED = 1.1
CROWDED_FOR = 0.6
CROWDED_LOOKS = round(CROWDED_FOR / PERIOD)
# After turns were given up for waiting on ToDo, looks before the gate may widen again (else a
# crawl bound by --per-host with the CPU idle would widen and narrow on every look).
WAITED_LOOKS = 5


def usable_cores() -> int:
    """CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


class WorkLimit:
    """How many workers work at once: ``gate`` lets that many through, and :meth:`adjust`
    (called every ``PERIOD``) widens or narrows it from the CPU time used meanwhile and the
    time turns were held by workers ``waiting`` for an item (what :class:`TakingTurns` adds
    up: give it this ``waiting``)."""

    def __init__(self, threads: int, cores: int | None = None,
                 cpu: Callable[[], float] = time.process_time,
                 clock: Callable[[], float] = time.monotonic) -> None:
        cores = cores or usable_cores()
        self.least = min(threads, cores)
        self.most = threads
        # On one core the crawl cannot use a whole core beside the server and the system.
        self.idle, self.crowded = min(IDLE, 0.6 * cores), min(CROWDED, 0.9 * cores)
        self.gate = TokenGate(self.least)
        self._cpu, self._clock = cpu, clock
        self.waiting = Waiting(clock)
        self._last = (cpu(), clock(), 0.0)
        self._crowded = 0  # looks in a row over ``crowded``
        self._held_back = 0  # looks left before widening again (turns were given up)

    @property
    def width(self) -> int:
        """How many workers may work at once now."""
        return self.gate.width

    def adjust(self) -> float:
        """Widen or narrow the gate from the cores used since the last call; return them."""
        cpu, wall, waited = self._cpu(), self._clock(), self.waiting.total()
        span = max(wall - self._last[1], 1e-9)
        used = (cpu - self._last[0]) / span
        idle = (waited - self._last[2]) / span  # turns held, on average, waiting on ToDo
        self._last = (cpu, wall, waited)
        width = self.gate.width
        self._crowded = self._crowded + 1 if used > self.crowded else 0
        self._held_back = max(0, self._held_back - 1)
        if idle >= 1 and width > self.least:  # ToDo has no item for them: not the width
            self.gate.narrow(min(width - self.least, int(idle)))
            self._held_back = WAITED_LOOKS
        elif (used < self.idle and width < self.most and self.gate.free == 0 and idle < 0.5
              and not self._held_back):
            self.gate.widen(min(self.most - width, width))  # doubles: latency waits
        elif self._crowded >= CROWDED_LOOKS and width > self.least:
            self.gate.narrow(min(width - self.least, max(1, width // 4)))
            self._crowded = 0
        return used


class Workers:
    """``count`` daemon threads named ``worker-1`` …, each running one of the loops given to
    :meth:`run` (the core crawler's workers' loops: this is run.py's runner of them)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.loops: Sequence[Callable[[], None]] = ()
        self.at_work = WorkLimit(count)
        self.failures: list[str] = []  # a worker that died: never silent
        self._running = 0
        self._lock = threading.Lock()
        self._all_done = threading.Event()

    def run(self, loops: Sequence[Callable[[], None]], on_interrupt: Callable[[], None],
            grace: float) -> None:
        """Run the ``loops`` (``count`` of them) to the end, one per thread. On Ctrl-C call
        ``on_interrupt`` (which stops the crawl), then give the pages in flight ``grace``
        seconds to be recorded."""
        if len(loops) != self.count:
            raise ValueError(f"{len(loops)} loops for {self.count} workers")
        self.loops = loops
        # A Ctrl-C while the threads start would interrupt a Thread.start() and leave a worker
        # running that nobody waits for: it is held back until all have started, then seen.
        held = _hold_interrupts()
        try:
            self._start()
            _release_interrupts(held)  # a Ctrl-C that came meanwhile is raised here
            held = None
            looks = iter(EARLY)
            while not self._all_done.wait(next(looks, PERIOD)):  # timed: Ctrl-C seen at once
                self.at_work.adjust()
        except KeyboardInterrupt:
            log.warning("interrupted: finishing the pages in flight (Ctrl-C again: stop now)")
            on_interrupt()
            try:
                if not self._all_done.wait(grace):
                    log.error("%d workers still busy after %.0f s: the pages they hold are "
                              "not recorded", self._running, grace)
            except KeyboardInterrupt:  # the user will not wait: wrap up what we have
                log.warning("interrupted again: %d pages in flight are not recorded",
                            self._running)
        finally:
            _release_interrupts(held)

    def _start(self) -> None:
        """Start the threads; if the system refuses one (its limit), run with fewer."""
        self._running = self.count
        self._all_done.clear()
        for n in range(1, self.count + 1):
            try:
                threading.Thread(target=self._run_one, args=(n,), name=f"worker-{n}",
                                 daemon=True).start()
            except RuntimeError as e:  # "can't start new thread"
                log.warning("could start only %d of %d workers (%s)", n - 1, self.count, e)
                with self._lock:
                    self._running -= self.count - n + 1
                    if self._running == 0:
                        self._all_done.set()
                return

    def _run_one(self, n: int) -> None:
        try:
            self.loops[n - 1]()
        except BaseException as e:  # pragma: no cover - recorded so a dying worker is never silent
            self.failures.append(f"worker {n}: {type(e).__name__}: {e}")
            raise
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0:
                    self._all_done.set()


def _hold_interrupts() -> set[int] | None:
    """Block SIGINT and SIGTERM for this thread (the workers it starts inherit the mask, so the
    signal waits for this thread to unblock it); the mask to restore, or None."""
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not on Windows
        return None
    return set(signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM}))


def _release_interrupts(held: set[int] | None) -> None:
    """Restore the mask ``_hold_interrupts`` returned (a signal held back is raised now)."""
    if held is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
