"""Shared fixtures: real HTTP servers on 127.0.0.1, started per test on free ports."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from redisserver import RedisServer, require_binaries

from minicrawl.demo import Site, generate_site
from minicrawl.demo.site import LocalSite, Resource


@pytest.fixture
def server() -> Iterator[LocalSite]:
    """An empty local site; tests fill ``server.pages``."""
    with LocalSite() as site:
        yield site


@pytest.fixture
def make_site() -> Iterator:
    """``make_site(**generate_site_kwargs)`` → (server, site) for a generated site.

    Served as ``http://localhost:PORT`` so that links spelled ``HTTP://LOCALHOST:PORT/...``
    exercise host-case canonicalization; the socket is bound to 127.0.0.1 only.
    """
    servers: list[LocalSite] = []

    def make(**kwargs: object) -> tuple[LocalSite, Site]:
        server = LocalSite(host="localhost").start()
        servers.append(server)
        site = generate_site(server.origin, **kwargs)  # type: ignore[arg-type]
        server.pages.update(site.pages)
        return server, site

    yield make
    for s in servers:
        s.stop()


@pytest.fixture
def loopback_hosts() -> Iterator:
    """``loopback_hosts(n, pages)`` → ``n`` started servers on 127.0.0.2, .3, … (different hosts
    to the crawler), each a root ``/`` linking to ``/1`` … ``/pages``; stopped after the test."""
    servers: list[LocalSite] = []

    def make(n: int, pages: int) -> list[LocalSite]:
        links = "".join(f'<a href="/{k}">{k}</a>' for k in range(1, pages + 1)).encode()
        for i in range(n):
            site = LocalSite(host=f"127.0.0.{i + 2}").start()
            servers.append(site)
            # Each root names its host: identical bytes on two hosts would be duplicate content,
            # whose links are not followed again (minicrawl.records.digests).
            root = f"<title>host {i + 2}</title>".encode() + links
            site.pages.update({"/": Resource(root),
                               **{f"/{k}": Resource(b"<p>leaf</p>") for k in range(1, pages + 1)}})
        return servers[-n:]

    yield make
    for s in servers:
        s.stop()


@pytest.fixture
def slow_dns(monkeypatch) -> dict[str, threading.Event]:
    """Names ending in ``.slow.test`` resolve to 127.0.0.1 after 3 s (the system resolver is
    really called for 127.0.0.1: only the wait is faked). The event is set once answered."""
    real = socket.getaddrinfo
    answered: dict[str, threading.Event] = {}

    def getaddrinfo(host, port, *args, **kwargs):  # type: ignore[no-untyped-def]
        if isinstance(host, str) and host.endswith(".slow.test"):
            time.sleep(3)
            try:
                return real("127.0.0.1", port, *args, **kwargs)
            finally:
                answered.setdefault(host, threading.Event()).set()
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answered


PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch) -> None:
    """Tests contact loopback only, directly: a proxy set on the machine that runs them (a CI
    runner's, say) would take every request elsewhere. A test that wants one sets its own."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def no_heartbeat_left_running() -> Iterator[None]:
    """Fails a test that leaves running a heartbeat thread (its name ends in "heartbeat") of
    a shared crawl's ToDo or host gate (minicrawl.redis) it opened and did not close: left
    running, it beats against the module's redis-server under the tests after, and retries
    for half a minute once that is stopped. Asked for by the tests that open them (autouse in
    tests/core/conftest.py; the pytestmark of the tests/test_*.py files that open Redis parts
    in this process: test_redis*.py, test_host_pace.py, test_seams.py, …), not by every test."""
    before = set(threading.enumerate())
    yield
    left = sorted(t.name for t in threading.enumerate()
                  if t not in before and t.name.endswith("heartbeat"))
    assert not left, f"the test left running: {', '.join(left)} (close what it opened)"


@pytest.fixture
def closing() -> Iterator[Callable]:
    """``closing(part)`` returns ``part`` (a SharedRedis, RedisToDo, RedisHostGate, a Crawler's
    SharedCrawl, a Crawler), closed after the test, passed or failed: the last opened first, so
    that ToDo's and the gate's heartbeats end before the connection they beat on closes."""
    with contextlib.ExitStack() as stack:
        yield lambda part: stack.enter_context(contextlib.closing(part))


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port, without persistence, for a test module."""
    require_binaries()  # a clear failure, not a skip, when redis-server is missing
    with RedisServer() as server:
        yield server
