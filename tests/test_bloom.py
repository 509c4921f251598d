"""BloomFilter: formulas, sizing, no false negatives, batch == sequential, thread safety."""

from __future__ import annotations

import math
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.bloom import BloomFilter
from minicrawl.bloom.batch import SMALL_BATCH
from minicrawl.bloom.sizing import (
    bits_for,
    capacity_for,
    estimate_count,
    false_positive_rate,
    optimal_bits,
    optimal_hashes,
)

URLS = st.lists(st.text(max_size=80), max_size=300)


# --------------------------------------------------------------------------- formulas


def test_formulas_known_values() -> None:
    # Classic sizing: 1 M items at 1 % need 9,585,059 bits and k ≈ 6.64.
    assert optimal_bits(1_000_000, 0.01) == 9_585_059
    assert optimal_hashes(9_585_059, 1_000_000) == pytest.approx(6.644, abs=1e-3)
    assert false_positive_rate(10, 1, 8) == pytest.approx(0.00846, rel=1e-2)
    assert false_positive_rate(100, 0, 8) == 0.0
    assert capacity_for(9_585_059, 0.01) == pytest.approx(1_000_000, rel=1e-3)


@pytest.mark.parametrize("k", [1, 3, 8, 12])
@pytest.mark.parametrize("p", [0.1, 0.01, 0.001, 1e-6])
def test_bits_for_and_capacity_for_invert_each_other(k: int, p: float) -> None:
    m = bits_for(100_000, p, k)
    assert false_positive_rate(m, 100_000, k) <= p * (1 + 1e-9)
    assert false_positive_rate(m - 2, 100_000, k) > p * (1 - 1e-6)
    assert capacity_for(m, p, k) == pytest.approx(100_000, abs=1)


def test_optimal_k_gives_classic_m() -> None:
    # With the optimal (real) k the exact-k formula is the classic one.
    n, p = 1_000_000, 0.001
    k_opt = -math.log2(p)
    assert -k_opt * n / math.log1p(-(p ** (1 / k_opt))) == pytest.approx(optimal_bits(n, p),
                                                                          rel=1e-6)


@pytest.mark.parametrize("bad", [(0, 0.1), (10, 0.0), (10, 1.0), (-1, 0.5)])
def test_formulas_refuse_bad_arguments(bad: tuple[float, float]) -> None:
    with pytest.raises(ValueError):
        optimal_bits(*bad)


def test_estimate_count() -> None:
    bf = BloomFilter(capacity=20_000, error_rate=0.01)
    bf.add_many(f"u{i}" for i in range(10_000))
    assert estimate_count(bf.bits, bf.hashes, bf.bits_set) == pytest.approx(10_000, rel=0.02)


# --------------------------------------------------------------------------- construction


def test_capacity_constructor() -> None:
    bf = BloomFilter(capacity=1_000_000, error_rate=0.001, hashes=8)
    assert bf.hashes == 8
    # The product's sizing rule: m = ⌈−n·ln p/(ln 2)²⌉ with k kept at eight ...
    assert bf.bits == math.ceil(-1_000_000 * math.log(0.001) / math.log(2) ** 2) == 14_377_588
    assert bf.capacity == 1_000_000 and bf.error_rate == 0.001
    # ... so the honest expected rate at capacity is f(m, n, 8), a little above p.
    assert bf.expected_fp_rate == pytest.approx(false_positive_rate(bf.bits, 1_000_000, 8))
    assert bf.expected_fp_rate == pytest.approx(0.0011, rel=1e-2)
    assert bits_for(1_000_000, 0.001, 8) > bf.bits  # what k = 8 would need to reach p exactly
    assert bf.nbytes == (bf.bits + 7) // 8
    assert bf.count == len(bf) == 0 and bf.fill_ratio == 0.0 and bf.current_fp_rate == 0.0
    assert bf.hash_family == "default" and not bf.over_capacity


def test_optimal_k_constructor() -> None:
    bf = BloomFilter(capacity=1000, error_rate=0.01, hashes=None)
    assert bf.hashes == 7  # round((m/n)·ln 2) = round(6.64)
    assert bf.expected_fp_rate == pytest.approx(0.01, rel=0.05)  # k rounded: near p, not at it


def test_bits_constructor() -> None:
    bf = BloomFilter(bits=1 << 20, hashes=8)
    assert bf.bits == 1 << 20 and bf.hashes == 8
    assert bf.capacity == round((1 << 20) * math.log(2) / 8)
    assert bf.error_rate == pytest.approx(2 ** -8, rel=1e-3)
    bf = BloomFilter(bits=1 << 20, hashes=8, error_rate=0.001)
    assert bf.capacity == capacity_for(1 << 20, 0.001, 8)


@pytest.mark.parametrize("kwargs", [
    {}, {"bits": 0, "hashes": 8}, {"bits": 100, "hashes": 0}, {"bits": 100, "hashes": None},
    {"capacity": 10, "error_rate": 1.5}, {"capacity": 0, "error_rate": 0.1},
    {"capacity": 10, "error_rate": 0.1, "hash": "nope"},
])
def test_bad_constructor_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        BloomFilter(**kwargs)


# --------------------------------------------------------------------------- behaviour


@given(urls=URLS)
@settings(max_examples=150, deadline=None)
def test_no_false_negatives_single(urls: list[str]) -> None:
    bf = BloomFilter(bits=4096, hashes=8)
    for u in urls:
        bf.add(u)
    assert all(u in bf for u in urls)
    assert all(bf.contains_many(urls))


@given(urls=URLS, batch=st.integers(1, 50))
@settings(max_examples=150, deadline=None)
def test_add_many_equals_sequential_add(urls: list[str], batch: int) -> None:
    # A small filter makes in-batch collisions frequent, the case sequential semantics is about.
    seq = BloomFilter(bits=600, hashes=4)
    bat = BloomFilter(bits=600, hashes=4)
    want = [seq.add(u) for u in urls]
    got: list[bool] = []
    for i in range(0, len(urls), batch):
        got += bat.add_many(urls[i:i + batch])
    assert got == want
    assert bat._bits == seq._bits and bat.count == seq.count
    assert all(u in bat for u in urls)


@pytest.mark.parametrize("numpy_path", [True, False], ids=["numpy", "url-by-url"])
@pytest.mark.parametrize("family", ["default", "java", "scrapy-redis"])
def test_small_and_large_batches_both_equal_sequential_add(family: str, numpy_path: bool,
                                                           monkeypatch) -> None:
    """Below SMALL_BATCH add_many works URL by URL, above it with NumPy once NumPy pays (or URL
    by URL until then): same answers, same bits either way (a small filter, so that URLs share
    bits and repeats are common)."""
    import minicrawl.bloom.filter

    monkeypatch.setattr(minicrawl.bloom.filter, "numpy_pays",
                        lambda n: numpy_path and n >= SMALL_BATCH)
    urls = [f"http://h/{i % 700}" for i in range(3 * SMALL_BATCH)]
    seq = BloomFilter(bits=4096, hashes=8, hash=family)
    want = [seq.add(u) for u in urls]
    for batch in (1, SMALL_BATCH - 1, SMALL_BATCH, 3 * SMALL_BATCH):
        bat = BloomFilter(bits=4096, hashes=8, hash=family)
        got: list[bool] = []
        for i in range(0, len(urls), batch):
            got += bat.add_many(urls[i:i + batch])
        assert got == want, batch
        assert bat._bits == seq._bits and bat.count == seq.count
        assert bat.contains_many(urls[:batch]) == [u in seq for u in urls[:batch]]


def test_numpy_is_imported_only_once_enough_urls_came_in_big_batches() -> None:
    """NumPy's import pays back over ~100,000 URLs: big batches go URL by URL until then (a
    fresh interpreter, where nothing else loaded NumPy)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from minicrawl.bloom import BloomFilter\n"
        "from minicrawl.bloom.batch import NUMPY_AFTER\n"
        "bf = BloomFilter(capacity=10**6, error_rate=0.001)\n"
        "for i in range(40): bf.add_many([f'http://h/{i}/{j}' for j in range(600)])\n"
        "assert bf.contains_many([f'http://h/0/{j}' for j in range(600)]) == [True] * 600\n"
        "assert 'numpy' not in sys.modules, 'numpy loaded for 24,000 URLs'\n"
        "for i in range(NUMPY_AFTER // 1000): bf.add_many([f'x{i}/{j}' for j in range(1000)])\n"
        "assert 'numpy' in sys.modules, 'numpy never loaded'\n"
        "assert bf.add_many(['http://h/0/0', 'new']) == [False, True]\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_add_many_repeats_in_one_batch() -> None:
    bf = BloomFilter(capacity=1000, error_rate=0.001)
    assert bf.add_many(["a", "b", "a", "c", "b", "a"]) == [True, True, False, True, False, False]
    assert bf.add_many(iter(["c", "d"])) == [False, True]
    assert bf.add_many([]) == []
    assert bf.count == 4 and bf.add("a") is False and bf.add("e") is True


@pytest.mark.parametrize(("urls", "bits"), [
    # > 512 repeated indices in one batch takes the argsort path; still sequential.
    ([f"u{i % 300}" for i in range(3000)], 50_000),
    # 20,000 URLs in one batch into a 200 kbit filter: thousands of repeated indices.
    ([f"https://e.org/{i % 7000}" for i in range(20_000)], 200_000),
])
def test_add_many_large_batch_many_repeats_path(urls: list[str], bits: int) -> None:
    a = BloomFilter(bits=bits, hashes=8)
    b = BloomFilter(bits=bits, hashes=8)
    assert a.add_many(urls) == [b.add(u) for u in urls]
    assert a._bits == b._bits


def test_bits_and_fill_ratio() -> None:
    bf = BloomFilter(bits=1000, hashes=3)
    bf.add("x")
    ix = set(__import__("minicrawl.bloom.hashes", fromlist=["indices"]).indices("x", 1000, 3))
    assert bf.bits_set == len(ix)
    assert bf.fill_ratio == len(ix) / 1000
    assert bf.current_fp_rate == pytest.approx((len(ix) / 1000) ** 3)
    assert [i for i in range(1000) if bf._bits[i]] == sorted(ix)


def test_fill_ratio_matches_theory_at_capacity() -> None:
    bf = BloomFilter(capacity=100_000, error_rate=0.01, hashes=8)
    bf.add_many(f"https://h{i % 97}.example/p/{i}" for i in range(100_000))
    want = 1 - math.exp(-bf.hashes * 100_000 / bf.bits)
    assert bf.fill_ratio == pytest.approx(want, rel=0.01)
    assert bf.current_fp_rate == pytest.approx(bf.expected_fp_rate, rel=0.1)


def test_over_capacity() -> None:
    bf = BloomFilter(capacity=10, error_rate=1e-9)  # no false positive may hide an add
    bf.add_many(str(i) for i in range(10))
    assert not bf.over_capacity
    bf.add("eleven")
    assert bf.over_capacity


def test_contains_non_string_is_false() -> None:
    bf = BloomFilter(capacity=10, error_rate=0.01)
    assert 3 not in bf


def test_concurrent_add_true_exactly_once() -> None:
    urls = [f"https://example.org/page/{i}" for i in range(5000)]
    bf = BloomFilter(capacity=20_000, error_rate=1e-6)
    wins: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def worker(me: int) -> None:
        start.wait()
        mine = wins[me]
        # Half the threads add one by one, half in batches, all of them every URL.
        if me % 2:
            for u in urls:
                if bf.add(u):
                    mine.append(u)
        else:
            for i in range(0, len(urls), 64):
                chunk = urls[i:i + 64]
                mine += [u for u, new in zip(chunk, bf.add_many(chunk), strict=True) if new]

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [u for w in wins for u in w]
    # p = 1e-6 at 4x the load: a false positive here is ~1e-9 likely; each URL won exactly once.
    assert sorted(won) == sorted(urls)
    assert bf.count == len(urls)


def test_repr_mentions_parameters() -> None:
    r = repr(BloomFilter(bits=64, hashes=2))
    assert "bits=64" in r and "hashes=2" in r and "default" in r


@pytest.mark.parametrize("m,k", [(3, 8), (8, 8), (9, 8), (64, 1), (1000, 2), (1001, 7)])
def test_single_add_paths_set_exactly_the_indices(m: int, k: int) -> None:
    # Slices (m >= k) or a list (m < k): either way exactly the family's bits get set.
    from minicrawl.bloom.hashes import indices

    for i in range(200):
        bf = BloomFilter(bits=m, hashes=k)
        url = f"https://example.org/{i}"
        assert bf.add(url) is True
        assert [j for j in range(m) if bf._bits[j]] == sorted(set(indices(url, m, k)))
        assert url in bf and bf.add(url) is False


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), k=st.integers(1, 9),
       pool=st.integers(1, 60), m=st.sampled_from([5, 64, 1000, 1 << 20, (1 << 33) + 5]))
@settings(max_examples=150, deadline=None)
def test_plan_batch_matches_brute_force(seed: int, n: int, k: int, pool: int, m: int) -> None:
    import numpy as np

    from minicrawl.bloom.batch import _plan_batch

    # Indices drawn from a small pool so that repeats (every code path) are common.
    rng = np.random.default_rng(seed)
    values = rng.integers(0, m, size=pool, dtype=np.uint64)
    flat = values[rng.integers(0, pool, size=n * k)]
    earlier, ubytes, umasks = _plan_batch(flat, n, m)
    first_row: dict[int, int] = {}
    for p, v in enumerate(flat.tolist()):
        first_row[v] = min(first_row.get(v, n), p % n)
    want = [first_row[v] < p % n for p, v in enumerate(flat.tolist())]
    assert earlier.tolist() == want
    bytes_: dict[int, int] = {}
    for v in flat.tolist():
        bytes_[v >> 3] = bytes_.get(v >> 3, 0) | (1 << (v & 7))
    assert dict(zip(ubytes.tolist(), umasks.tolist(), strict=True)) == bytes_
    assert len(set(ubytes.tolist())) == len(ubytes)


@given(added=URLS, probes=URLS, m=st.sampled_from([5, 100, 777, 4096]))
@settings(max_examples=100, deadline=None)
def test_contains_single_equals_batch(added: list[str], probes: list[str], m: int) -> None:
    # Small filters so that probes hit every case: absent, present, false positive.
    bf = BloomFilter(bits=m, hashes=6)
    bf.add_many(added)
    assert [u in bf for u in probes] == bf.contains_many(probes)
