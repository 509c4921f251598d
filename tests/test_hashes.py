"""Hash families: stable, scalar and batch paths identical, teaching families faithful."""

from __future__ import annotations

import mmh3
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.bloom import hashes

URL = st.text(min_size=0, max_size=200)
SIZES = st.sampled_from([1, 2, 7, 8, 1000, 1 << 20, 14_607_698, (1 << 40) + 3])


def reference(url: str, m: int, k: int) -> list[int]:
    """The documented default family, written out with unbounded integers."""
    h1, h2 = (int(x) for x in np.frombuffer(mmh3.hash_bytes(url.encode()), dtype="<u8"))
    span = m if k == 1 else max(1, (m - 1) // (k - 1))
    start, step = h1 % m, 1 + h2 % span
    return [(start + i * step) % m for i in range(k)]


def test_default_known_values_are_stable() -> None:
    # Pinned numbers: any change in the digest, byte order or derivation would silently break
    # saved filters and a shared (Redis) bitmap, so it must show up here.
    assert hashes.indices("https://example.org/", 1_000_003, 8) == [
        466589, 484570, 502551, 520532, 538513, 556494, 574475, 592456]
    assert hashes.default_stepper(1_000_003, 8)("https://example.org/") == (466589, 17981)


@given(url=URL, m=SIZES, k=st.integers(1, 16))
@settings(max_examples=300, deadline=None)
def test_default_scalar_equals_batch_and_formula(url: str, m: int, k: int) -> None:
    got = hashes.indices(url, m, k)
    assert got == reference(url, m, k)
    assert got == hashes.indices_many([url], m, k)[0].tolist()
    assert got == hashes.default_indexer(m, k)(url)
    assert all(0 <= x < m for x in got)
    if m >= k:
        # The bounded step makes the k positions distinct and wrap at most once.
        assert len(set(got)) == k
        start, step = hashes.default_stepper(m, k)(url)
        assert (k - 1) * step < m


def test_batch_shape_dtype_and_empty() -> None:
    out = hashes.indices_many(["a", "b", "c"], 100, 8)
    assert out.shape == (3, 8) and out.dtype == np.uint64
    assert hashes.indices_many([], 100, 5).shape == (0, 5)


def test_utf8_bytes_hashed_not_python_hash() -> None:
    # "é" precomposed vs decomposed are different strings, different bytes: different indices.
    assert hashes.indices("caf\u00e9", 1 << 30) != hashes.indices("cafe\u0301", 1 << 30)


@pytest.mark.parametrize("bad", [(0, 8), (10, 0), (10, 65), (hashes.MAX_BITS + 1, 8)])
def test_bad_sizes_refused(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        hashes.indices("x", *bad)
    with pytest.raises(ValueError):
        hashes.indices_many(["x"], *bad)


# --------------------------------------------------------------------------- teaching families


def java_reference(value: str, cap: int, seed: int) -> int:
    """The Java SimpleHash loop transcribed with explicit 32-bit signed int arithmetic."""
    result = 0
    for i in range(len(value.encode("utf-16-le", "surrogatepass")) // 2):
        ch = int.from_bytes(value.encode("utf-16-le", "surrogatepass")[2 * i:2 * i + 2], "little")
        result = (seed * result + ch) & 0xFFFFFFFF
        if result >= 1 << 31:
            result -= 1 << 32
    return (cap - 1) & result


def scrapy_reference(value: str, m: int, seed: int) -> int:
    ret = 0
    for i in range(len(value)):
        ret += seed * ret + ord(value[i])
    return (m - 1) & ret


@given(url=URL, bits=st.integers(1, 40), k=st.integers(1, 10))
@settings(max_examples=200, deadline=None)
def test_java_family_matches_reference_loop(url: str, bits: int, k: int) -> None:
    m = 1 << bits
    want = [java_reference(url, m, 30 + q) for q in range(1, k + 1)]
    assert hashes.java_indices(url, m, k) == want
    assert hashes.java_indices_many([url], m, k)[0].tolist() == want


@given(url=URL, bits=st.integers(1, 40), k=st.integers(1, 10))
@settings(max_examples=200, deadline=None)
def test_scrapy_redis_family_matches_reference_loop(url: str, bits: int, k: int) -> None:
    m = 1 << bits
    want = [scrapy_reference(url, m, seed) for seed in range(k)]
    assert hashes.scrapy_redis_indices(url, m, k) == want
    assert hashes.scrapy_redis_indices_many([url], m, k)[0].tolist() == want


def test_teaching_batch_mixed_lengths() -> None:
    urls = ["", "a", "https://example.org/" * 20, "x\U0001f600y", "https://h/é?q=%C3%A9"]
    m = 1 << 24
    for name in ("java", "scrapy-redis"):
        fam = hashes.get_family(name)
        batch = fam.indices_many(urls, m, 8)
        assert [fam.indices(u, m, 8) for u in urls] == batch.tolist()


def test_java_known_value() -> None:
    # Java: "ab".hashCode() with multiplier 31 is 31*97 + 98 = 3105.
    assert hashes.java_indices("ab", 1 << 20, 1) == [3105]


def test_scrapy_seed0_is_sum_of_code_points() -> None:
    assert hashes.scrapy_redis_indices("ab", 1 << 20, 1) == [97 + 98]
    # ...so anagrams collide on seed 0: the weakness the family is there to show.
    assert hashes.scrapy_redis_indices("ab", 1 << 20, 1) == hashes.scrapy_redis_indices(
        "ba", 1 << 20, 1)


def test_family_registry_and_power_of_two() -> None:
    assert set(hashes.FAMILIES) == {"default", "java", "scrapy-redis"}
    with pytest.raises(ValueError, match="unknown hash family"):
        hashes.get_family("md5")
    assert hashes.family_bits("default", 1000) == 1000
    assert hashes.family_bits("java", 1000) == 1024
    assert hashes.family_bits("scrapy-redis", 1024) == 1024
