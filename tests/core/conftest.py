"""tests/core's own fixtures."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def no_heartbeat_left_running() -> Iterator[None]:
    """A test that opens a shared crawl's ToDo or pace (minicrawl.redis) closes it: their
    heartbeat threads, left running, beat against the module's redis-server under the tests
    after, and retry for half a minute once it is stopped."""
    before = set(threading.enumerate())
    yield
    left = sorted(t.name for t in threading.enumerate()
                  if t not in before and t.name.endswith("heartbeat"))
    assert not left, f"the test left running: {', '.join(left)} (close what it opened)"
