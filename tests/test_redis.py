"""The shared crawl, against real redis-server processes (one server, and a 3-node cluster).

Every Redis here is started by a fixture on a free 127.0.0.1 port, without persistence, and
stopped after. Without redis-server on the machine these tests fail with the install hint (CI
installs it): they are never skipped silently.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from redisserver import RedisCluster, RedisServer, require_binaries

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.demo import generate_site
from minicrawl.demo.site import LocalSite
from minicrawl.errors import RedisUnavailable
from minicrawl.options import Options
from minicrawl.redis.conn import SharedRedis, shard_tags
from minicrawl.redis.gate import RedisHostGate
from minicrawl.redis.todo import RedisToDo
from minicrawl.redis.visited import RedisBloomVisited, VisitedMismatch

ROOT = Path(__file__).resolve().parent.parent
# A test closes the ToDos, gates and connections it opens (tests/conftest.py's `closing`):
# a heartbeat left beating fails it (tests/conftest.py)
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")
# The per-host delay would make one-host test crawls slow: off, where politeness exists.
POLITE_OFF = {"delay": 0, "per_host": 16} if "delay" in {
    f.name for f in dataclasses.fields(Options)} else {}
POLITE_FLAGS = tuple(x for k, v in POLITE_OFF.items() for x in ("--" + k.replace("_", "-"),
                                                                   str(v)))


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[RedisCluster]:
    require_binaries()
    with RedisCluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def site() -> Iterator[tuple[LocalSite, dict[str, int]]]:
    """A 2,000-page generated site served from this process, and its reachable set."""
    with LocalSite() as server:
        generated = generate_site(server.origin, pages=2000)
        server.pages.update(generated.pages)
        yield server, generated.reachable()


def crawl_name() -> str:
    return "t" + uuid.uuid4().hex[:8]


def start_crawlers(url: str, name: str, seed: str, n: int = 3, threads: int = 4,
                   extra: tuple[str, ...] = ()) -> list[subprocess.Popen[str]]:
    # reclaim-after 3 s: short for a test, long enough that a live process starved of CPU on a
    # busy 2-core machine is not taken for dead (its items would be fetched twice).
    args = [sys.executable, "run.py", seed, "--redis", url, "--crawl", name, "--threads",
            str(threads), "--quiet", "--reclaim-after", "3", "--expected-urls", "100000",
            "--timeout", "5", *POLITE_FLAGS, *extra]
    return [subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, stdin=subprocess.DEVNULL) for _ in range(n)]


def wait_all(procs: list[subprocess.Popen[str]], timeout: float = 90) -> list[tuple[int, str]]:
    out = []
    for p in procs:
        try:
            _, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            raise
        out.append((p.returncode, err))
    return out


def fetched_paths(server: LocalSite) -> dict[str, int]:
    return dict(server.fetch_counts())


def wait_for_requests(server: LocalSite, n: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while len(server.requests) < n:
        assert time.monotonic() < deadline, f"only {len(server.requests)} requests so far"
        time.sleep(0.01)


# --------------------------------------------------------------------------- Visited


def test_shard_tags_spread_over_the_slot_ranges():
    from redis.crc import key_slot

    tags = shard_tags(16)
    assert len(set(tags)) == 16
    assert [key_slot(f"mc:x:visited:{{{t}}}".encode()) * 16 // 16384 for t in tags] == \
        list(range(16))


def test_visited_matches_the_local_sizing_and_answers_in_order(redis_server, closing):
    from minicrawl.visited import BloomFilter

    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    visited = RedisBloomVisited(shared, capacity=10_000, error_rate=0.001, shards=4)
    local = BloomFilter(capacity=10_000, error_rate=0.001)
    assert visited.hashes == local.hashes == 8
    assert local.bits <= visited.bits < local.bits + 4  # the same m, rounded up to 4 shards
    assert visited.add_many(["a", "b", "a", "c"]) == [True, True, False, True]
    assert visited.add_many(["a", "d"]) == [False, True]
    assert visited.add("e") and not visited.add("e")
    assert "a" in visited and "zz" not in visited
    assert len(visited) == 5
    assert 0 < visited.fill_ratio < 0.001 and visited.current_fp_rate < 1e-20
    urls = [f"https://example.org/{i}" for i in range(5000)]
    assert sum(visited.add_many(urls)) >= 4990  # a few false positives allowed
    assert not any(visited.add_many(urls))


def test_a_differently_sized_process_is_refused(redis_server, closing):
    name = crawl_name()
    RedisBloomVisited(closing(SharedRedis(redis_server.url, name)), capacity=10_000, shards=4)
    with pytest.raises(VisitedMismatch, match="--expected-urls"):
        RedisBloomVisited(closing(SharedRedis(redis_server.url, name)), capacity=20_000,
                          shards=4)


def test_a_crawl_an_older_minicrawl_keeps_is_refused_in_one_line(redis_server, closing):
    """Its bits are at MurmurHash3 positions ("default" family): joining it would take new
    pages for seen and fetch seen ones again. Whether this process creates its filter or
    attaches to the crawl's, one line says why not and what to do."""
    name = crawl_name()
    shared = closing(SharedRedis(redis_server.url, name))
    old = {"family": "default", "hashes": 8, "shards": 4, "shard_bits": 35_945,
           "capacity": 10_000, "error_rate": 0.001}
    shared.client.set(f"mc:{name}:visited:meta", json.dumps(old))
    for join in (lambda: RedisBloomVisited(shared, capacity=10_000, shards=4),
                 lambda: RedisBloomVisited.attach(shared)):
        with pytest.raises(VisitedMismatch) as err:
            join()
        message = str(err.value)
        assert "'default' hash family of an older minicrawl" in message and "--crawl" in message
        assert "\n" not in message


ADDER = """
import json, random, sys
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.visited import RedisBloomVisited
url, name, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
visited = RedisBloomVisited(SharedRedis(url, name), capacity=100_000, shards=8)
urls = [f"https://example.org/page/{i}" for i in range(8000)]
random.Random(seed).shuffle(urls)
print("ready", flush=True)
sys.stdin.readline()  # start together
new = []
for i in range(0, len(urls), 50):
    batch = urls[i:i + 50]
    new += [u for u, fresh in zip(batch, visited.add_many(batch)) if fresh]
print(json.dumps(new))
"""


@pytest.mark.parametrize("where", ["server", "cluster"])
def test_concurrent_processes_get_new_exactly_once(where, redis_server, redis_cluster, closing):
    url = redis_server.url if where == "server" else redis_cluster.url
    name = crawl_name()
    # (created first)
    RedisBloomVisited(closing(SharedRedis(url, name)), capacity=100_000, shards=8)
    procs = [subprocess.Popen([sys.executable, "-c", ADDER, url, name, str(seed)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for seed in range(4)]
    for p in procs:  # all four imported and connected before any starts
        assert p.stdout.readline().strip() == "ready"
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    answers = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    everything = [u for answer in answers for u in answer]
    assert len(everything) == len(set(everything)), "a URL was new for two processes"
    assert len(everything) >= 7_980  # 8,000 minus a few false positives
    assert all(answers), "the processes did not really overlap"


def test_a_replayed_write_gets_the_first_answer(redis_server, closing):
    """A worker killed between "seen" and "queued": whoever handles that page again (the
    process that reclaims the entry, or a later entry after a politeness wait put the page back)
    must be told "new" again for its links, or they would be lost — and must not queue them
    twice if the dead worker had queued them."""
    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    visited = RedisBloomVisited(shared, capacity=10_000, shards=4)
    todo = closing(RedisToDo(shared))
    shared.tokens.begin("1-0", "http://site/p")
    assert visited.add_many(["x", "y", "x"]) == [True, True, False]
    todo.put_many([Item("x", 1, "http://site/p"), Item("y", 1, "http://site/p")])
    shared.tokens.begin("7-0", "http://site/p")  # the same page, handled again
    assert visited.add_many(["x", "y", "x"]) == [True, True, False]
    todo.put_many([Item("x", 1, "http://site/p"), Item("y", 1, "http://site/p")])
    assert todo.unfinished == 2  # not queued twice
    todo.put(Item("http://site/p", 0))  # putting the page itself back: once per entry
    shared.tokens.begin("8-0", "http://site/p")
    todo.put(Item("http://site/p", 0))
    assert todo.unfinished == 4
    shared.tokens.begin("9-0", "http://site/q")  # another page: the truth
    assert visited.add_many(["x", "y"]) == [False, False]
    shared.tokens.end()


# --------------------------------------------------------------------------- ToDo


def test_todo_reclaims_the_items_of_a_dead_consumer(redis_server, closing):
    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    dead = closing(RedisToDo(shared, reclaim_after=0.3))
    dead.put_many([Item("u1", 0), Item("u2", 1, "u1")])
    assert len(dead) == 2 and dead.unfinished == 2
    taken = dead.take()
    assert taken == Item("u1", 0, None)
    dead._inflight.clear()  # as if the process were killed: no more heartbeats
    alive = closing(RedisToDo(shared, reclaim_after=0.3))
    got = [alive.take(), alive.take()]
    assert sorted(i.url for i in got) == ["u1", "u2"]  # u1 reclaimed after 0.3 s idle
    alive.done(got[0])
    alive.done(got[1])
    assert alive.take() is None and alive.unfinished == 0
    dead.done(taken)  # the slow original finishing late is not counted twice
    assert alive.unfinished == 0


def test_an_item_every_taker_died_with_is_given_up_counted_and_kept(redis_server, caplog,
                                                                   closing):
    """A page that kills every process fetching it (a parser crash, the memory limit) is not
    reclaimed for ever: after MAX_TAKERS takers died holding it, the next poll gives it up —
    counted as todo_abandoned, kept in Redis, told in one line — and the crawl can end."""
    from minicrawl.redis.todo import MAX_TAKERS

    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    poison = Item("http://site.test/poison", 1, "http://site.test/")
    todos = [closing(RedisToDo(shared, reclaim_after=0.2)) for _ in range(MAX_TAKERS + 1)]
    todos[0].put(poison)
    for todo in todos[:MAX_TAKERS]:
        assert todo.take() == poison  # the first takes it, each next one reclaims it
        todo._inflight.clear()  # killed while fetching it: no more heartbeats
    with caplog.at_level("WARNING", logger="minicrawl"):
        assert todos[-1].take() is None  # given up, and nothing else is left: over
    assert todos[-1].abandoned() == [poison]
    counts = shared.client.hgetall(shared.key("stats"))
    assert counts["todo_abandoned"] == "1"
    assert counts["todo_reclaimed"] == str(MAX_TAKERS - 1)
    told = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
    assert told == [f"gave up {poison.url}: {MAX_TAKERS} processes died fetching it "
                    f"(kept in Redis as {shared.key('todo:abandoned')})"]


def test_todo_heartbeat_keeps_a_slow_item(redis_server, closing):
    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    slow = closing(RedisToDo(shared, reclaim_after=0.4))
    slow.put(Item("slow", 0))
    assert (item := slow.take()).url == "slow"
    other = closing(RedisToDo(shared, reclaim_after=0.4))
    result: list = []
    thread = threading.Thread(target=lambda: result.append(other.take()))
    thread.start()
    time.sleep(1.5)  # well past reclaim_after: only the heartbeat keeps it here
    assert result == [] and thread.is_alive()
    slow.done(item)
    thread.join(5)
    assert result == [None]


def heartbeats() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.endswith("heartbeat"))


def test_close_ends_the_heartbeats_at_once_and_what_was_held_goes_to_others(redis_server):
    """A ToDo and a host gate closed with an item taken and a slot leased: their heartbeat
    threads have ended when close returns, and what they held goes to another process as a
    killed one's does — the item reclaimed, the lease lapsed."""
    before = heartbeats()
    shared = SharedRedis(redis_server.url, crawl_name())
    todo, gate = RedisToDo(shared, reclaim_after=0.3), RedisHostGate(shared, lease=1.0)
    todo.put(Item("u", 0))
    taken = todo.take()  # (not in the assert: pytest ran a := there twice, as it uses taken)
    assert taken == Item("u", 0) and gate.take(taken, "h") == 0.0
    assert heartbeats() == sorted([*before, "gate-heartbeat", "todo-heartbeat"])
    todo.close()
    gate.close()
    assert heartbeats() == before
    assert todo.stopped and todo.take() is None
    other = RedisToDo(shared, reclaim_after=0.3)
    assert other.take() == taken  # reclaimed after 0.3 s idle: no beat kept it
    other.done(taken)
    assert other.take() is None
    time.sleep(1.2)
    assert gate.in_flight("h") == 0  # no beat renewed it
    other.close()
    shared.close()


def test_delayed_items_wait_for_their_time(redis_server, closing):
    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    todo = closing(RedisToDo(shared))
    todo.put(Item("later", 0, not_before=time.monotonic() + 0.3))
    start = time.monotonic()
    assert (later := todo.take()).url == "later"
    assert time.monotonic() - start >= 0.25
    todo.done(later)
    assert todo.take() is None


def test_a_retrys_wait_is_stored_as_redis_time_not_as_this_process_clock(redis_server,
                                                                          closing):
    """``not_before`` is this process's ``time.monotonic()``, which another process (another
    machine) does not share: it is put as a delay, due on Redis's clock, and the payload holds
    the item's four fields and a nonce, never the monotonic number. Another process takes it
    with ``not_before`` 0.0, after the wait."""
    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    todo = closing(RedisToDo(shared))
    not_before = time.monotonic() + 0.5
    assert todo.put_many([Item("http://a.test/r", 1, "http://a.test/", attempt=2,
                               not_before=not_before)]) == 1
    client = shared.client
    seconds, micros = client.time()
    [(payload, due)] = client.zrange(shared.key("todo:delayed"), 0, -1, withscores=True)
    fields = json.loads(payload)
    assert fields[:4] == ["http://a.test/r", 1, "http://a.test/", 2] and len(fields) == 5
    assert isinstance(fields[4], str)  # the nonce: no number beyond the four fields
    assert 400 <= due - (seconds * 1000 + micros // 1000) <= 500  # Redis's ms, 0.5 s ahead
    other = closing(RedisToDo(closing(SharedRedis(redis_server.url, shared.name))))
    taken = other.take()
    assert taken == Item("http://a.test/r", 1, "http://a.test/", attempt=2)
    assert time.monotonic() >= not_before - 0.01  # (Redis's ms: rounded)
    other.done(taken)
    assert todo.take() is None


def test_host_gate_books_slots_in_turn_across_clients(redis_server, closing):
    name = crawl_name()
    gates = [closing(RedisHostGate(closing(SharedRedis(redis_server.url, name))))
             for _ in range(3)]
    assert gates[0].take(Item("u0"), "example.org", 0.1) == 0.0
    first = gates[1].take(Item("u1"), "example.org", 0.1)  # busy: booked the next slot
    second = gates[2].take(Item("u2"), "example.org", 0.1)  # booked one gap after that
    assert 0.05 < first <= 0.1 and 0.09 <= second - first <= 0.11
    gates[0].release(Item("u0"), "example.org", 0.1, 0.0)
    # A URL without a booking may not jump the line while others are booked, even once free.
    time.sleep(0.25)
    assert gates[0].take(Item("late"), "example.org", 0.1) > 0
    assert gates[1].take(Item("u1"), "example.org", 0.1) == 0.0  # its slot: go
    assert gates[2].take(Item("u2"), "example.org", 0.1) > 0  # the gap after u1 first
    assert gates[1].in_flight("example.org") == 1


def test_a_refused_url_gives_up_its_booking_at_once(redis_server, closing):
    """A URL booked a turn while its robots.txt was pending, then robots.txt refused it: its
    turn goes at once, not after the grace time (3 s), so the host's other URLs do not wait."""
    name = crawl_name()
    gate, other = (closing(RedisHostGate(closing(SharedRedis(redis_server.url, name))))
                   for _ in range(2))
    assert gate.take(Item("first"), "h", 0.05) == 0.0
    assert other.book(Item("pending"), "h", 0.05) > 0  # waits for robots.txt, its turn kept
    gate.release(Item("first"), "h", 0.05, 0.0)
    time.sleep(0.15)  # the host is free and past its gap
    other.forget(Item("pending"), "h")  # robots.txt disallows it: it never comes back
    assert gate.take(Item("next"), "h", 0.05) == 0.0  # no one booked ahead of it any more
    gate.release(Item("next"), "h", 0.0, 0.0)
    # Refused for the host's page cap: the booking goes in the same step.
    assert other.book(Item("capped"), "h", 0.0) > 0
    assert gate.take_turn(Item("capped"), "h", 0.0, 0).full
    assert other._shared.client.zcard(gate.key("book", "h")) == 0


def test_a_url_robots_txt_refuses_gives_up_the_turn_it_booked(redis_server, closing):
    """RobotsGate tells the shared gate when robots.txt refuses a URL that booked a turn."""
    from minicrawl.core.urls import host_of
    from minicrawl.demo.site import Resource
    from minicrawl.http.fetch import Fetcher
    from minicrawl.stats import Stats
    from minicrawl.visit.robots import RobotsGate, Verdict

    robots = Resource(b"User-agent: *\nDisallow: /private\n", 200, {"Content-Type": "text/plain"})
    with LocalSite({"/robots.txt": robots}) as site:
        gate = closing(RedisHostGate(closing(SharedRedis(redis_server.url, crawl_name()))))
        opts = Options(delay=0.0)
        politeness, fetcher = RobotsGate(opts, Stats(), gate), Fetcher(opts)
        url = site.url("/private/x")
        host = host_of(url)  # what politeness keys a host by: its name and port
        assert gate.book(Item(url), host, 0.0) > 0  # as when it waited for robots.txt
        try:
            assert politeness.admit(Item(url), fetcher).verdict is Verdict.DENY
        finally:
            fetcher.close()
        assert gate._shared.client.zcard(gate.key("book", host)) == 0


def test_host_gate_slots_caps_and_leases_of_a_dead_process(redis_server, closing):
    name = crawl_name()
    live, dead = (closing(RedisHostGate(closing(SharedRedis(redis_server.url, name)),
                                        per_host=2, lease=1.0)) for _ in range(2))
    assert dead.take_turn(Item("a"), "h", 0.0, 3).go and dead.take_turn(Item("b"), "h", 0.0, 3).go
    assert live.take_turn(Item("c"), "h", 0.0, 3).wait > 0  # two in flight, by another process
    dead._held.clear()  # as if killed: its leases are no longer renewed
    time.sleep(1.2)
    assert live.in_flight("h") == 0
    assert live.take_turn(Item("c"), "h", 0.0, 3).go  # the booked URL, once the dead slots lapsed
    live.release(Item("c"), "h", 0.0, 0.0)
    assert live.take_turn(Item("d"), "h", 0.0, 3).full and live.full("h", 3)  # 3 pages: the cap


def test_page_counts_survive_a_retried_call(redis_server, closing):
    """A script call whose answer was lost (a dropped connection) is sent again by the retry
    loop: the page caps must count it once, or the crawl would stop short of its cap."""
    from minicrawl.redis.caps import RedisPageCap
    from minicrawl.redis.gate import TAKE_SCRIPT
    from minicrawl.seams import Grant

    shared = closing(SharedRedis(redis_server.url, crawl_name()))
    cap = RedisPageCap(shared)
    assert [cap.take(3, token="a"), cap.take(3, token="a"), cap.take(3)] == [Grant.GO] * 3
    assert [cap.take(3), cap.take(3), cap.take(3, token="a")] == [Grant.LAST, Grant.NONE, Grant.GO]
    gate = closing(RedisHostGate(shared, per_host=4))
    keys = [gate.key(kind, "h") for kind in ("host", "lease", "book", "pages")]
    args = [0, 4, 30_000, "http://h/x", "lease-1", 2, 3000, "page"]
    assert [shared.eval("t", TAKE_SCRIPT, keys, args) for _ in range(2)] == [0, 0]
    assert gate.take_turn(Item("http://h/y"), "h", 0.0, 2).go  # the second page, not the third
    assert gate.take_turn(Item("http://h/z"), "h", 0.0, 2).full


# --------------------------------------------------------------------------- whole crawls


def check_union(server: LocalSite, reachable: dict[str, int], allowed_twice: int = 0) -> None:
    counts = fetched_paths(server)
    missed = set(reachable) - set(counts)
    assert not missed, f"{len(missed)} reachable pages never fetched, e.g. {sorted(missed)[:5]}"
    assert set(counts) == set(reachable)
    twice = {p: c for p, c in counts.items() if c > 1}
    assert sum(c - 1 for c in twice.values()) <= allowed_twice, twice


@pytest.mark.timeout(120)
def test_three_processes_crawl_the_site_once_and_status_reports_it(redis_server, site):
    server, reachable = site
    server.requests.clear()
    name = crawl_name()
    results = wait_all(start_crawlers(redis_server.url, name, server.url("/")))
    assert all(code == 0 for code, _ in results), results
    check_union(server, reachable)
    status = subprocess.run([sys.executable, "run.py", "--redis", redis_server.url, "--crawl",
                             name, "--status"], cwd=ROOT, capture_output=True, text=True,
                            timeout=30)
    assert status.returncode == 0, status.stderr
    lines = dict(line.split(None, 1) for line in status.stdout.splitlines() if line.strip())
    assert lines["state"] == "finished" and lines["processes"] == "3"
    assert lines["seeds"] == "1"  # queued once: the others' seeding was a replay
    assert int(lines["pages"]) == len(reachable)
    assert lines["todo_left"] == "0" and lines["in_flight"] == "0"
    assert float(lines["visited_fill_ratio"]) > 0


def kill_one_mid_crawl(url: str, server: LocalSite, reachable: dict[str, int]) -> None:
    server.requests.clear()
    name = crawl_name()
    procs = start_crawlers(url, name, server.url("/"))
    wait_for_requests(server, len(reachable) // 4)
    victim = procs[1]
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait()
    results = wait_all([procs[0], procs[2]])
    assert all(code == 0 for code, _ in results), results
    # A killed worker's page is fetched again by whoever reclaims it; with a redirect that is
    # two requests. 4 threads were in flight at most.
    check_union(server, reachable, allowed_twice=8)
    with contextlib.closing(SharedRedis(url, name)) as shared:
        reclaimed = int(shared.client.hget(shared.key("stats"), "todo_reclaimed") or 0)
    assert reclaimed <= 4 * 2, reclaimed  # the victim's in-flight items (and their waits)


@pytest.mark.timeout(120)
def test_kill_9_of_one_process_loses_nothing(redis_server, site):
    kill_one_mid_crawl(redis_server.url, *site)


@pytest.mark.timeout(120)
def test_kill_9_on_a_three_node_cluster_loses_nothing(redis_cluster, site):
    kill_one_mid_crawl(redis_cluster.url, *site)
    # and the Visited shards really are spread over the three nodes
    for node in redis_cluster.nodes:
        client = node.client()
        assert any(":visited:{" in k for k in client.keys("mc:*")), node.port
        client.close()


def test_dropped_connections_are_retried_without_loss_or_duplicates(redis_server):
    """The server drops every client connection many times during the crawl: the retries and
    the replay tokens must keep "exactly once"."""
    killer_stop = threading.Event()

    def drop_connections() -> None:
        admin = redis_server.client()
        while not killer_stop.wait(0.05):
            admin.client_kill_filter(_type="normal", skipme=True)
        admin.close()

    with LocalSite() as server:
        generated = generate_site(server.origin, pages=300)
        server.pages.update(generated.pages)
        killer = threading.Thread(target=drop_connections)
        killer.start()
        try:
            Crawler([server.url("/")], threads=4, redis=redis_server.url, crawl=crawl_name(),
                    expected_urls=10_000, reclaim_after=1.0, **POLITE_OFF).run()
        finally:
            killer_stop.set()
            killer.join()
        check_union(server, generated.reachable())


@pytest.mark.timeout(60)
def test_redis_lost_mid_crawl_is_a_clear_error(site):
    server, reachable = site
    with RedisServer() as lost:
        procs = start_crawlers(lost.url, crawl_name(), server.url("/"), n=1,
                               extra=("--redis-retry", "1"))
        server.requests.clear()
        wait_for_requests(server, 100)
        lost.stop()
        [(code, err)] = wait_all(procs, timeout=30)
    assert code == 3, err
    assert "unreachable" in err and "redis://127.0.0.1" in err


def test_unreachable_redis_at_start_is_a_clear_error(site):
    from redisserver import free_port

    server, _ = site
    done = subprocess.run([sys.executable, "run.py", server.url("/"), "--redis",
                           f"redis://127.0.0.1:{free_port()}/0", "--redis-retry", "0.5",
                           *POLITE_FLAGS, "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 3
    assert "unreachable" in done.stderr and "connecting" in done.stderr


@pytest.mark.timeout(120)
def test_kill_9_with_politeness_waits_loses_nothing(redis_server):
    """With a per-host delay most takes end in a politeness wait that puts the URL back with a
    not-before time: the delayed path and the replays must hold across a kill too."""
    if not POLITE_OFF:
        pytest.fail("this test needs the politeness options (--delay, --per-host)")
    with LocalSite() as server:
        generated = generate_site(server.origin, pages=400)
        server.pages.update(generated.pages)
        reachable = generated.reachable()
        procs = start_crawlers(redis_server.url, crawl_name(), server.url("/"),
                               extra=("--delay", "0.005", "--per-host", "2"))
        wait_for_requests(server, len(reachable) // 3)
        os.kill(procs[0].pid, signal.SIGKILL)
        procs[0].wait()
        results = wait_all(procs[1:])
        assert all(code == 0 for code, _ in results), results
        check_union(server, reachable, allowed_twice=8)


@pytest.mark.timeout(120)
def test_per_host_delay_holds_across_processes(redis_server):
    """Two processes crawling one host with --delay 0.1: the host sees requests 0.1 s apart,
    not two streams each 0.1 s apart (the shared gate in Redis, asked by RobotsGate)."""
    if not POLITE_OFF:
        pytest.fail("this test needs the politeness options (--delay, --per-host)")
    with LocalSite() as server:
        generated = generate_site(server.origin, pages=40, redirects=False)
        server.pages.update(generated.pages)
        procs = start_crawlers(redis_server.url, crawl_name(), server.url("/"), n=2,
                               extra=("--delay", "0.1", "--per-host", "1"))
        results = wait_all(procs)
        assert all(code == 0 for code, _ in results), results
        check_union(server, generated.reachable())
        times = sorted(r.time for r in server.requests if r.path != "/robots.txt")
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        # Redis's clock books the slots; arrival at the server jitters by a few ms.
        assert min(gaps) >= 0.08, sorted(gaps)[:5]


@pytest.mark.parametrize("outage", ["full", "read-only"])
def test_a_full_or_read_only_redis_is_waited_for_not_fatal(outage, caplog):
    """Redis answering OOM (maxmemory reached) or READONLY (a replica, mid-failover) cannot take
    writes for now: the write is retried until it can (redis-py raises these as
    ResponseErrors, like a script's own error, which is not retried)."""
    import redis

    with RedisServer() as server, contextlib.ExitStack() as opened:
        # (closed before the server stops: the last opened first, the heartbeat before its
        # connection)
        admin = opened.enter_context(redis.Redis.from_url(server.url))
        shared = opened.enter_context(contextlib.closing(SharedRedis(server.url, crawl_name(),
                                                                     retry_for=20)))
        todo = opened.enter_context(contextlib.closing(RedisToDo(shared)))
        if outage == "full":
            admin.config_set("maxmemory", 1)  # noeviction: every write is refused
        else:
            admin.replicaof("127.0.0.1", 1)  # a replica of a master that never answers
        queued: list[int] = []
        with caplog.at_level("WARNING", logger="minicrawl"):
            writer = threading.Thread(target=lambda: queued.append(
                todo.put_many([Item("http://a.test/")])), daemon=True)
            writer.start()
            writer.join(0.6)
            assert writer.is_alive() and queued == []  # waiting, not failed
            if outage == "full":
                admin.config_set("maxmemory", 0)
            else:
                admin.replicaof("NO", "ONE")
            writer.join(10)
        assert queued == [1] and shared.failure is None
        assert (item := todo.take()) == Item("http://a.test/")
        todo.done(item)
        told = [r.getMessage() for r in caplog.records]
        assert any("unreachable" in m for m in told) and any("reachable again" in m for m in told)


def test_retrying_an_outage_leaves_the_global_random_state_alone():
    """The retries' jitter is SharedRedis's own generator, not the global ``random``: a gate's or
    ToDo's heartbeat retrying a server gone at a test's end moved it under the next tests, and
    Hypothesis took that for "the `random` module inside strategies" (tests/test_bloom.py's
    warning in CI); a program seeding ``random`` must not have a crawl reorder it either."""
    import random

    with RedisServer() as server:
        shared = SharedRedis(server.url, crawl_name(), retry_for=0.6)
        server.stop()
        state = random.getstate()
        with pytest.raises(RedisUnavailable):
            shared.call("pinging", shared.client.ping)  # retried with jitter for 0.6 s
        shared.close()
    assert random.getstate() == state


def test_a_redirect_chain_carried_on_by_another_process_is_one_record(redis_server, closing):
    """Process A fetches /old (a 301 to /new) and queues /new; process B takes /new. The chain
    rides in Redis with its target, so B records one page — /old, finally /new — as a single
    process would, and A's start of the chain is not lost."""
    from minicrawl.demo.site import Resource

    with LocalSite({"/old": Resource(status=301, headers={"Location": "/new"}),
                    "/new": Resource(b"<p>new</p>")}) as server:
        name, recorded = crawl_name(), []
        a, b = (Crawler([server.url("/old")], redis=redis_server.url, crawl=name,
                        ignore_robots=True, retries=0, delay=0, timeout=2) for _ in "ab")
        for process in (a, b):  # never run (which leaves it): left after the test
            closing(process.shared)
        a.todo.put(Item(server.url("/old")))
        for process in (a, b):  # A takes /old, then B takes the hop A queued
            item = process.todo.take()
            trip = process.trip(1)
            if (page := trip.visit(item)) is not None:  # the page for the observers
                recorded.append(page)
            process.todo.done(item)
            trip.hooks.close()
        assert [(p.url, p.final_url, p.status) for p in recorded] == [
            (server.url("/old"), server.url("/new"), 200)]
        # its redirects and every URL it requested (their links lead to it) came along
        assert recorded[0].redirects == [(server.url("/old"), 301)]  # type: ignore[attr-defined]
        assert recorded[0].requested == [server.url("/old"), server.url("/new")]  # type: ignore[attr-defined]
        assert server.fetch_counts() == {"/old": 1, "/new": 1}


def test_a_chain_carried_by_an_older_process_has_its_redirects_without_a_status(redis_server,
                                                                                closing):
    """A chain kept in Redis by a process of the version before (no redirects in its value):
    its URLs are its redirects, their statuses unknown (null in the record)."""
    crawler = Crawler(["http://a.test/"], redis=redis_server.url, crawl=crawl_name(),
                      ignore_robots=True)
    shared = closing(crawler.shared)  # never run (which leaves it): left after the test
    assert shared is not None
    old = json.dumps([["http://a.test/r1", 1, "http://a.test/", 0], "2026-01-01T00:00:00.000Z",
                      ["http://a.test/r1", "http://a.test/r2"], 12.5])
    shared.redis.client.hset(shared.redis.key("chains"), "http://a.test/t", old)
    chain = crawler.chains.waiting_at("http://a.test/t")
    assert chain is not None and chain.urls == ["http://a.test/r1", "http://a.test/r2"]
    assert chain.redirects == [("http://a.test/r1", None), ("http://a.test/r2", None)]
    crawler.chains.carry("http://a.test/t2", chain)  # written again: now with them
    again = crawler.chains.waiting_at("http://a.test/t2")
    assert again is not None and again.redirects == chain.redirects


def test_three_processes_record_each_redirect_chain_once_whoever_takes_its_target(
        redis_server, tmp_path):
    """60 pages redirect (301) to 60 others; three processes share the crawl, each with its own
    --out. A target is taken by whichever process polls first, yet the merged files hold each
    chain once, under the URL that started it, ending at its target — no target recorded as a
    page of its own, no chain lost."""
    from minicrawl.demo.site import Handler, Resource, Slow

    pages: dict[str, Handler] = {
        "/": Resource("".join(f'<a href="/r{n}">r</a>' for n in range(60)).encode())}
    for n in range(60):  # slow enough that one process cannot finish before the others start
        pages[f"/r{n}"] = Slow(Resource(status=301, headers={"Location": f"/t{n}"}), 0.05)
        pages[f"/t{n}"] = Resource(b"<p>target</p>")
    with LocalSite(pages) as server:
        name, outs = crawl_name(), [tmp_path / f"out{n}.jsonl" for n in range(3)]
        procs = [subprocess.Popen(
            [sys.executable, "run.py", server.url("/"), "--redis", redis_server.url, "--crawl",
             name, "--threads", "4", "--quiet", "--out", str(out), "--timeout", "5",
             *POLITE_FLAGS], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, stdin=subprocess.DEVNULL) for out in outs]
        results = wait_all(procs)
        assert [code for code, _ in results] == [0, 0, 0], results
        records = [json.loads(line) for out in outs for line in out.read_text().splitlines()]
        chains = sorted((r["url"], r["final_url"], r["status"]) for r in records
                        if r["url"] != server.url("/"))
        assert chains == sorted((server.url(f"/r{n}"), server.url(f"/t{n}"), 200)
                                for n in range(60))
        assert set(fetched_paths(server).values()) == {1}  # every hop fetched once
        assert sum(1 for out in outs if any(
            "/t" in json.loads(line)["final_url"] for line in out.read_text().splitlines())) > 1
