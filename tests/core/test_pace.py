"""The hosts' pace (interfaces.Pace), run over every implementation — the core's fixed gap,
run.py's host states (minicrawl.frontier.hosts) and the shared crawl's gate in a real Redis: a
request starts once the host's gap is over, the slot is its item's (not its thread's), a Retry-After
pause rests the host; and any of them plugs into the core's crawler."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterator

import pytest

from minicrawl.core.crawler import Crawler
from minicrawl.core.interfaces import Item, Pace
from minicrawl.core.limits import Politeness
from minicrawl.demo.site import LocalSite, Resource, Slow
from minicrawl.frontier.hosts import Hosts
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.gate import RedisHostGate

H = "example.org"


@pytest.fixture(params=["core", "run.py", "redis"])
def make_pace(request: pytest.FixtureRequest) -> Iterator[Callable[[], Pace]]:
    """A factory of paces with no delay of their own (the gap is given with each take)."""
    if request.param == "core":
        yield lambda: Politeness(0.0)
        return
    if request.param == "run.py":
        yield Hosts
        return
    url = request.getfixturevalue("redis_server").url  # a real server; one crawl per test
    shared = SharedRedis(url, "p" + uuid.uuid4().hex[:8])
    gates: list[RedisHostGate] = []

    def make() -> RedisHostGate:
        gates.append(RedisHostGate(shared, per_host=1 << 20))
        return gates[-1]

    yield make
    for gate in gates:
        gate.close()  # its heartbeat thread
    shared.close()


def item(path: str) -> Item:
    return Item(f"http://{H}/{path}")


def test_starts_on_a_host_are_a_gap_apart_and_other_hosts_need_not_wait(make_pace) -> None:
    pace = make_pace()
    assert pace.take(first := item("a"), H, 0.3) == 0.0
    wait = pace.take(item("b"), H, 0.3)
    assert 0.2 < wait <= 0.31
    assert pace.take(Item("http://other.org/"), "other.org", 0.3) == 0.0
    pace.release(first, H, 0.3)
    time.sleep(wait + 0.03)
    assert pace.take(item("b"), H, 0.3) == 0.0


def test_a_retry_after_pause_rests_the_host(make_pace) -> None:
    pace = make_pace()
    assert pace.take(first := item("a"), H) == 0.0
    pace.release(first, H, 0.0, 0.4)  # a 503 with Retry-After: 0.4
    assert pace.take(item("b"), H) > 0.3


def test_a_slot_is_its_items_not_its_threads(make_pace) -> None:
    """A request started in one thread may end in another; an item that holds no slot releases
    nothing (and raises nothing)."""
    pace = make_pace()
    assert pace.take(first := item("a"), H) == 0.0
    pace.release(item("never-started"), H)
    ender = threading.Thread(target=pace.release, args=(first, H))
    ender.start()
    ender.join()
    assert pace.take(item("b"), H) == 0.0


@pytest.mark.parametrize("pace", [Politeness(0.2), Hosts(per_host=1, delay=0.2)],
                         ids=["core", "run.py"])
def test_the_core_crawler_asks_any_pace(pace: Pace) -> None:
    """Six slow pages on one host, 4 workers: the server sees starts 0.2 s apart, whichever
    pace the crawler was given."""
    slow = Slow(Resource(b"<p>leaf</p>"), 0.05)
    with LocalSite({"/": Resource("".join(f'<a href="/{n}">x</a>' for n in range(6)).encode()),
                    **{f"/{n}": slow for n in range(6)}}) as server:
        Crawler([server.url("/")], threads=4, pace=pace).run()
        times = sorted(r.time for r in server.requests)
    assert len(times) == 7
    gaps = sorted(b - a for a, b in zip(times, times[1:], strict=False))
    # The server sees arrivals: on a busy machine a request may leave its worker late, so one
    # gap shrinks as the one before it grows. The middle gap and the whole span do not.
    assert gaps[len(gaps) // 2] >= 0.18 and times[-1] - times[0] >= 6 * 0.2 - 0.03, gaps


def test_a_urls_credentials_make_no_other_host_for_the_core_pace() -> None:
    """The core's trip paces by ``host[:port]`` (core.urls.host_of): a seed with user:password@
    is on the same server as one without, so its request waits for the same gap."""
    with LocalSite({"/": Resource(b"<p>a</p>"), "/b": Resource(b"<p>b</p>")}) as server:
        locked = server.url("/b").replace("://", "://user:pw@")
        Crawler([server.url("/"), locked], threads=2, pace=Politeness(0.4)).run()
        times = sorted(r.time for r in server.requests)
    assert len(times) == 2 and times[1] - times[0] >= 0.35, times
