"""A shared crawl (``--redis``) in a process that goes on — the library's ``Crawler.run()`` — is
left when its run ends, however it ends: ToDo's and the host gate's heartbeat threads have
ended and its connections to Redis are closed, as seen from the server (``CLIENT LIST``).
Against the real redis-server of tests/conftest.py's ``redis_server``, and real local sites.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading
import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from rich.console import Console

from minicrawl import Crawler
from minicrawl.core.interfaces import Item
from minicrawl.demo.site import LocalSite, Resource, chain
from minicrawl.errors import RedisUnavailable
from minicrawl.options import Options
from minicrawl.redis.conn import SharedRedis
from minicrawl.redis.crawl import open_shared_crawl
from minicrawl.redis.todo import STARTING_GRACE_MS, RedisToDo
from minicrawl.watch.view import LiveView

# A heartbeat left beating fails the test (tests/conftest.py), besides the checks here
pytestmark = pytest.mark.usefixtures("no_heartbeat_left_running")

FAST = {"delay": 0, "per_host": 8, "threads": 2, "timeout": 5, "expected_urls": 10_000}


def crawl_name() -> str:
    return "close" + uuid.uuid4().hex[:8]


def heartbeats() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.endswith("heartbeat"))


@pytest.fixture
def admin(redis_server) -> Iterator[redis.Redis]:
    """A connection of the test's own, to watch the crawler's from the server's side: one, even
    when asked from worker threads at once (``on_page``), as :func:`connections` leaves out."""
    client = redis_server.client(single_connection_client=True)
    yield client
    client.close()


def connections(admin: redis.Redis) -> set[int]:
    """The ids of the server's client connections, but the admin's own."""
    own = admin.client_id()
    return {int(c["id"]) for c in admin.client_list()} - {own}


def settled(admin: redis.Redis, before: set[int], wait: float = 2.0) -> set[int]:
    """The connections once they are ``before`` again, or after ``wait`` seconds: the server
    drops a connection closed by the client when it reads its end, maybe after our next
    command (one turn of its event loop)."""
    deadline = time.monotonic() + wait
    while (now := connections(admin)) != before and time.monotonic() < deadline:
        time.sleep(0.01)
    return now


def small_site(server: LocalSite) -> None:
    server.pages["/"] = Resource(b'<a href="/a">a</a> <a href="/b">b</a>')
    server.pages["/a"] = Resource(b'<a href="/b">b</a>')
    server.pages["/b"] = Resource(b"<p>no links</p>")


def test_a_crawl_run_to_its_end_leaves_no_heartbeat_and_no_connection(redis_server, admin,
                                                                      server):
    """Its connections (the one it opened, the workers' from the pool) were there while it
    crawled and are gone when run() returns; nothing it took is left in flight; running it
    again is refused at once, without reconnecting."""
    small_site(server)
    before, beating = connections(admin), heartbeats()
    during: set[int] = set()
    name = crawl_name()
    crawler = Crawler([server.url("/")], redis=redis_server.url, crawl=name,
                      on_page=lambda page: during.update(connections(admin)), **FAST)
    opened = connections(admin) - before
    assert opened  # (so that the checks below could see a connection left open)
    assert heartbeats() == sorted([*beating, "gate-heartbeat", "todo-heartbeat"])
    stats = crawler.run()
    assert stats["pages"] == 3
    assert heartbeats() == beating
    assert settled(admin, before) == before, f"left open: {(opened | during) - before}"
    assert admin.get(f"mc:{{{name}}}:todo:unfinished") == "0"  # nothing left for a reclaim
    for again in (crawler.run, lambda: next(crawler.pages())):
        with pytest.raises(RuntimeError, match="make a new Crawler to join the crawl again"):
            again()
    assert settled(admin, before) == before and heartbeats() == beating


def test_the_live_view_s_last_frame_opens_no_connection_after_the_run(redis_server, admin,
                                                                    server):
    """The command line's live view draws its last frame once run() has returned: from what the
    crawl read as it ended, before it left the shared crawl, not by asking Redis again (which
    would open a connection the run had closed)."""
    small_site(server)
    before = connections(admin)
    crawler = Crawler([server.url("/")], redis=redis_server.url, crawl=crawl_name(), **FAST)
    out = io.StringIO()
    with LiveView(crawler.watched, console=Console(file=out, force_terminal=True, width=120)):
        crawler.run()
    assert settled(admin, before) == before, "the last frame reopened a connection"
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).rsplit("pages done", 1)[1]
    assert last.split()[0] == "3" and "0 waiting, 0 in flight" in last


def test_a_crawl_stopped_at_max_pages_leaves_no_heartbeat_and_no_connection(redis_server,
                                                                            admin, server):
    """Stopped by its page cap, the ToDo items it did not take stay in Redis for the crawl's
    other processes; this one's heartbeats and connections are gone."""
    server.pages.update(chain(200))
    before, beating = connections(admin), heartbeats()
    name = crawl_name()
    stats = Crawler([server.url("/")], redis=redis_server.url, crawl=name, max_pages=5,
                    **FAST).run()
    assert stats["pages"] == 5
    assert heartbeats() == beating
    assert settled(admin, before) == before
    assert int(admin.get(f"mc:{{{name}}}:todo:unfinished")) >= 1  # the next link, waiting


def test_a_crawl_that_fails_leaves_no_heartbeat_and_no_connection(redis_server, admin, server):
    """The crawl's keys deleted under it mid-crawl (as by a restart without persistence): run()
    raises RedisUnavailable, and has left the crawl all the same."""
    server.pages.update(chain(200))
    before, beating = connections(admin), heartbeats()
    name = crawl_name()

    def delete_the_crawl(page: object) -> None:
        admin.delete(f"mc:{{{name}}}:todo:epoch")  # the next take finds the crawl gone

    crawler = Crawler([server.url("/")], redis=redis_server.url, crawl=name,
                      on_page=delete_the_crawl, **FAST)
    with pytest.raises(RedisUnavailable, match="disappeared"):
        crawler.run()
    assert heartbeats() == beating
    assert settled(admin, before) == before


def test_a_crawler_refused_as_it_joins_leaves_no_heartbeat_and_no_connection(redis_server,
                                                                            admin, server):
    """Refused once ToDo and the host gate were opened, their heartbeats started: the crawl's
    stats key is another program's (a string, not the stats hash), so joining the stats fails.
    Nothing of the Crawler that never was is left beating or connected."""
    name = crawl_name()
    admin.set(f"mc:{{{name}}}:stats", "not a hash")
    before, beating = connections(admin), heartbeats()
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        Crawler([server.url("/")], redis=redis_server.url, crawl=name, **FAST)
    assert heartbeats() == beating
    assert settled(admin, before) == before


def test_a_crawler_closed_without_running_leaves_no_heartbeat_and_no_connection(
        redis_server, admin, server):
    """A library Crawler with redis, made and never run: close() ends its heartbeats and
    closes its connection (seen from the server), and it no longer counts as putting its seeds;
    closing it again does nothing, and run() after it is refused without reconnecting. The end
    of a ``with Crawler(...)`` block does the same."""
    name = crawl_name()
    before, beating = connections(admin), heartbeats()
    crawler = Crawler([server.url("/")], redis=redis_server.url, crawl=name, **FAST)
    assert connections(admin) - before  # (so that the checks below could see one left open)
    assert heartbeats() == sorted([*beating, "gate-heartbeat", "todo-heartbeat"])
    crawler.close()
    assert heartbeats() == beating
    assert settled(admin, before) == before
    assert admin.zcard(f"mc:{{{name}}}:todo:starting") == 0
    crawler.close()
    with pytest.raises(RuntimeError, match="this Crawler is closed"):
        crawler.run()
    assert heartbeats() == beating and settled(admin, before) == before
    with Crawler([server.url("/")], redis=redis_server.url, crawl=name, **FAST):
        assert heartbeats() == sorted([*beating, "gate-heartbeat", "todo-heartbeat"])
    assert heartbeats() == beating and settled(admin, before) == before


def test_closing_the_shared_parts_leaves_what_was_held_to_another_process(redis_server, admin):
    """SharedCrawl.close() with an item taken and not done (a Ctrl-C that did not wait for a
    page in flight): the heartbeats end, the connection closes, and another process reclaims
    the item once it has been idle ``reclaim_after`` — as a killed process's. Closing again
    does nothing."""
    before, beating = connections(admin), heartbeats()
    options = Options(redis=redis_server.url, crawl=crawl_name(), reclaim_after=0.3,
                      expected_urls=10_000)
    shared = open_shared_crawl(options, [])
    shared.todo.put(Item("http://a.test/"))
    taken = shared.todo.take()
    assert taken == Item("http://a.test/")
    shared.close()
    assert heartbeats() == beating
    assert settled(admin, before) == before
    shared.close()
    assert settled(admin, before) == before
    other = open_shared_crawl(options, [])
    try:
        assert other.todo.take() == taken  # no heartbeat kept it: reclaimed after 0.3 s
        other.todo.done(taken)
        assert other.todo.take() is None
    finally:
        other.close()
    assert heartbeats() == beating


def test_a_process_that_leaves_before_its_first_take_does_not_hold_the_crawl_open(
        redis_server, admin):
    """Each process of a shared crawl counts as putting its seeds from its joining to its first
    take: meanwhile the others cannot see the crawl end. One that closes its ToDo before that
    (refused as it joins) withdraws its own registration, not another's: a process still
    seeding holds the crawl open, and once it has left too the crawl ends for the others at
    once, not ``STARTING_GRACE_MS`` (30 s) later."""
    name = crawl_name()
    starting = f"mc:{{{name}}}:todo:starting"
    with contextlib.ExitStack() as stack:
        def process() -> RedisToDo:
            """A process joining the crawl: its own connection and ToDo (closed after it)."""
            shared = stack.enter_context(contextlib.closing(SharedRedis(redis_server.url, name)))
            return stack.enter_context(contextlib.closing(RedisToDo(shared)))

        crawling = process()
        crawling.put(Item("http://a.test/"))
        first = crawling.take()
        assert first == Item("http://a.test/")
        crawling.done(first)
        refused, seeding = process(), process()  # each registered as it joined
        assert admin.zcard(starting) == 2
        refused.close()
        assert admin.zrange(starting, 0, -1) == [seeding.consumer]  # only its own withdrawn
        got: list[Item | None] = []

        def take() -> None:
            """A worker of the crawling process: takes an item and finishes it (by thread)."""
            got.append(item := crawling.take())
            if item is not None:
                crawling.done(item)

        waiting = threading.Thread(target=take)
        waiting.start()
        time.sleep(0.5)
        assert got == [], "the crawl ended while a process was still putting its seeds"
        seeding.put(Item("http://b.test/"))
        waiting.join(5)
        assert got == [Item("http://b.test/")]
        seeding.close()  # its seeds in, it leaves without taking any
        assert admin.zcard(starting) == 0
        start = time.monotonic()
        ending = threading.Thread(target=take)
        ending.start()
        ending.join(5)
        try:
            assert not ending.is_alive(), \
                f"the crawl did not end at once (the grace is {STARTING_GRACE_MS} ms)"
            assert got[-1] is None and time.monotonic() - start < 2
        finally:
            crawling.stop()  # (a take still waiting returns)
            ending.join()
