"""Hash families: how a URL becomes the k bit positions of a Bloom filter.

A *hash family* maps a URL and a filter size m to k indices in ``[0, m)``. Every family here is
pure and stable: the same URL gives the same indices in every run, process and machine (never
Python's ``hash()``, which is salted per process). Nothing here knows about bit storage, so the
same indices can address a ``bitarray``, a NumPy array or a Redis bitmap.

The default family, ``"default"``
---------------------------------
One MurmurHash3 x64-128 digest of the URL's UTF-8 bytes (``mmh3``, a small, well-kept C
extension) is read as two little-endian unsigned 64-bit integers h1, h2. The k indices come from
Kirsch–Mitzenmacher double hashing, g_i = h1' + i·h2' (mod m)::

    start = h1 mod m
    step  = 1 + (h2 mod L)          with L = ⌊(m − 1)/(k − 1)⌋  (L = m when k = 1)
    g_i   = (start + i·step) mod m  for i = 0 .. k-1

This is how the "eight seeded hashes" are derived: seed i is the i-th member g_i. Kirsch and
Mitzenmacher ("Less hashing, same performance", 2006) show that the false-positive rate of
g_0..g_{k-1} is asymptotically that of k independent hashes; ``minicrawl bloom measure`` checks it
on realistic URLs.

Bounding the step to 1..L is a deliberate refinement: (k − 1)·step < m, so

* the k indices of a URL are always *distinct* (plain h2 mod m can be 0, or share a factor with m,
  and then a URL sets fewer than k bits), and
* they wrap around the end of the array at most once, so a filter can test and set them with one
  or two *strided slices* (``bits[start:stop:step]``), a single C call each, instead of k
  Python-level index operations: measured 0.9 M adds/s against 0.57 M/s.

start is uniform over the m bits and step is independent of it, so every bit is equally likely.
The naive strided slice instead draws start from [0, m − (k−1)·step) so that it never wraps; the
bits near the end are then set less often, and at m/n = 10, k = 8 it measured 1.49x the
theoretical false-positive rate (``bench/bench_bloom.py``), against 1.00x for this family.

All intermediate values stay below k·m, so the scalar path never needs 2**64 wraparound and the
NumPy path (uint64) agrees exactly.

Why one 128-bit digest and not eight seeded 32-bit ones: one C call per URL instead of eight, and
with ``map(mmh3.hash_bytes, urls)`` a batch of digests costs ≈ 60 ns per URL here.

The teaching families, ``"java"`` and ``"scrapy-redis"``
--------------------------------------------------------
Faithful ports of two string hashes widely copied into crawler tutorials, shipped so people can
*see* why hash quality matters (see :func:`java_indices`, :func:`scrapy_redis_indices`). Both
compute ``(m - 1) & h``, which is a modulo only when m is a power of two — as in the original code
— so :func:`family_bits` rounds m up for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import mmh3

if TYPE_CHECKING:  # NumPy is imported by the batch functions only, when first needed
    import numpy as np

__all__ = [
    "DEFAULT",
    "FAMILIES",
    "HashFamily",
    "MAX_BITS",
    "family_bits",
    "get_family",
    "default_indexer",
    "default_stepper",
    "indices",
    "indices_many",
    "java_indices",
    "java_indices_many",
    "scrapy_redis_indices",
    "scrapy_redis_indices_many",
]

#: Largest filter size any family accepts: keeps (m-1) + i·(m-1) below 2**64 for every k ≤ 64,
#: so the NumPy batch path never wraps around.
MAX_BITS = 1 << 57

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


def _check(m: int, k: int) -> None:
    if not 1 <= m <= MAX_BITS:
        raise ValueError(f"m must be between 1 and 2**57 bits, got {m}")
    if not 1 <= k <= 64:
        raise ValueError(f"k must be between 1 and 64 hashes, got {k}")


# --------------------------------------------------------------------------- default family


def _step_range(m: int, k: int) -> int:
    """L, the number of possible steps: ⌊(m − 1)/(k − 1)⌋, at least 1 (m when k = 1)."""
    return m if k == 1 else max(1, (m - 1) // (k - 1))


def indices(url: str, m: int, k: int = 8) -> list[int]:
    """The k bit indices of ``url`` in a filter of m bits (default family), as Python ints.

    Element i is ``(start + i·step) mod m`` with (start, step) from :func:`default_stepper`.
    Distinct whenever m ≥ k. Identical to row 0 of ``indices_many([url], m, k)``.
    """
    start, step = default_stepper(m, k)(url)
    return [(start + i * step) % m for i in range(k)]


def default_stepper(m: int, k: int = 8) -> Callable[[str], tuple[int, int]]:
    """A fast function ``url -> (start, step)`` for a fixed m and k (default family).

    The indices are ``(start + i·step) mod m`` for i < k, with ``0 ≤ start < m`` and
    ``1 ≤ step``, and ``(k − 1)·step < m`` whenever m ≥ k — so they are distinct and wrap at most
    once. Checks m and k once; a filter keeps one and calls it for every single add.
    """
    _check(m, k)
    span = _step_range(m, k)

    # m, span and hash64 are closure cells / a default rather than globals: measured ≈ 1.5x
    # faster per call on CPython 3.11.
    def stepper(url: str, hash64: Callable[..., tuple[int, int]] = mmh3.hash64
                ) -> tuple[int, int]:
        h1, h2 = hash64(url, signed=False)
        return h1 % m, 1 + h2 % span

    return stepper


def default_indexer(m: int, k: int = 8) -> Callable[[str], list[int]]:
    """A fast function ``url -> list[int]`` computing :func:`indices` for a fixed m and k."""
    stepper = default_stepper(m, k)
    rest = range(k - 1)

    def index(url: str) -> list[int]:
        x, step = stepper(url)
        out = [x]
        for _ in rest:
            x = (x + step) % m
            out.append(x)
        return out

    return index


def _digests(urls: Sequence[str]) -> np.ndarray:
    """(n, 2) uint64 array of the (h1, h2) halves of each URL's MurmurHash3 x64-128 digest."""
    import numpy as np
    # map() with the C function directly avoids a Python frame per URL (2x faster than a
    # comprehension); '<u8' pins the byte order so the result does not depend on the machine.
    raw = b"".join(map(mmh3.hash_bytes, urls))
    return np.frombuffer(raw, dtype="<u8").reshape(-1, 2)


def indices_many(urls: Sequence[str], m: int, k: int = 8) -> np.ndarray:
    """The default-family indices of many URLs at once: an (n, k) ``uint64`` array.

    Row j equals ``indices(urls[j], m, k)``; an empty input gives shape (0, k). The array is
    the transpose of a C-contiguous (k, n) one (``out.T`` is free), the layout the Bloom
    filter's batch path wants.
    """
    import numpy as np
    _check(m, k)
    h = _digests(urls)
    start = h[:, 0] % np.uint64(m)
    step = h[:, 1] % np.uint64(_step_range(m, k)) + np.uint64(1)
    # Built as (k, n): long contiguous rows make each NumPy call one tight loop (a (n, k)
    # broadcast with rows of 8 was measured 3x slower).
    out = np.multiply(np.arange(k, dtype=np.uint64)[:, None], step[None, :])
    # start + i·step < m + i·m ≤ k·m ≤ 2**63 (MAX_BITS), so uint64 never wraps before the mod.
    out += start
    out %= np.uint64(m)
    return out.T


# --------------------------------------------------------------------------- teaching families
#
# Both classic hashes are polynomial string hashes, h = Σ c_j · B^(L-1-j), evaluated modulo a
# power of two (2**32 for the Java int, or effectively 2**bits of m for the unbounded Python int
# because only the low bits survive "(m - 1) &"). The batch paths evaluate that polynomial for all
# URLs with one matrix product: characters right-aligned in a zero-padded (n, L) matrix (leading
# zeros leave h = 0, exactly as the loop does) times the (L, k) matrix of powers B_i^e mod 2**64.
# NumPy integer matmul wraps modulo 2**64, and 2**32 (or 2**bits) divides 2**64, so the low bits
# are exact.


def _java_multipliers(k: int) -> list[int]:
    # The ported Java code uses, for hash number Q = i + 1, the multiplier 30 + Q: 31, 32, 33, ...
    # Half of them are even, and 32 = 2**5 shifts the early characters out of a 32-bit int —
    # part of what the teaching family is there to show.
    return [30 + i + 1 for i in range(k)]


def _scrapy_multipliers(k: int) -> list[int]:
    # scrapy-redis: ret += seed·ret + ord(c)  ==  ret = (seed + 1)·ret + ord(c), seeds 0..k-1.
    # Seed 0 is the plain sum of the code points (multiplier 1), anagrams collide.
    return [seed + 1 for seed in range(k)]


def _java_int(x: int) -> int:
    """Wrap an integer to a Java 32-bit signed int."""
    x &= _MASK32
    return x - (1 << 32) if x >= 1 << 31 else x


def _utf16_units(url: str) -> list[int]:
    # Java's String.charAt walks UTF-16 code units, so a non-BMP character counts as two chars.
    raw = url.encode("utf-16-le", "surrogatepass")
    return [raw[i] | raw[i + 1] << 8 for i in range(0, len(raw), 2)]


def java_indices(url: str, m: int, k: int = 8) -> list[int]:
    """The k indices of the Java teaching family, computed exactly like the ported Java loop.

    For hash i (Q = i + 1): ``h = (30 + Q)·h + c`` over the UTF-16 chars in a 32-bit signed
    int, then ``(m - 1) & h``. Java would hold m - 1 in an int too; for m > 2**31 we widen like
    Java's int-to-long promotion (sign extension), so the result is still in [0, m).
    """
    _check(m, k)
    units = _utf16_units(url)
    out = []
    for mult in _java_multipliers(k):
        h = 0
        for c in units:
            h = _java_int(mult * h + c)
        out.append((m - 1) & h)
    return out


def scrapy_redis_indices(url: str, m: int, k: int = 8) -> list[int]:
    """The k indices of the scrapy-redis ``HashMap`` teaching family, exactly like its loop.

    For seed in 0..k-1: ``ret += seed·ret + ord(c)`` over the code points, unbounded Python int,
    then ``(m - 1) & ret``.
    """
    _check(m, k)
    out = []
    for seed in range(k):
        ret = 0
        for ch in url:
            ret += seed * ret + ord(ch)
        out.append((m - 1) & ret)
    return out


def _poly_many(codes: list[np.ndarray], multipliers: list[int]) -> np.ndarray:
    """Σ c_j·B^(L-1-j) mod 2**64 for each code sequence and each multiplier B: (n, k) uint64."""
    import numpy as np
    n, k = len(codes), len(multipliers)
    out = np.zeros((n, k), dtype=np.uint64)
    if n == 0:
        return out
    lengths = np.fromiter((len(c) for c in codes), dtype=np.int64, count=n)
    longest = int(lengths.max(initial=0))
    if longest == 0:
        return out
    powers = np.empty((longest, k), dtype=np.uint64)
    for col, b in enumerate(multipliers):
        p = 1
        for e in range(longest):
            # row longest-1-e multiplies the character that has e characters after it
            powers[longest - 1 - e, col] = p
            p = (p * b) & _MASK64
    # Chunks bound the padded matrix to ~16 MB whatever n is.
    chunk = max(1, (1 << 21) // longest)
    for start in range(0, n, chunk):
        part = codes[start:start + chunk]
        mat = np.zeros((len(part), longest), dtype=np.uint64)
        for r, c in enumerate(part):
            if len(c):
                mat[r, longest - len(c):] = c
        out[start:start + len(part)] = mat @ powers
    return out


def java_indices_many(urls: Sequence[str], m: int, k: int = 8) -> np.ndarray:
    """:func:`java_indices` for many URLs at once: an (n, k) ``uint64`` array, row j equal."""
    import numpy as np
    _check(m, k)
    codes = [np.frombuffer(u.encode("utf-16-le", "surrogatepass"), dtype="<u2") for u in urls]
    h = _poly_many(codes, _java_multipliers(k))
    # Low 32 bits = the Java int; reinterpret as signed and sign-extend to 64 bits, then mask:
    # the same bits Java's (cap - 1) & result keeps.
    signed = (h & np.uint64(_MASK32)).astype(np.uint32).view(np.int32).astype(np.int64)
    return signed.view(np.uint64) & np.uint64(m - 1)


def scrapy_redis_indices_many(urls: Sequence[str], m: int, k: int = 8) -> np.ndarray:
    """:func:`scrapy_redis_indices` for many URLs at once: an (n, k) ``uint64`` array."""
    import numpy as np
    _check(m, k)
    # ord() is the code point, so decode as UTF-32 code units.
    codes = [np.frombuffer(u.encode("utf-32-le", "surrogatepass"), dtype="<u4") for u in urls]
    h = _poly_many(codes, _scrapy_multipliers(k))
    # (m - 1) < 2**64, so the low 64 bits of the unbounded ret decide (m - 1) & ret.
    return h & np.uint64(m - 1)


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class HashFamily:
    """A named hash family: a scalar and a batch function that agree exactly."""

    name: str
    #: ``(url, m, k) -> list[int]``
    indices: Callable[[str, int, int], list[int]]
    #: ``(urls, m, k) -> (n, k) uint64 array``
    indices_many: Callable[[Sequence[str], int, int], np.ndarray]
    #: ``(m, k) -> (url -> list[int])``, the fast single-item path
    indexer: Callable[[int, int], Callable[[str], list[int]]]
    #: True when the family computes ``(m - 1) & h`` and so needs m to be a power of two
    power_of_two: bool
    description: str


def _partial(fn: Callable[[str, int, int], list[int]]
             ) -> Callable[[int, int], Callable[[str], list[int]]]:
    def make(m: int, k: int) -> Callable[[str], list[int]]:
        _check(m, k)
        return lambda url: fn(url, m, k)
    return make


DEFAULT = "default"

FAMILIES: dict[str, HashFamily] = {
    "default": HashFamily(
        "default", indices, indices_many, default_indexer, False,
        "MurmurHash3 x64-128 of the UTF-8 bytes, double hashing (start + i*step) mod m"),
    "java": HashFamily(
        "java", java_indices, java_indices_many, _partial(java_indices), True,
        "classic Java crawler SimpleHash: h = (30+Q)*h + c, 32-bit int, (m-1) & h"),
    "scrapy-redis": HashFamily(
        "scrapy-redis", scrapy_redis_indices, scrapy_redis_indices_many,
        _partial(scrapy_redis_indices), True,
        "scrapy-redis HashMap: ret += seed*ret + ord(c), seeds 0..k-1, (m-1) & ret"),
}


def get_family(name: str) -> HashFamily:
    """The :class:`HashFamily` called ``name``; ValueError listing the known names otherwise."""
    try:
        return FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(FAMILIES))
        raise ValueError(f"unknown hash family {name!r} (known: {known})") from None


def family_bits(name: str, m: int) -> int:
    """The filter size the family really uses for a requested m.

    The default family uses m as is. The teaching families compute ``(m - 1) & h``, a modulo only
    for powers of two — the original code always used 2**x bits — so m is rounded up to the next
    power of two; with any other m most positions could never be reached.
    """
    fam = get_family(name)
    if fam.power_of_two and m & (m - 1):
        return 1 << (m - 1).bit_length()
    return m
