"""Visited's contract (interfaces.SeenSet), run over every implementation — the core's and
run.py's: its Bloom filters, the exact set, the Redis filter a shared crawl uses, and a
recrawl's filter that forgets gone pages — and the core Bloom filter's own promises: its size,
its eight stable positions, its false-positive rate."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest

from minicrawl.core.interfaces import SeenSet
from minicrawl.core.visited import HASHES, BloomVisited, bits_for, positions
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.visited import RedisBloomVisited
from minicrawl.visited import BloomFilter, ScalableBloomFilter
from minicrawl.visited.forgetting import ForgettingVisited
from minicrawl.visited.make import ExactVisited


def run_py_bloom() -> BloomFilter:
    return BloomFilter(capacity=10_000, error_rate=0.001)


def forgetting() -> ForgettingVisited:
    """A recrawl's Visited: the URL it forgot is in the filter, yet new once more."""
    inner = run_py_bloom()
    inner.add_many(["http://a.test/x"])
    return ForgettingVisited(inner, {"http://a.test/x"})


IMPLEMENTATIONS: dict[str, Callable[[], SeenSet]] = {
    "core-bloom": lambda: BloomVisited(expected=10_000, error_rate=0.001),
    "bloom": run_py_bloom,
    # Grows three times in the race below; a rate of 1e-6 so that no false positive blurs it.
    "scalable": lambda: ScalableBloomFilter(initial_capacity=500, error_rate=1e-6),
    "exact": ExactVisited,
    "forgetting": forgetting,
}


@pytest.fixture(params=[*sorted(IMPLEMENTATIONS), "redis"])
def visited(request: pytest.FixtureRequest) -> SeenSet:
    if request.param == "redis":  # the shared crawl's, in a real redis-server
        url = request.getfixturevalue("redis_server").url
        return RedisBloomVisited(SharedRedis(url, "t" + uuid.uuid4().hex[:8]), capacity=10_000,
                                 error_rate=0.001, shards=4)
    return IMPLEMENTATIONS[request.param]()


def test_new_once_then_seen(visited) -> None:
    assert visited.add_new(["http://a.test/x"]) == ["http://a.test/x"]
    assert visited.add_new(["http://a.test/x"]) == []
    assert visited.add_new(["http://a.test/y", "http://a.test/x"]) == ["http://a.test/y"]
    assert visited.add_new([]) == []


def test_a_batch_answers_each_url_in_order_and_a_repeat_once(visited) -> None:
    urls = ["http://a.test/1", "http://a.test/2", "http://a.test/1", "http://a.test/3"]
    assert visited.add_new(urls) == ["http://a.test/1", "http://a.test/2", "http://a.test/3"]
    assert visited.add_new(urls[::-1]) == []


def test_distinct_urls_are_new(visited) -> None:
    urls = [f"http://a.test/page/{i}" for i in range(1000)]
    new = sum(len(visited.add_new([u])) for u in urls)
    # A Bloom filter sized for 10,000 at 0.001 holding 1,000 URLs: a false positive here has a
    # chance of ~1e-7 each; the exact set has none.
    assert new == len(urls)
    assert visited.add_new(urls) == []


def test_racing_threads_one_winner_per_url(visited) -> None:
    """Check and insert are one step: 16 threads offering the same 2,000 URLs at once, one by
    one and in batches of 50, each URL is answered 'new' exactly once in all."""
    urls = [f"http://a.test/{i}" for i in range(2000)]
    wins: list[int] = []
    lock = threading.Lock()
    start = threading.Barrier(16)

    def offer(batch: int) -> None:
        start.wait()
        mine = sum(len(visited.add_new(urls[i:i + batch])) for i in range(0, len(urls), batch))
        with lock:
            wins.append(mine)

    threads = [threading.Thread(target=offer, args=((1, 50)[n % 2],)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(wins) == len(urls)


def test_bloom_size_follows_the_formula() -> None:
    # 8 hashes: m = -8n / ln(1 - p^(1/8)); 1,000,000 URLs at 0.001 → 14,607,698 bits (1.8 MB)
    assert bits_for(1_000_000, 0.001) == 14_607_698
    assert len(BloomVisited(1_000_000, 0.001).bits) == 14_607_698
    # A tiny rate: 1 − p^(1/8) is 1.0 in floating point, ln(1 − x) is computed as log1p(−x).
    assert bits_for(10, 1e-300) > 10**39
    with pytest.raises(ValueError):
        bits_for(0, 0.01)
    with pytest.raises(ValueError):
        bits_for(10, 1.5)


def test_bloom_positions_are_eight_stable_and_seeded() -> None:
    a = BloomVisited(10_000, 0.01)
    url = "http://a.test/some/page.html"
    mine = positions(url, a.size)
    assert len(mine) == HASHES == 8
    # The same in every filter, run and process: pinned, so that a change to the digest, its
    # byte order or the seed (saved filters, a shared Redis bitmap) shows up here.
    assert mine == positions(url, a.size, a.seed) == [
        60668, 31253, 82822, 91946, 37463, 20246, 58991, 65502]
    assert all(0 <= p < a.size for p in mine)
    assert positions(url, a.size, b"another seed") != mine  # the seed changes every hash
    a.add_new([url])
    assert [i for i in range(a.size) if a.bits[i]] == sorted(set(mine))


def test_bloom_false_positive_rate_is_as_sized() -> None:
    """Filled to its expected count, the filter wrongly calls unseen URLs 'seen' at about the
    rate it was sized for (0.01 here; a bad hash family shows 2-10× that)."""
    visited = BloomVisited(expected=20_000, error_rate=0.01)
    visited.add_new([f"http://site.test/docs/page-{i}.html" for i in range(20_000)])
    probes = 40_000  # asked without adding them (add_new would fill the filter further)
    false = sum(visited.bits[positions(f"http://other.test/p?id={i}", visited.size)].all()
                for i in range(probes))
    assert 0.005 < false / probes < 0.015


def test_bloom_keeps_a_small_stated_rate_with_its_eight_hashes() -> None:
    """At 1e-4 the optimal number of hashes would be 13; sized as if it were (m = -n ln p /
    (ln 2)^2), eight hashes give 1.8e-4. Sized for eight, the rate is the one asked for."""
    visited = BloomVisited(expected=20_000, error_rate=1e-4)
    visited.add_new([f"http://site.test/docs/page-{i}.html" for i in range(20_000)])
    probes = 500_000
    false = sum(visited.bits[positions(f"http://other.test/p?id={i}", visited.size)].all()
                for i in range(probes))
    assert 0.4e-4 < false / probes < 1.4e-4
