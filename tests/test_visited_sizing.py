"""Visited sized for the crawl that is really coming (issue 38, point 3): by default a crawl of
more URLs than ``--expected-urls`` loses no page; each filter says how many pages it is
expected to have withheld so far, and that estimate matches what filters really withhold."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl import BloomFilter, Options
from minicrawl.core.visited import bits_for
from minicrawl.demo.site import LocalSite, Request, Resource
from minicrawl.visited import ScalableBloomFilter
from minicrawl.visited.make import describe, make_visited
from minicrawl.visited.sizing import (
    bill,
    default_rate,
    expected_withheld,
    false_positive_rate,
    offered_for,
    rate_bound,
    withheld_of_offered,
)

ROOT = Path(__file__).resolve().parent.parent


def test_the_closed_form_is_the_sum_of_the_rate_over_the_offers():
    for m, n in ((5000, 300), (5000, 2000), (1000, 3000), (64, 500)):
        total = sum(false_positive_rate(m, i, 8) for i in range(n))
        assert withheld_of_offered(m, n) == pytest.approx(total, rel=0.02, abs=1e-9), (m, n)
        taken = n - withheld_of_offered(m, n)
        if n * 8 / m < 5:  # (filled to e^-5: past that the count barely moves with N)
            assert offered_for(m, round(taken)) == pytest.approx(n, rel=0.01)
    assert withheld_of_offered(5000, 0) == 0.0 and expected_withheld(5000, 0) == 0.0
    # the default of before, 0.001, lost 138 pages of a million, 293 of issue 38's tree
    m = bits_for(1_000_000, 0.001)
    assert withheld_of_offered(m, 1_000_000) == pytest.approx(138.4, rel=0.01)
    assert withheld_of_offered(m, 1_111_112) == pytest.approx(293.5, rel=0.01)


def test_the_default_rate_is_for_the_pages_of_the_crawl_it_is_sized_for():
    """The filter's rate never passes 1/P for the P pages the crawl may fetch (--max-pages
    without --state, or 10 x --expected-urls); the first slice is at half of that."""
    assert default_rate(1_000_000) == 5e-8 and default_rate(1_000_000, 1_000_000) == 5e-7
    assert rate_bound(1_000_000) == 1e-7 and rate_bound(1, 1) == 0.5  # (a rate < 1 for one page)
    visited = make_visited(Options())
    assert isinstance(visited, ScalableBloomFilter)
    first = visited.slices[0]
    assert first.capacity == 1_000_000 and first.error_rate == 5e-8
    assert 61 < first.bits / first.capacity < 62  # bits a URL (a set of 70-character URLs:
    # ~1,200); a crawl of the million loses 0.006 pages in expectation
    assert expected_withheld(first.bits, 1_000_000) < 0.01
    capped = make_visited(Options(max_pages=1_000_000)).slices[0]
    assert capped.capacity == 1_000_000 and capped.error_rate == 5e-7
    assert 44 < capped.bits / capped.capacity < 46
    # with --state the cap is one run's, not the crawl's (the runs after it fetch what it
    # journals): sized as without it
    assert make_visited(Options(max_pages=1, state="s")).slices[0].error_rate == 5e-8
    # a fixed filter is bound by a state directory or a shared crawl: not by the page cap
    fixed = make_visited(Options(visited="bloom", expected_urls=1000, max_pages=10))
    assert isinstance(fixed, BloomFilter) and fixed.error_rate == default_rate(1000) == 5e-5
    assert make_visited(Options(visited="bloom", error_rate=0.01)).error_rate == 0.01
    assert make_visited(Options(error_rate=0.01, max_pages=10)).slices[0].error_rate == 0.01


def test_issue_38s_million_page_crawl_costs_half_the_memory_and_under_a_page():
    """``--max-pages 1000000`` on the 10-ary tree offers ~10 M URLs: the default's slices
    take ≤ 110 MB there (the 2.5e-9 of before: 210 MB), and the pages it may lose — at most
    the million pages fetched × the highest rate any URL met, whatever the order — stay under
    one. Without the cap, a crawl of 10 x --expected-urls loses under one page too."""
    n, cap = 1_000_000, 1_000_000
    before = bill(n, 2.5e-9, 10 * cap)
    now = bill(n, default_rate(n, cap), 10 * cap)
    assert now.slices == before.slices == 4
    assert now.nbytes <= 110e6 and before.nbytes > 200e6
    assert 80 < now.bits / (10 * cap) < 90  # bits a URL offered, the last slice 3/8 full
    assert cap * now.rate < 1 and now.rate < rate_bound(n, cap)
    assert bill(n, default_rate(n, cap), cap).withheld < 0.1  # the first million, in order
    assert bill(n, default_rate(n), 10 * n).withheld < 1  # uncapped, to the horizon
    assert bill(n, default_rate(n), n).withheld < 0.01


def test_the_bill_is_what_a_filter_holds_and_withholds():
    """bill() from the formulas = a real default filter at a small scale (the sizing scales
    with n): its bytes, slices and rate, and its own estimate of the URLs withheld."""
    n, cap = 2000, 2000
    visited = make_visited(Options(expected_urls=n, max_pages=cap))
    lost = withheld_by(visited, 10 * cap, chunk=1000)
    planned = bill(n, default_rate(n, cap), 10 * cap)
    assert len(visited.slices) == planned.slices == 4
    assert visited.nbytes == pytest.approx(planned.nbytes, abs=8 * planned.slices)
    assert visited.expected_withheld == pytest.approx(planned.withheld, rel=0.02)
    assert visited.current_fp_rate == pytest.approx(planned.rate, rel=0.25)
    # ~6.8 of the 20,000 URLs withheld, in expectation (as of 10 M at a million): URLs, not
    # pages — of the 2,000 pages fetched at most 2,000 x the rate (< 1) could be among them
    assert abs(lost - planned.withheld) < 5 * math.sqrt(planned.withheld), lost
    assert cap * visited.current_fp_rate < 1


def urls(n: int, start: int = 0) -> list[str]:
    return [f"http://h.test/page/{i}" for i in range(start, start + n)]


def withheld_by(visited, n: int, chunk: int = 50) -> int:
    """Offer n distinct URLs in page-sized chunks: how many the filter took for seen."""
    lost = 0
    for at in range(0, n, chunk):
        batch = urls(min(chunk, n - at), at)
        lost += len(batch) - len(visited.add_new(batch))
    return lost


def test_the_estimate_matches_what_a_fixed_filter_withholds_when_overfilled():
    """A fixed filter for 2,000 at 0.01, given 2,000 then 8,000 distinct URLs: the estimate is
    small while under capacity, and then within 5 standard deviations of the real losses."""
    bloom = BloomFilter(capacity=2000, error_rate=0.01)
    lost = withheld_by(bloom, 2000)
    assert bloom.expected_withheld < 4 and lost < 12
    lost += len(urls(6000, 2000)) - sum(len(bloom.add_new(urls(50, at)))
                                        for at in range(2000, 8000, 50))
    expected = bloom.expected_withheld
    assert expected > 500
    assert abs(lost - expected) < 5 * math.sqrt(expected), (lost, expected)
    stats = describe(bloom)
    assert stats["visited_over_capacity"] is True and stats["visited_current_fp_rate"] > 0.2
    assert stats["visited_expected_withheld"] == round(expected, 3)


def test_the_estimate_matches_what_a_scalable_filter_withholds():
    """Slices sized for 500 at a loose rate, 30,000 URLs (six slices): the older slices are
    asked for every later URL; the estimate counts that too."""
    scalable = ScalableBloomFilter(initial_capacity=500, error_rate=0.2, growth=2,
                                   tightening=0.5)
    lost = withheld_by(scalable, 30_000)
    expected = scalable.expected_withheld
    assert len(scalable.slices) >= 5 and expected > 200
    assert abs(lost - expected) < 5 * math.sqrt(expected), (lost, expected)


class Tree(LocalSite):
    """``/t/<i>`` links to ``/t/<10i+1>`` … ``/t/<10i+10>``: a 10-ary tree of ``size`` pages."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def resolve(self, request: Request) -> Resource:
        """The tree page of the path, or a 404."""
        if not request.path.startswith("/t/"):
            return super().resolve(request)
        i = int(request.path[3:])
        links = "".join(f'<a href="/t/{c}">{c}</a>' for c in range(10 * i + 1, 10 * i + 11)
                        if c < self.size)
        return Resource(f"<html><body>{links}</body></html>".encode())


def crawl_tree(tmp_path: Path, size: int, *flags: str) -> tuple[Tree, dict, str]:
    stats = tmp_path / "stats.json"
    with Tree(size) as site:
        done = subprocess.run(
            [sys.executable, str(ROOT / "run.py"), site.url("/t/0"), "--threads", "4",
             "--ignore-robots", "--delay", "0", "--quiet", "--stats", str(stats), *flags],
            capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert done.returncode == 0, done.stderr
    return site, json.loads(stats.read_text()), done.stderr


def test_by_default_a_crawl_past_its_capacity_loses_no_page(tmp_path):
    """1,000 pages with Visited sized for 500: every page fetched once (the server's log), and
    the stats say about none withheld (0.056 in expectation; a fixed filter at the 0.001 of
    issue 38's start, 0.57 for the first 1,000 and climbing). Whether a URL collides depends on
    the server's port, so a run could lose a page once in ~18: the loss is asserted by the
    expectation here, and exactly below, on URLs that do not change from run to run."""
    site, stats, _ = crawl_tree(tmp_path, 1000, "--expected-urls", "500")
    counts = site.fetch_counts()
    assert set(counts.values()) == {1} and len(counts) >= 1000 - 1
    assert stats["visited_kind"] == "ScalableBloomFilter"
    assert stats["visited_expected_withheld"] < 0.1


def test_a_capped_crawl_is_sized_by_its_pages(tmp_path):
    """--max-pages 500 on a tree of 3,000 with Visited for 300: the filter's rate is from the
    500 pages (the first slice at 0.001), and the 500 pages × the highest rate any URL met —
    what bounds the pages lost, in any fetch order — stays under one, for URLs offered past
    what the cap lets be fetched too."""
    _, stats, _ = crawl_tree(tmp_path, 3000, "--expected-urls", "300", "--max-pages", "500")
    assert stats["visited_count"] > 600  # two slices at least: the links of 500 pages
    # The bound is on the expectation (the last line). The rate now is the bits' (fill ** 8),
    # random around it: the first slice holds 300 URLs in 4,383 bits, 42 % set ± 1.8 % (one
    # standard deviation, binomial), so its rate ± 14 %; 16 crawls here measured 0.0016-0.0019
    # and CI once 0.00203 (1.01 pages). 1.3: two standard deviations above a full bound.
    assert 500 * stats["visited_current_fp_rate"] < 1.3
    # the rate of all the slices at capacity: under the cap's bound, above the uncapped one's
    assert rate_bound(300) < stats["visited_expected_fp_rate"] < rate_bound(300, 500)


def test_the_default_visited_past_its_capacity_withholds_under_a_url():
    """The crawl's default Visited (make_visited) sized for 300, given 3,000 fixed URLs (the
    horizon: 10 x) one page of 10 at a time: the expectation is under one (0.68) and one is
    withheld; the fixed filter at 0.001 withholds half of them (checked, so the URLs are not
    too easy). Past the horizon the loss goes on at ≤ 1e-7·300/n a URL: the rate never passes
    the bound."""
    urls = [f"http://example.org/t/{i}/{i * 7 % 13}" for i in range(3_000)]

    def withheld(visited) -> int:
        new = [u for k in range(0, len(urls), 10) for u in visited.add_new(urls[k:k + 10])]
        assert len(set(new)) == len(new)
        return len(urls) - len(new)

    visited = make_visited(Options(expected_urls=300))
    assert withheld(visited) <= 1 and visited.expected_withheld < 1
    assert visited.current_fp_rate < rate_bound(300)
    assert withheld(make_visited(Options(expected_urls=300, visited="bloom",
                                         error_rate=0.001))) > 1000


def test_a_fixed_filter_overfilled_says_its_rate_and_its_losses(tmp_path):
    site, stats, err = crawl_tree(tmp_path, 3000, "--expected-urls", "300", "--visited",
                                  "bloom", "--error-rate", "0.01")
    assert stats["visited_over_capacity"] is True
    assert stats["visited_expected_withheld"] > 5
    assert stats["visited_current_fp_rate"] > 0.1
    assert "its false-positive rate climbs (now ~" in err and "pages withheld so far" in err
    assert len(site.fetch_counts()) < 3000  # it did lose pages
