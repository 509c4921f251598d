"""Benchmark of the Visited Bloom filter against the alternatives, on 1 M realistic URLs.

Run by hand (not part of the tests), from the repository root:

    python bench/bench_bloom.py            # 1 M URLs, best of 3
    python bench/bench_bloom.py --n 200000 --repeat 1

What it prints, every rate in URLs per second (best of ``--repeat`` runs, since a shared machine
is noisy) and as a ratio to the Python ``set`` of URLs measured in the same run:

1. ``add_new`` (what a worker calls) with a page of 50 links per call and with 10,000 URLs;
2. the cost of the core's positions: one URL at a time (the core's function), in a NumPy batch
   (``positions_many``), the digests alone;
3. single ``add``; ``add_many`` in batches of 1000, one thread and 4 threads together; a plain
   lock around each single ``add`` with 4 threads; ``in`` and ``contains_many``;
4. a ``set`` of the URLs and a ``set`` of SHA-1 hex fingerprints (what Scrapy keeps), with their
   memory per URL from tracemalloc; pybloom-live and rbloom when installed;
5. memory of a 10 M / p = 0.001 filter against m/8;
6. measured against theoretical false-positive rate for the crawler's hash family and the two
   teaching ones.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import math
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bitarray import bitarray  # noqa: E402

from minicrawl.cli.bloom import measure_fp, synthetic_urls  # noqa: E402
from minicrawl.core.visited import positions  # noqa: E402
from minicrawl.visited import BloomFilter  # noqa: E402
from minicrawl.visited.batch import digests, positions_many  # noqa: E402

BATCH = 1000
PAGE = 50  # links of a typical page: what a worker offers Visited in one add_new call
# Set when the filter hashed with MurmurHash3 (~0.1 µs a URL). The core's BLAKE2b digest alone
# costs ~0.36 µs a URL from Python (2.8 M/s, "digests only" below), so add_many of new URLs in
# batches of 1,000 cannot reach 2 M/s any more; the crawl's case, links seen before, can.
TARGETS = {"add": 0.6e6, "add_many, 1 thread": 2.0e6, "add_many, 4 threads": 1.5e6}


def best_rate(n: int, run: Callable[[], object], repeat: int,
              setup: Callable[[], object] | None = None) -> float:
    """Highest n / seconds over ``repeat`` runs; ``setup`` (untimed) runs before each."""
    best = 0.0
    for _ in range(repeat):
        if setup is not None:
            setup()
        gc.collect()
        t = time.perf_counter()
        run()
        best = max(best, n / (time.perf_counter() - t))
    return best


def traced_bytes(build: Callable[[], object]) -> tuple[object, int]:
    """(the object, bytes allocated while building it and still held)."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    obj = build()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return obj, used


def in_threads(threads: int, work: Callable[[list[str]], object], urls: list[str]) -> None:
    parts = [urls[i * len(urls) // threads:(i + 1) * len(urls) // threads]
             for i in range(threads)]
    ts = [threading.Thread(target=work, args=(p,)) for p in parts]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def fmt(rate: float) -> str:
    return f"{rate / 1e6:6.2f} M/s"


def section(title: str) -> None:
    print(f"\n== {title}")


def bench_positions(urls: list[str], m: int, repeat: int) -> None:
    """Where a URL's 8 bits are: the core's function per URL, the NumPy batch, the digests."""
    section(f"the core's positions of {len(urls):,} URLs (m = {m:,})")
    batches = [urls[i:i + 10_000] for i in range(0, len(urls), 10_000)]
    pages = [urls[i:i + PAGE] for i in range(0, len(urls), PAGE)]
    for name, run in (
            ("core positions(), one URL a call", lambda: [positions(u, m) for u in urls]),
            ("digests only, batches of 10,000", lambda: [digests(b) for b in batches]),
            ("positions_many, batches of 10,000",
             lambda: [positions_many(b, m) for b in batches]),
            (f"positions_many, batches of {PAGE}", lambda: [positions_many(b, m) for b in pages])):
        print(f"  {name:36s} {fmt(best_rate(len(urls), run, repeat))}")


def bench_lookups(urls: list[str], p: float, repeat: int) -> None:
    n = len(urls)
    section("lookups of inserted URLs")
    bf = BloomFilter(capacity=n, error_rate=p)
    batches = [urls[i:i + BATCH] for i in range(0, n, BATCH)]
    for chunk in batches:
        bf.add_many(chunk)
    url_set = set(urls)
    look = {
        "set: u in s": best_rate(n, lambda: sum(u in url_set for u in urls), repeat),
        "BloomFilter: u in bf": best_rate(n, lambda: sum(u in bf for u in urls), repeat),
        "BloomFilter.contains_many": best_rate(
            n, lambda: [bf.contains_many(c) for c in batches], repeat),
    }
    for name, rate in look.items():
        print(f"  {name:30s} {fmt(rate)}   x{rate / look['set: u in s']:5.2f}")


def bench_add_new(urls: list[str], p: float, repeat: int) -> dict[str, float]:
    """``add_new`` (the core's ``SeenSet``, what a worker calls) of a filter sized as run.py
    sizes it: a page of 50 links per call, and batches of 10,000 URLs (a resume's replay); new
    URLs, and the same URLs offered again (a crawl's usual case: >99 % of a page's links were
    seen before, bench/README.md)."""
    n = len(urls)
    section(f"add_new into a filter (capacity={n:,}, error_rate={p}), every URL once, then "
            f"again")
    holder: dict[str, BloomFilter] = {}

    def fresh() -> None:
        holder["bf"] = BloomFilter(capacity=n, error_rate=p)

    def calls(size: int) -> Callable[[], None]:
        batches = [urls[i:i + size] for i in range(0, n, size)]

        def run() -> None:
            add_new = holder["bf"].add_new
            for batch in batches:
                add_new(batch)
        return run

    def filled(size: int) -> Callable[[], None]:
        def setup() -> None:
            fresh()
            calls(size)()
        return setup

    rates = {}
    for size in (PAGE, 10_000):
        rates[f"add_new, {size:,} new URLs a call"] = best_rate(n, calls(size), repeat,
                                                                setup=fresh)
        rates[f"add_new, {size:,} seen URLs a call"] = best_rate(n, calls(size), repeat,
                                                                 setup=filled(size))
    for name, rate in rates.items():
        print(f"  {name:36s} {fmt(rate)}")
    return rates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000, help="URLs (default 1,000,000)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement, best kept")
    ap.add_argument("--p", type=float, default=0.001, help="error rate of the filters")
    ap.add_argument("--skip-fp", action="store_true", help="skip the false-positive section")
    ap.add_argument("--add-new-only", action="store_true",
                    help="only the add_new section (the crawl path's throughput)")
    args = ap.parse_args(argv)
    n, repeat, p = args.n, args.repeat, args.p

    t = time.perf_counter()
    urls = synthetic_urls(n, seed=1)
    print(f"{n:,} synthetic URLs (mean {sum(map(len, urls)) / n:.0f} chars) made in "
          f"{time.perf_counter() - t:.1f} s; Python {sys.version.split()[0]}; filters at "
          f"capacity={n:,}, error_rate={p}, k=8; best of {repeat}")
    bench_add_new(urls, p, repeat)
    if args.add_new_only:
        return 0
    m = BloomFilter(capacity=n, error_rate=p).bits
    bench_positions(urls, m, repeat)

    section("inserting every URL once (rates; x = ratio to the set of URLs)")
    rates: dict[str, float] = {}
    holder: dict[str, object] = {}

    def fresh() -> None:
        holder["bf"] = BloomFilter(capacity=n, error_rate=p)

    def single() -> None:
        add = holder["bf"].add  # type: ignore[attr-defined]
        for u in urls:
            add(u)

    def batched(part: list[str]) -> None:
        add_many = holder["bf"].add_many  # type: ignore[attr-defined]
        for i in range(0, len(part), BATCH):
            add_many(part[i:i + BATCH])

    rates["set of URLs"] = best_rate(n, lambda: set().update(urls), repeat)

    def sha1_set() -> None:
        seen: set[str] = set()
        add = seen.add
        for u in urls:
            add(hashlib.sha1(u.encode()).hexdigest())

    rates["set of SHA-1 hex"] = best_rate(n, sha1_set, repeat)
    rates["add"] = best_rate(n, single, repeat, setup=fresh)
    rates["add_many, 1 thread"] = best_rate(n, lambda: batched(urls), repeat, setup=fresh)
    rates["add_many, 4 threads"] = best_rate(n, lambda: in_threads(4, batched, urls), repeat,
                                             setup=fresh)
    rates["add, 4 threads"] = best_rate(
        n, lambda: in_threads(4, lambda part: list(map(holder["bf"].add, part)), urls),  # type: ignore[attr-defined]
        repeat, setup=fresh)
    plain_lock = threading.Lock()
    bits = bitarray(m, endian="little")

    def locked_add(u: str) -> bool:
        # The naive design from the issue: the eight positions, a lock per add.
        ix = positions(u, m)
        with plain_lock:
            if bits[ix].all():
                return False
            bits[ix] = 1
            return True

    rates["naive locked add, 1 thread"] = best_rate(n, lambda: list(map(locked_add, urls)),
                                                    repeat, setup=lambda: bits.setall(0))
    rates["naive locked add, 4 threads"] = best_rate(
        n, lambda: in_threads(4, lambda part: list(map(locked_add, part)), urls), repeat,
        setup=lambda: bits.setall(0))

    try:
        import pybloom_live
    except ImportError:
        pybloom_live = None
        print("  pybloom-live: not installed")
    if pybloom_live is not None:
        def pybloom() -> None:
            f = pybloom_live.BloomFilter(capacity=n, error_rate=p)
            for u in urls:
                f.add(u)
        rates["pybloom-live add"] = best_rate(n, pybloom, 1)
    try:
        import rbloom
    except ImportError:
        rbloom = None
        print("  rbloom: not installed")
    if rbloom is not None:
        def rb() -> None:
            f = rbloom.Bloom(n, p)
            for u in urls:
                f.add(u)
        rates["rbloom add"] = best_rate(n, rb, repeat)
        rates["rbloom update (batch)"] = best_rate(n, lambda: rbloom.Bloom(n, p).update(urls),
                                                   repeat)

    base = rates["set of URLs"]
    for name, rate in rates.items():
        target = TARGETS.get(name)
        verdict = "" if target is None else (
            f"  target >= {target / 1e6:.1f} M/s: {'met' if rate >= target else 'MISSED'}")
        print(f"  {name:30s} {fmt(rate)}   x{rate / base:5.2f}{verdict}")

    bench_lookups(urls, p, repeat)

    section("memory for the URLs (tracemalloc; the URL strings themselves not counted)")
    urlset, set_bytes = traced_bytes(lambda: set(urls))
    del urlset
    shas, sha_bytes = traced_bytes(lambda: {hashlib.sha1(u.encode()).hexdigest() for u in urls})
    del shas
    bf, bf_bytes = traced_bytes(lambda: BloomFilter(capacity=n, error_rate=p))
    print(f"  set of URLs (the table only)   {set_bytes / n:7.1f} bytes per URL")
    print(f"  set of SHA-1 hex fingerprints  {sha_bytes / n:7.1f} bytes per URL")
    print(f"  BloomFilter p={p}           {bf_bytes / n:7.2f} bytes per URL "
          f"(m/8 = {bf.bits / 8 / n:.2f})")  # type: ignore[attr-defined]
    del bf
    big, big_bytes = traced_bytes(lambda: BloomFilter(capacity=10_000_000, error_rate=0.001))
    m8 = big.bits / 8  # type: ignore[attr-defined]
    print(f"  BloomFilter 10 M, p=0.001:     {big_bytes:,} bytes allocated, m/8 = {m8:,.0f} "
          f"(+{big_bytes - m8:,.0f} bytes, {big_bytes / m8 - 1:.4%})")
    del big

    if not args.skip_fp:
        section(f"false positives: insert {n:,}, probe {n:,} others, m/n = 10, k = 8")
        for family in ("blake2b", "java", "scrapy-redis"):
            r = measure_fp(family, n=n, ratio=10, k=8, seed=1)
            print(f"  {family:13s} m={r.m:>11,} (m/n {r.m / r.n:5.2f})  measured {r.measured:.6f}"
                  f"  theory {r.theoretical:.6f}  ratio {r.ratio:6.3f}"
                  f"  fill {r.fill_ratio:.4f} (theory {r.fill_theory:.4f})")
        ratio = 2 ** math.ceil(math.log2(10 * n)) / n
        r = measure_fp("blake2b", n=n, ratio=ratio, k=8, seed=1)
        print(f"  {'blake2b':13s} m={r.m:>11,} (m/n {r.m / r.n:5.2f})  measured {r.measured:.6f}"
              f"  theory {r.theoretical:.6f}  ratio {r.ratio:6.3f}  (same m as the teaching runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
