"""tests/core's own fixtures."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_heartbeat_left(no_heartbeat_left_running: None) -> None:
    """Every test here: a test that opens a shared crawl's ToDo or pace (minicrawl.redis)
    closes it (tests/conftest.py's no_heartbeat_left_running)."""
