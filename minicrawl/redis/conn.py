"""The Redis side of a shared crawl: connecting (server or cluster), keys, retries, replay tokens.

Everything the shared crawl keeps in Redis goes through one :class:`SharedRedis`:

* **Connecting.** ``redis://HOST:PORT/DB`` is one server, ``redis+cluster://HOST:PORT`` a Redis
  Cluster (any node as the entry point); a plain ``redis://`` URL pointing at a cluster node is
  detected (``INFO cluster``) and switched to redis-py's cluster client. ``rediss://`` (TLS) at
  a server that answers a PING without TLS is refused at once (:class:`NotTLS`), not retried;
  so is a server whose certificate does not verify (:class:`CertificateRejected`).
* **Retries.** A connection error, timeout, cluster-down answer, or a server that cannot take
  writes for now (full: maxmemory; read-only: a replica mid-failover) is retried with exponential
  backoff and jitter for ``retry_for`` seconds; then :class:`RedisUnavailable` is raised with the
  URL and what was being done, and every later call fails fast with the same error, so a crawl that
  lost Redis stops quickly instead of waiting ``retry_for`` again for each call.
* **Replay tokens.** A retried write must not be applied twice, and an item reclaimed from a killed
  process must replay the Visited answers the dead process got (else the links it had marked seen
  but not yet queued would be lost). Both are the same problem, solved once: the scripts that
  mark URLs seen or put items (Visited's add, ToDo's put) take a token, store their answer under
  it for ``token_ttl`` seconds, and return the stored answer when they see the token again.
  :class:`ReplayTokens` makes the tokens from what is written and for which page, so whoever
  handles that page again within ``token_ttl`` — and finds the same links — makes the same ones.
  ToDo's poll and acknowledgement need none (an entry taken twice is reclaimed, acknowledged
  once).

Key names (NAME is the crawl's name, ``{...}`` is a Redis Cluster hash tag):

* ``mc:{NAME}:todo:*``, ``mc:{NAME}:stats``, ``mc:{NAME}:pages`` (the page cap),
  ``mc:{NAME}:chains`` (redirect chains at their targets): one hash slot, so ToDo's scripts can
  touch several of its keys atomically;
* ``mc:NAME:visited:{TAG}``: the Visited shards, tags chosen so the shards spread evenly over the
  16384 slots, hence over the nodes (see :func:`shard_tags`); ``mc:NAME:visited:meta``, its
  sizing;
* ``mc:NAME:host:{HOST}``, ``mc:NAME:lease:{HOST}``, ``mc:NAME:book:{HOST}``,
  ``mc:NAME:pages:{HOST}``: the per-host politeness gate (pace, slots in use, turns booked,
  requests made), spread by host;
* replay tokens, for ``token_ttl`` seconds: ``mc:{NAME}:todo:token:…`` for ToDo's puts,
  ``mc:NAME:visited:{TAG}:t:…`` beside the Visited shard they answer for; the digests of
  duplicate content: ``mc:{NAME}:digests``.
"""

from __future__ import annotations

import hashlib
import logging
import random
import socket
import ssl
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import TypeAlias, TypeVar
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.exceptions import NoScriptError
from redis.retry import Retry

from minicrawl.checks import check_number
from minicrawl.errors import RedisRefused, RedisUnavailable
from minicrawl.options import CRAWL_NAME_RE, REDIS_SCHEMES, redis_query
from minicrawl.redact import redact

log = logging.getLogger("minicrawl")
# The retries' jitter has its own generator: a heartbeat retrying in its thread must not move
# the global ``random`` under the program (its seeded runs; Hypothesis' check of its strategies).
_JITTER = random.Random()

T = TypeVar("T")

#: What a script may be given in ARGV (redis-py sends each as a string).
ScriptArg: TypeAlias = str | bytes | int | float
#: What a Lua script returns, as redis-py hands it over with ``decode_responses``: a Lua number
#: is an int (``true`` is 1), a string is a str, ``nil`` and ``false`` are None, a table is a
#: list. (A script's error is raised, never returned.)
Reply: TypeAlias = "int | str | None | list[Reply]"
#: One script call for :meth:`SharedRedis.eval_many`: the script, its KEYS, its ARGV.
ScriptCall: TypeAlias = tuple[str, Sequence[str], Sequence[ScriptArg]]

SLOTS = 16384

#: Errors that say "Redis is not reachable right now", worth retrying; anything else (a wrong
#: type, a script error) is a bug and raised at once.
RETRYABLE: tuple[type[BaseException], ...] = (
    redis.exceptions.ConnectionError, redis.exceptions.TimeoutError,
    redis.exceptions.ClusterDownError, redis.exceptions.TryAgainError,
    redis.exceptions.RedisClusterException,
    # The server is there but cannot take writes for now: full (maxmemory), or a replica until
    # the failover ends. Retried, then fatal: acknowledging the item would lose its links.
    redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError,
)

#: Cluster client errors that are our bugs (keys of one script in different slots), not outages.
#: (Looked up by name: redis-py 5 does not have them yet.)
NOT_RETRYABLE: tuple[type[BaseException], ...] = tuple(
    getattr(redis.exceptions, name) for name in ("CrossSlotTransactionError",
                                                 "InvalidPipelineStack")
    if hasattr(redis.exceptions, name))


class TLSRefused(redis.exceptions.ConnectionError):
    """A ``rediss://`` connection no retry can make: its text is the reason :func:`refusal`
    gives (what is wrong and what to change in --redis)."""


class NotTLS(TLSRefused):
    """A ``rediss://`` URL at a server that speaks Redis without TLS: the handshake never
    succeeds."""


class CertificateRejected(TLSRefused):
    """A ``rediss://`` URL at a TLS server whose certificate does not verify (not signed by a
    CA the client trusts, or issued for another host name): the same each time."""


#: Errors that may mean Redis refuses us for good (see :func:`refusal`).
REFUSALS: tuple[type[BaseException], ...] = (
    redis.exceptions.AuthenticationError, redis.exceptions.AuthenticationWrongNumberOfArgsError,
    redis.exceptions.NoPermissionError, redis.exceptions.ResponseError)


def refusal(error: BaseException, url: str = "redis://") -> str | None:
    """Why Redis refused us for good, said so that the user knows what to change in --redis
    (``url``: the URL that met it, whose scheme a hint keeps); None for an error that is not a
    refusal (a script's own error, an outage)."""
    text = str(error)
    lower = text.lower()
    if isinstance(error, TLSRefused):
        return text
    if isinstance(error, (redis.exceptions.AuthenticationError,
                          redis.exceptions.AuthenticationWrongNumberOfArgsError)) \
            or "noauth" in lower or "wrongpass" in lower:
        if "without any password configured" in lower:
            return ("has no password set, but --redis gives one: remove it "
                    "(redis://HOST:PORT/DB)")
        if "invalid username-password" in lower or "wrongpass" in lower \
                or "invalid password" in lower:
            return ("refused the login: wrong password (or user) in --redis "
                    "(redis://[USER]:PASSWORD@HOST:PORT/DB)")
        return ("needs a password: give it in --redis as redis://:PASSWORD@HOST:PORT/DB "
                "(or redis://USER:PASSWORD@…)")
    if isinstance(error, redis.exceptions.NoPermissionError) or "noperm" in lower:
        return f"refused a command to the --redis user: {text}"
    if "db index is out of range" in lower or "invalid db index" in lower:
        return ("has no such database: the number at the end of --redis must be below the "
                "server's 'databases' setting (16 by default)")
    if "cluster mode is not enabled" in lower:  # redis+cluster:// at one server: no retry helps
        # rediss+cluster:// keeps its TLS: rediss:// (as NotTLS keeps the +cluster)
        one = url.partition("://")[0].removesuffix("+cluster")
        return ("is not a Redis Cluster (cluster mode is not enabled on it): for one server "
                f"write {one}://HOST:PORT/DB")
    return None


def check_name(name: str) -> str:
    """The crawl name, checked: braces would change the cluster hash tags of every key."""
    if not CRAWL_NAME_RE.match(name):
        raise ValueError(f"crawl name {name!r}: use 1-100 letters, digits, '_', '.', ':' or '-'")
    return name


def shard_tags(shards: int) -> list[str]:
    """S short hash tags whose cluster slots are spread evenly: tag i lands in slot range i of S.

    Redis Cluster gives each node contiguous slot ranges (``redis-cli --cluster create`` splits
    them evenly), so tags spread over the slot space spread the shards over the nodes; arbitrary
    tags like ``0``, ``1``, ``2`` can land on one node.
    """
    check_number("visited shards", shards, low=1, high=SLOTS)
    tags = []
    for i in range(shards):
        j = 0
        while key_slot(f"{i}.{j}".encode()) * shards // SLOTS != i:
            j += 1
        tags.append(f"{i}.{j}")
    return tags


class ReplayTokens:
    """Tokens for the writes a worker makes while handling a ToDo item: replayable, by content.

    A thread calls :meth:`begin` with the stream entry id and the URL of the item it takes, and
    :meth:`end` when done; each write asks :meth:`token` for its token, given the URLs it writes.

    * Writes of *other* URLs (Visited checks of the page's links or redirect target, the links
      put in ToDo) get ``u:<digest of the page URL>:<digest of the URLs>``: whoever handles this
      page again — the process that reclaims a killed worker's entry, even under a new entry id
      after a politeness wait put it back — replays the first answers, so links the dead worker
      marked seen but never queued are queued, and links it did queue are not queued twice.
    * Putting the item's *own* URL back (a politeness wait, a retry) may legitimately happen
      once per handling, so it gets ``e:<entry id>:<digest>``: unique per entry, the same when
      that entry is replayed.
    * Outside an item, a write about seed URLs only (the seeding, by any process started with
      these seeds) gets ``s:<digest of the URLs>``: a process killed between marking its seeds
      seen and queueing them is replayed by the next one started with the same seeds. Any other
      write outside an item gets a random token, good for its own retries only.
    """

    def __init__(self, seeds: Sequence[str] = ()) -> None:
        self._seeds = frozenset(seeds)
        self._local = threading.local()

    def begin(self, entry_id: str, url: str) -> None:
        """This thread now handles the ToDo entry ``entry_id`` for ``url``: its writes get
        that entry's tokens until :meth:`end`."""
        self._local.entry = (entry_id, url)

    def end(self) -> None:
        """This thread is done with its entry: its writes get seed or random tokens again."""
        self._local.entry = None

    def token(self, urls: Sequence[str]) -> str:
        """The replay token for this thread's write of ``urls``: ``e:``, ``u:``, ``s:`` or
        random (see the class doc)."""
        entry = getattr(self._local, "entry", None)
        if entry is not None:
            entry_id, url = entry
            if list(urls) == [url]:
                return f"e:{entry_id}:{_digest(urls)}"
            return f"u:{_digest([url])}:{_digest(urls)}"
        if urls and self._seeds and self._seeds.issuperset(urls):
            return f"s:{_digest(urls)}"
        return uuid.uuid4().hex


def _digest(urls: Sequence[str]) -> str:
    return hashlib.sha1("\n".join(urls).encode()).hexdigest()[:20]


class SharedRedis:
    """One crawl's connection to Redis with retries: ``call(what, fn)`` and ``eval(...)``."""

    def __init__(self, url: str, name: str, *, retry_for: float = 30.0,
                 token_ttl: float = 600.0, seeds: Sequence[str] = ()) -> None:
        self.url = url
        self.shown_url = redact(url, typed=True)  # for messages: the password is never shown
        self.name = check_name(name)
        self.retry_for = retry_for
        self.token_ttl = max(1, round(token_ttl))
        self.tokens = ReplayTokens(seeds)
        self.failure: RedisUnavailable | None = None
        self._outage = False  # an outage was told (once, by the first thread to meet it)
        self._shas: dict[str, str] = {}
        self.client: redis.Redis | RedisCluster = self.call(
            "connecting", lambda: connect(url))
        self.cluster = isinstance(self.client, RedisCluster)

    def key(self, part: str) -> str:
        """A key in the crawl's ToDo/stats slot: ``mc:{NAME}:part``."""
        return f"mc:{{{self.name}}}:{part}"

    def call(self, what: str, fn: Callable[[], T]) -> T:
        """``fn()``, retried with backoff while Redis is unreachable, for ``retry_for`` seconds.

        ``fn`` should be safe to run twice (the add and put scripts are, through their tokens;
        see the module doc for the others). After giving up, this and every later call raise
        :class:`RedisUnavailable` at once.
        """
        if self.failure is not None:
            raise self.failure
        started = time.monotonic()
        delay = 0.05
        warned = False
        while True:
            try:
                result = fn()
                if warned and self._outage:  # the thread that told of the outage ends it
                    self._outage = False
                    log.warning("Redis at %s reachable again", self.shown_url)
                return result
            except (*REFUSALS, *RETRYABLE) as e:
                # Refusals first: an AuthenticationError is a ConnectionError, a cluster client
                # at one server a RedisClusterException. Then what is retryable, whatever its
                # base: full, read-only and cluster-down answers are ResponseErrors, as a
                # script's own error is. An answer that refuses the connection itself (an
                # option of the URL) is a refusal too: it would be the same each time.
                reason = refusal(e, self.url)
                if reason is None and what == "connecting" and \
                        isinstance(e, redis.exceptions.ResponseError) and \
                        not isinstance(e, RETRYABLE):
                    reason = f"refused the connection: {type(e).__name__}: {e}"
                if reason is not None:
                    self.failure = RedisRefused(f"Redis at {self.shown_url} {reason}")
                    raise self.failure from None
                if not isinstance(e, RETRYABLE) or isinstance(e, NOT_RETRYABLE):
                    raise
                waited = time.monotonic() - started
                if self.failure is not None:  # another thread gave up already
                    raise self.failure from None
                if waited >= self.retry_for:
                    self.failure = RedisUnavailable(
                        f"Redis at {self.shown_url} unreachable for {waited:.0f}s while {what}: "
                        f"{type(e).__name__}: {e}")
                    raise self.failure from e
                if not warned and not self._outage:  # one warning per outage, not per thread
                    self._outage = True
                    log.warning("Redis at %s unreachable while %s (%s: %s); retrying for up to "
                                "%.0fs", self.shown_url, what, type(e).__name__, e, self.retry_for)
                warned = True
                # Full jitter: many workers retrying together must not hit a recovering server
                # in lockstep.
                time.sleep(min(_JITTER.uniform(0, delay), self.retry_for - waited))
                delay = min(delay * 2, 2.0)

    def eval(self, what: str, script: str, keys: Sequence[str], args: Sequence[ScriptArg]
             ) -> Reply:
        """Run a Lua script: EVALSHA, and EVAL if the server does not know it yet (a restart, a
        failover, a new cluster node) — the script text is not sent with every call. Returns
        the script's reply (read it with :func:`reply_int`, :func:`reply_str` or
        :func:`reply_list`)."""
        return self.eval_many(what, [(script, keys, args)])[0]

    def eval_many(self, what: str, calls: Sequence[ScriptCall]) -> list[Reply]:
        """Several scripts in one pipeline (one round trip per node); their replies in order (the
        first error among them is raised)."""
        def run() -> list[Reply]:
            results = self._run(calls, "EVALSHA")
            missing = [i for i, r in enumerate(results) if isinstance(r, NoScriptError)]
            if missing:
                for i, r in zip(missing, self._run([calls[i] for i in missing], "EVAL"),
                                strict=True):
                    results[i] = r
            replies: list[Reply] = []
            for r in results:
                if isinstance(r, Exception):
                    raise r
                replies.append(r)
            return replies

        return self.call(what, run)

    def _run(self, calls: Sequence[ScriptCall], command: str) -> list[Reply | Exception]:
        """Each call's reply, or its error (a NoScriptError among them: the script to send)."""
        if len(calls) == 1:  # no pipeline object for the common single call
            script, keys, args = calls[0]
            try:
                return [self.client.execute_command(command, self._body(script, command),
                                                    len(keys), *keys, *args)]
            except NoScriptError as e:
                return [e]
        pipe = self.client.pipeline(transaction=False)
        for script, keys, args in calls:
            pipe.execute_command(command, self._body(script, command), len(keys), *keys, *args)
        return pipe.execute(raise_on_error=False)

    def _body(self, script: str, command: str) -> str:
        if command == "EVAL":
            return script
        sha = self._shas.get(script)
        if sha is None:
            sha = self._shas[script] = hashlib.sha1(script.encode()).hexdigest()
        return sha

    def close(self) -> None:
        """Close the client's connections; an error closing a dead one is swallowed."""
        try:
            self.client.close()
        except Exception:  # closing a dead connection must not hide the real error
            pass


def reply_int(reply: Reply) -> int:
    """A script's reply read as an integer (a Lua number, or a string of digits); TypeError
    for nil or a table, ValueError for other text — as ``int()`` says."""
    if isinstance(reply, (int, str)):
        return int(reply)
    raise TypeError(f"a Redis script answered {reply!r} where an integer was expected")


def reply_str(reply: Reply) -> str:
    """A script's reply that is a Lua string; TypeError for anything else."""
    if isinstance(reply, str):
        return reply
    raise TypeError(f"a Redis script answered {reply!r} where a string was expected")


def reply_list(reply: Reply) -> list[Reply]:
    """A script's reply that is a Lua table (an empty one included); TypeError for anything
    else."""
    if isinstance(reply, list):
        return reply
    raise TypeError(f"a Redis script answered {reply!r} where a table was expected")


def connect(url: str) -> redis.Redis | RedisCluster:
    """A client for ``url``: a cluster client for ``redis+cluster://`` or a cluster node."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in REDIS_SCHEMES:
        raise ValueError(f"not a Redis URL: {url!r} (redis://HOST:PORT/DB or "
                         f"redis+cluster://HOST:PORT)")
    settings: dict[str, bool | float] = {"decode_responses": True, "socket_timeout": 10,
                                         "socket_connect_timeout": 5}
    try:
        if scheme.endswith("+cluster"):
            return RedisCluster.from_url(scheme.removesuffix("+cluster") + "://" + rest,
                                         **settings)
        # Retries are ours (SharedRedis.call), so redis-py's own are switched off.
        client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **settings)
        if client.info("cluster").get("cluster_enabled"):
            client.close()
            return RedisCluster.from_url(url, **settings)
        return client
    except RETRYABLE as e:
        # A certificate that does not verify now never will: said at once, not retried.
        rejected = _cause(e, ssl.SSLCertVerificationError)
        if rejected is not None:
            raise CertificateRejected(_why_rejected(rejected, url)) from e
        # A plain server takes a TLS hello for the start of a command and waits for its end:
        # the handshake times out (or fails) every time. Said at once, not retried as an outage.
        if scheme.startswith("rediss") and _in_handshake(e) and _speaks_plain_redis(url):
            plain = scheme.replace("rediss", "redis", 1)
            raise NotTLS(f"speaks Redis without TLS: a TLS handshake ({scheme}://) with it "
                         f"never succeeds; write {plain}:// (or give its TLS port)") from e
        raise


E = TypeVar("E", bound=BaseException)


def _cause(error: BaseException | None, kind: type[E]) -> E | None:
    """The first error of type ``kind`` in ``error``'s chain (itself, then what it came from)."""
    while error is not None:
        if isinstance(error, kind):
            return error
        error = error.__cause__ or error.__context__
    return None


# OpenSSL's verify codes (X509_V_ERR_*) that mean "no CA the client trusts signed this":
# self-signed, self-signed in the chain, issuer unknown, leaf unverifiable; and a signature
# that fails (a trusted CA of the same name but another key: one made anew).
_UNTRUSTED = {2, 7, 18, 19, 20, 21}
_WRONG_NAME = {62, 64}  # the host name, or the IP address, is not the certificate's


def _why_rejected(error: ssl.SSLCertVerificationError, url: str) -> str:
    """What :class:`CertificateRejected` says: ssl's verify message, and what to change in
    --redis for it (the CA to trust, the host name to write), or that the server must."""
    why = (error.verify_message or error.reason or str(error)).rstrip(".")
    said = f"has a TLS certificate that could not be verified ({why})"
    if error.verify_code in _WRONG_NAME:
        return (f"{said}: write the host name (or address) the certificate was issued for in "
                f"--redis")
    if error.verify_code in _UNTRUSTED:
        if any(name == "ssl_ca_certs" for name, _ in redis_query(url)):
            return (f"{said}: the CA certificates its ?ssl_ca_certs= names did not sign it; "
                    f"give the CA that did (for a self-signed server, its own certificate)")
        return (f"{said}: give the CA certificate that signed it (for a self-signed server, "
                f"its own certificate) in --redis as ?ssl_ca_certs=/path/to/ca.pem")
    return f"{said}: the server's certificate must be fixed (or renewed) on the server"


def _in_handshake(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it came from) is a failed TLS handshake: an SSL error,
    or the handshake's timeout (the TCP connection was made)."""
    timeout = _cause(error, TimeoutError)
    return _cause(error, ssl.SSLError) is not None or (timeout is not None
                                                       and "handshake" in str(timeout))


def _speaks_plain_redis(url: str) -> bool:
    """Whether ``url``'s host and port answer a PING sent without TLS as Redis does (``+PONG``,
    or an error such as ``-NOAUTH``); a TLS server closes the connection, or sends an alert."""
    parts = urlsplit(url)
    try:
        with socket.create_connection((parts.hostname or "localhost", parts.port or 6379),
                                      timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(1) in (b"+", b"-")
    except (OSError, ValueError):
        return False
