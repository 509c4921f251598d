"""Visited's contract (interfaces.SeenSet), run over every implementation, and the Bloom filter's
own promises: its size, its eight stable positions, its false-positive rate."""

from __future__ import annotations

import threading

import pytest

from minicrawl.core.visited import HASHES, BloomVisited, ExactVisited, bits_for

IMPLEMENTATIONS = {
    "bloom": lambda: BloomVisited(expected=10_000, error_rate=0.001),
    "exact": ExactVisited,
}


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def visited(request: pytest.FixtureRequest):
    return IMPLEMENTATIONS[request.param]()


def test_new_once_then_seen(visited) -> None:
    assert visited.add_if_new("http://a.test/x") is True
    assert visited.add_if_new("http://a.test/x") is False
    assert visited.add_if_new("http://a.test/y") is True


def test_distinct_urls_are_new(visited) -> None:
    urls = [f"http://a.test/page/{i}" for i in range(1000)]
    new = sum(visited.add_if_new(u) for u in urls)
    # A Bloom filter sized for 10,000 at 0.001 holding 1,000 URLs: a false positive here has a
    # chance of ~1e-7 each; the exact set has none.
    assert new == len(urls)
    assert not any(visited.add_if_new(u) for u in urls)


def test_racing_threads_one_winner_per_url(visited) -> None:
    """Check and insert are one step: 16 threads offering the same 2,000 URLs at once, each URL
    is answered 'new' exactly once in all."""
    urls = [f"http://a.test/{i}" for i in range(2000)]
    wins: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def offer() -> None:
        start.wait()
        mine = sum(visited.add_if_new(u) for u in urls)
        with lock:
            wins.append(mine)

    threads = [threading.Thread(target=offer) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == len(urls)


def test_bloom_size_follows_the_formula() -> None:
    # m = -n ln p / (ln 2)^2: 1,000,000 URLs at 0.001 → 14,377,588 bits (1.8 MB)
    assert bits_for(1_000_000, 0.001) == 14_377_588
    assert len(BloomVisited(1_000_000, 0.001).bits) == 14_377_588
    with pytest.raises(ValueError):
        bits_for(0, 0.01)
    with pytest.raises(ValueError):
        bits_for(10, 1.5)


def test_bloom_positions_are_eight_stable_and_seeded() -> None:
    a, b = BloomVisited(10_000, 0.01), BloomVisited(10_000, 0.01)
    url = "http://a.test/some/page.html"
    assert len(a.positions(url)) == HASHES == 8
    assert a.positions(url) == b.positions(url)  # the same in every filter, run and process
    assert all(0 <= p < a.size for p in a.positions(url))
    other = BloomVisited(10_000, 0.01, seed=b"another seed")
    assert other.positions(url) != a.positions(url)  # the seed changes every hash
    a.add_if_new(url)
    assert a.bits.count() == len(set(a.positions(url)))


def test_bloom_false_positive_rate_is_as_sized() -> None:
    """Filled to its expected count, the filter wrongly calls unseen URLs 'seen' at about the
    rate it was sized for (0.01 here; a bad hash family shows 2-10× that)."""
    visited = BloomVisited(expected=20_000, error_rate=0.01)
    for i in range(20_000):
        visited.add_if_new(f"http://site.test/docs/page-{i}.html")
    probes = 40_000  # asked without adding them (add_if_new would fill the filter further)
    false = sum(visited.bits[visited.positions(f"http://other.test/p?id={i}")].all()
                for i in range(probes))
    assert 0.005 < false / probes < 0.015
