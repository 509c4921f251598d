"""The gate around the CPU-heavy step: never more threads inside than its width."""

from __future__ import annotations

import threading
import time

from minicrawl.gate import TokenGate


def test_at_most_width_threads_are_inside_and_every_one_gets_through():
    gate = TokenGate(2)
    inside = 0
    most = 0
    passed = []
    lock = threading.Lock()

    def work(n: int) -> None:
        nonlocal inside, most
        with gate:
            with lock:
                inside += 1
                most = max(most, inside)
            time.sleep(0.02)
            with lock:
                inside -= 1
        passed.append(n)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert most == 2 and sorted(passed) == list(range(12))


def test_a_failure_inside_gives_the_token_back():
    gate = TokenGate(1)
    try:
        with gate:
            raise ValueError("boom")
    except ValueError:
        pass
    with gate:  # would block forever if the token were lost
        pass
    assert gate.width == 1
