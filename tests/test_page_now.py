"""A record's ``fetched_at`` (minicrawl.page.now, issue 49): the text of a second is made once
and only the milliseconds per page; the text is datetime's, whatever the clock says."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minicrawl.page as page_module
from minicrawl.page import now

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FORMAT = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def datetimes_text(ns: int) -> str:
    """What ``now()`` was before (datetime.now(UTC): the clock's nanoseconds floored to
    microseconds), for the clock at ``ns``."""
    moment = EPOCH + timedelta(microseconds=ns // 1000)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_now_is_datetimes_now_with_milliseconds_and_z():
    for _ in range(2000):  # the clock moves between the three: the new one is between
        before = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        got = now()
        after = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert FORMAT.fullmatch(got) and before <= got <= after


# Seconds from 1970 to 9999 (a 4-digit year, as datetime writes it), and the nanoseconds
# next to a second's and a millisecond's edges, in any order (a clock may step back)
CLOCKS = st.lists(st.one_of(
    st.integers(0, 253_402_300_799_999_999_999),
    st.integers(1_700_000_000, 1_700_000_010).flatmap(
        lambda s: st.sampled_from([s * 10**9 + d for d in
                                   (0, 1, 999_999, 1_000_000, 999_999_999, 999_000_000)]))),
    min_size=1, max_size=30)


@settings(max_examples=300, deadline=None)
@given(CLOCKS)
def test_now_says_what_datetime_says_for_any_clock(clocks):
    calls = iter(clocks)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(page_module.time, "time_ns", lambda: next(calls))
        for ns in clocks:
            assert now() == datetimes_text(ns), ns


def test_threads_get_their_own_seconds():
    """Threads calling at once each get a well-formed time (the cached second is one tuple)."""
    seen: list[str] = []
    barrier = threading.Barrier(8)

    def call() -> None:
        barrier.wait()
        seen.extend(now() for _ in range(5000))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(seen) == 40_000 and all(FORMAT.fullmatch(text) for text in seen)
