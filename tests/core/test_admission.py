"""Admission's contract (interfaces.Admission), run over every implementation — the core's
SameHost and run.py's Scope, Traps, HostCap, DepthLimit and the resolver's remembered verdicts:
a quick, thread-safe answer for canonical URLs, None or the reason to count a refusal under."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from minicrawl.admission import DepthLimit, HostCap, Traps
from minicrawl.core.interfaces import Item
from minicrawl.core.limits import SameHost
from minicrawl.core.urls import canonicalize
from minicrawl.frontier.hosts import Hosts
from minicrawl.options import Options
from minicrawl.resolve import LinkResolver
from minicrawl.scope import Scope
from minicrawl.stats import Stats
from minicrawl.visit.robots import RobotsGate

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
    "scope": (lambda: Scope([canonicalize(url) for url in SEEDS], allow_domains=["docs.test"],
                            include=[r"/(api|start)"], exclude=[r"\.pdf$"]), {
        ("http://site.test/start", 0): True,
        ("https://site.test/api/x.html", 3): True,  # a seed's host by https too
        ("https://site.test:8443/api/x.html", 3): False,  # another port is another server
        ("http://docs.test:8080/api/", 1): True,  # --allow-domain: any port of the domain
        ("http://docs.test/api/", 1): True,  # --allow-domain: the domain
        ("http://www.docs.test/api/", 1): True,  # and its subdomains
        ("http://notdocs.test/api/", 1): False,
        ("http://site.test/blog/", 1): False,  # not --include'd
        ("http://site.test/api/manual.pdf", 1): False,  # --exclude'd
        ("http://elsewhere.test/api/", 1): False,
    }),
    "traps": (lambda: Traps(3), {
        ("http://site.test/a/b/c/d/e/f/", 5): True,
        ("http://site.test/a/b/a/b/a/b/", 5): True,  # three times: the limit
        ("http://site.test/a/b/a/b/a/b/a/", 6): False,  # four times: a calendar, a loop
        ("http://site.test/x?q=/a/a/a/a/a", 1): True,  # the query is no path
    }),
    "depth": (lambda: DepthLimit(2), {
        ("http://site.test/a", 0): True,
        ("http://site.test/a", 2): True,
        ("http://site.test/a", 3): False,
    }),
    "remembered": (lambda: LinkResolver(Options(), [Scope([canonicalize(SEEDS[0])]), Traps(2)]), {
        ("http://site.test/a/b/c", 4): True,
        ("http://elsewhere.test/", 1): False,  # the scope's verdict
        ("http://site.test/a/b/a/b/a/", 1): False,  # the traps'
        ("http://site.test/a/b/a/", 9): True,  # any depth alike
    }),
    "host-cap": (lambda: full_host_cap("full.test"), {
        ("http://full.test/more", 1): False,
        ("https://full.test/", 0): False,
        ("http://site.test/", 1): True,
    }),
}


def full_host_cap(full: str) -> HostCap:
    """A host cap of 2 pages, after two requests to ``full`` (counted by the pace)."""
    opts = Options(max_pages_per_host=2)
    hosts = Hosts()
    for n in range(2):
        item = Item(f"http://{full}/{n}")
        assert hosts.take_turn(item, full, 0.0, 2).go
        hosts.release(item, full)
    return HostCap(RobotsGate(opts, Stats(), hosts))


@pytest.fixture(params=sorted(CASES))
def rule_and_cases(request: pytest.FixtureRequest):
    make, cases = CASES[request.param]
    return make(), cases


def test_answers(rule_and_cases) -> None:
    rule, cases = rule_and_cases
    assert {case: rule.refuses(*case) is None for case in cases} == cases


def test_a_refusal_has_a_reason_to_be_counted_under(rule_and_cases) -> None:
    rule, cases = rule_and_cases
    for case in (case for case, admitted in cases.items() if not admitted):
        why = rule.refuses(*case)
        assert why is not None and why.isidentifier() and why.islower(), (case, why)


def test_same_answers_from_many_threads(rule_and_cases) -> None:
    rule, cases = rule_and_cases
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda case: rule.refuses(*case) is None, list(cases) * 200))
    assert answers == list(cases.values()) * 200
