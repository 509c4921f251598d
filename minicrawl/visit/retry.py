"""Retrying: which failed fetches deserve another attempt, and how long to wait before it.

A retry is never a sleep: the crawler puts the URL back in ToDo with a not-before time, and the
worker goes on with other URLs meanwhile. The wait doubles with each attempt, with jitter so
that URLs that failed together do not come back together; a server's ``Retry-After`` (seconds
or an HTTP date) replaces it. Both are capped by ``max_backoff``.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from minicrawl.core.interfaces import Response

# 501 (not implemented) and 505 (HTTP version) say "never", not "not now".
_PERMANENT_5XX = frozenset({501, 505})
# The jitter's own generator: the crawl's threads never move the global ``random`` (a program
# may seed it for its own runs; Hypothesis takes a change mid-draw for a strategy's misuse).
_JITTER = random.Random()


def is_retryable(response: Response) -> bool:
    """True for network failures (reset, refused, timeout), 408, 429 and 5xx answers."""
    if response.error is not None:
        return response.transient
    status = response.status or 0
    return status in (408, 429) or (500 <= status < 600 and status not in _PERMANENT_5XX)


def retry_after(headers: dict[str, str], now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait (``Retry-After: 120`` or an HTTP date), or None."""
    value = headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # HTTP dates are GMT; a date without a zone is taken as such
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff(attempt: int, base: float, cap: float, rng: random.Random | None = None) -> float:
    """The wait before retry number ``attempt + 1``: base·2^attempt, half of it jittered
    ("equal jitter": never less than half the nominal wait), at most ``cap`` seconds."""
    nominal = min(cap, base * 2 ** attempt)
    return nominal / 2 + (rng or _JITTER).uniform(0, nominal / 2)


def wait_before_retry(response: Response, attempt: int, base: float, cap: float) -> float:
    """Seconds to wait before retrying ``response``'s URL: Retry-After if given, else backoff."""
    asked = retry_after(response.headers) if response.status in (429, 503) else None
    if asked is not None:
        return min(asked, cap)
    return backoff(attempt, base, cap)


def failure_reason(response: Response, attempts: int) -> str:
    """The error recorded when a URL is given up: what went wrong, and how often we tried."""
    what = response.error or f"HTTP {response.status}"
    return f"{what} (gave up after {attempts} attempt{'s' if attempts != 1 else ''})"


def host_pause(response: Response | None, cap: float) -> float:
    """Seconds the whole host asked to be left alone (429 or 503 with Retry-After), capped."""
    if response is None or response.status not in (429, 503):
        return 0.0
    asked = retry_after(response.headers)
    return min(asked, cap) if asked is not None else 0.0
