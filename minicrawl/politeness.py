"""Politeness: may this worker fetch this URL now?

Three answers (:class:`Admission`): GO (a slot on the host is taken; call :meth:`Politeness.done`
after the request), WAIT until a given time (the crawler puts the URL back in ToDo with that
not-before time and takes another: no worker ever sleeps here), or DENY with a reason (recorded,
never fetched).

* robots.txt (RFC 9309), one per origin, parsed with ``protego`` (Scrapy's parser: wildcards,
  ``$``, longest match, Allow/Disallow precedence, Crawl-delay, Request-rate). Fetched by the
  first worker that needs it, over that worker's own connections; other URLs of the origin WAIT
  meanwhile (only that origin waits: no lock is held during the fetch). 2xx → parse (first
  500 KiB); 4xx → no rules, everything allowed; 429, 5xx, timeout or connection failure →
  nothing allowed for now, ask again after a backoff, and after ``retries`` more failures
  deny the origin's URLs as "robots.txt unreachable"; up to 5 redirects followed. Rules are
  kept 24 hours.
* per host: a request starts at least ``delay`` seconds after the previous one started and
  after the last one ended (so with ``per_host=1`` the server sees every gap whole); the gap is
  raised by the site's Crawl-delay or Request-rate, capped at ``max_crawl_delay``; at most
  ``per_host`` requests in flight; at most ``max_pages_per_host`` requests in all.

A URL that must wait is handed a booked time: the waiting URLs of a host come back one
spacing apart, in the order they arrived, instead of all waking at once and all but one
waiting again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from protego import Protego

from minicrawl.fetch import Fetcher, Response
from minicrawl.options import Options
from minicrawl.retry import backoff, retry_after
from minicrawl.stats import Stats
from minicrawl.urls import BadURL, canonicalize, host_of, origin_of

log = logging.getLogger("minicrawl")

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least 500 KiB; the rest may be ignored
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five
ROBOTS_TTL = 24 * 3600.0  # RFC 9309 2.4: do not use a cached robots.txt longer than 24 hours
MIN_SPACING = 0.005  # booked times of one host's waiting URLs are at least this far apart

DISALLOWED = "robots.txt disallows"
HOST_FULL = "max_pages_per_host reached"


class HostGate(Protocol):
    """Per-host pacing shared with other processes (``RedisHostGate`` with ``--redis``)."""

    def try_start(self, host: str, gap: float) -> float:
        """0.0: start now (the next start is booked ``gap`` on); else seconds to wait."""
        ...


class Verdict(Enum):
    GO = "go"
    WAIT = "wait"
    DENY = "deny"


@dataclass(frozen=True)
class Admission:
    """The answer for one URL. WAIT has ``not_before`` (``time.monotonic()``); DENY has the
    ``reason`` to record and the stats counter ``kind`` to count it under."""

    verdict: Verdict
    not_before: float = 0.0
    reason: str = ""
    kind: str = ""


_GO = Admission(Verdict.GO)


def robots_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: ``minicrawl`` for
    ``minicrawl/0.1.0 (+https://...)`` (RFC 9309 2.2.1)."""
    match = re.match(r"[A-Za-z0-9_-]+", user_agent.strip())
    return match.group(0).lower() if match else "*"


@dataclass
class _Robots:
    """What we know of one origin's robots.txt."""

    rules: Protego | None = None  # None while known: no rules, everything allowed
    known: bool = False  # rules usable (fetched, or 4xx: allow all)
    fetching: bool = False  # a worker is fetching it right now
    failures: int = 0  # unreachable answers in a row
    error: str = ""  # the last one
    retry_at: float = 0.0  # unreachable: when to ask again
    expires_at: float = 0.0  # known: when to fetch it again


@dataclass
class _Host:
    """Scheduling state of one host."""

    gap: float  # seconds from a request's start, and from the last one's end, to the next
    next_start: float = 0.0  # no request starts before this time
    in_flight: int = 0
    booked: float = 0.0  # the latest time handed to a waiting URL
    fetches: int = 0  # requests granted (for max_pages_per_host)
    mean_s: float = 0.0  # moving average of request durations


class Politeness:
    """Decides, for each URL a worker takes from ToDo, whether it may be fetched now."""

    def __init__(self, options: Options, stats: Stats, gate: HostGate | None = None) -> None:
        if options.per_host < 1:
            raise ValueError("per_host must be at least 1")
        if options.delay < 0 or options.max_crawl_delay < 0:
            raise ValueError("delay and max_crawl_delay must not be negative")
        self.options = options
        self.stats = stats
        self.obey_robots = not options.ignore_robots
        self.gate = gate  # other processes' requests to a host count too (a shared crawl)
        self.token = robots_token(options.user_agent)
        # Guards the two dicts and the states in them; held for bookkeeping only, never while
        # fetching or matching, so one slow host never holds up another.
        self._lock = threading.Lock()
        self._robots: dict[str, _Robots] = {}
        self._hosts: dict[str, _Host] = {}

    # -- the question --------------------------------------------------------------------------

    def admit(self, url: str, fetcher: Fetcher) -> Admission:
        """GO, WAIT or DENY for the canonical ``url``; may fetch its origin's robots.txt first
        (with ``fetcher``, the asking worker's)."""
        host_name = host_of(url)
        if self.obey_robots:
            origin = origin_of(url)
            rules, answer, claimed = self._robots_state(origin, host_name)
            while claimed:  # this worker fetches it; then the question is asked again
                self._fetch_robots(origin, host_name, fetcher)
                rules, answer, claimed = self._robots_state(origin, host_name)
            if answer is not None:
                return answer
            if rules is not None and not rules.can_fetch(url, self.token):
                return Admission(Verdict.DENY, reason=DISALLOWED, kind="robots_disallowed")
        with self._lock:
            host = self._host(host_name)
            cap = self.options.max_pages_per_host
            if cap is not None and host.fetches >= cap:
                return Admission(Verdict.DENY, reason=HOST_FULL, kind="host_full")
            now = time.monotonic()
            if not self._take_slot(host, now):
                return Admission(Verdict.WAIT, self._book(host, now))
            host.fetches += 1
        if self.gate is None:
            return _GO
        try:  # asked outside the lock: it is a network round trip
            wait = self.gate.try_start(host_name, host.gap)
        except BaseException:
            with self._lock:
                self._give_back(host)
            raise
        if wait <= 0:
            return _GO
        with self._lock:  # another process's request to the host was too recent
            self._give_back(host)
            now = time.monotonic()
            return Admission(Verdict.WAIT, self._book(host, now, now + wait))

    def done(self, url: str, seconds: float, pause: float = 0.0) -> None:
        """The GO request for ``url`` is over, after ``seconds``; ``pause`` (a Retry-After)
        keeps the whole host quiet that long."""
        with self._lock:
            host = self._host(host_of(url))
            host.in_flight -= 1
            host.mean_s = seconds if host.mean_s == 0 else 0.8 * host.mean_s + 0.2 * seconds
            # The gap runs from the end of a request as well as from its start: a slow answer
            # does not let the next request follow it at once, and the server sees the gap.
            now = time.monotonic()
            host.next_start = max(host.next_start, now + host.gap, now + pause)

    def host_full(self, url: str) -> bool:
        """True once ``url``'s host has had ``max_pages_per_host`` requests (links to it can be
        dropped before they take room in Visited and ToDo)."""
        cap = self.options.max_pages_per_host
        if cap is None:
            return False
        host = self._hosts.get(host_of(url))  # a racy read is fine: admit() decides for real
        return host is not None and host.fetches >= cap

    def sitemaps(self, origin: str, fetcher: Fetcher) -> list[str]:
        """The ``Sitemap:`` lines of ``origin``'s robots.txt, fetched now (paced like any
        request, waiting if need be) unless already known; empty if it has none or is
        unreachable."""
        host_name = host_of(origin + "/")
        while True:
            rules, answer, claimed = self._robots_state(origin, host_name)
            if claimed:
                self._fetch_robots(origin, host_name, fetcher)
            elif answer is None or answer.verdict is Verdict.DENY:
                return list(rules.sitemaps) if rules is not None else []
            else:
                time.sleep(max(0.0, answer.not_before - time.monotonic()))

    # -- per host ------------------------------------------------------------------------------

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            host = self._hosts[name] = _Host(gap=self.options.delay)
        return host

    @staticmethod
    def _give_back(host: _Host) -> None:
        """Undo the slot taken for a request that will not start after all (lock held)."""
        host.in_flight -= 1
        host.fetches -= 1

    def _take_slot(self, host: _Host, now: float) -> bool:
        """Start a request on ``host`` now if its gap has passed and it has a free slot."""
        if host.in_flight >= self.options.per_host or host.next_start > now:
            return False
        host.in_flight += 1
        host.next_start = now + host.gap
        return True

    def _book(self, host: _Host, now: float, earliest: float = 0.0) -> float:
        """The time a waiting URL of ``host`` should come back: one spacing after the URL that
        waited before it, and not before the host is free."""
        spacing = max(host.gap, host.mean_s / self.options.per_host, MIN_SPACING)
        slot = max(host.booked + spacing, host.next_start, now + MIN_SPACING, earliest)
        host.booked = slot
        return slot

    # -- robots.txt ----------------------------------------------------------------------------

    def _robots_state(self, origin: str,
                      host_name: str) -> tuple[Protego | None, Admission | None, bool]:
        """(rules, answer, claimed): the origin's rules to match against (None: allow all), or
        an answer without matching (WAIT while it is fetched or failing, DENY once given up),
        or claimed=True: the caller must fetch it now (it holds a slot on the host)."""
        with self._lock:
            robots = self._robots.get(origin)
            if robots is None:
                robots = self._robots[origin] = _Robots()
            now = time.monotonic()
            stale = robots.known and robots.expires_at <= now
            if robots.known and (not stale or robots.fetching):
                return robots.rules, None, False  # (a stale copy serves while refetched)
            host = self._host(host_name)
            if not robots.known:
                if robots.failures > self.options.retries:
                    return None, Admission(
                        Verdict.DENY, reason=f"robots.txt unreachable: {robots.error}",
                        kind="robots_unreachable"), False
                if robots.fetching or robots.retry_at > now:
                    return None, Admission(Verdict.WAIT,
                                           self._book(host, now, robots.retry_at)), False
            if not self._take_slot(host, now):  # fetching robots.txt is a request to the host
                if robots.known:
                    return robots.rules, None, False
                return None, Admission(Verdict.WAIT, self._book(host, now)), False
            robots.fetching = True
            return None, None, True

    def _fetch_robots(self, origin: str, host_name: str, fetcher: Fetcher) -> None:
        """Fetch and parse ``origin``'s robots.txt (this worker claimed it), then record the
        outcome. The claim is always released, or the origin's URLs would wait forever."""
        started = time.monotonic()
        rules: Protego | None = None
        unreachable: str | None = "robots.txt fetch failed"  # unless it gets further
        response: Response | None = None
        try:
            response = self._get_robots(origin, fetcher)
            unreachable = _unreachable(response)
            if unreachable is None:
                rules = self._parse(response, origin)
        finally:
            self._robots_done(origin, host_name, started, rules, unreachable, response)

    def _get_robots(self, origin: str, fetcher: Fetcher) -> Response | None:
        """The robots.txt response after redirects, or None if they went on too long (or to a
        bad location): then there is no usable robots.txt, like a 404."""
        url = origin + "/robots.txt"
        for _ in range(ROBOTS_MAX_REDIRECTS + 1):
            response = fetcher.fetch(url, max_bytes=ROBOTS_MAX_BYTES)
            self.stats.add(robots_requests=1)
            location = response.location
            if location is None:
                return response
            try:
                url = canonicalize(location, response.url)
            except BadURL:
                return None
        return None

    def _parse(self, response: Response | None, origin: str) -> Protego | None:
        """The rules of a reachable robots.txt; None (allow all) unless it answered 2xx."""
        if response is None or not 200 <= (response.status or 0) < 300:
            return None
        try:  # a cut body (over 500 KiB) is parsed as far as it goes
            return Protego.parse(response.body.decode("utf-8", errors="replace"))
        except Exception:  # a parser bug must not take a host down: treat as no rules
            log.warning("could not parse %s/robots.txt; allowing all", origin, exc_info=True)
            self.stats.add(robots_unparsable=1)
            return None

    def _robots_done(self, origin: str, host_name: str, started: float,
                     rules: Protego | None, unreachable: str | None,
                     response: Response | None) -> None:
        now = time.monotonic()
        with self._lock:
            robots = self._robots[origin]
            host = self._host(host_name)
            robots.fetching = False
            host.in_flight -= 1
            if unreachable is not None and not robots.known:
                robots.failures += 1
                robots.error = unreachable
                asked = retry_after(response.headers) if response is not None else None
                wait = backoff(robots.failures - 1, self.options.retry_backoff,
                               self.options.max_backoff)
                robots.retry_at = now + (min(asked, self.options.max_backoff)
                                         if asked is not None else wait)
                self.stats.add(robots_unreachable_answers=1)
                return
            if unreachable is not None:  # a refetch failed: keep the old rules a while more
                robots.expires_at = now + self.options.max_backoff
                return
            robots.known, robots.rules, robots.failures = True, rules, 0
            robots.expires_at = now + ROBOTS_TTL
            asked_gap = self._robots_gap(rules)
            host.gap = max(self.options.delay, min(asked_gap, self.options.max_crawl_delay))
            # The robots.txt request itself was the host's last: the gap runs from its end.
            host.next_start = max(host.next_start, now + host.gap)
            log.debug("robots.txt for %s in %.2fs: %s, gap %.2fs", origin, now - started,
                      "rules" if rules else "allow all", host.gap)

    def _robots_gap(self, rules: Protego | None) -> float:
        """Seconds between requests the site asks of us (Crawl-delay, or Request-rate)."""
        if rules is None:
            return 0.0
        gap = rules.crawl_delay(self.token) or 0.0
        rate = rules.request_rate(self.token)
        if rate is not None and rate.requests > 0:
            gap = max(gap, rate.seconds / rate.requests)
        return float(gap)


def _unreachable(response: Response | None) -> str | None:
    """Why robots.txt counts as unreachable (nothing allowed for now), or None if it answered.

    RFC 9309 2.3.1: 4xx means "no robots.txt": everything is allowed; 5xx and network failures
    mean "unreachable": nothing is. 429 is a 4xx that says "not now", so it counts as 5xx.
    A body cut at the size cap is not a failure: its first 500 KiB are the rules.
    """
    if response is None:
        return None
    if response.status is None:
        return response.error or "no answer"
    if response.status == 429 or response.status >= 500:
        return f"HTTP {response.status}"
    if response.error is not None and response.transient:
        return response.error
    return None
