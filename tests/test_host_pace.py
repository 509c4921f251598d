"""run.py's pace (seams.HostPace): what it has beyond the core's Pace (tests/core/test_pace.py),
its contract over both implementations —
one process's host states (minicrawl.frontier.hosts.Hosts) and the shared crawl's gate in a real
Redis: per_host slots, held until the request ends; the page cap per host, robots.txt not a page.
Then what only the local one has: named host states, which the polite ToDo asks."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from minicrawl.core.interfaces import Item
from minicrawl.frontier.hosts import Hosts, HostState
from minicrawl.frontier.todo import ToDo
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.gate import RedisHostGate

# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")

H = "example.org"


@pytest.fixture(params=["local", "redis"])
def make_pace(request: pytest.FixtureRequest):
    """A factory: make_pace(per_host) → a Pacer (the Redis ones share one crawl)."""
    if request.param == "local":
        yield lambda per_host=1: Hosts(per_host=per_host)
        return
    url, closing = request.getfixturevalue("redis_server").url, request.getfixturevalue("closing")
    name = "p" + uuid.uuid4().hex[:8]
    yield lambda per_host=1: closing(RedisHostGate(closing(SharedRedis(url, name)),
                                                   per_host=per_host))


def go(pace: Hosts | RedisHostGate, url: str, gap: float = 0.0, cap: int | None = None) -> Item:
    item = Item(f"http://{H}/{url}")
    assert pace.take_turn(item, H, gap, cap).go
    return item


def test_one_slot_per_host_until_its_request_ends(make_pace):
    pace = make_pace(1)
    first = go(pace, "a")
    assert pace.take(Item(f"http://{H}/b"), H, 0.0) > 0  # busy: wait
    assert pace.take(Item("http://other.org/"), "other.org", 0.0) == 0.0  # not its host
    pace.release(first, H, 0.0, 0.0)
    go(pace, "b")


def test_per_host_requests_in_flight_at_once(make_pace):
    pace = make_pace(2)
    items = [go(pace, "a"), go(pace, "b")]
    assert pace.take(Item(f"http://{H}/c"), H, 0.0) > 0
    pace.release(items[0], H, 0.0, 0.0)
    go(pace, "c")


def test_the_page_cap_per_host_and_robots_txt_is_not_a_page(make_pace):
    pace = make_pace(4)
    robots = Item(f"http://{H}/robots.txt")
    assert pace.take_turn(robots, H, 0.0, 2, robots=True).go
    pace.release(robots, H, 0.0, 0.0)
    for url in ("a", "b"):
        pace.release(go(pace, url, cap=2), H, 0.0, 0.0)
    assert pace.take_turn(Item(f"http://{H}/c"), H, 0.0, 2).full
    assert pace.full(H, 2)


# -- one process: the host states the polite ToDo asks ------------------------------------------

def test_a_host_is_ready_resting_or_busy():
    hosts = Hosts(per_host=1)
    now = time.monotonic()
    assert hosts.state(H, now) is HostState.READY  # never asked
    item = go(hosts, "a", gap=5.0)
    assert hosts.state(H, time.monotonic()) is HostState.BUSY
    hosts.release(item, H, 5.0, 0.0)
    assert hosts.state(H, time.monotonic()) is HostState.RESTING
    assert hosts.state(H, hosts.next_start(H) + 0.001) is HostState.READY


def test_the_todo_hands_out_a_url_with_its_slot_and_its_request_uses_it():
    """take() booked the host for the item: the item's request starts on that slot at once;
    any other request to the host waits its gap."""
    hosts = Hosts(per_host=1, delay=5.0)
    todo = ToDo(hosts)
    todo.put(Item(f"http://{H}/a"))
    item = todo.take()
    assert hosts.state(H, time.monotonic()) is HostState.BUSY  # its slot is out
    assert hosts.take(Item(f"http://{H}/x"), H, 5.0) > 0
    taken: list[float] = []
    other = threading.Thread(target=lambda: taken.append(hosts.take(item, H, 5.0)))
    other.start()  # the item's own request, from another thread: its slot
    other.join()
    assert taken == [0.0]
    hosts.release(item, H, 5.0, 0.0)
    todo.done(item)
    assert hosts.state(H, time.monotonic()) is HostState.RESTING


def test_a_retry_after_holds_back_a_url_handed_out_before_it_came():
    """per_host 2: the ToDo hands out /a and /b together; /b's request ends in a 503 with
    Retry-After: 0.4 before /a's starts. /a's slot was booked before the pause: it waits too."""
    hosts = Hosts(per_host=2)
    todo = ToDo(hosts)
    todo.put_many([Item(f"http://{H}/a"), Item(f"http://{H}/b")])
    a, b = todo.take(), todo.take()
    assert hosts.take(b, H) == 0.0
    hosts.release(b, H, 0.0, 0.4)
    assert 0.3 < hosts.take(a, H) <= 0.4
    todo.put_back(a)  # WAIT: back in its line until the host is quiet no more
    todo.done(a)
    todo.done(b)
    started = time.monotonic()
    assert todo.take() == a
    assert time.monotonic() - started > 0.3


# -- one host key: what politeness paces by ------------------------------------------------------

def test_http_and_https_of_a_host_and_port_share_a_pace_and_credentials_make_no_other_host(
        make_pace):
    """The pace goes by ``host[:port]`` (core.urls.host_of): a request by https, or with a
    user:password@, waits for the gap after one by http to the same server; another port does
    not (another server), nor does a host's other name."""
    from minicrawl.http.fetch import Fetcher
    from minicrawl.options import Options
    from minicrawl.stats import Stats
    from minicrawl.visit.robots import RobotsGate, Verdict

    opts = Options(ignore_robots=True, delay=5.0, per_host=4)
    gate, fetcher = RobotsGate(opts, Stats(), make_pace(4)), Fetcher(opts)
    try:
        assert gate.admit(Item("http://h.test:8080/a"), fetcher).verdict is Verdict.GO
        for same in ("https://h.test:8080/b", "http://user:pw@h.test:8080/c"):
            assert gate.admit(Item(same), fetcher).verdict is Verdict.WAIT, same
        for other in ("http://h.test:8081/", "https://h.test/", "http://www.h.test:8080/"):
            assert gate.admit(Item(other), fetcher).verdict is Verdict.GO, other
    finally:
        fetcher.close()


# -- the rest of seams.HostPace, over both ------------------------------------------------------

def test_take_is_take_turns_wait_and_a_busy_host_answers_a_real_wait(make_pace):
    """No magic numbers: go, or a positive wait (all slots in flight: a short poll), or full."""
    pace = make_pace(1)
    first = go(pace, "a")
    turn = pace.take_turn(Item(f"http://{H}/b"), H)
    assert not turn.go and not turn.full and 0 < turn.wait <= 1.0
    assert pace.take(Item(f"http://{H}/c"), H) > 0
    pace.release(first, H)
    time.sleep(0.05)
    assert pace.take(Item(f"http://{H}/b"), H) == 0.0  # (b's turn: it was booked first)


def test_a_turn_booked_for_a_waiting_url_holds_up_no_one_once_forgotten(make_pace):
    """A URL waiting for its robots.txt (fetched by another worker) books its turn; refused
    by robots.txt, it forgets it: the host's next URL goes without waiting for it."""
    pace = make_pace(4)
    pending = Item(f"http://{H}/pending")
    assert pace.book(pending, H, 0.0) >= 0.0
    pace.forget(pending, H)
    time.sleep(0.01)
    go(pace, "next")


def test_full_once_the_host_had_its_cap_and_not_before(make_pace):
    pace = make_pace(4)
    assert not pace.full(H, 1)
    pace.release(go(pace, "a", cap=1), H)
    turn = pace.take_turn(Item(f"http://{H}/b"), H, 0.0, 1)
    assert turn.full and not turn.go and pace.full(H, 1)
    assert not pace.full("other.org", 1)
