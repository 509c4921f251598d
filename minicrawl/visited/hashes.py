"""Hash families for the ``minicrawl bloom`` tool: the crawler's, and two to compare it with.

A *hash family* maps a URL and a filter size m to k indices in ``[0, m)``. Every family here is
pure and stable: the same URL gives the same indices in every run, process and machine (never
Python's ``hash()``, which is salted per process).

The crawler has one: ``"blake2b"``, the core's :func:`minicrawl.core.visited.positions` (word i
of one salted BLAKE2b digest of the URL's UTF-8, mod m, for i < 8), which every Bloom filter of
run.py uses. Nothing in the crawl path imports this module: it is for ``minicrawl bloom
measure``, which fills a filter with each family and counts the false positives.

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

from minicrawl.core.visited import HASHES, positions
from minicrawl.visited.batch import FAMILY, positions_many
from minicrawl.visited.sizing import MAX_BITS

if TYPE_CHECKING:  # NumPy is imported by the batch functions only, when first needed
    import numpy as np

__all__ = [
    "FAMILIES",
    "HashFamily",
    "family_bits",
    "get_family",
    "java_indices",
    "java_indices_many",
    "scrapy_redis_indices",
    "scrapy_redis_indices_many",
]

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1


def _check(m: int, k: int) -> None:
    if not 1 <= m <= MAX_BITS:
        raise ValueError(f"m must be between 1 and 2**57 bits, got {m}")
    if not 1 <= k <= 64:
        raise ValueError(f"k must be between 1 and 64 hashes, got {k}")


# --------------------------------------------------------------------------- the crawler's


def core_indices(url: str, m: int, k: int = HASHES) -> list[int]:
    """The crawler's family: the core's positions; it has k = 8 and no other."""
    _check_core(m, k)
    return positions(url, m)


def core_indices_many(urls: Sequence[str], m: int, k: int = HASHES) -> np.ndarray:
    """:func:`core_indices` of many URLs at once: an (n, 8) ``uint64`` array."""
    _check_core(m, k)
    return positions_many(urls, m)


def _check_core(m: int, k: int) -> None:
    _check(m, k)
    if k != HASHES:
        raise ValueError(f"the crawler's family has k = {HASHES}, got {k}")


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
    #: True when the family computes ``(m - 1) & h`` and so needs m to be a power of two
    power_of_two: bool
    #: The one k the family has (the crawler's: 8), or None for any k
    fixed_k: int | None
    description: str


FAMILIES: dict[str, HashFamily] = {
    FAMILY: HashFamily(
        FAMILY, core_indices, core_indices_many, False, HASHES,
        "the crawler's (minicrawl.core.visited.positions): 8 words of one salted BLAKE2b "
        "digest, mod m"),
    "java": HashFamily(
        "java", java_indices, java_indices_many, True, None,
        "classic Java crawler SimpleHash: h = (30+Q)*h + c, 32-bit int, (m-1) & h"),
    "scrapy-redis": HashFamily(
        "scrapy-redis", scrapy_redis_indices, scrapy_redis_indices_many, True, None,
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

    The crawler's family uses m as is. The teaching families compute ``(m - 1) & h``, a modulo
    only for powers of two — the original code always used 2**x bits — so m is rounded up to the
    next power of two; with any other m most positions could never be reached.
    """
    fam = get_family(name)
    if fam.power_of_two and m & (m - 1):
        return 1 << (m - 1).bit_length()
    return m
