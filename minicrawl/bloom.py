"""Bloom filters for the Visited set: sized by the math, thread-safe, fast in batches, honest.

A Bloom filter answers "have I seen this URL?" in m bits however long the URLs are. Adding a URL
sets k bits chosen by hashing it (see :mod:`minicrawl.hashes`); a URL is reported as seen when all
its k bits are set. It never forgets a URL it was given (no false negatives) but may take a new URL
for a seen one (a false positive) with a probability that the formulas below predict.

The formulas (all in this module, used everywhere else)
--------------------------------------------------------
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

``BloomFilter(capacity=n, error_rate=p, hashes=8)`` sizes m with the classic formula
(:func:`optimal_bits`), as the crawler's ``--expected-urls``/``--error-rate`` promise, and keeps
k = 8. The optimal k for p = 0.001 is ≈ 10, so at capacity the rate is a little above p
(f(m, n, 8) ≈ 1.1·p for p = 0.001): ``expected_fp_rate`` reports that number honestly, and
:func:`bits_for` says how many bits k = 8 would need to reach p exactly.

Usage::

    >>> bf = BloomFilter(capacity=1_000_000, error_rate=0.001)
    >>> bf.add("https://example.org/")          # True: new
    True
    >>> bf.add_many(["https://example.org/", "https://example.org/a"])
    [False, True]
"""

from __future__ import annotations

import math
import numbers
import os
import struct
import threading
import zlib
from collections.abc import Iterable
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from bitarray import bitarray

from minicrawl.atomic import write_atomically
from minicrawl.hashes import (
    DEFAULT,
    MAX_BITS,
    default_stepper,
    family_bits,
    get_family,
    not_a_url,
)

if TYPE_CHECKING:
    import numpy as np

# Below this many URLs, add_many and contains_many work URL by URL: NumPy's fixed cost per
# call is larger than the work, and a crawl whose pages bring fewer new links than this (most
# do: the crawler offers Visited only links it has not offered before) never imports NumPy
# (14 MB of memory and 80 ms of start-up).
SMALL_BATCH = 512

__all__ = [
    "BloomFileError",
    "BloomFilter",
    "CountingBloomFilter",
    "FilterNumbers",
    "ScalableBloomFilter",
    "bits_for",
    "capacity_for",
    "estimate_count",
    "false_positive_rate",
    "optimal_bits",
    "optimal_hashes",
]

LN2 = math.log(2)


# --------------------------------------------------------------------------- the formulas


def false_positive_rate(m: int, n: float, k: int) -> float:
    """f = (1 − e^(−k·n/m))^k: the chance a new item is reported present after n inserts.

    This is the standard approximation (it treats the bits as independent); for the sizes a
    crawler uses it is accurate to well under 1 %. n = 0 gives 0.0.
    """
    if m <= 0 or k <= 0:
        raise ValueError("m and k must be positive")
    if n <= 0:
        return 0.0
    return (1.0 - math.exp(-k * n / m)) ** k


def optimal_hashes(m: int, n: float) -> float:
    """k = (m/n)·ln 2: the (real-valued) k that minimises f for m bits and n items."""
    if m <= 0 or n <= 0:
        raise ValueError("m and n must be positive")
    return m / n * LN2


def optimal_bits(n: float, p: float) -> int:
    """m = ⌈−n·ln p / (ln 2)²⌉: bits for n items at rate p, *assuming the optimal k*."""
    _check_np(n, p)
    return math.ceil(-n * math.log(p) / (LN2 * LN2))


def bits_for(n: float, p: float, k: int) -> int:
    """Fewest bits m with f(m, n, k) ≤ p for a fixed k: m = ⌈−k·n / ln(1 − p^(1/k))⌉.

    Solves (1 − e^(−kn/m))^k = p for m. Equals :func:`optimal_bits` (up to rounding) when k is
    the optimal k for that p, and is larger otherwise.
    """
    _check_np(n, p)
    if k <= 0:
        raise ValueError("k must be positive")
    return math.ceil(-k * n / math.log1p(-(p ** (1.0 / k))))


def capacity_for(m: int, p: float, k: int | None = None) -> int:
    """How many items m bits hold before f exceeds p.

    With ``k=None`` the classic n = m·ln(0.6185)/ln p, which assumes the optimal k; with a given
    k the exact n = −m·ln(1 − p^(1/k))/k. Rounded down.
    """
    if m <= 0:
        raise ValueError("m must be positive")
    _check_np(1, p)
    if k is None:
        return math.floor(m * math.log(0.6185) / math.log(p))
    if k <= 0:
        raise ValueError("k must be positive")
    return math.floor(-m * math.log1p(-(p ** (1.0 / k))) / k)


def estimate_count(m: int, k: int, bits_set: int) -> float:
    """n ≈ −(m/k)·ln(1 − X/m): how many distinct items explain X set bits (inf if all set)."""
    if bits_set >= m:
        return math.inf
    return -(m / k) * math.log1p(-bits_set / m)


def _check_np(n: float, p: float) -> None:
    if n <= 0:
        raise ValueError(f"capacity must be positive, got {n}")
    if not 0.0 < p < 1.0:
        raise ValueError(f"error rate must be strictly between 0 and 1, got {p}")


# --------------------------------------------------------------------------- sizing


def _resolve_size(capacity: int | None, error_rate: float | None, hashes: int | None,
                  bits: int | None, family: str) -> tuple[int, int, int, float]:
    """(m, k, capacity, error_rate) from the constructor arguments; see BloomFilter."""
    for name, value in (("capacity", capacity), ("hashes", hashes), ("bits", bits)):
        if value is not None and (not isinstance(value, numbers.Integral)
                                  or isinstance(value, bool)):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r:.40}")
    if error_rate is not None and (not isinstance(error_rate, numbers.Real)
                                   or isinstance(error_rate, bool)):
        raise TypeError(f"error_rate must be a number, got {type(error_rate).__name__} "
                        f"{error_rate!r:.40}")
    if not isinstance(family, str):
        raise TypeError(f"hash must be the name of a hash family, got {type(family).__name__}")
    if bits is None:
        if capacity is None:
            raise ValueError("give capacity= (and error_rate=) or bits=")
        p = 0.01 if error_rate is None else error_rate
        _check_np(capacity, p)
        if hashes is None:
            k = max(1, round(optimal_hashes(optimal_bits(capacity, p), capacity)))
        else:
            k = hashes
        _check_k(k)
        m = family_bits(family, optimal_bits(capacity, p))
        return m, k, int(capacity), float(p)
    if bits <= 0:
        raise ValueError(f"bits must be positive, got {bits}")
    m = family_bits(family, bits)
    if hashes is None:
        if capacity is None:
            raise ValueError("with bits= give hashes= (or capacity= to derive the optimal k)")
        k = max(1, round(optimal_hashes(m, capacity)))
    else:
        k = hashes
    _check_k(k)
    if capacity is None:
        if error_rate is None:
            # The n at which this k is optimal (half the bits set): a natural "full" point.
            capacity = max(1, round(m * LN2 / k))
        else:
            capacity = max(1, capacity_for(m, error_rate, k))
    if error_rate is None:
        error_rate = false_positive_rate(m, capacity, k)
    _check_np(capacity, error_rate)
    return m, k, int(capacity), float(error_rate)


def _check_k(k: int) -> None:
    if not isinstance(k, int) or not 1 <= k <= 64:
        raise ValueError(f"hashes must be an int between 1 and 64, got {k!r}")


class BloomFileError(ValueError):
    """A saved filter file that cannot be loaded; the message names the problem."""


# --------------------------------------------------------------------------- BloomFilter


class FilterNumbers:
    """The numbers every Bloom filter of this project reports, derived from ``_m``, ``_k``,
    ``_capacity``, ``_error_rate`` and the subclass's ``fill_ratio`` (local bits, counters, or
    a Redis bitmap alike)."""

    _m: int
    _k: int
    _capacity: int
    _error_rate: float

    @property
    def bits(self) -> int:
        """m, the number of positions (bits, or counters)."""
        return self._m

    @property
    def hashes(self) -> int:
        """k, the number of positions per item."""
        return self._k

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
        raise NotImplementedError

    @property
    def expected_fp_rate(self) -> float:
        """Theoretical false-positive rate once ``capacity`` items are in, for this m and k."""
        return false_positive_rate(self._m, self._capacity, self._k)

    @property
    def current_fp_rate(self) -> float:
        """False-positive rate now, from the fill ratio: fill^k."""
        return self.fill_ratio ** self._k


class _Sized(FilterNumbers):
    """What every fixed-size filter here shares: its sizing (m, k, capacity, p, hash family),
    the count of new adds, and the numbers derived from them. Subclasses say how they store
    positions (bits, counters) and define ``fill_ratio``."""

    def __init__(self, capacity: int | None, error_rate: float | None, hashes: int | None,
                 bits: int | None, hash: str) -> None:
        fam = get_family(hash)
        m, k, cap, p = _resolve_size(capacity, error_rate, hashes, bits, fam.name)
        if m * k >= 1 << 64 or m > MAX_BITS:
            raise ValueError(f"filter too large: m={m}")
        self._m, self._k, self._capacity, self._error_rate = m, k, cap, p
        self._family = fam
        self._indexer = fam.indexer(m, k)
        self._lock = threading.Lock()
        self._count = 0

    def __len__(self) -> int:
        """``count``."""
        return self._count

    @property
    def count(self) -> int:
        """Number of adds that returned True (distinct items, minus the false positives; for a
        counting filter, minus the removes)."""
        return self._count

    @property
    def hash_family(self) -> str:
        """Name of the hash family (``"default"``, ``"java"`` or ``"scrapy-redis"``)."""
        return self._family.name

    @property
    def over_capacity(self) -> bool:
        """True while more items are in than the filter was sized for."""
        return self._count > self._capacity



class BloomFilter(_Sized):
    """A thread-safe Bloom filter of URLs with a batch path.

    Create it either from what you expect — ``BloomFilter(capacity=n, error_rate=p, hashes=8)``
    (m = ⌈−n·ln p/(ln 2)²⌉; ``hashes=None`` picks the optimal k for that m) — or from its
    size — ``BloomFilter(bits=m, hashes=k)`` (capacity is then the n at
    which k is optimal, or the n for ``error_rate=`` if given). ``hash=`` picks the hash family:
    ``"default"`` (fast, MurmurHash3) or the teaching families ``"java"`` and ``"scrapy-redis"``,
    for which m is rounded up to a power of two (see :func:`minicrawl.hashes.family_bits`).

    ``add`` and ``add_many`` test and set under one lock, so among threads offering the same URL
    exactly one gets True. Bits only ever go from 0 to 1, so reads (``in``) need no lock: they can
    only miss an add that has not returned yet.
    """

    def __init__(self, capacity: int | None = None, error_rate: float | None = None,
                 hashes: int | None = 8, *, bits: int | None = None,
                 hash: str = DEFAULT) -> None:
        super().__init__(capacity, error_rate, hashes, bits, hash)
        m, k, fam = self._m, self._k, self._family
        # The strided-slice single-item path needs distinct indices wrapping at most once,
        # which the default family guarantees when m ≥ k.
        self._stepper = default_stepper(m, k) if fam.name == DEFAULT and m >= k else None
        self._span = k - 1
        self._indices_many = fam.indices_many
        self._batch_lock = threading.Lock()
        self._bits = bitarray(m, endian="little")
        self._bits.setall(0)

    @cached_property
    def _view(self) -> np.ndarray:
        """A writable uint8 view of the bits for the NumPy batch path; little-endian bit order
        means bit i lives in byte i >> 3 at position i & 7."""
        import numpy as np
        return np.frombuffer(self._bits, dtype=np.uint8)

    # ----------------------------------------------------------------- single items

    def add(self, url: str) -> bool:
        """Insert ``url``; True if it was not (reported) present before, False otherwise.

        The test and the set are one locked step, so concurrent callers offering the same URL
        get True exactly once. A False for a URL never added is a false positive.
        """
        where = self._where(url)
        with self._lock:
            return self._test_and_set(where)

    def _where(self, url: str) -> tuple[int, int] | list[int]:
        """Where ``url``'s k bits are: (start, step) for the default family, else the list."""
        if self._stepper is not None:
            return self._stepper(url)
        if not isinstance(url, str):  # the teaching families would fail deep inside
            raise TypeError(not_a_url(url))
        return self._indexer(url)

    def _test_and_set(self, where: tuple[int, int] | list[int]) -> bool:
        """Set the bits :meth:`_where` located; True if one was unset. The caller holds the lock."""
        bits = self._bits
        if isinstance(where, list):
            # A list index gets/sets all k bits in one bitarray call.
            if bits[where].all():
                return False
            bits[where] = 1
            self._count += 1
            return True
        # Default family: the k bits are start, start+step, ... (mod m), wrapping at most once,
        # so one or two strided slices cover them — one C call each (see minicrawl.hashes).
        x, step = where
        m = self._m
        end = x + self._span * step
        if end < m:
            if bits[x:end + 1:step].all():
                return False
            bits[x:end + 1:step] = 1
        else:
            y = x + ((m - 1 - x) // step + 1) * step - m
            stop = end - m + 1
            if bits[x::step].all() and bits[y:stop:step].all():
                return False
            bits[x::step] = 1
            bits[y:stop:step] = 1
        self._count += 1
        return True

    def __contains__(self, url: object) -> bool:
        """True if all k bits of ``url`` are set (seen, or a false positive)."""
        if not isinstance(url, str):
            return False
        bits = self._bits
        if self._stepper is None:
            return bool(bits[self._indexer(url)].all())
        x, step = self._stepper(url)
        m = self._m
        end = x + self._span * step
        if end < m:
            return bool(bits[x:end + 1:step].all())
        y = x + ((m - 1 - x) // step + 1) * step - m
        return bool(bits[x::step].all() and bits[y:end - m + 1:step].all())

    # ----------------------------------------------------------------- batches

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """Insert many URLs; element j is what ``add(urls[j])`` would have returned in order.

        Hashing and the in-batch bookkeeping run outside the filter's lock, which is taken once
        for the whole batch. A URL repeated in the batch is True at most for its first
        occurrence.
        """
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        n = len(urls)
        if n < SMALL_BATCH:
            where = [self._where(url) for url in urls]  # hashing outside the lock
            with self._lock:
                return [self._test_and_set(w) for w in where]
        import numpy as np
        k = self._k
        view = self._view
        # Batches are prepared one at a time. Each NumPy call on a few thousand elements
        # releases and retakes the GIL, and with several threads preparing batches at once those
        # hand-offs cost more than the work: 4 threads measured 1.6 M URLs/s aggregate without
        # this lock and 2.5 M/s with it (the same as 1 thread). Waiting here sleeps instead of
        # fighting for the GIL. It does not block single adds or reads.
        with self._batch_lock:
            # (k, n) layout: entry i·n + j is bit i of URL j.
            flat = np.ascontiguousarray(self._indices_many(urls, self._m, k).T).ravel()
            byte, mask = _byte_and_mask(flat)
            earlier, ubytes, umasks = _plan_batch(flat, n, self._m)
            with self._lock:
                # Sequential semantics: URL j is old if each of its bits was set before the
                # batch or by an earlier URL of the batch (which sets all its bits, new or not).
                have = (view[byte] & mask) != 0
                have |= earlier
                new = ~np.logical_and.reduce(have.reshape(k, n), axis=0)
                # ubytes are distinct, so this fancy |= cannot lose a write to a shared byte.
                view[ubytes] |= umasks
                self._count += int(np.count_nonzero(new))
        return new.tolist()

    def contains_many(self, urls: Iterable[str]) -> list[bool]:
        """``url in self`` for many URLs at once (the batch path, no lock needed)."""
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        if len(urls) < SMALL_BATCH:
            return [url in self for url in urls]
        byte, mask = _byte_and_mask(self._indices_many(urls, self._m, self._k).ravel())
        hit = (self._view[byte] & mask) != 0
        return hit.reshape(len(urls), self._k).all(axis=1).tolist()

    # ----------------------------------------------------------------- numbers

    @property
    def bits_set(self) -> int:
        """Number of bits set to 1."""
        return self._bits.count()

    @property
    def fill_ratio(self) -> float:
        """Fraction of the m bits that are set (≈ 1/2 at capacity with the optimal k)."""
        return self._bits.count() / self._m

    @property
    def nbytes(self) -> int:
        """Bytes of bit storage: ⌈m/8⌉ (the object adds a small constant)."""
        return self._bits.nbytes

    def __repr__(self) -> str:
        return (f"BloomFilter(bits={self._m}, hashes={self._k}, capacity={self._capacity}, "
                f"error_rate={self._error_rate:.3g}, hash={self._family.name!r}, "
                f"count={self._count})")

    # ----------------------------------------------------------------- set operations

    def _compatible(self, other: object, op: str) -> BloomFilter:
        if not isinstance(other, BloomFilter):
            raise TypeError(f"can only {op} a BloomFilter with another BloomFilter")
        if (self._m, self._k, self._family.name) != (other._m, other._k, other._family.name):
            raise ValueError(
                f"cannot {op} filters with different parameters: "
                f"m={self._m}, k={self._k}, hash={self._family.name!r} vs "
                f"m={other._m}, k={other._k}, hash={other._family.name!r}")
        return other

    def _combine(self, other: BloomFilter, bits: bitarray) -> BloomFilter:
        out = BloomFilter(bits=self._m, hashes=self._k, hash=self._family.name,
                          capacity=self._capacity, error_rate=self._error_rate)
        out._bits[:] = bits
        # Which items are in a union/intersection is unknown; estimate from the set bits.
        est = estimate_count(self._m, self._k, out._bits.count())
        out._count = min(round(est), self._m) if math.isfinite(est) else self._m
        return out

    def union(self, other: BloomFilter) -> BloomFilter:
        """A new filter holding everything in either (bitwise OR); same m, k, hash family needed.

        Its ``count`` is an estimate from the set bits (:func:`estimate_count`). ValueError if
        the parameters differ.
        """
        other = self._compatible(other, "union")
        with self._lock:
            a = self._bits.copy()
        with other._lock:
            a |= other._bits
        return self._combine(other, a)

    def intersection(self, other: BloomFilter) -> BloomFilter:
        """A new filter of the bits set in both (bitwise AND); same m, k, hash family needed.

        Anything added to both is in it; its false-positive rate can be higher than that of a
        filter built from the common items alone. ``count`` is an estimate from the set bits.
        """
        other = self._compatible(other, "intersect")
        with self._lock:
            a = self._bits.copy()
        with other._lock:
            a &= other._bits
        return self._combine(other, a)

    __or__ = union
    __and__ = intersection

    # ----------------------------------------------------------------- persistence

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the filter to ``path`` atomically (temp file in the same directory, fsync,
        rename): a crash leaves the old file or the new one, never half of one.

        Format (little-endian): header = magic ``MCBLOOM\\0``, format version, k, flags, m,
        count, capacity, error rate, hash family (16 bytes), CRC-32 of the header; then the ⌈m/8⌉
        bytes of bits; then the CRC-32 of the bits.
        """
        with self._lock:
            payload = self._bits.tobytes()
            header = _HEADER.pack(_MAGIC, _VERSION, self._k, 0, self._m, self._count,
                                  self._capacity, self._error_rate,
                                  self._family.name.encode("ascii"))
        blob = b"".join((header, struct.pack("<I", zlib.crc32(header)), payload,
                         struct.pack("<I", zlib.crc32(payload))))
        write_atomically(Path(path), blob)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BloomFilter:
        """Read a filter written by :meth:`save`.

        Raises :class:`BloomFileError` naming the problem for a file that is truncated, has
        trailing data, a wrong magic, an unsupported version, a bad parameter, or a checksum
        mismatch (corrupt header or bits) — never returns an empty or partial filter.
        """
        path = Path(path)
        data = path.read_bytes()
        where = f"{path}"
        if len(data) < len(_MAGIC):
            raise BloomFileError(f"{where}: truncated ({len(data)} bytes; not even a header)")
        if data[:len(_MAGIC)] != _MAGIC:
            raise BloomFileError(f"{where}: wrong magic {data[:8]!r}: not a minicrawl Bloom "
                                 f"filter file (expected {_MAGIC!r})")
        if len(data) < _HEADER.size + 4:
            raise BloomFileError(f"{where}: truncated header ({len(data)} bytes, "
                                 f"need {_HEADER.size + 4})")
        (_, version, k, flags, m, count, capacity, error_rate,
         fam_raw) = _HEADER.unpack_from(data)
        if version != _VERSION:
            raise BloomFileError(f"{where}: unsupported format version {version} "
                                 f"(this minicrawl reads version {_VERSION})")
        (hcrc,) = struct.unpack_from("<I", data, _HEADER.size)
        if zlib.crc32(data[:_HEADER.size]) != hcrc:
            raise BloomFileError(f"{where}: corrupt header (checksum mismatch)")
        family = fam_raw.rstrip(b"\0").decode("ascii", "replace")
        problem = _bad_parameter(m, k, flags, count, capacity, error_rate, family)
        if problem:
            raise BloomFileError(f"{where}: bad parameter: {problem}")
        nbytes = (m + 7) // 8
        want = _HEADER.size + 4 + nbytes + 4
        if len(data) < want:
            raise BloomFileError(f"{where}: truncated ({len(data)} bytes, expected {want} "
                                 f"for m={m})")
        if len(data) > want:
            raise BloomFileError(f"{where}: {len(data) - want} unexpected trailing bytes")
        start = _HEADER.size + 4
        payload = data[start:start + nbytes]
        (pcrc,) = struct.unpack_from("<I", data, start + nbytes)
        if zlib.crc32(payload) != pcrc:
            raise BloomFileError(f"{where}: corrupt bits (checksum mismatch)")
        bf = cls(bits=m, hashes=k, capacity=capacity, error_rate=error_rate, hash=family)
        bf._bits[:] = bitarray(payload[:nbytes], endian="little")[:m]
        if m % 8 and payload[-1] >> (m % 8):
            raise BloomFileError(f"{where}: corrupt bits (padding bits set)")
        bf._count = count
        return bf


_MAGIC = b"MCBLOOM\0"
_VERSION = 1
# magic, version, k, flags, m, count, capacity, error_rate, hash family
_HEADER = struct.Struct("<8sHHIQQQd16s")


def _bad_parameter(m: int, k: int, flags: int, count: int, capacity: int,
                   error_rate: float, family: str) -> str | None:
    try:
        fam = get_family(family)
    except ValueError:
        return f"unknown hash family {family!r}"
    if not 1 <= m <= MAX_BITS:
        return f"m={m} out of range"
    if not 1 <= k <= 64:
        return f"k={k} out of range 1..64"
    if fam.power_of_two and m & (m - 1):
        return f"m={m} is not a power of two, required by hash family {family!r}"
    if flags:
        return f"unknown flags {flags:#x}"
    if capacity < 1:
        return f"capacity={capacity} must be positive"
    if not 0.0 < error_rate < 1.0:
        return f"error rate {error_rate} not in (0, 1)"
    if count > m:
        return f"count={count} larger than m={m}"
    return None


@cache
def _bit_masks() -> np.ndarray:
    """uint8 array whose element i has bit i set (made once, when NumPy is first needed)."""
    import numpy as np
    return np.array([1, 2, 4, 8, 16, 32, 64, 128], dtype=np.uint8)


def _byte_and_mask(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Byte offsets and one-bit masks of bit indices (little-endian bit order)."""
    import numpy as np
    # Indices are < 2**57, so the signed view is the same number and int64 shifts are cheap.
    signed = flat.view(np.int64)
    return signed >> 3, _bit_masks().take(signed & 7)


def _plan_batch(flat: np.ndarray, n: int, m: int
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Everything about a batch that does not depend on the filter, computed outside the lock.

    ``flat`` holds the bit indices in (k, n) layout (entry p belongs to URL p mod n). Returns

    * ``earlier``: True where the same bit index belongs to an *earlier* URL of the batch, whose
      add will already have set it;
    * ``ubytes``, ``umasks``: the distinct bytes to update and the OR of all the batch's bits in
      each, so setting them is one fancy ``|=`` that no repeated byte can spoil.
    """
    import numpy as np
    # Sorting 32-bit keys is ~2x faster than 64-bit ones; all filters below 4 Gbit fit.
    keys = flat.astype(np.uint32) if m <= 1 << 32 else flat
    s = np.sort(keys)
    sbyte = s >> 3
    bitmask = _bit_masks().take(s & 7)
    # OR the masks along each run of equal bytes (runs are short: two bits in one byte happen
    # a dozen times per 8000, three rarely), doubling the reach each round; the last entry of
    # a run then holds the OR of the whole run.
    shift = 1
    while shift < s.size:
        same = sbyte[shift:] == sbyte[:-shift]
        if not same.any():
            break
        bitmask[shift:] |= bitmask[:-shift] * same
        shift *= 2
    last = np.empty(s.size, dtype=bool)
    last[-1] = True
    np.not_equal(sbyte[1:], sbyte[:-1], out=last[:-1])
    ubytes = sbyte[last].astype(np.intp)
    umasks = bitmask[last]

    earlier = np.zeros(flat.shape, dtype=bool)
    dup = s[1:] == s[:-1]
    if not dup.any():
        return earlier, ubytes, umasks
    repeated = s[1:][dup]
    if repeated.size <= 64:
        # The usual case: a few shared bits (two URLs colliding, or a URL given twice); one
        # comparison pass per repeated index is cheaper than sorting (index, row) pairs.
        for v in set(repeated.tolist()):
            pos = np.flatnonzero(keys == v)
            rows = pos % n
            earlier[pos[rows > rows.min()]] = True
        return earlier, ubytes, umasks
    # Many repeats (a big batch, a tiny filter, many duplicate URLs): order the entries by
    # (index, row); in each group of equal indices the first has the earliest row.
    rows = np.arange(flat.size, dtype=np.uint64) % np.uint64(n)
    if m <= 1 << 32 and n <= 1 << 32:
        # One argsort of index·2**32 + row: ~3x faster than lexsort on the two keys.
        order = np.argsort((keys.astype(np.uint64) << np.uint64(32)) | rows)
    else:
        order = np.lexsort((rows, keys))
    sk = keys[order]
    first = np.empty(sk.size, dtype=bool)
    first[0] = True
    np.not_equal(sk[1:], sk[:-1], out=first[1:])
    srows = rows[order]
    first_row = srows[first][np.cumsum(first) - 1]
    earlier[order] = first_row < srows
    return earlier, ubytes, umasks


# --------------------------------------------------------------------------- variants


class CountingBloomFilter(_Sized):
    """A Bloom filter with an 8-bit counter per position instead of a bit, so items can be removed.

    Same constructor and numbers as :class:`BloomFilter` (``bits`` is the number of counters;
    memory is one byte per counter, 8x a plain filter). Every ``add`` increments the k counters
    of the item — also when it was already present — and ``remove`` undoes one ``add``: a
    multiset, which is what makes removing an added item always safe.

    * Never a false negative for an item added and not removed (as many times as it was added).
    * Counters saturate at 255 and then stay there: the true count is unknown, so decrementing
      one could create false negatives for other items.
    * ``remove`` of an item that is certainly absent (a counter is 0, or lower than the number
      of times the item uses that counter) raises KeyError. An item that was never added but is
      a false positive cannot be told apart; removing it would decrement other items' counters
      and could make *them* disappear — only remove what you added.
    """

    MAX_COUNT = 255

    def __init__(self, capacity: int | None = None, error_rate: float | None = None,
                 hashes: int | None = 8, *, bits: int | None = None,
                 hash: str = DEFAULT) -> None:
        super().__init__(capacity, error_rate, hashes, bits, hash)
        # bytearray: fast single-counter access from Python; the NumPy view serves batches.
        self._counters = bytearray(self._m)

    @cached_property
    def _view(self) -> np.ndarray:
        import numpy as np
        return np.frombuffer(self._counters, dtype=np.uint8)

    def add(self, url: str) -> bool:
        """Count one more ``url``; True if it was not (reported) present before."""
        ix = self._indexer(url)
        c = self._counters
        top = self.MAX_COUNT
        with self._lock:
            present = all(c[i] for i in ix)
            for i in ix:
                if c[i] < top:
                    c[i] += 1
            self._count += 1
        return not present

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order (one lock acquisition); same results as sequential adds."""
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        n = len(urls)
        if n == 0:
            return []
        import numpy as np
        k = self._k
        flat = np.ascontiguousarray(self._family.indices_many(urls, self._m, k).T).ravel()
        earlier, _, _ = _plan_batch(flat, n, self._m)
        where, times = np.unique(flat.astype(np.intp), return_counts=True)
        view = self._view
        with self._lock:
            have = (view[flat.astype(np.intp)] > 0) | earlier
            new = ~np.logical_and.reduce(have.reshape(k, n), axis=0)
            bumped = view[where].astype(np.int64) + times
            view[where] = np.minimum(bumped, self.MAX_COUNT).astype(np.uint8)
            self._count += n
        return new.tolist()

    def remove(self, url: str) -> None:
        """Undo one ``add(url)``. KeyError if ``url`` is certainly not in the filter."""
        ix = self._indexer(url)
        c = self._counters
        top = self.MAX_COUNT
        with self._lock:
            if len(set(ix)) == len(ix):
                if not all(c[i] for i in ix):
                    raise KeyError(url)
            else:
                # An item using one counter twice added 2 to it; it must hold at least that.
                need: dict[int, int] = {}
                for i in ix:
                    need[i] = need.get(i, 0) + 1
                if any(c[i] < times and c[i] < top for i, times in need.items()):
                    raise KeyError(url)
            for i in ix:
                if c[i] < top:
                    c[i] -= 1
            self._count -= 1

    def discard(self, url: str) -> bool:
        """Remove ``url`` if it is (reported) present; True if something was removed."""
        try:
            self.remove(url)
        except KeyError:
            return False
        return True

    def __contains__(self, url: object) -> bool:
        """True if all k counters of ``url`` are non-zero."""
        if not isinstance(url, str):
            return False
        ix = self._indexer(url)
        c = self._counters
        with self._lock:  # counters also go down, so read them consistently
            return all(c[i] for i in ix)

    @property
    def fill_ratio(self) -> float:
        """Fraction of counters that are non-zero."""
        return (self._m - self._counters.count(0)) / self._m

    @property
    def saturated(self) -> int:
        """Number of counters stuck at the maximum."""
        return self._counters.count(self.MAX_COUNT)

    @property
    def nbytes(self) -> int:
        """Bytes of counter storage: m (one byte per counter)."""
        return self._m

    def __repr__(self) -> str:
        return (f"CountingBloomFilter(bits={self._m}, hashes={self._k}, "
                f"capacity={self._capacity}, error_rate={self._error_rate:.3g}, "
                f"hash={self._family.name!r}, count={self._count})")


class ScalableBloomFilter:
    """A Bloom filter that grows: once a slice is full, a bigger and stricter one is added.

    Almeida, Baquero, Preguiça & Hutchison, "Scalable Bloom Filters" (2007). Slice i holds
    ``initial_capacity·growth^i`` items at error rate ``error_rate·(1 − tightening)·tightening^i``
    (each with the optimal k for its rate unless ``hashes`` is given). An item is present if any
    slice has it, so the total false-positive rate is at most the sum of the slices' rates,
    ``error_rate·(1 − r)·(1 + r + r² + …) < error_rate`` — however many items arrive. New items
    always go into the newest slice.
    """

    def __init__(self, initial_capacity: int = 100_000, error_rate: float = 0.001, *,
                 growth: int = 2, tightening: float = 0.9, hashes: int | None = None,
                 hash: str = DEFAULT) -> None:
        _check_np(initial_capacity, error_rate)
        if growth < 1:
            raise ValueError(f"growth must be at least 1, got {growth}")
        if not 0.0 < tightening < 1.0:
            raise ValueError(f"tightening must be strictly between 0 and 1, got {tightening}")
        get_family(hash)
        self._initial_capacity = int(initial_capacity)
        self._error_rate = float(error_rate)
        self._growth = growth
        self._tightening = tightening
        self._hashes = hashes
        self._hash = hash
        self._lock = threading.Lock()
        self._filters: list[BloomFilter] = []
        self._grow()

    def _grow(self) -> BloomFilter:
        i = len(self._filters)
        p = self._error_rate * (1 - self._tightening) * self._tightening ** i
        f = BloomFilter(capacity=self._initial_capacity * self._growth ** i, error_rate=p,
                        hashes=self._hashes, hash=self._hash)
        self._filters.append(f)
        return f

    def add(self, url: str) -> bool:
        """Insert ``url``; True if no slice had it (test and set in one locked step)."""
        with self._lock:
            if any(url in f for f in self._filters):
                return False
            cur = self._filters[-1]
            if cur.count >= cur.capacity:
                cur = self._grow()
            cur.add(url)
            return True

    def add_many(self, urls: Iterable[str]) -> list[bool]:
        """``add`` for each URL in order, under one lock acquisition."""
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        out = [False] * len(urls)
        with self._lock:
            pending = list(range(len(urls)))
            # Full slices never change again: one batch lookup each.
            for f in self._filters[:-1]:
                if not pending:
                    break
                hits = f.contains_many([urls[i] for i in pending])
                pending = [i for i, hit in zip(pending, hits, strict=True) if not hit]
            while pending:
                cur = self._filters[-1]
                room = cur.capacity - cur.count
                if room <= 0:
                    # The full slice joins the old ones: what is pending must miss it too.
                    hits = cur.contains_many([urls[i] for i in pending])
                    pending = [i for i, hit in zip(pending, hits, strict=True) if not hit]
                    if pending:  # grow only for a new item, as add() does
                        self._grow()
                    continue
                chunk, rest = pending[:room], pending[room:]
                news = cur.add_many([urls[i] for i in chunk])
                for i, new in zip(chunk, news, strict=True):
                    out[i] = new
                if rest:
                    # What is left must also miss what this chunk just put in (repeats).
                    hits = cur.contains_many([urls[i] for i in rest])
                    rest = [i for i, hit in zip(rest, hits, strict=True) if not hit]
                pending = rest
        return out

    def contains_many(self, urls: Iterable[str]) -> list[bool]:
        """``url in self`` for many URLs at once."""
        urls = urls if isinstance(urls, (list, tuple)) else list(urls)
        hit = [False] * len(urls)
        for f in list(self._filters):
            for i, h in enumerate(f.contains_many(urls)):
                hit[i] = hit[i] or h
        return hit

    def __contains__(self, url: object) -> bool:
        """True if any slice reports ``url``."""
        return any(url in f for f in list(self._filters))

    def __len__(self) -> int:
        """Number of items added as new."""
        return self.count

    @property
    def count(self) -> int:
        """Number of items added as new, over all slices."""
        return sum(f.count for f in self._filters)

    @property
    def slices(self) -> list[BloomFilter]:
        """The slices, oldest first (a copy of the list; the filters themselves are live)."""
        return list(self._filters)

    @property
    def capacity(self) -> int:
        """Items the current slices hold before the next one is added (grows)."""
        return sum(f.capacity for f in self._filters)

    @property
    def error_rate(self) -> float:
        """The bound on the total false-positive rate."""
        return self._error_rate

    @property
    def over_capacity(self) -> bool:
        """Always False: a scalable filter grows instead."""
        return False

    @property
    def bits(self) -> int:
        """Total bits over all slices."""
        return sum(f.bits for f in self._filters)

    @property
    def hash_family(self) -> str:
        """Name of the hash family."""
        return self._hash

    @property
    def fill_ratio(self) -> float:
        """Set bits over total bits, all slices together."""
        return sum(f.bits_set for f in self._filters) / self.bits

    @property
    def current_fp_rate(self) -> float:
        """Chance now that a new item is reported present: 1 − Π(1 − fill_i^k_i)."""
        miss = 1.0
        for f in self._filters:
            miss *= 1.0 - f.current_fp_rate
        return 1.0 - miss

    @property
    def expected_fp_rate(self) -> float:
        """Total rate once every current slice is at capacity (< ``error_rate``)."""
        miss = 1.0
        for f in self._filters:
            miss *= 1.0 - f.expected_fp_rate
        return 1.0 - miss

    @property
    def nbytes(self) -> int:
        """Bytes of bit storage over all slices."""
        return sum(f.nbytes for f in self._filters)

    def __repr__(self) -> str:
        return (f"ScalableBloomFilter(initial_capacity={self._initial_capacity}, "
                f"error_rate={self._error_rate:.3g}, growth={self._growth}, "
                f"tightening={self._tightening}, slices={len(self._filters)}, "
                f"count={self.count})")
