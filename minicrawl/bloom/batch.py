"""The crawl path's hashing: the core's positions, one URL at a time or a batch in NumPy.

Every Bloom filter of run.py puts a URL at :func:`minicrawl.core.visited.positions` — word i of
one salted BLAKE2b digest, mod m, for i < 8 — and nowhere else. A filter asks the core for one
URL; for a batch, :func:`positions_many` computes the same numbers in NumPy, and the rest of this
module works out which bytes and bits a batch touches, at once.

Batches of ``SMALL_BATCH`` URLs or more go through NumPy once it pays back its import
(:func:`numpy_pays`); below that, or in a crawl that has not offered enough URLs yet, the filter
asks the core URL by URL and NumPy is never imported.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
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
# per batch (~15 µs) is more than the ~1.2 µs a URL it saves (Python's modulo of eight 64-bit
# words and their lists) on fewer URLs.
SMALL_BATCH = 16
# Importing NumPy costs ~75 ms and 14 MB: it pays back over ~60,000 URLs. So batches of
# SMALL_BATCH or more go URL by URL too until 100,000 URLs have come in such batches (unless
# NumPy is loaded already): a small crawl never loads it, a long one soon does (a page of 50
# links is such a batch).
NUMPY_AFTER = 100_000
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
            h.update(url.encode("utf-8", "surrogatepass"))
            append(h.digest())
    except AttributeError:  # no .encode: not a str
        bad = next(u for u in urls if not isinstance(u, str))
        raise TypeError(not_a_url(bad)) from None
    return b"".join(out)


def positions_many(urls: Sequence[str], size: int, seed: bytes = SEED) -> np.ndarray:
    """The core's positions of many URLs at once: an (n, 8) ``uint64`` array whose row j is
    ``minicrawl.core.visited.positions(urls[j], size, seed)`` (tests/test_visited_parity.py)."""
    import numpy as np
    # '<u8' is the core's struct "<8Q": little-endian words whatever the machine.
    words = np.frombuffer(digests(urls, seed), dtype="<u8").reshape(-1, HASHES)
    return words % np.uint64(size)


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
    # The indices that occur more than once, and the entries holding them: few (two URLs sharing
    # a bit, a URL given twice; ~450 of 80,000 in a batch of 10,000 URLs at p = 0.001), so they
    # are found by binary search and only they are ordered by (index, row). Sorting all the
    # entries by (index, row) instead cost 3x the whole plan.
    repeated = np.unique(s[1:][dup])
    at = np.searchsorted(repeated, keys)
    at[at == repeated.size] = 0
    pos = np.flatnonzero(repeated[at] == keys)
    rows = pos % n
    order = np.lexsort((rows, keys[pos]))
    sk, srows = keys[pos][order], rows[order]
    # In each group of equal indices the first entry has the earliest row; the entries of a
    # later row are bits an earlier URL of the batch sets (of the same row: its own, twice).
    first = np.empty(sk.size, dtype=bool)
    first[0] = True
    np.not_equal(sk[1:], sk[:-1], out=first[1:])
    first_row = srows[first][np.cumsum(first) - 1]
    earlier[pos[order]] = first_row < srows
    return earlier, ubytes, umasks
