"""The Bloom filter's false-positive rate on hostile URL sets is the theory's (issue 49).

URLs that share almost everything are where a weak string hash puts many URLs on the same bits;
the core's eight words of one salted BLAKE2b digest must not care. Each set's even members are
added through the batch path (``add_many``: the chained-map digests), the odd ones probed.
Deterministic: the same URLs and hash every run, so the counts never change.
"""

from __future__ import annotations

import math

import pytest

from minicrawl.core.visited import HASHES
from minicrawl.visited import BloomFilter

N = 50_000  # added; as many probed. At p = 0.02 that is ~1,000 false positives, σ ≈ 31
ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


def one_char_apart(n: int) -> list[str]:
    """A 220-character URL whose characters 40, 90, 140, 190 spell the number in base 64:
    consecutive members differ in one character."""
    base = list("https://example.org/" + "a" * 200)
    out = []
    for j in range(n):
        url = base[:]
        for pos in (40, 90, 140, 190):
            j, digit = divmod(j, 64)
            url[pos] = ALPHABET[digit]
        out.append("".join(url))
    return out


SETS = {
    "one char apart": one_char_apart,
    "long common prefix": lambda n: [f"https://cdn.example.net/{'x/' * 988}{j:x}"
                                     for j in range(n)],
    "sequential numbers": lambda n: [f"https://shop.example/item?id={j}" for j in range(n)],
}


@pytest.mark.parametrize("name", list(SETS))
def test_false_positive_rate_within_ten_percent_of_theory(name: str) -> None:
    urls = SETS[name](2 * N)
    assert len(set(urls)) == 2 * N
    added, probes = urls[0::2], urls[1::2]
    bf = BloomFilter(capacity=N, error_rate=0.02)
    for i in range(0, N, 1000):
        bf.add_many(added[i:i + 1000])
    assert all(bf.contains_many(added))
    measured = sum(bf.contains_many(probes)) / N
    theory = (1 - math.exp(-HASHES * N / bf.bits)) ** HASHES
    assert abs(measured / theory - 1) <= 0.10, (measured, theory)
