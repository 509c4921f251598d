"""The robots gate (RobotsGate): may this worker fetch this URL now?

Three answers (:class:`Answer`): GO (a request slot on the host is taken; call
:meth:`RobotsGate.done` after the request), WAIT until a given time (the crawler puts the URL
back in ToDo, at the head of its host's line, and takes another: no crawl worker sleeps here), or
DENY with a reason (recorded, never fetched).

* robots.txt (RFC 9309), one per origin, read by :func:`~minicrawl.visit.robotstxt.parse_robots`
  (the groups and the one for our product token as the RFC says, then ``protego`` for wildcards,
  ``$``, longest match, Allow/Disallow precedence, Crawl-delay, Request-rate; Google's reference
  tests pass through it). Fetched by the
  first worker that needs it, over that worker's own connections and on a request slot of the
  host (it is a request to the host too); other URLs of the origin WAIT meanwhile, and their
  host rests a moment (other hosts go on: no lock is held during the fetch). 2xx → parse (first
  500 KiB); 4xx → no rules, everything allowed; 429, 5xx, timeout or connection failure →
  nothing allowed for now, ask again after a backoff, and after ``retries`` more failures deny
  the origin's URLs as "robots.txt unreachable"; up to 5 redirects followed. Rules are kept 24
  hours, for the ``max_origins`` most recently used origins (an origin forgotten and seen again
  is asked again).
* per host (``host[:port]``), the pace is kept by a pacer (a :class:`~minicrawl.seams.HostPace`):
  a request starts at least the gap after the previous one started, and with ``per_host=1``
  (one at a time) after the previous one ended, so the server sees every gap whole; at most
  ``per_host`` in flight; a Retry-After keeps the whole host quiet; at most
  ``max_pages_per_host`` requests in all. The gap is ``delay``, raised by the site's
  Crawl-delay or Request-rate, capped at ``max_crawl_delay``.
  In one process the pacer is :class:`minicrawl.frontier.hosts.Hosts`, whose host states the
  polite ToDo asks before it hands a URL out, so a URL waits in its host's line, in its turn, and
  starts when its host is READY. In a shared crawl it is
  :class:`minicrawl.redis.gate.RedisHostGate`, the same promise across processes. Either way a
  slot is held by the ToDo item it is for.
* a host that cannot be reached (as wget2 blocks one): a request that made no connection —
  refused, no route, a name that does not resolve, a connect time-out — keeps the whole host
  quiet for a backoff, and after ``retries`` more such failures in a row, each asked after the
  one before was counted (requests that failed together count once), the host's URLs are
  denied as "host unreachable" without a request: one dead host linked from every page costs
  a few requests, not three for each link (robots.txt, when read, finds most first). Any answer
  from the host forgets its failures. Kept in this process (a shared crawl's others learn it
  for themselves).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from minicrawl.core.interfaces import Item, Response
from minicrawl.core.urls import host_of, resolve
from minicrawl.http.answer import could_not_connect, undone
from minicrawl.http.fetch import Fetcher
from minicrawl.options import Options
from minicrawl.origins import origin_of
from minicrawl.stats import Stats
from minicrawl.visit.retry import backoff, retry_after
from minicrawl.visit.robotstxt import RobotsRules, parse_robots

if TYPE_CHECKING:
    from minicrawl.seams import HostPace

log = logging.getLogger("minicrawl")

ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least 500 KiB; the rest may be ignored
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five
ROBOTS_TTL = 24 * 3600.0  # RFC 9309 2.4: do not use a cached robots.txt longer than 24 hours
ROBOTS_POLL = 0.05  # while another worker fetches an origin's robots.txt, ask again this often
MAX_ORIGINS = 10_000  # robots.txt rules kept at most (LRU; a few KiB each)

DISALLOWED = "robots.txt disallows"
ROBOTS_PENDING = "robots_pending"  # the kind of a WAIT for robots.txt (fetching or failing)
HOST_FULL = "max_pages_per_host reached"
CAPPED_CHAIN = "max_pages reached before redirect target"  # a chain stopped by --max-pages
CAPPED_CHAIN_KIND = "redirects_max_pages"  # its counter (a redirect target a rule refused)
# The one definition of a rule's refusal, by the error its record carries (the refused page
# has it, with no status: whoever hears the page needs no event of the refusal besides): the
# URL the record ends at was never requested, because a rule said no — robots.txt disallows it,
# its host had its --max-pages-per-host, or --max-pages was reached at a redirect chain's
# target (the chain's start was requested, a 3xx came back: a page, but the target was not
# asked for). The crawl's own choice, no fault of the site: no failure, no error counted, no
# problem, no effect on the exit status; a link to it is neither broken nor fine (not checked).
NOT_REQUESTED = frozenset({DISALLOWED, HOST_FULL, CAPPED_CHAIN})


class Verdict(Enum):
    GO = "go"
    WAIT = "wait"
    DENY = "deny"


@dataclass(frozen=True)
class Answer:
    """The answer for one URL. WAIT has ``not_before`` (``time.monotonic()``); DENY has the
    ``reason`` to record and the stats counter ``kind`` to count it under."""

    verdict: Verdict
    not_before: float = 0.0
    reason: str = ""
    kind: str = ""


_GO = Answer(Verdict.GO)
_HOST_FULL = Answer(Verdict.DENY, reason=HOST_FULL, kind="host_full")


def robots_token(user_agent: str) -> str:
    """The product token robots.txt groups are matched against: ``minicrawl`` for
    ``minicrawl/0.1.0 (+https://...)`` (RFC 9309 2.2.1)."""
    match = re.match(r"[A-Za-z0-9_-]+", user_agent.strip())
    return match.group(0).lower() if match else "*"


@dataclass
class _Robots:
    """What we know of one origin's robots.txt."""

    rules: RobotsRules | None = None  # None while known: no rules, everything allowed
    known: bool = False  # rules usable (fetched, or 4xx: allow all)
    fetching: bool = False  # a worker is fetching it right now
    failures: int = 0  # unreachable answers in a row
    error: str = ""  # the last one
    retry_at: float = 0.0  # unreachable: when to ask again
    expires_at: float = 0.0  # known: when to fetch it again
    gap: float = 0.0  # seconds between requests the site asks for (Crawl-delay, Request-rate)


@dataclass
class _Unreachable:
    """A host whose last requests made no connection."""

    failures: int  # in a row, each asked after the one before was counted
    error: str  # the last one
    counted_at: float  # when the last was counted (time.monotonic())


class RobotsGate:
    """Decides, for each URL a worker takes from ToDo, whether it may be fetched now."""

    def __init__(self, options: Options, stats: Stats, pacer: HostPace) -> None:
        """``options``: validated (:meth:`Options.validate` checks per_host, delay and
        max_crawl_delay within their bounds, by check_number); ``pacer``: the hosts' pace (which
        keeps a URL's turn on its host while robots.txt is fetched elsewhere: a shared crawl's
        gate books it; a local ToDo keeps it in the host's line)."""
        self.options = options
        self.stats = stats
        self.obey_robots = not options.ignore_robots
        self.pacer = pacer
        self.token = robots_token(options.user_agent)
        self.max_origins = MAX_ORIGINS
        # Guards the robots cache; held for bookkeeping only, never while fetching, matching
        # or asking the pacer, so one slow host never holds up another.
        self._lock = threading.Lock()
        self._robots: OrderedDict[str, _Robots] = OrderedDict()
        self._unreachable: dict[str, _Unreachable] = {}  # host → its failures (none: reached)

    # -- the question --------------------------------------------------------------------------

    def admit(self, item: Item, fetcher: Fetcher, page: bool = True) -> Answer:
        """GO, WAIT or DENY for ``item`` (its URL canonical); may fetch its origin's robots.txt
        first (with ``fetcher``, the asking worker's). Not a ``page`` (a sitemap, read as
        robots.txt is for what the site says of itself): not counted in max_pages_per_host."""
        url = item.url
        host = host_of(url)
        origin = origin_of(url)
        if (down := self._unreachable.get(host)) is not None \
                and down.failures > self.options.retries:  # (a racy read: failures only grow
            self.pacer.forget(item, host)  # until the host answers, which it cannot now)
            return Answer(Verdict.DENY, reason=f"host unreachable: {down.error} "
                          f"({down.failures} tries in a row)", kind="host_unreachable")
        if self.obey_robots:
            rules, answer, claimed = self._robots_state(origin, host, item)
            while claimed:  # this worker fetches it; then the question is asked again
                self._fetch_robots(origin, host, item, fetcher)
                rules, answer, claimed = self._robots_state(origin, host, item)
            if answer is not None:
                if answer.kind == ROBOTS_PENDING:  # another worker fetches it: keep the turn
                    booked = self.pacer.book(item, host, self.gap(origin))
                    return Answer(Verdict.WAIT, max(answer.not_before,
                                                       time.monotonic() + booked))
                if answer.verdict is Verdict.DENY:  # unreachable: a turn kept meanwhile goes
                    self.pacer.forget(item, host)
                return answer
            if rules is not None and not rules.can_fetch(url):
                self.pacer.forget(item, host)
                return Answer(Verdict.DENY, reason=DISALLOWED, kind="robots_disallowed")
        turn = self.pacer.take_turn(item, host, self.gap(origin),
                                    self.options.max_pages_per_host if page else None)
        if turn.go:
            return _GO
        if turn.full:
            return _HOST_FULL
        return Answer(Verdict.WAIT, time.monotonic() + turn.wait)

    def done(self, item: Item, pause: float = 0.0, response: Response | None = None) -> None:
        """The GO request for ``item`` is over; ``pause`` (a Retry-After) keeps the whole host
        quiet that long; its ``response`` says whether the host was reached (module doc)."""
        host = host_of(item.url)
        if response is not None:
            pause = max(pause, self._reached(host, response))
        self.pacer.release(item, host, self.gap(origin_of(item.url)), pause)

    def _reached(self, host: str, response: Response) -> float:
        """Note whether ``response`` came from ``host``; the seconds to keep it quiet if not."""
        if not could_not_connect(response.error):
            if response.status is not None and host in self._unreachable:
                with self._lock:
                    self._unreachable.pop(host, None)
            return 0.0
        now = time.monotonic()
        with self._lock:
            down = self._unreachable.get(host)
            if down is None:
                down = self._unreachable[host] = _Unreachable(1, response.error or "", now)
            elif now - response.elapsed >= down.counted_at:  # asked after the last one failed
                down.failures, down.error, down.counted_at = down.failures + 1, \
                    response.error or "", now
            failures = down.failures
        self.stats.add(host_unreachable_answers=1)
        return backoff(failures - 1, self.options.retry_backoff, self.options.max_backoff)

    def host_full(self, url: str) -> bool:
        """True once ``url``'s host is known to have had ``max_pages_per_host`` requests (links
        to it can be dropped before they take room in Visited and ToDo)."""
        cap = self.options.max_pages_per_host
        return cap is not None and self.pacer.full(host_of(url), cap)

    def gap(self, origin: str) -> float:
        """Seconds between requests to ``origin``'s host: ``delay``, or what its robots.txt
        asks for, up to ``max_crawl_delay``."""
        robots = self._robots.get(origin)  # a racy read is fine: a gap, never a decision
        asked = robots.gap if robots is not None else 0.0
        return max(self.options.delay, min(asked, self.options.max_crawl_delay))

    def sitemaps(self, origin: str, fetcher: Fetcher) -> list[str]:
        """The ``Sitemap:`` lines of ``origin``'s robots.txt, fetched now (paced like any
        request, waiting if need be) unless already known; empty if it has none or is
        unreachable."""
        host = host_of(origin + "/")
        item = Item(origin + "/robots.txt")  # what holds the slot while it is fetched
        while True:
            rules, answer, claimed = self._robots_state(origin, host, item)
            if claimed:
                self._fetch_robots(origin, host, item, fetcher)
            elif answer is None or answer.verdict is Verdict.DENY:
                return list(rules.sitemaps) if rules is not None else []
            else:
                time.sleep(max(0.0, answer.not_before - time.monotonic()))

    # -- robots.txt ----------------------------------------------------------------------------

    def _entry(self, origin: str) -> _Robots:
        """The origin's robots.txt record, most recently used last (lock held); the least
        recently used beyond ``max_origins`` are forgotten (not while being fetched)."""
        robots = self._robots.get(origin)
        if robots is not None:
            self._robots.move_to_end(origin)
            return robots
        robots = self._robots[origin] = _Robots()
        while len(self._robots) > self.max_origins:
            oldest = next((name for name, entry in self._robots.items()
                           if not entry.fetching), origin)
            if oldest == origin:
                break  # all the others are being fetched: over the bound for a moment
            del self._robots[oldest]
        return robots

    def _robots_state(self, origin: str, host: str,
                      item: Item) -> tuple[RobotsRules | None, Answer | None, bool]:
        """(rules, answer, claimed): the origin's rules to match against (None: allow all), or
        an answer without matching (WAIT while it is fetched or failing, DENY once given up),
        or claimed=True: the caller must fetch it now (it holds a request slot on the host)."""
        with self._lock:
            robots = self._entry(origin)
            now = time.monotonic()
            stale = robots.known and robots.expires_at <= now
            if robots.known and (not stale or robots.fetching):
                return robots.rules, None, False  # (a stale copy serves while refetched)
            if not robots.known:
                if robots.failures > self.options.retries:
                    return None, Answer(
                        Verdict.DENY, reason=f"robots.txt unreachable: {robots.error}",
                        kind="robots_unreachable"), False
                if robots.fetching or robots.retry_at > now:
                    return None, Answer(Verdict.WAIT, max(robots.retry_at, now + ROBOTS_POLL),
                                           kind=ROBOTS_PENDING), False
            robots.fetching = True
        # Fetching robots.txt is a request to the host: it needs a slot like any other.
        try:
            turn = self.pacer.take_turn(item, host, self.gap(origin), robots=True)
        except BaseException:
            with self._lock:
                robots.fetching = False
            raise
        if turn.go:
            return None, None, True
        with self._lock:
            robots.fetching = False
            if robots.known:  # a stale copy serves until the host has a slot for the refetch
                return robots.rules, None, False
        return None, Answer(Verdict.WAIT, time.monotonic() + turn.wait), False

    def _fetch_robots(self, origin: str, host: str, item: Item, fetcher: Fetcher) -> None:
        """Fetch and parse ``origin``'s robots.txt (this worker claimed it), then record the
        outcome. The claim and the slot are always released, or the origin's URLs would wait
        forever."""
        started = time.monotonic()
        rules: RobotsRules | None = None
        unreachable: str | None = "robots.txt fetch failed"  # unless it gets further
        response: Response | None = None
        try:
            response = self._get_robots(origin, fetcher)
            unreachable = _unreachable(response)
            if unreachable is None:
                rules = self._parse(response, origin)
        finally:
            self._robots_done(origin, started, rules, unreachable, response)
            self.pacer.release(item, host, self.gap(origin), 0.0)

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
            if (url := resolve(response.url, location)) is None:
                return None
        return None

    def _parse(self, response: Response | None, origin: str) -> RobotsRules | None:
        """The rules of a reachable robots.txt; None (allow all) unless it answered 2xx."""
        if response is None or not 200 <= (response.status or 0) < 300:
            return None
        if not undone(response.headers.get("content-encoding", "")):  # its bytes as they came
            return None  # (br without brotli): no rules to read, as from an empty file
        try:  # a cut body (over 500 KiB) is parsed as far as it goes
            return parse_robots(response.body, self.token)
        except Exception:  # a parser bug must not take a host down: treat as no rules
            log.warning("could not parse %s/robots.txt; allowing all", origin, exc_info=True)
            self.stats.add(robots_unparsable=1)
            return None

    def _robots_done(self, origin: str, started: float, rules: RobotsRules | None,
                     unreachable: str | None, response: Response | None) -> None:
        now = time.monotonic()
        with self._lock:
            robots = self._entry(origin)
            robots.fetching = False
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
            robots.gap = self._robots_gap(rules)
        log.debug("robots.txt for %s in %.2fs: %s, gap %.2fs", origin, now - started,
                  "rules" if rules else "allow all", self.gap(origin))

    def _robots_gap(self, rules: RobotsRules | None) -> float:
        """Seconds between requests the site asks of us (Crawl-delay, or Request-rate)."""
        if rules is None:
            return 0.0
        gap = rules.crawl_delay or 0.0
        rate = rules.request_rate
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
