"""The worker threads: start them, and wait until the last one has returned.

The main thread waits on an Event that the last worker sets, not on ``Thread.join``: a Ctrl-C
that interrupts CPython 3.11's join can leave the joined thread marked as stopped while it still
runs, and the crawl's files would then be closed under a worker writing its last page.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable

log = logging.getLogger("minicrawl")


class Workers:
    """``count`` daemon threads named ``worker-1`` … running ``loop(n)``."""

    def __init__(self, count: int, loop: Callable[[int], None]) -> None:
        self.count = count
        self.loop = loop
        self.failures: list[str] = []  # a worker that died: never silent
        self._running = 0
        self._lock = threading.Lock()
        self._all_done = threading.Event()

    def run(self, on_interrupt: Callable[[], None], grace: float) -> None:
        """Run the workers to the end. On Ctrl-C call ``on_interrupt`` (which stops the crawl),
        then give the pages in flight ``grace`` seconds to be recorded."""
        # A Ctrl-C while the threads start would interrupt a Thread.start() and leave a worker
        # running that nobody waits for: it is held back until all have started, then seen.
        held = _hold_interrupts()
        try:
            self._start()
            _release_interrupts(held)  # a Ctrl-C that came meanwhile is raised here
            held = None
            while not self._all_done.wait(0.2):  # timed: Ctrl-C is seen at once
                pass
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
            self.loop(n)
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
