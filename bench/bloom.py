"""The Bloom filter's target (issue 49): ``add_many`` rate against a set of SHA-1 digests, and the
false-positive rate on hostile URL sets against theory.

    python bench/bloom.py                   # 1 M URLs a rate, 200,000 + 200,000 a hostile set
    python bench/bloom.py --n 200000 --fp-n 50000 --repeat 3

Rates are URLs per second, the best of ``--repeat`` runs (a shared machine is noisy; the best
run is the one least disturbed), each filter sized for the URLs it gets (p = 0.001), in batches
of ``--batch`` (1,000) as a worker hands Visited a page's links:

* ``add_many, new``: every URL new (filling the filter);
* ``add_many, seen``: the same URLs again (a crawl's common case: links seen before);
* the digests alone (the BLAKE2b part of both);
* a set of SHA-1 digests and a set of SHA-1 hex digests (Scrapy's fingerprints), one URL at a
  time as a crawler offers them.

False positives: :func:`hostile_sets` makes URL sets that a weak hash maps to few positions —
one character apart, a 2,000-character common prefix, sequential numbers; the even members are
added, the odd ones (the same shape, never added) probed; measured against
(1 − e^(−kn/m))^k for that n and m.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minicrawl.cli.bloom import synthetic_urls  # noqa: E402
from minicrawl.core.visited import HASHES  # noqa: E402
from minicrawl.visited import BloomFilter  # noqa: E402
from minicrawl.visited.batch import digests  # noqa: E402
from tests.test_bloom_hostile import one_char_apart  # noqa: E402 (the test's set, the same)


def hostile_sets(n: int) -> dict[str, list[str]]:
    """Three sets of ``n`` distinct URLs each that share almost everything.

    * one char apart: a 220-character URL whose characters 40, 90, 140 and 190 spell the
      member's number in base 64 — consecutive members differ in one character, any two in at
      most four of 220;
    * long prefix: 2,000 common characters, then the member's number in hex;
    * sequential: ``https://shop.example/item?id=N`` for N = 0 … n − 1.
    """
    prefix = "https://cdn.example.net/" + "x/" * 988
    return {
        "one char apart": one_char_apart(n),
        "2,000-char common prefix": [f"{prefix}{j:x}" for j in range(n)],
        "sequential numbers": [f"https://shop.example/item?id={j}" for j in range(n)],
    }


def theory(n: int, m: int, k: int = HASHES) -> float:
    """The false-positive rate of n URLs in m bits with k independent hashes."""
    return (1 - math.exp(-k * n / m)) ** k


def false_positives(urls: list[str], error_rate: float) -> tuple[int, int, float]:
    """Add ``urls[0::2]`` to a filter sized for them, probe ``urls[1::2]``: (false positives,
    probes, the theoretical rate for that filter)."""
    added, probes = urls[0::2], urls[1::2]
    bf = BloomFilter(capacity=len(added), error_rate=error_rate)
    for i in range(0, len(added), 10_000):
        bf.add_many(added[i:i + 10_000])
    hits = sum(bf.contains_many(probes))
    return hits, len(probes), theory(len(added), bf.bits)


def best_rate(n: int, run: Callable[[], object], repeat: int,
              setup: Callable[[], object] | None = None) -> float:
    best = math.inf
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return n / best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="URLs timed (default 1,000,000)")
    ap.add_argument("--fp-n", type=int, default=200_000, help="URLs added a hostile set")
    ap.add_argument("--fp-rate", type=float, default=0.01, help="error rate of those filters")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip-fp", action="store_true")
    args = ap.parse_args(argv)
    n, batch = args.n, args.batch
    urls = synthetic_urls(n, seed=1)
    print(f"{n:,} synthetic URLs (mean {sum(map(len, urls)) / n:.0f} chars), batches of {batch}, "
          f"best of {args.repeat}; load {os.getloadavg()[0]:.1f}", flush=True)
    holder: dict[str, BloomFilter] = {}
    parts = [urls[i:i + batch] for i in range(0, n, batch)]

    def fresh() -> None:
        holder["bf"] = BloomFilter(capacity=n, error_rate=0.001)

    def add_all() -> None:
        add_many = holder["bf"].add_many
        for part in parts:
            add_many(part)

    def sha1_set() -> None:
        seen: set[bytes] = set()
        add = seen.add
        for u in urls:
            add(hashlib.sha1(u.encode()).digest())

    def sha1_hex_set() -> None:
        seen: set[str] = set()
        add = seen.add
        for u in urls:
            add(hashlib.sha1(u.encode()).hexdigest())

    rates = {
        "set of SHA-1 digests": best_rate(n, sha1_set, args.repeat),
        "set of SHA-1 hex digests": best_rate(n, sha1_hex_set, args.repeat),
        "digests alone (BLAKE2b)": best_rate(n, lambda: [digests(p) for p in parts], args.repeat),
        "add_many, new": best_rate(n, add_all, args.repeat, setup=fresh),
        "add_many, seen": best_rate(n, add_all, args.repeat),
    }
    base = rates["set of SHA-1 digests"]
    print("\n| | M URLs/s | × a set of SHA-1 digests |\n|---|---:|---:|")
    for name, rate in rates.items():
        print(f"| {name} | {rate / 1e6:.2f} | {rate / base:.2f} |")
    if args.skip_fp:
        return 0
    print(f"\nfalse positives: {args.fp_n:,} added, {args.fp_n:,} others probed, "
          f"p = {args.fp_rate}\n")
    print("| set | false positives | measured | theory | measured ÷ theory |\n"
          "|---|---:|---:|---:|---:|")
    for name, members in hostile_sets(2 * args.fp_n).items():
        hits, probes, expect = false_positives(members, args.fp_rate)
        print(f"| {name} | {hits:,} | {hits / probes:.5f} | {expect:.5f} | "
              f"{hits / probes / expect:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
