"""BloomFilter: formulas, sizing, no false negatives, batch == sequential, thread safety."""

from __future__ import annotations

import math
import threading
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.core import visited as core
from minicrawl.visited import BloomFilter
from minicrawl.visited.batch import SMALL_BATCH
from minicrawl.visited.sizing import (
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
    bf = BloomFilter(capacity=1_000_000, error_rate=0.001)
    assert bf.hashes == 8
    # The core's sizing for its 8 hashes, m = ⌈−8n / ln(1 − p^(1/8))⌉ ...
    assert bf.bits == core.bits_for(1_000_000, 0.001) == 14_607_698
    assert bf.capacity == 1_000_000 and bf.error_rate == 0.001
    # ... so at capacity the rate is the one asked for, not the 1.10x that the optimal-k
    # m = ⌈−n·ln p/(ln 2)²⌉ gives with eight hashes.
    assert bf.expected_fp_rate == pytest.approx(false_positive_rate(bf.bits, 1_000_000, 8))
    assert 0.999 * 0.001 < bf.expected_fp_rate <= 0.001
    assert false_positive_rate(optimal_bits(1_000_000, 0.001), 1_000_000, 8) > 0.00109
    assert bf.nbytes == (bf.bits + 7) // 8
    assert bf.count == len(bf) == 0 and bf.fill_ratio == 0.0 and bf.current_fp_rate == 0.0
    assert bf.hash_family == "blake2b" and not bf.over_capacity


@pytest.mark.parametrize("n", [1, 10, 1000, 123_457, 10**9])
@pytest.mark.parametrize("p", [0.1, 0.01, 0.001, 1e-4, 1e-7])
def test_the_taught_fixed_k_formula_at_k_8_is_the_cores(n: int, p: float) -> None:
    """``minicrawl bloom size`` teaches m for any k; at k = 8 it is the crawler's m."""
    assert bits_for(n, p, 8) == core.bits_for(n, p) or core.bits_for(n, p) == 64


def test_bits_constructor() -> None:
    bf = BloomFilter(bits=1 << 20)
    assert bf.bits == 1 << 20 and bf.hashes == 8
    assert bf.capacity == round((1 << 20) * math.log(2) / 8)
    assert bf.error_rate == pytest.approx(2 ** -8, rel=1e-3)
    bf = BloomFilter(bits=1 << 20, error_rate=0.001)
    assert bf.capacity == capacity_for(1 << 20, 0.001, 8)


@pytest.mark.parametrize("kwargs", [
    {}, {"bits": 0}, {"bits": -5}, {"bits": 100, "error_rate": 0.0},
    {"capacity": 10, "error_rate": 1.5}, {"capacity": 0, "error_rate": 0.1},
])
def test_bad_constructor_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        BloomFilter(**kwargs)


def test_one_hash_family_no_other_to_choose() -> None:
    """The crawl's filters take no hash family and no k: the core's positions, k = 8."""
    for bad in ({"hash": "java"}, {"hashes": 10}):
        with pytest.raises(TypeError):
            BloomFilter(1000, 0.01, **bad)


# --------------------------------------------------------------------------- behaviour


@given(urls=URLS)
@settings(max_examples=150, deadline=None)
def test_no_false_negatives_single(urls: list[str]) -> None:
    bf = BloomFilter(bits=4096)
    for u in urls:
        bf.add(u)
    assert all(u in bf for u in urls)
    assert all(bf.contains_many(urls))


@given(urls=URLS, batch=st.integers(1, 50))
@settings(max_examples=150, deadline=None)
def test_add_many_equals_sequential_add(urls: list[str], batch: int) -> None:
    # A small filter makes in-batch collisions frequent, the case sequential semantics is about.
    seq = BloomFilter(bits=600)
    bat = BloomFilter(bits=600)
    want = [seq.add(u) for u in urls]
    got: list[bool] = []
    for i in range(0, len(urls), batch):
        got += bat.add_many(urls[i:i + batch])
    assert got == want
    assert bat._bits == seq._bits and bat.count == seq.count
    assert all(u in bat for u in urls)


@pytest.mark.parametrize("numpy_path", [True, False], ids=["numpy", "url-by-url"])
def test_small_and_large_batches_both_equal_sequential_add(numpy_path: bool,
                                                           monkeypatch) -> None:
    """Below SMALL_BATCH add_many works URL by URL, above it with NumPy once NumPy pays (or URL
    by URL until then): same answers, same bits either way (a small filter, so that URLs share
    bits and repeats are common)."""
    import minicrawl.visited.bloom

    monkeypatch.setattr(minicrawl.visited.bloom, "numpy_pays",
                        lambda n: numpy_path and n >= SMALL_BATCH)
    urls = [f"http://h/{i % 700}" for i in range(3 * 512)]
    seq = BloomFilter(bits=4096)
    want = [seq.add(u) for u in urls]
    for batch in (1, SMALL_BATCH - 1, SMALL_BATCH, 50, 512, 3 * 512):
        bat = BloomFilter(bits=4096)
        got: list[bool] = []
        for i in range(0, len(urls), batch):
            got += bat.add_many(urls[i:i + batch])
        assert got == want, batch
        assert bat._bits == seq._bits and bat.count == seq.count
        assert bat.contains_many(urls[:batch]) == [u in seq for u in urls[:batch]]


def test_numpy_is_imported_only_once_enough_urls_came_in_big_batches() -> None:
    """NumPy's import pays back over ~400,000 URLs: batches (a page's links, 50 here, count)
    go URL by URL until then (a fresh interpreter, where nothing else loaded NumPy)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from minicrawl.visited import BloomFilter\n"
        "from minicrawl.visited.batch import NUMPY_AFTER\n"
        "bf = BloomFilter(capacity=10**6, error_rate=0.001)\n"
        "for i in range(40): bf.add_many([f'http://h/{i}/{j}' for j in range(600)])\n"
        "assert bf.contains_many([f'http://h/0/{j}' for j in range(600)]) == [True] * 600\n"
        "assert 'numpy' not in sys.modules, 'numpy loaded for 24,000 URLs'\n"
        "for i in range(NUMPY_AFTER // 50): bf.add_new([f'x{i}/{j}' for j in range(50)])\n"
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
    a = BloomFilter(bits=bits)
    b = BloomFilter(bits=bits)
    assert a.add_many(urls) == [b.add(u) for u in urls]
    assert a._bits == b._bits


def test_bits_and_fill_ratio() -> None:
    bf = BloomFilter(bits=1000)
    bf.add("x")
    ix = set(core.positions("x", 1000))
    assert bf.bits_set == len(ix)
    assert bf.fill_ratio == len(ix) / 1000
    assert bf.current_fp_rate == pytest.approx((len(ix) / 1000) ** 8)
    assert [i for i in range(1000) if bf._bits[i]] == sorted(ix)


def test_fill_ratio_matches_theory_at_capacity() -> None:
    bf = BloomFilter(capacity=100_000, error_rate=0.01)
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
    r = repr(BloomFilter(bits=64))
    assert "bits=64" in r and "capacity=" in r


@pytest.mark.parametrize("m", [1, 3, 8, 9, 64, 1000, 1001])
def test_single_add_sets_exactly_the_cores_positions(m: int) -> None:
    # However small the filter (a URL's 8 positions may then coincide), the core's bits.
    for i in range(200):
        bf = BloomFilter(bits=m)
        url = f"https://example.org/{i}"
        assert bf.add(url) is True
        assert [j for j in range(m) if bf._bits[j]] == sorted(set(core.positions(url, m)))
        assert url in bf and bf.add(url) is False


@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 300), k=st.integers(1, 9),
       pool=st.integers(1, 60), m=st.sampled_from([5, 64, 1000, 1 << 20, (1 << 33) + 5]))
@settings(max_examples=150, deadline=None)
def test_plan_batch_matches_brute_force(seed: int, n: int, k: int, pool: int, m: int) -> None:
    import numpy as np

    from minicrawl.visited.batch import _byte_and_mask, _plan_batch, set_bits

    # Indices drawn from a small pool so that repeats (every code path) are common.
    rng = np.random.default_rng(seed)
    values = rng.integers(0, m, size=pool, dtype=np.uint64)
    flat = values[rng.integers(0, pool, size=n * k)]
    earlier, sbytes, smasks = _plan_batch(flat, n, m)
    first_row: dict[int, int] = {}
    for p, v in enumerate(flat.tolist()):
        first_row[v] = min(first_row.get(v, n), p % n)
    want = [first_row[v] < p % n for p, v in enumerate(flat.tolist())]
    assert earlier.tolist() == want
    bytes_: dict[int, int] = {}
    for v in flat.tolist():
        bytes_[v >> 3] = bytes_.get(v >> 3, 0) | (1 << (v & 7))
    # The shared bytes are exactly those two or more of the batch's bits fall in ...
    per_byte = Counter(v >> 3 for v in flat.tolist())
    assert set(sbytes.tolist()) == {b for b, times in per_byte.items() if times > 1}
    # ... and setting the batch's bits with them sets every bit, however the fancy |= went.
    view = np.zeros((m + 7) // 8, dtype=np.uint8) if m < 1 << 21 else None
    if view is not None:
        byte, mask = _byte_and_mask(flat)
        set_bits(view, byte, mask, sbytes, smasks)
        assert {b: int(view[b]) for b in np.flatnonzero(view).tolist()} == bytes_


@given(added=URLS, probes=URLS, m=st.sampled_from([5, 100, 777, 4096]))
@settings(max_examples=100, deadline=None)
def test_contains_single_equals_batch(added: list[str], probes: list[str], m: int) -> None:
    # Small filters so that probes hit every case: absent, present, false positive.
    bf = BloomFilter(bits=m)
    bf.add_many(added)
    assert [u in bf for u in probes] == bf.contains_many(probes)


def test_no_import_cycle_runs_through_visited() -> None:
    """The state and the shared crawl import minicrawl.visited (Visited, make_visited), and the
    list of every Visited names theirs: no chain of imports — those for type checking included
    — may lead from a module of minicrawl/visited/ back to itself (the factory and the
    recrawl's Visited, then bloom/visited.py and state/forgetting.py, were such a pair, hidden by
    TYPE_CHECKING)."""
    import ast
    from pathlib import Path

    import minicrawl

    package = Path(minicrawl.__file__).parent
    modules = {".".join(("minicrawl", *p.relative_to(package).with_suffix("").parts))
               .removesuffix(".__init__"): p for p in package.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found |= {f"{node.module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
        edges[name] = found & set(modules)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), list(edges[start])
        while todo:
            here = todo.pop()
            if here == goal:
                return True
            if here not in seen:
                seen.add(here)
                todo += edges[here]
        return False

    wing = [m for m in modules if m.startswith("minicrawl.visited.")]
    assert "minicrawl.visited.make" in wing
    assert [m for m in wing if reaches(m, m)] == []
