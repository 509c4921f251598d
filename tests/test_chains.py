"""Redirect chains waiting at their targets, over both implementations — this process's
(visit/redirects.py) and the shared crawl's in a real Redis (redis/chains.py): what is carried
to a target is found there, whole, until the chain ends; in Redis, by any process."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest

from minicrawl.core.interfaces import Item
from minicrawl.redis.chains import RedisChains
from minicrawl.redis.conn import SharedRedis
from minicrawl.visit.redirects import Chain, Chains

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")


@pytest.fixture(params=["local", "redis"])
def make_chains(request: pytest.FixtureRequest) -> Iterator[Callable[[], Chains | RedisChains]]:
    if request.param == "local":
        one = Chains()
        yield lambda: one  # one process: the same object
        return
    url, name = request.getfixturevalue("redis_server").url, "c" + uuid.uuid4().hex[:8]
    closing = request.getfixturevalue("closing")
    yield lambda: RedisChains(closing(SharedRedis(url, name)))  # each call: another process


def test_a_carried_chain_is_found_at_its_target_until_it_ends(make_chains) -> None:
    starter, taker = make_chains(), make_chains()
    chain = Chain(Item("http://a.test/old", 2, "http://a.test/"), "2026-11-26T02:00:00.000Z",
                  urls=["http://a.test/old", "http://a.test/mid"], elapsed_ms=12.5)
    assert taker.waiting_at("http://a.test/new") is None
    starter.carry("http://a.test/new", chain)
    found = taker.waiting_at("http://a.test/new")
    assert found == chain  # the origin, when, the hops and their time, all of it
    assert taker.waiting_at("http://a.test/old") is None  # only at its target
    taker.end("http://a.test/new")
    assert make_chains().waiting_at("http://a.test/new") is None


def test_ending_a_url_that_is_no_hop_changes_nothing(make_chains) -> None:
    chains = make_chains()
    chain = Chain(Item("http://a.test/old"), "t", urls=["http://a.test/old"])
    chains.carry("http://a.test/new", chain)
    chains.end("http://a.test/other")
    assert make_chains().waiting_at("http://a.test/new") == chain
