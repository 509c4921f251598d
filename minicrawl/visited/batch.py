"""The crawl path's hashing: the core's positions, one URL at a time or a batch in NumPy.

Every Bloom filter of run.py puts a URL at :func:`minicrawl.core.visited.positions` — word i of
one salted BLAKE2b digest, mod m, for i < 8 — and nowhere else. A filter asks the core for one
URL; for a batch, :func:`positions_many` computes the same numbers in NumPy, and the rest of this
module works out which bytes and bits a batch touches, at once.

Batches of ``SMALL_BATCH`` URLs or more get their positions from NumPy once it pays back its
import (:func:`numpy_pays`), and from ``LARGE_BATCH`` URLs on the test-and-set is NumPy's too;
below that, or in a crawl that has not offered enough URLs yet, the filter asks the core URL by
URL and NumPy is never imported.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Iterable, Sequence
from functools import cache
from hashlib import blake2b
from typing import TYPE_CHECKING

from minicrawl.core.visited import HASHES, SEED

if TYPE_CHECKING:
    import numpy as np

#: The name saved filters and a shared crawl record for the core's positions (the files and
#: Redis keys of older minicrawls hold MurmurHash3 double hashing, named "default").
FAMILY = "blake2b"

# Below this many URLs, add_many and contains_many ask the core URL by URL: NumPy's fixed cost
# per batch (~5 µs) is more than the ~1.2 µs a URL it saves (Python's modulo of eight 64-bit
# words) on fewer URLs. From there a batch's positions come from positions_many, and the bits
# are tested and set URL by URL: a page of 50 links, 1.12 M URLs/s, against 0.73 M/s for the
# all-NumPy path below, whose fixed cost is larger.
SMALL_BATCH = 8
# From this many URLs the test-and-set is NumPy's too (_plan_batch): 1.21 against 0.92 M/s at
# 1,000 URLs, even at 512.
LARGE_BATCH = 512
# Importing NumPy costs 0.14-0.19 s of CPU and 14 MB (issue 49, a 2-core machine under load;
# 75 ms once measured elsewhere), and on a page's links it saves ~0.4 µs a URL over the URL-by-URL
# path (1.41 against 1.86 µs a URL, bench/manyhosts.py's 3,200 pages replayed into the crawl's
# filter; it saved ~3 µs before that path hashed a page's URLs at once, positions_list): it pays
# back over ~400,000 URLs. So batches of SMALL_BATCH or more go URL by URL too until that many
# have come in such batches (unless NumPy is loaded already): a small crawl never loads it (the
# 3,200 pages of 40 links did, at the 100,000 this was: 0.35 s of a 12 s crawl's GIL), a long
# one does (a page of 50 links is such a batch).
NUMPY_AFTER = 400_000
_batched = 0  # URLs seen in batches of SMALL_BATCH or more, process-wide (roughly: no lock)


def numpy_pays(n: int) -> bool:
    """Whether a batch of ``n`` URLs should go through NumPy (see ``NUMPY_AFTER``)."""
    global _batched
    if n < SMALL_BATCH:
        return False
    if "numpy" in sys.modules:
        return True
    _batched += n
    return _batched >= NUMPY_AFTER


def not_a_url(value: object) -> str:
    """The message for a non-str given as a URL."""
    return f"url must be a str, got {type(value).__name__}"


def url_list(urls: Iterable[str]) -> list[str] | tuple[str, ...]:
    """``urls`` as a list (or the tuple given); a str (or bytes) is refused: iterated, it would
    be its letters, each added as a URL."""
    if isinstance(urls, (str, bytes, bytearray)):
        raise TypeError(f"urls must be a list of URLs, got a {type(urls).__name__} (one URL: "
                        "use add, or put it in a list)")
    return urls if isinstance(urls, (list, tuple)) else list(urls)


@cache
def _blank(seed: bytes) -> blake2b:
    """An empty BLAKE2b state with the core's digest size and salt, to copy for each URL."""
    return blake2b(digest_size=8 * HASHES, salt=seed)


def digests(urls: Sequence[str], seed: bytes = SEED) -> bytes:
    """The core's BLAKE2b digest of each URL, one after the other (64 bytes each).

    ``blake2b(data, digest_size=64, salt=seed)`` is an empty salted state updated with the data:
    copying one ready state costs 270 ns a URL where the constructor parses its keywords again
    (430 ns). TypeError, naming the type, for a URL that is not a str.
    """
    copy = _blank(seed).copy
    out = []
    append = out.append
    try:
        for url in urls:
            h = copy()
            try:
                h.update(url.encode())  # 30 ns a URL faster than naming the error handler
            except UnicodeEncodeError:  # a lone surrogate: the core hashes its 3 bytes
                h.update(url.encode("utf-8", "surrogatepass"))
            append(h.digest())
    except AttributeError:  # no .encode: not a str
        bad = next(u for u in urls if not isinstance(u, str))
        raise TypeError(not_a_url(bad)) from None
    return b"".join(out)


_WORDS = struct.Struct(f"<{HASHES}Q").iter_unpack  # the core's words of each digest, in turn


def positions_list(urls: Sequence[str], size: int, seed: bytes = SEED) -> list[list[int]]:
    """The core's positions of each of ``urls``, in Python: ``[positions(url, size, seed) for
    url in urls]`` (tests/test_visited_parity.py) at about half its cost (1.1 against 2.0 µs a
    URL on a page of 40): one ready BLAKE2b state copied for each URL (:func:`digests`), the
    words unpacked from all the digests at once."""
    return [[word % size for word in words] for words in _WORDS(digests(urls, seed))]


def positions_many(urls: Sequence[str], size: int, seed: bytes = SEED) -> np.ndarray:
    """The core's positions of many URLs at once: an (n, 8) ``uint64`` array whose row j is
    ``minicrawl.core.visited.positions(urls[j], size, seed)`` (tests/test_visited_parity.py)."""
    import numpy as np
    # '<u8' is the core's struct "<8Q": little-endian words whatever the machine.
    words = np.frombuffer(digests(urls, seed), dtype="<u8").reshape(-1, HASHES)
    # words % size, exactly: NumPy divides by one number with a multiply and a shift
    # (libdivide), 4x faster than its remainder (4 against 17 µs for a page of 1,000 URLs' 8,000)
    return words - words // np.uint64(size) * np.uint64(size)


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

    ``flat`` holds the bit indices (uint64) in (k, n) layout: entry p is bit p // n of URL
    p mod n, its row. Returns

    * ``earlier``: True where the same bit index belongs to an *earlier* URL of the batch, whose
      add will already have set it;
    * ``sbytes``, ``smasks``: the bytes that two or more of the batch's bits fall in, a bit
      each (a byte once for each of its bits): :func:`set_bits` sets them again one by one,
      where the batch's one fancy ``|=`` keeps only one of a byte's bits.

    Both need the indices sorted. When few indices can repeat (n·k entries in m bits share
    about (n·k)²/2m pairs), a plain sort and a pass per repeated index are cheapest (a batch of
    1,000 URLs: about 2); when many do (10,000 URLs: ~400), one sort by (index, row) orders
    each run of equal indices earliest URL first.
    """
    import numpy as np
    size = flat.size
    earlier = np.zeros(size, dtype=bool)
    if size * size <= 64 * m and m <= 1 << 32:
        keys = flat.astype(np.uint32)  # sorting 32-bit keys is ~2x faster than 64-bit ones
        s = np.sort(keys)
        dup = s[1:] == s[:-1]
        if dup.any():
            repeated = set(s[1:][dup].tolist())
            if len(repeated) > 64:  # a batch that repeats URLs: the sort by (index, row)
                earlier = _earlier(flat, n)[1]
            else:
                # A repeated index has 2 or 3 entries: their rows are compared in Python, where
                # five NumPy calls on 2-element arrays cost ~5 µs an index (~7 of them in a batch
                # of 1,000 new URLs: the plan 161 µs against 196, issue 49).
                for v in repeated:
                    pos = np.flatnonzero(keys == v).tolist()
                    first = min(p % n for p in pos)
                    for p in pos:
                        if p % n > first:
                            earlier[p] = True
    else:
        s, earlier = _earlier(flat, n)
    return (earlier, *_shared_bytes(s))


def _earlier(flat: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(the indices sorted, ``earlier`` of :func:`_plan_batch`) by sorting the entries by
    (index, row): the first of each run of equal indices is the earliest URL's."""
    import numpy as np
    size = flat.size
    k = size // n
    p = np.arange(size, dtype=np.uint64)
    row = p % np.uint64(n)
    if int(flat.max(initial=0)) < 1 << 32 and size <= 1 << 29:
        # One sort of index·2**32 + row·k + bit. (Sorting the indices, then finding the
        # repeated ones among all entries by binary search, cost twice as much.)
        c = np.sort((flat << np.uint64(32)) | (row * np.uint64(k) + p // np.uint64(n)))
        s = c >> np.uint64(32)
        low = c & np.uint64(0xFFFFFFFF)
        srow = low // np.uint64(k)
        where = (low % np.uint64(k)) * np.uint64(n) + srow  # back to the entry's place p
    else:  # a filter of more than 4 Gbit, or a batch of millions: two keys
        where = np.lexsort((row, flat)).astype(np.uint64)
        s = flat[where]
        srow = row[where]
    earlier = np.zeros(size, dtype=bool)
    first = np.empty(size, dtype=bool)
    first[:1] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    if not first.all():
        # Entries of a later row than their run's first are bits an earlier URL of the batch
        # sets (of the same row: its own, twice).
        first_row = srow[first][np.cumsum(first) - 1]
        earlier[where.astype(np.intp)] = srow > first_row
    return s, earlier


def _shared_bytes(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the bytes, their bits) of the sorted bit indices ``s`` that share their byte with
    another: two bits in one byte happen a dozen times in a batch of 8,000 (1,000 URLs), three
    rarely. Working out each distinct byte's OR instead cost 26 µs a batch of 1,000 (issue 49)."""
    import numpy as np
    sbyte = s >> 3
    same = np.flatnonzero(sbyte[1:] == sbyte[:-1])  # entry i shares its byte with entry i + 1
    if not same.size:
        empty = np.empty(0, dtype=np.intp)
        return empty, empty.astype(np.uint8)
    shared = np.zeros(s.size, dtype=bool)  # (marked: 8 µs a batch of 1,000 URLs, union1d 12)
    shared[same] = True
    shared[same + 1] = True
    entries = np.flatnonzero(shared)
    return sbyte[entries].astype(np.intp), _bit_masks().take(s[entries] & 7)


def set_bits(view: np.ndarray, byte: np.ndarray, mask: np.ndarray, sbytes: np.ndarray,
             smasks: np.ndarray) -> None:
    """Set a batch's bits (``view[byte] |= mask``, the caller holding the lock) and those of the
    bytes it repeats (``sbytes``, ``smasks`` of :func:`_plan_batch`), which that one fancy
    ``|=`` sets only one of. Meanwhile a reader without the lock may miss a bit of the batch
    (one of an add that has not returned), never one set before: each write is the byte read
    under the lock with a bit more."""
    import numpy as np
    view[byte] |= mask
    if sbytes.size:
        np.bitwise_or.at(view, sbytes, smasks)
