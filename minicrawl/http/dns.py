"""Host name lookups bounded by a timeout, and remembered a while.

``socket.getaddrinfo`` cannot be interrupted and has no timeout of its own (the resolver's, often
5 s × retries, is what bounds it), so a connect timeout does not cover it: a host whose DNS is
slow holds a worker far past ``--timeout``. Here lookups run on a small pool of resolver
threads; the caller waits at most its timeout and gets :class:`LookupTimeout`, while the lookup
finishes in the background (and its answer is still cached). Concurrent lookups of one name
share one call, and answers are kept ``TTL`` seconds in a bounded cache, so a crawl asks the
system resolver about each host once every few minutes, not once per connection.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

TTL = 300.0  # seconds an answer (or a failure) is reused
CACHE_SIZE = 4096  # host names remembered; the least recently used goes first
RESOLVER_THREADS = 4  # lookups at once; a stuck DNS server ties up these, never the workers

Address = tuple[int, int, int, tuple]  # (family, type, proto, sockaddr) of getaddrinfo


class LookupTimeout(TimeoutError):
    """The name did not resolve within the timeout."""


class Resolver:
    """Bounded, cached ``getaddrinfo`` for TCP connections (thread-safe; one per process)."""

    def __init__(self, threads: int = RESOLVER_THREADS, ttl: float = TTL,
                 size: int = CACHE_SIZE) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="resolver")
        self._ttl = ttl
        self._size = size
        self._lock = threading.Lock()
        # (host, port) → (expires, future); a future done with an exception is a cached failure
        self._cache: OrderedDict[tuple[str, int], tuple[float, Future[list[Address]]]] = \
            OrderedDict()

    def resolve(self, host: str, port: int, timeout: float | None) -> list[Address]:
        """The addresses of ``host``:``port`` to connect to, in the system's order.

        Raises :class:`LookupTimeout` after ``timeout`` seconds, ``socket.gaierror`` if the name
        does not resolve. An IP literal is answered at once, without a lookup."""
        literal = _literal(host, port)
        if literal is not None:
            return literal
        key = (host, port)
        now = time.monotonic()
        with self._lock:
            entry = self._cache.get(key)
            if entry is None or entry[0] < now:
                future = self._pool.submit(socket.getaddrinfo, host, port, 0,
                                           socket.SOCK_STREAM)
                entry = self._cache[key] = (now + self._ttl, future)
                if len(self._cache) > self._size:
                    self._cache.popitem(last=False)
            else:
                self._cache.move_to_end(key)
        try:
            return [(family, kind, proto, addr)
                    for family, kind, proto, _, addr in entry[1].result(timeout)]
        except FutureTimeout:
            raise LookupTimeout(f"DNS lookup of {host} timed out after {timeout:g} s") from None


def _literal(host: str, port: int) -> list[Address] | None:
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None
    if ip.version == 6:
        return [(socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP,
                 (str(ip), port, 0, 0))]
    return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, (str(ip), port))]


RESOLVER = Resolver()


def connect(host: str, port: int, timeout: float | None,
            socket_options: list[tuple[int, int, int]] | None = None) -> socket.socket:
    """A TCP socket connected to ``host``:``port``: the lookup bounded by ``timeout``, then
    each address in turn, each attempt bounded by ``timeout`` (the last failure is raised)."""
    error: OSError | None = None
    for family, kind, proto, addr in RESOLVER.resolve(host, port, timeout):
        sock = socket.socket(family, kind, proto)
        try:
            for option in socket_options or ():
                sock.setsockopt(*option)
            sock.settimeout(timeout)
            sock.connect(addr)
            return sock
        except OSError as e:
            sock.close()
            error = e
    raise error or OSError(f"no address for {host}")
