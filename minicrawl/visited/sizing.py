"""The Bloom filter math: the formulas the ``minicrawl bloom`` tool teaches, and the numbers
every filter reports.

A Bloom filter answers "have I seen this URL?" in m bits however long the URLs are. Adding a URL
sets k bits chosen by hashing it; a URL is reported as seen when all its k bits are set. It
never forgets a URL it was given (no false negatives) but may take a new URL for a seen one (a
false positive) with a probability the formulas below predict.

The formulas
------------
With m bits, k hashes and n items inserted:

* false-positive rate  f = (1 − e^(−k·n/m))^k                      :func:`false_positive_rate`
* optimal k for m, n   k = (m/n)·ln 2                               :func:`optimal_hashes`
* bits for n at rate p with the optimal k  m = ⌈−n·ln p / (ln 2)²⌉  :func:`optimal_bits`
* items m bits hold at rate p, optimal k   n = m·ln(0.6185) / ln p  :func:`capacity_for`
  (0.6185 = 2^(−ln 2): the rate per bit at the optimum)
* the same two for a *fixed* k, by solving f = p exactly:
  m = −k·n / ln(1 − p^(1/k))                                        :func:`bits_for`
  n = −m·ln(1 − p^(1/k)) / k                                        :func:`capacity_for`
* items behind X set bits (Swamidass & Baldi)  n ≈ −(m/k)·ln(1 − X/m)  :func:`estimate_count`
* new items expected to have been withheld (taken for seen) while N distinct ones were offered,
  the sum of f over the offers (a withheld item sets no bit, so the bits are those of all N):
  W(N) = Σ_{i<N} f(m, i, k) ≈ (m/k)·Σ_{j>k} U^j/j, U = 1 − e^(−kN/m) (the fill); the filter
  counts the items it took, n = N − W(N), which gives N and W        :func:`expected_withheld`
  — about 0.14·n·p for a filter filled to its capacity n at rate p, not p·n: f climbs as it
  fills (the 1,000,000 URLs at 0.001 of a default crawl withheld ~138 pages, not 1,000; the
  1,111,112 of issue 38's tree ~294, where 339 were lost);
* Visited's default rate (:func:`default_rate`, :func:`rate_bound`): a false positive costs a
  page only if its URL would have been fetched, and a crawl fetches each page once, so over a
  crawl of P pages the pages lost are at most P × the highest rate any offer met — whatever the
  order the URLs are fetched in (several hosts, politeness) and however many more URLs are
  offered than fetched. A scalable filter's rate never passes the sum of its slices' rates, E
  (2p for a first slice at p, tightening 0.5), so E = ``LOSS``/P keeps the loss under one page.
  P is ``--max-pages`` when given, else ``HORIZON`` × ``--expected-urls`` (an uncapped crawl
  fetches every URL it keeps); the first slice is at p = E·(1 − ``TIGHTENING``): 5e-8 for a
  million URLs (61.6 bits a URL), 5e-7 with ``--max-pages 1000000`` (44.9 bits).
  :func:`bill` gives a default filter's bytes and expected losses for N URLs offered (the
  table in bench/README.md's issue 38 section)

What the crawler's filters use
------------------------------
The core's: k = 8 (:data:`minicrawl.core.visited.HASHES`) and m from
:func:`minicrawl.core.visited.bits_for` — the fixed-k formula for k = 8, so that a filter full
to its capacity n is at the rate p it was asked for. ``BloomFilter``, ``CountingBloomFilter``,
each slice of a ``ScalableBloomFilter`` and the Redis filter are all sized so
(:func:`resolve_size`); their ``expected_fp_rate`` and ``current_fp_rate`` are k = 8's. The
optimal k for p = 0.001 would be 10 and for 1e-4 13: sizing for it while hashing 8 times gave
1.10x and 1.9x the stated rate at capacity.
"""

from __future__ import annotations

import math
import numbers
import os
import threading
from collections.abc import Callable
from typing import NamedTuple, TypeVar

from minicrawl.checks import check_number
from minicrawl.core.visited import HASHES
from minicrawl.core.visited import bits_for as core_bits_for
from minicrawl.visited.batch import FAMILY

LN2 = math.log(2)
T = TypeVar("T")
#: Largest filter any Bloom filter here accepts: bit indices fit a signed 64-bit int with room
#: to spare (the NumPy batch path shifts them as int64), far beyond any machine's memory.
MAX_BITS = 1 << 57


# --------------------------------------------------------------------------- the formulas


def false_positive_rate(m: int, n: float, k: int) -> float:
    """f = (1 − e^(−k·n/m))^k: the chance a new item is reported present after n inserts.

    This is the standard approximation (it treats the bits as independent); for the sizes a
    crawler uses it is accurate to well under 1 %. n = 0 gives 0.0.
    """
    check_number("m", m, above=0)
    check_number("k", k, above=0)
    if n <= 0:
        return 0.0
    return (1.0 - math.exp(-k * n / m)) ** k


def optimal_hashes(m: int, n: float) -> float:
    """k = (m/n)·ln 2: the (real-valued) k that minimises f for m bits and n items."""
    check_number("m", m, above=0)
    check_number("n", n, above=0)
    return m / n * LN2


def optimal_bits(n: float, p: float) -> int:
    """m = ⌈−n·ln p / (ln 2)²⌉: bits for n items at rate p, *assuming the optimal k*."""
    check_np(n, p)
    return math.ceil(-n * math.log(p) / (LN2 * LN2))


def bits_for(n: float, p: float, k: int) -> int:
    """Fewest bits m with f(m, n, k) ≤ p for a fixed k: m = ⌈−k·n / ln(1 − p^(1/k))⌉.

    Solves (1 − e^(−kn/m))^k = p for m. Equals :func:`optimal_bits` (up to rounding) when k is
    the optimal k for that p, and is larger otherwise.
    """
    check_np(n, p)
    check_number("k", k, above=0)
    return math.ceil(-k * n / math.log1p(-(p ** (1.0 / k))))


def capacity_for(m: int, p: float, k: int | None = None) -> int:
    """How many items m bits hold before f exceeds p.

    With ``k=None`` the classic n = m·ln(0.6185)/ln p, which assumes the optimal k; with a given
    k the exact n = −m·ln(1 − p^(1/k))/k. Rounded down.
    """
    check_number("m", m, above=0)
    check_np(1, p)
    if k is None:
        return math.floor(m * math.log(0.6185) / math.log(p))
    check_number("k", k, above=0)
    return math.floor(-m * math.log1p(-(p ** (1.0 / k))) / k)


def estimate_count(m: int, k: int, bits_set: int) -> float:
    """n ≈ −(m/k)·ln(1 − X/m): how many distinct items explain X set bits (inf if all set)."""
    if bits_set >= m:
        return math.inf
    return -(m / k) * math.log1p(-bits_set / m)


def withheld_of_offered(m: int, offered: float, k: int = HASHES) -> float:
    """W(N): of N distinct items offered one by one to a filter of m bits and k hashes, how many
    it is expected to take for seen — Σ f(m, i, k) over i < N, in closed form (module doc)."""
    if offered <= 0:
        return 0.0
    u = -math.expm1(-k * offered / m)  # the fill U; 1 - U = e^(-kN/m)
    if u > 0.5:  # the series converges slowly here: W = N - (m/k)·Σ_{j≤k} U^j/j exactly
        return max(0.0, offered - m / k * sum(u ** j / j for j in range(1, k + 1)))
    total, j = 0.0, k + 1
    while True:
        term = u ** j / j
        total += term
        j += 1
        if term <= 1e-17 * total:
            return m / k * total


def offered_for(m: int, count: int, k: int = HASHES) -> float:
    """N, the distinct items offered to a filter that took ``count`` of them: the root of
    N − W(N) = count (inf when ``count`` is past what the filter can ever take, (m/k)·H_k)."""
    if count <= 0:
        return 0.0
    if count >= m / k * sum(1 / j for j in range(1, k + 1)) * (1 - 1e-12):
        return math.inf
    low, high = float(count), 2.0 * count
    while high - withheld_of_offered(m, high, k) < count:
        low, high = high, 2 * high
    for _ in range(100):  # N - W(N) grows with N (its slope is 1 - f > 0): bisect
        mid = (low + high) / 2
        if mid - withheld_of_offered(m, mid, k) < count:
            low = mid
        else:
            high = mid
        if high - low <= 1e-9 * high:
            break
    return (low + high) / 2


def expected_withheld(m: int, count: int, k: int = HASHES) -> float:
    """How many new items a filter that took ``count`` is expected to have taken for seen on
    the way (each a page never crawled): N − count for the N of :func:`offered_for`."""
    return max(0.0, offered_for(m, count, k) - count)


#: Visited's default: the pages it may lose, in expectation, over the crawl it is sized for,
#: and that crawl, in pages, when ``--max-pages`` does not say: ``HORIZON`` × ``--expected-urls``.
LOSS, HORIZON = 1.0, 10
#: A scalable Visited's slices: each holds ``GROWTH`` times the URLs of the one before at
#: ``TIGHTENING`` times its rate, so their rates add up to twice the first's. (Measured with
#: :func:`bill`: a growth of 1.5 or a tightening of 0.7 would save 4–13 % at 10 M URLs.)
GROWTH, TIGHTENING = 2, 0.5


def rate_bound(n: int, pages: int | None = None) -> float:
    """E, the rate a default Visited's filter never passes: ``LOSS`` / the pages of the crawl
    it is sized for — ``pages`` (``--max-pages``) when given, else ``HORIZON``·``n``. A crawl
    of P pages then loses at most P·E pages in expectation, whatever the order (module doc)."""
    check_np(n, 0.5)
    if pages is not None:
        check_np(pages, 0.5)
    return min(0.5, LOSS / (pages if pages is not None else HORIZON * n))


def default_rate(n: int, pages: int | None = None) -> float:
    """The rate of Visited's first (or only) filter, sized for ``n`` URLs, when none is given:
    the first slice's share of :func:`rate_bound`, E·(1 − ``TIGHTENING``) (5e-8 for a million
    URLs: 61.6 bits a URL; 5e-7 for a crawl of ``pages`` = 1,000,000: 44.9 bits)."""
    return rate_bound(n, pages) * (1 - TIGHTENING)


class Bill(NamedTuple):
    """What a scalable filter costs and loses once ``offered`` distinct URLs were offered."""

    bits: int  #: allocated over all slices (each is allocated whole)
    slices: int
    withheld: float  #: URLs expected to have been taken for seen (the sum of their rates)
    rate: float  #: the rate the next new URL meets: the highest any offer met

    @property
    def nbytes(self) -> int:
        """Bytes of bits."""
        return (self.bits + 7) // 8


def bill(n: int, first_rate: float, offered: int, growth: int = GROWTH,
         tightening: float = TIGHTENING) -> Bill:
    """The :class:`Bill` of a ``ScalableBloomFilter(n, first_rate / (1 − tightening), growth,
    tightening)`` after ``offered`` distinct URLs, from the formulas (no filter is built): each
    slice is offered what passes the older ones until it has taken its capacity."""
    left, withheld, miss, bits, i = float(offered), 0.0, 1.0, 0, 0
    while True:
        capacity, p = n * growth ** i, first_rate * tightening ** i
        m = core_bits_for(capacity, p)
        bits += m
        reach = offered_for(m, capacity)  # URLs that reach this slice while it fills
        if reach / miss >= left:  # the last slice, partly filled
            reach = left * miss
            own = withheld_of_offered(m, reach)
            rate = 1 - miss * (1 - false_positive_rate(m, reach - own, HASHES))
            return Bill(bits, i + 1, withheld + own + left * (1 - miss), rate)
        withheld += reach - capacity + reach / miss * (1 - miss)
        left -= reach / miss
        miss *= 1 - false_positive_rate(m, capacity, HASHES)
        i += 1


def check_np(n: float, p: float) -> None:
    """Raise ValueError unless the capacity ``n`` is positive and 0 < ``p`` < 1."""
    check_number("capacity", n, above=0)
    check_number("error_rate", p, above=0, below=1)


# --------------------------------------------------------------------------- sizing


def resolve_size(capacity: int | None, error_rate: float | None, bits: int | None
                 ) -> tuple[int, int, float]:
    """(m, capacity, error_rate) of a filter with the core's k = 8; see BloomFilter.

    From ``capacity`` (and ``error_rate``, 0.01 if not given): m is the core's
    :func:`~minicrawl.core.visited.bits_for`. From ``bits``: m as given; the capacity is the n
    that m holds at ``error_rate`` (or, without one, the n at which k = 8 is optimal: half the
    bits set); the rate, if not given, is k = 8's at that capacity.
    """
    for name, value in (("capacity", capacity), ("bits", bits)):
        if value is not None and (not isinstance(value, numbers.Integral)
                                  or isinstance(value, bool)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r:.40}")
    if error_rate is not None and (not isinstance(error_rate, numbers.Real)
                                   or isinstance(error_rate, bool)):
        raise TypeError(f"error_rate must be a number, got {type(error_rate).__name__} "
                        f"{error_rate!r:.40}")
    if bits is None:
        if capacity is None:
            raise ValueError("give capacity= (and error_rate=) or bits=")
        p = 0.01 if error_rate is None else error_rate
        check_np(capacity, p)
        return core_bits_for(capacity, p), int(capacity), float(p)
    check_number("bits", bits, above=0)
    if capacity is None:
        if error_rate is None:
            capacity = max(1, round(bits * LN2 / HASHES))
        else:
            check_np(1, error_rate)
            capacity = max(1, capacity_for(bits, error_rate, HASHES))
    if error_rate is None:
        error_rate = false_positive_rate(bits, capacity, HASHES)
    check_np(capacity, error_rate)
    return int(bits), int(capacity), float(error_rate)


class FilterNumbers:
    """The numbers every Bloom filter of this project reports, derived from ``_m``,
    ``_capacity``, ``_error_rate``, the core's k = 8 and the subclass's ``fill_ratio`` (local
    bits, counters, or a Redis bitmap alike)."""

    _m: int
    _capacity: int
    _error_rate: float

    @property
    def bits(self) -> int:
        """m, the number of positions (bits, or counters)."""
        return self._m

    @property
    def hashes(self) -> int:
        """k, the number of positions per item: the core's 8."""
        return HASHES

    @property
    def capacity(self) -> int:
        """n the filter was sized for."""
        return self._capacity

    @property
    def error_rate(self) -> float:
        """The false-positive rate asked for (or implied) at capacity."""
        return self._error_rate

    @property
    def fill_ratio(self) -> float:
        """Fraction of the m positions in use (set bits, non-zero counters), 0.0 to 1.0;
        each filter defines it."""
        raise NotImplementedError

    @property
    def expected_fp_rate(self) -> float:
        """Theoretical false-positive rate once ``capacity`` items are in, for this m and k = 8
        (the stated rate, or just under it, for a filter sized from capacity and rate)."""
        return false_positive_rate(self._m, self._capacity, HASHES)

    @property
    def current_fp_rate(self) -> float:
        """False-positive rate now, from the fill ratio: fill^8."""
        return self.fill_ratio ** HASHES

    @property
    def expected_withheld(self) -> float:
        """New items (pages) expected to have been taken for seen while the ``len(self)`` in
        it went in (:func:`expected_withheld`)."""
        return expected_withheld(self._m, len(self), HASHES)  # type: ignore[arg-type]

    @property
    def hash_family(self) -> str:
        """Name of the positions, as files and a shared crawl record them: the core's."""
        return FAMILY


class SizedFilter(FilterNumbers):
    """What every fixed-size filter here shares: its sizing (m, capacity, p), the count of new
    adds, and the numbers derived from them. Subclasses say how they store positions (bits,
    counters) and define ``fill_ratio``."""

    def __init__(self, capacity: int | None, error_rate: float | None,
                 bits: int | None) -> None:
        m, cap, p = resolve_size(capacity, error_rate, bits)
        if m > MAX_BITS:
            raise ValueError(f"filter too large: m={m}")
        self._m, self._capacity, self._error_rate = m, cap, p
        self._lock = threading.Lock()
        self._count = 0

    def _storage(self, nbytes: int, make: Callable[[], T], unit: str = "bits") -> T:
        """``make()`` the filter's storage of ``nbytes`` (of ``unit``: bits, counters); storage
        that cannot be had is a MemoryError that says the size asked (MemoryError() said
        nothing), before the allocation when the machine has less memory in all (it would take
        it, then be killed)."""
        try:
            memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not every system tells
            memory = None
        asked = (f"{type(self).__name__}(capacity={self._capacity:,}, error_rate="
                 f"{self._error_rate:g}) needs {nbytes / 2**30:,.1f} GiB ({self._m:,} "
                 f"{unit})")
        if memory is not None and nbytes > memory:
            raise MemoryError(f"{asked}, more than this machine's {memory / 2**30:,.1f} GiB of "
                              "memory: ask for a smaller capacity or a higher error_rate")
        try:
            return make()
        except MemoryError:
            raise MemoryError(f"{asked}, more than this process could allocate") from None

    def __len__(self) -> int:
        """``count``."""
        return self._count

    @property
    def count(self) -> int:
        """Number of adds that returned True (distinct items, minus the false positives; for a
        counting filter, minus the removes)."""
        return self._count

    @property
    def over_capacity(self) -> bool:
        """True while more items are in than the filter was sized for."""
        return self._count > self._capacity
