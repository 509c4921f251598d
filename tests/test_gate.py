"""The gate around the CPU-heavy step: never more threads inside than its width."""

from __future__ import annotations

import threading
import time

from minicrawl.frontier.gate import TokenGate


def most_inside(gate: TokenGate, threads: int) -> tuple[int, list[int]]:
    """Run ``threads`` threads through ``gate`` (each inside for 20 ms): the most that were
    inside at once, and the numbers of those that got through."""
    inside = most = 0
    passed: list[int] = []
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

    pool = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return most, passed


def test_at_most_width_threads_are_inside_and_every_one_gets_through():
    most, passed = most_inside(TokenGate(2), 12)
    assert most == 2 and sorted(passed) == list(range(12))


def test_a_narrowed_gate_keeps_back_the_tokens_of_threads_inside_as_they_leave():
    gate = TokenGate(4)
    for _ in range(4):  # four threads inside
        gate.__enter__()
    gate.narrow(2)
    assert gate.narrowing and gate.width == 2 and gate.free == 0
    for _ in range(4):
        gate.__exit__(None, None, None)
    assert not gate.narrowing and gate.free == 2
    gate.narrow(1)
    gate.widen(3)  # a token still owed is not taken after all
    assert gate.width == 4 and gate.free == 4
    gate.narrow(3)
    most, passed = most_inside(gate, 10)
    assert most == 1 and len(passed) == 10 and gate.free == 1


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
