"""Admission's contract (interfaces.Admission), run over every implementation: a pure, quick,
thread-safe yes or no for canonical URLs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from minicrawl.core.limits import SameHost

SEEDS = ["http://Site.test/start", "https://other.test:8443/x?y"]
# (url, depth) → what each implementation must answer
CASES = {
    "same-host": (lambda: SameHost(SEEDS), {
        ("http://site.test/", 0): True,
        ("http://site.test/deep/page.html", 9): True,
        ("https://other.test:8443/", 1): True,
        ("https://site.test/", 1): True,  # the same host by https: a site that moved there
        ("https://site.test/deep", 1): True,
        ("http://site.test:8080/", 1): False,  # another port is another server
        ("https://site.test:8443/", 1): False,
        ("http://other.test:8443/x", 1): True,
        ("http://site.test.evil.test/", 1): False,  # a prefix of the host is not the host
        ("https://other.test/", 1): False,
        ("http://elsewhere.test/", 1): False,
    }),
}


@pytest.fixture(params=sorted(CASES))
def rule_and_cases(request: pytest.FixtureRequest):
    make, cases = CASES[request.param]
    return make(), cases


def test_answers(rule_and_cases) -> None:
    rule, cases = rule_and_cases
    assert {case: rule.admits(*case) for case in cases} == cases


def test_same_answers_from_many_threads(rule_and_cases) -> None:
    rule, cases = rule_and_cases
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda case: rule.admits(*case), list(cases) * 200))
    assert answers == list(cases.values()) * 200
