"""The crawler's positions, one URL (the core) or a batch (NumPy): identical; the teaching
families of ``minicrawl bloom measure``: faithful, and out of the crawl's reach."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minicrawl.cli.bloom import synthetic_urls
from minicrawl.core.visited import SEED, positions
from minicrawl.visited import hashes
from minicrawl.visited.batch import digests, positions_list, positions_many

URL = st.text(min_size=0, max_size=200)
#: Any str, lone surrogates included (a broken page's link can hold one; no text does).
ANY_STR = st.text(st.one_of(st.characters(), st.sampled_from("\ud800\udbff\udc00\udfff")),
                  max_size=120)
SIZES = st.sampled_from([1, 2, 7, 8, 1000, 1 << 20, 14_607_698, (1 << 40) + 3, 1 << 57])


@given(urls=st.lists(ANY_STR, max_size=40), m=SIZES)
@settings(max_examples=300, deadline=None)
def test_the_batch_path_is_the_cores_positions(urls: list[str], m: int) -> None:
    """positions_many (NumPy over BLAKE2b digests, the filters' speed-up) is the core's
    positions, row by row, for any str and any filter size."""
    got = positions_many(urls, m)
    assert got.shape == (len(urls), 8) and got.dtype == np.uint64
    assert got.tolist() == [positions(u, m) for u in urls]


@given(urls=st.lists(ANY_STR, max_size=40), m=SIZES)
@settings(max_examples=300, deadline=None)
def test_the_url_by_url_path_is_the_cores_positions(urls: list[str], m: int) -> None:
    """positions_list (a page's URLs hashed at once, without NumPy: the filters' path below
    NUMPY_AFTER) is the core's positions, URL by URL, for any str and any filter size."""
    assert positions_list(urls, m) == [positions(u, m) for u in urls]


def test_the_url_by_url_path_names_a_non_str() -> None:
    with pytest.raises(TypeError, match="url must be a str, got NoneType"):
        positions_list(["http://a/", None], 100)  # type: ignore[list-item]


def test_the_batch_path_is_the_cores_on_many_urls() -> None:
    urls = synthetic_urls(20_000, seed=5) + ["caf\u00e9", "\ud800", "x\udfffy", "\U0001f600"]
    for m in (1_000_003, 14_607_698, (1 << 40) + 3):
        assert positions_many(urls, m).tolist() == [positions(u, m) for u in urls]
    other = b"another seed"
    assert positions_many(urls[:500], 1000, other).tolist() == [positions(u, 1000, other)
                                                                for u in urls[:500]]


def test_digests_are_the_salted_blake2b_of_the_utf8() -> None:
    from hashlib import blake2b

    urls = ["http://a.test/", "http://b\u00fccher.de/", "\ud83d"]
    want = b"".join(blake2b(u.encode("utf-8", "surrogatepass"), digest_size=64,
                            salt=SEED).digest() for u in urls)
    assert digests(urls) == want


@pytest.mark.parametrize("bad", [None, 5, b"http://x/"])
def test_a_non_str_is_named(bad: object) -> None:
    with pytest.raises(TypeError, match=f"url must be a str, got {type(bad).__name__}"):
        positions_many(["http://a/", bad], 100)  # type: ignore[list-item]


def test_the_crawl_path_never_loads_the_teaching_families_or_mmh3() -> None:
    """run.py's Visited (every kind, the shared one too) and the crawler come without
    minicrawl.visited.hashes: the teaching families are the ``minicrawl bloom`` tool's only."""
    code = ("import sys\n"
            "import minicrawl.crawler, minicrawl.redis.crawl, minicrawl.state.store\n"
            "from minicrawl.visited.make import make_visited\n"
            "from minicrawl.options import Options\n"
            "for kind in ('bloom', 'scalable', 'exact'):\n"
            "    make_visited(Options(visited=kind)).add_new(['http://a/'] * 600)\n"
            "loaded = {'minicrawl.visited.hashes', 'mmh3'} & set(sys.modules)\n"
            "assert not loaded, loaded\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_crawlers_family_in_the_tool_is_the_cores() -> None:
    fam = hashes.get_family("blake2b")
    urls = ["http://a.test/", "\ud800"]
    assert [fam.indices(u, 1000, 8) for u in urls] == [positions(u, 1000) for u in urls]
    assert fam.indices_many(urls, 1000, 8).tolist() == [positions(u, 1000) for u in urls]
    with pytest.raises(ValueError, match="k = 8"):
        fam.indices("x", 1000, 7)


@pytest.mark.parametrize("bad", [(0, 8), (10, 0), (10, 65), ((1 << 57) + 1, 8)])
def test_bad_sizes_refused(bad: tuple[int, int]) -> None:
    for name in ("java", "scrapy-redis"):
        fam = hashes.get_family(name)
        with pytest.raises(ValueError):
            fam.indices("x", *bad)
        with pytest.raises(ValueError):
            fam.indices_many(["x"], *bad)


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
    assert set(hashes.FAMILIES) == {"blake2b", "java", "scrapy-redis"}
    for gone in ("md5", "default"):  # "default" was MurmurHash3 double hashing: gone
        with pytest.raises(ValueError, match="unknown hash family"):
            hashes.get_family(gone)
    assert hashes.family_bits("blake2b", 1000) == 1000
    assert hashes.family_bits("java", 1000) == 1024
    assert hashes.family_bits("scrapy-redis", 1024) == 1024
