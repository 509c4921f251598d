"""CountingBloomFilter and ScalableBloomFilter."""

from __future__ import annotations

import threading

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from minicrawl.core.visited import bits_for, positions
from minicrawl.visited import CountingBloomFilter, ScalableBloomFilter

# --------------------------------------------------------------------------- counting


def test_counting_add_remove_basics() -> None:
    cf = CountingBloomFilter(capacity=1000, error_rate=0.001)
    assert cf.add("a") is True and cf.add("a") is False  # counted twice
    assert "a" in cf and len(cf) == 2
    cf.remove("a")
    assert "a" in cf  # one add left
    cf.remove("a")
    assert "a" not in cf and len(cf) == 0 and cf.fill_ratio == 0.0
    with pytest.raises(KeyError):
        cf.remove("a")
    assert cf.discard("never") is False
    cf.add("b")
    assert cf.discard("b") is True and "b" not in cf


@given(ops=st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=300))
@settings(max_examples=150, deadline=None)
def test_counting_never_a_false_negative(ops: list[tuple[bool, int]]) -> None:
    # A small filter, so that items share counters and removals touch other items' counters.
    cf = CountingBloomFilter(bits=200)
    held: dict[str, int] = {}
    for add, i in ops:
        url = f"https://example.org/{i}"
        if add:
            cf.add(url)
            held[url] = held.get(url, 0) + 1
        elif held.get(url):
            cf.remove(url)
            held[url] -= 1
    assert all(url in cf for url, times in held.items() if times)
    assert len(cf) == sum(held.values())


@given(urls=st.lists(st.integers(0, 60).map(str), max_size=200), batch=st.integers(1, 40))
@settings(max_examples=100, deadline=None)
def test_counting_add_many_equals_sequential(urls: list[str], batch: int) -> None:
    a = CountingBloomFilter(bits=300)
    b = CountingBloomFilter(bits=300)
    got: list[bool] = []
    for i in range(0, len(urls), batch):
        got += a.add_many(urls[i:i + batch])
    assert got == [b.add(u) for u in urls]
    assert a._counters == b._counters and len(a) == len(b)


def test_counting_saturates_instead_of_wrapping() -> None:
    cf = CountingBloomFilter(bits=1000)
    hot = len(set(positions("hot", 1000)))  # its 8 counters (fewer if two coincide)
    for _ in range(300):
        cf.add("hot")
    assert cf.saturated == hot
    cf.add_many(["hot"] * 300)
    assert max(cf._counters) == 255  # never wrapped to a small value
    for _ in range(600):
        cf.remove("hot")
    # Saturated counters stay put: the item is still (conservatively) present.
    assert "hot" in cf and cf.saturated == hot


def test_counting_refuses_removing_absent_item() -> None:
    cf = CountingBloomFilter(capacity=1000, error_rate=0.0001)
    cf.add_many(f"u{i}" for i in range(100))
    before = bytes(cf._counters)
    with pytest.raises(KeyError):
        cf.remove("not-there")
    assert bytes(cf._counters) == before


def test_counting_numbers() -> None:
    cf = CountingBloomFilter(capacity=1000, error_rate=0.01)
    assert cf.bits == bits_for(1000, 0.01) and cf.hashes == 8  # the core's sizing
    assert cf.nbytes == cf.bits and cf.expected_fp_rate == pytest.approx(0.01, rel=1e-3)
    cf.add_many(str(i) for i in range(1000))
    assert not cf.over_capacity
    assert cf.current_fp_rate == pytest.approx(cf.expected_fp_rate, rel=0.3)
    cf.add("one more")
    assert cf.over_capacity
    assert "CountingBloomFilter" in repr(cf)


def test_counting_forget_pages_that_are_gone() -> None:
    cf = CountingBloomFilter(capacity=10_000, error_rate=0.001)
    pages = [f"https://example.org/p/{i}" for i in range(5000)]
    cf.add_many(pages)
    for p in pages[::2]:
        cf.remove(p)
    assert all(p in cf for p in pages[1::2])
    gone_still_reported = sum(p in cf for p in pages[::2])
    assert gone_still_reported < 25  # only false positives remain, ~0.1 % expected


# --------------------------------------------------------------------------- scalable


def test_scalable_stays_under_p_at_ten_times_capacity() -> None:
    p = 0.01
    sf = ScalableBloomFilter(initial_capacity=2000, error_rate=p)
    news = sf.add_many(f"https://h{i % 50}.example/item?id={i}" for i in range(20_000))
    assert sum(news) >= 20_000 * (1 - p)  # the rest are false positives while inserting
    assert len(sf.slices) >= 3 and sf.capacity >= 20_000
    assert all(f"https://h{i % 50}.example/item?id={i}" in sf for i in range(0, 20_000, 7))
    probes = [f"https://other{i % 50}.example/x?id={i}" for i in range(100_000)]
    measured = sum(sf.contains_many(probes)) / len(probes)
    assert measured <= p
    assert sf.expected_fp_rate < p and sf.current_fp_rate < p
    assert measured == pytest.approx(sf.current_fp_rate, rel=0.35, abs=2e-4)
    assert 0 < sf.fill_ratio < 1 and not sf.over_capacity


def test_scalable_slices_tighten_and_grow() -> None:
    sf = ScalableBloomFilter(initial_capacity=100, error_rate=0.01, growth=2, tightening=0.5)
    for i in range(1000):
        sf.add(str(i))
    caps = [f.capacity for f in sf.slices]
    assert caps[:4] == [100, 200, 400, 800]
    rates = [f.error_rate for f in sf.slices]
    assert rates[:3] == pytest.approx([0.005, 0.0025, 0.00125])
    assert sum(rates) < 0.01
    # Each slice is the core's filter for its capacity and rate, and reports k = 8's rate.
    assert [f.bits for f in sf.slices[:3]] == [bits_for(c, p)
                                                for c, p in zip(caps[:3], rates[:3], strict=True)]
    assert all(f.hashes == 8 and f.expected_fp_rate <= f.error_rate for f in sf.slices)
    assert all(f.count <= f.capacity for f in sf.slices)


@example(urls=[str(i) for i in range(20)] + ["0"], batch=1)  # repeat right after a slice fills
@example(urls=[str(i) for i in range(20)] * 2 + ["20"], batch=20)  # a batch that just fits one
@given(urls=st.lists(st.integers(0, 300).map(str), max_size=400), batch=st.integers(1, 60))
@settings(max_examples=100, deadline=None)
def test_scalable_add_many_equals_sequential(urls: list[str], batch: int) -> None:
    a = ScalableBloomFilter(initial_capacity=20, error_rate=0.01)
    b = ScalableBloomFilter(initial_capacity=20, error_rate=0.01)
    got: list[bool] = []
    for i in range(0, len(urls), batch):
        got += a.add_many(urls[i:i + batch])
    assert got == [b.add(u) for u in urls]
    assert [f.count for f in a.slices] == [f.count for f in b.slices]
    assert all(u in a for u in urls)


def test_scalable_concurrent_adds_true_once() -> None:
    sf = ScalableBloomFilter(initial_capacity=500, error_rate=1e-5)
    urls = [f"u{i}" for i in range(3000)]
    won: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        mine = [u for u in urls if sf.add(u)]
        with lock:
            won.extend(mine)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(won) == sorted(urls) and len(sf) == len(urls)


@pytest.mark.parametrize("kwargs", [
    {"initial_capacity": 0}, {"error_rate": 0.0}, {"growth": 0}, {"tightening": 1.0},
])
def test_scalable_bad_arguments(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        ScalableBloomFilter(**kwargs)
