"""The NumPy half of a batch: which bytes and bits a batch of URLs touches, worked out at once.

Used by :meth:`BloomFilter.add_many` for batches of ``SMALL_BATCH`` URLs or more, once NumPy pays
back its import (:func:`numpy_pays`); below that the fixed cost of NumPy is larger than the work,
and a crawl that never sends enough URLs in such batches never imports NumPy.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


# Below this many URLs, add_many and contains_many work URL by URL: NumPy's fixed cost per
# call is larger than the work.
SMALL_BATCH = 512
# Importing NumPy costs ~75 ms and 14 MB, and it saves ~0.3–0.6 µs a URL: it pays back over
# ~100,000 URLs. So batches of SMALL_BATCH or more go URL by URL too until that many URLs have
# come in such batches (unless NumPy is loaded already). A crawl seldom gets there, since it
# offers Visited only links it has not offered before: on the Java API docs (10,248 pages) 13
# pages brought ≥ 512 new links, ~20,000 in all; without NumPy its peak RSS was 65–67 vs 79 MB,
# its wall unchanged (0.98, 1.01: two sets of 4 alternated pairs).
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
