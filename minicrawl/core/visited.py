"""Visited: was this URL ever let into ToDo (the door asks for those its rules admit)? A Bloom
filter answers in a fixed amount of memory.

A Bloom filter is m bits, all 0 at first, and k = 8 seeded hashes (the 8 words of one salted BLAKE2b
digest: independent, so eight hashes for one call). Adding a URL sets the 8 bits they name; it was
seen before only if all 8 were set. An unseen URL may find its bits set by others: a *false
positive*, and that page is never crawled. For n URLs at rate p, m = -8n / ln(1 - p^(1/8)) bits
(past n, p climbs, unannounced): 1.8 MB for a million at p = 0.001; a ``set`` of 70-character ones,
~150 MB. Check and insert are one step, under one lock (as :class:`SeenSet` asks)."""

import math
import struct
import threading
from hashlib import blake2b

from bitarray import bitarray

from minicrawl.checks import check_number

HASHES = 8
SEED = b"minicrawl"  # salts every hash (another seed, other positions); BLAKE2b takes ≤ 16 bytes


def bits_for(expected: int, error_rate: float) -> int:
    """The size m, in bits, that keeps ``expected`` URLs at ``error_rate`` false positives."""
    check_number("expected", expected, low=1)
    check_number("error_rate", error_rate, above=0, below=1)
    return max(64, math.ceil(-HASHES * expected / math.log1p(-error_rate ** (1 / HASHES))))


def positions(url: str, size: int, seed: bytes = SEED) -> list[int]:
    """The 8 bit positions of ``url`` among ``size`` (a lone surrogate hashes as 3 bytes)."""
    digest = blake2b(url.encode("utf-8", "surrogatepass"), digest_size=8 * HASHES, salt=seed)
    return [word % size for word in struct.unpack("<8Q", digest.digest())]


class BloomVisited:
    def __init__(self, expected: int = 1_000_000, error_rate: float = 0.001,
                 seed: bytes = SEED) -> None:
        self.size = bits_for(expected, error_rate)
        self.bits = bitarray(self.size)  # all 0 (bitarray ≥ 3)
        self.seed = seed
        self._lock = threading.Lock()

    def add_new(self, urls: list[str]) -> list[str]:
        """The URLs of ``urls`` not seen before (or not seeming to be), now remembered."""
        where = [positions(url, self.size, self.seed) for url in urls]  # hashing needs no lock
        new = []
        with self._lock:  # one lock per batch (a page's links), not per link: less queueing
            for url, bits in zip(urls, where, strict=True):
                if not self.bits[bits].all():
                    self.bits[bits] = 1
                    new.append(url)
        return new
