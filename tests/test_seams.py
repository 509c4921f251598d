"""The contracts of run.py's page cap and redirect chains (minicrawl/seams.py: PageCap,
Redirects), each over this process's implementation and the shared crawl's in a real Redis."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable

import pytest

from minicrawl.core.interfaces import Item
from minicrawl.redis.caps import RedisPageCap
from minicrawl.redis.chains import RedisChains
from minicrawl.redis.conn import SharedRedis
from minicrawl.seams import Grant, PageCap, Redirects
from minicrawl.stats import PageCount
from minicrawl.visit.redirects import Chain, Chains

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")


def shared_factory(request: pytest.FixtureRequest) -> Callable[[], SharedRedis]:
    """Connections to one crawl in the real server: each call, another process's (closed after
    the test)."""
    url, closing = request.getfixturevalue("redis_server").url, request.getfixturevalue("closing")
    name = "s" + uuid.uuid4().hex[:8]
    return lambda: closing(SharedRedis(url, name))


@pytest.fixture(params=["local", "redis"])
def make_cap(request: pytest.FixtureRequest) -> Callable[[], PageCap]:
    """A factory of page caps that count together (one crawl's: one cap, or its processes')."""
    if request.param == "local":
        cap = PageCount()
        return lambda: cap
    connect = shared_factory(request)
    return lambda: RedisPageCap(connect())


@pytest.fixture(params=["local", "redis"])
def make_chains(request: pytest.FixtureRequest) -> Callable[[], Redirects]:
    """A factory of redirect chains that see each other's (one crawl's, or its processes')."""
    if request.param == "local":
        chains = Chains()
        return lambda: chains
    connect = shared_factory(request)
    return lambda: RedisChains(connect())


def test_the_cap_grants_go_then_the_last_then_none(make_cap) -> None:
    cap = make_cap()
    assert [cap.take(3) for _ in range(5)] == [Grant.GO, Grant.GO, Grant.LAST, Grant.NONE,
                                               Grant.NONE]


def test_exactly_cap_fetches_are_granted_to_racing_workers(make_cap) -> None:
    """16 threads over 4 caps (a shared crawl's: 4 processes) ask 8 times each: 50 granted,
    one of them the last."""
    caps = [make_cap() for _ in range(4)]
    answers: list[Grant] = []
    lock = threading.Lock()

    def work(cap: PageCap) -> None:
        for _ in range(8):
            grant = cap.take(50)
            with lock:
                answers.append(grant)

    threads = [threading.Thread(target=work, args=(caps[n % 4],)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answers.count(Grant.GO) == 49 and answers.count(Grant.LAST) == 1
    assert answers.count(Grant.NONE) == 16 * 8 - 50


def test_a_chain_carried_to_its_target_waits_there_until_it_ends(make_chains) -> None:
    """What one process carries, another finds at the target (a shared crawl's: any process
    may take the target from ToDo); once ended there, no chain waits at it."""
    carrier, taker = make_chains(), make_chains()
    chain = Chain(Item("http://a.test/start", 2, "http://a.test/"), "2024-01-01T00:00:00Z",
                  urls=["http://a.test/start"], elapsed_ms=12.5)
    assert taker.waiting_at("http://a.test/next") is None
    carrier.carry("http://a.test/next", chain)
    found = taker.waiting_at("http://a.test/next")
    assert found is not None
    assert (found.item, found.fetched_at, found.urls, found.elapsed_ms) == (
        chain.item, chain.fetched_at, chain.urls, chain.elapsed_ms)
    assert taker.waiting_at("http://a.test/other") is None
    taker.end("http://a.test/next")
    assert make_chains().waiting_at("http://a.test/next") is None
