"""One options object for the library and the command line.

Every crawl setting is a field of :class:`Options`. The command line is generated from these
fields (their ``help`` and ``group`` metadata), so ``Crawler(seeds, threads=4)`` and
``run.py --threads 4`` can never drift apart.

Every value is checked in one place, :meth:`Options.validate`, when an ``Options`` is made (also
by :meth:`Options.replace` and so by ``Crawler(seeds, **settings)``): a bad one raises
``ValueError`` naming the option as on the command line ("--threads must be at least 1, got 0"),
which the command line turns into its usage error (exit status 2).
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urlsplit

# The bounds the core's command line shares (MAX_THREADS, MAX_SECONDS, MAX_COUNT) and their check
from minicrawl.checks import (
    MAX_BODY_BYTES,
    MAX_COUNT,
    MAX_SECONDS,
    MAX_THREADS,
    check_ca,
    check_http,
    check_number,
    finite,
    number_problem,
    shown,
)
from minicrawl.redact import redact
from minicrawl.version import __version__

DEFAULT_USER_AGENT = f"minicrawl/{__version__} (+https://pypi.org/project/minicrawl/)"

# Bounds of the numbers (each field's ``low``/``above`` and ``high``; Options.validate checks
# them and the help states them). Beyond them a crawl fails or silently misbehaves: 0 threads
# crawl nothing, requests refuses a timeout of 0, a URL limit under MIN_URL_LENGTH skips nearly
# every link, a delay of 1e10 s overflows the waits (expected_urls is bounded by memory instead).
MIN_URL_LENGTH = 16  # "http://host.tld/" is 16 characters
MAX_URL_LENGTH_LIMIT = 2 * 1024 * 1024  # the longest URL browsers take (Chrome: 2 MiB)
MAX_RETRIES = 100  # the backoff doubles per retry: 2**1024 seconds overflows a float
REDIS_CLUSTER_SLOTS = 16384  # the most shards that can land in distinct slots
MAX_FRONTIER_MB = 1024 * 1024  # a TiB: past any machine's memory, so "all in memory"


T = TypeVar("T")

OptionValue = int | float | str | bool | list[str] | None
"""A value of one option, as the fields of :class:`Options` declare them: what a setting given
as a keyword (``crawl_and_report(seeds, threads=4)``) may be."""


def opt(default: T, help: str, group: str, **extra: object) -> T:
    """A dataclass field that also describes its command-line option (typed as its value, as
    ``dataclasses.field`` is)."""
    meta = {"help": help, "group": group, **extra}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Options:
    """Settings of one crawl. Construct with keywords; unknown names raise ``TypeError``."""

    # -- workers
    threads: int = opt(8, "worker threads fetching in parallel", "Workers", low=1, high=MAX_THREADS)
    timeout: float = opt(10.0, "seconds to wait for a connection and for each read", "Workers",
                         above=0, high=MAX_SECONDS)
    user_agent: str = opt(DEFAULT_USER_AGENT, "User-Agent header sent with every request",
                          "Workers")
    max_bytes: int = opt(10 * 1024 * 1024, "largest body read, after decompression; longer "
                         "bodies are cut and recorded as errors", "Workers",
                         low=1, high=MAX_BODY_BYTES)
    no_cookies: bool = opt(False, "keep no cookies (without it a cookie a site sets is sent "
                           "back with its later requests, whichever worker makes them)",
                           "Workers")
    proxy: str | None = opt(None, "send every request through this proxy (http://[user:pass@]"
                            "host:port) (default: the environment's http_proxy, https_proxy and "
                            "no_proxy)", "Workers", metavar="URL")
    ca_bundle: str | None = opt(None, "check HTTPS certificates against the CAs in this PEM "
                                "file (default: REQUESTS_CA_BUNDLE or SSL_CERT_FILE, else "
                                "certifi's)", "Workers", metavar="FILE")

    # -- visited
    visited: str = opt("auto", "Visited filter: scalable (grows past expected-urls: twice the "
                       "URLs at half the rate each time), bloom (fixed size, sized for "
                       "expected-urls; past it its rate climbs), exact (a set) or auto (scalable; "
                       "bloom in a shared crawl)", "Visited",
                       choices=("auto", "bloom", "scalable", "exact"))
    expected_urls: int = opt(1_000_000, "URLs the Bloom filter is sized for (n)", "Visited", low=1)
    error_rate: float | None = opt(None, "false-positive rate at expected-urls (p) of the "
                                   "(first) filter: under one page lost in expectation over "
                                   "the crawl's P pages (default: 0.5/P, P being max-pages if "
                                   "given, for a scalable filter; else 10 x expected-urls)",
                                   "Visited", above=0, below=1)

    # -- todo (past the budget, on disk: minicrawl/frontier/disk.py)
    frontier_memory: float = opt(16.0, "MB of waiting URLs ToDo keeps in memory (estimated, ~250 "
                                 "bytes a URL); the rest waits on disk, in a temporary directory "
                                 "removed at the end; 0: only each host's next URL in memory",
                                 "ToDo", metavar="MB", low=0, high=MAX_FRONTIER_MB)

    # -- scope and limits
    allow_domain: list[str] = opt([], "also crawl this host and its subdomains (repeatable)",
                                  "Scope", action="append")
    include: list[str] = opt([], "only follow URLs matching this regex (repeatable)", "Scope",
                             action="append")
    exclude: list[str] = opt([], "never follow URLs matching this regex (repeatable)", "Scope",
                             action="append")
    max_depth: int | None = opt(None, "links deeper than this many hops from a seed are dropped "
                                "(default: no limit)", "Scope", low=0, high=MAX_COUNT)
    max_pages: int | None = opt(None, "hard cap on pages fetched (default: no limit)", "Scope",
                                low=1, high=MAX_COUNT)
    sort_query: bool = opt(False, "sort query parameters when canonicalizing URLs", "Scope")
    max_url_length: int = opt(2048, "links longer than this (canonical, in characters) are "
                              "skipped as malformed", "Scope", metavar="N",
                              low=MIN_URL_LENGTH, high=MAX_URL_LENGTH_LIMIT)
    max_repeated_segments: int = opt(3, "drop links whose path has one segment more often "
                                     "than this (/a/a/a/a/ has 4), a crawler trap; 0: no limit",
                                     "Scope", metavar="N", low=0, high=MAX_COUNT)
    max_pages_per_host: int | None = opt(None, "at most this many requests to one host "
                                         "(robots.txt and sitemaps not counted) (default: no "
                                         "limit)", "Scope", metavar="N",
                                         low=1, high=MAX_COUNT)
    sitemaps: bool = opt(False, "also crawl the URLs of the seed hosts' sitemaps (robots.txt "
                         "Sitemap: lines, else /sitemap.xml), read before the workers start",
                         "Scope")

    # -- politeness and retries
    ignore_robots: bool = opt(False, "do not fetch or obey robots.txt", "Politeness")
    ignore_nofollow: bool = opt(False, "follow the links a page says not to follow (rel=nofollow; "
                                "nofollow or none in <meta name=robots> or X-Robots-Tag)",
                                "Politeness")
    delay: float = opt(0.25, "minimum seconds between requests to the same host (0: none)",
                       "Politeness", metavar="SECONDS", low=0, high=MAX_SECONDS)
    max_crawl_delay: float = opt(10.0, "a robots.txt Crawl-delay above this many seconds is "
                                 "capped to it", "Politeness", metavar="SECONDS",
                                 low=0, high=MAX_SECONDS)
    per_host: int = opt(2, "at most this many requests in flight to one host", "Politeness",
                        metavar="N", low=1, high=MAX_THREADS)
    retries: int = opt(2, "retry a URL this many times after a connection error, timeout, "
                       "408, 429 or 5xx", "Politeness", metavar="N", low=0, high=MAX_RETRIES)
    retry_backoff: float = opt(1.0, "seconds before the first retry, doubled for each next one "
                               "(with jitter)", "Politeness", metavar="SECONDS",
                               low=0, high=MAX_SECONDS)
    max_backoff: float = opt(60.0, "longest wait before a retry, also for a Retry-After",
                             "Politeness", metavar="SECONDS", low=0, high=MAX_SECONDS)

    # -- output
    out: str | None = opt(None, "write one JSON line per fetched page to this file (-: standard "
                          "output); CSV if its name ends in .csv", "Output")
    links: str | None = opt(None, "at the end, write one record per link of every page crawled "
                            "(each <a>, frame, image, script, stylesheet…): the page it is on, "
                            "the href, its text, tag, attribute and line, its kind (page, "
                            "requisite, external), the target's status and whether it is "
                            "broken; JSON lines, CSV if FILE ends in .csv (-: standard output)",
                            "Output", metavar="FILE")
    stats: str | None = opt(None, "write the final stats as JSON to this file (-: standard "
                            "output)", "Output")
    trace: str | None = opt(None, "write one line per crawl decision (EXTRACT, VISITED?, TAKES, "
                            "FETCHED…) to FILE, or to stdout when FILE is omitted or - "
                            "(default: off)",
                            "Output", nargs="?", const="-", metavar="FILE")
    report: str | None = opt(None, "write an HTML crawl report to this file at the end: tables "
                             "of the broken links (every one, with every page linking to it, "
                             "with --check-links), the redirects, the slowest and largest "
                             "pages, the status by section; then plots, drawn when matplotlib "
                             "is installed (pip install 'minicrawl[plot]')", "Output",
                             metavar="FILE.html")
    mirror: str | None = opt(None, "keep a copy to read offline under DIR: each page and what "
                             "it needs (images, srcset, stylesheets and their @import and url(), "
                             "scripts, icons, fonts, media from the hosts in scope) as "
                             "DIR/host[:port]/path, links rewritten at the end to the local "
                             "files; nothing written outside DIR", "Output", metavar="DIR")
    mirror_external_requisites: bool = opt(False, "with --mirror: what the pages need from "
                                           "other hosts too (a CDN's)", "Output")
    mirror_names: str = opt("unix", "with --mirror or --save-pages, the names of its files: "
                            "as Unix allows (unix), or as Windows does too (windows: no < > : "
                            "\" | ? * \\ in a name: each percent-escaped; for a copy read "
                            "on Windows); a first crawl into DIR fixes them", "Output",
                            choices=("unix", "windows"), metavar="{unix,windows}")
    save_pages: str | None = opt(None, "save each page's body under DIR as --mirror names it, "
                                 "as it came (--mirror's simpler case)", "Output", metavar="DIR")
    keep_duplicates: bool = opt(False, "treat a page whose body equals an earlier page's as a "
                                "page of its own (default: record it with duplicate_of, do not "
                                "follow its links or save it again)", "Output")
    warc: str | None = opt(None, "archive every fetch (robots.txt too) as WARC/1.1 request and "
                           "response records, one gzip member each; files roll over at "
                           "--warc-max-size as FILE-00000.warc.gz, FILE-00001.warc.gz …",
                           "Output", metavar="FILE.warc.gz")
    warc_max_size: int = opt(1_000_000_000, "start a new WARC file before one would grow past "
                             "this many bytes; 0: one file, named as given", "Output",
                             metavar="BYTES", low=0, high=MAX_BODY_BYTES * 1024)

    # -- link checking (minicrawl/records/broken.py, minicrawl/watch/broken.py)
    check_links: bool = opt(False, "check the links: crawl as usual and also check, once each "
                            "and never crawling them, what the pages lead to but the crawl does "
                            "not follow (images, scripts, stylesheets and what they load, links "
                            "out of scope or past --max-depth, nofollow links: HEAD off the "
                            "site, GET where HEAD fails; GET on it); when the crawl is over, "
                            "print each broken link (a 4xx or 5xx, no answer, a redirect loop "
                            "or a redirect ending in one of those) with every page linking to "
                            "it, its line and text, on standard output (with --quiet too); exit "
                            "status 1 if any is broken (see --fail-on)", "Link checking")
    fail_on: str = opt("broken", "with --check-links, what makes the exit status 1: a broken "
                       "link (broken); a broken link or a warning, a #fragment that names "
                       "nothing on its page (warnings); nothing, the list is printed and the "
                       "exit status is 0 (never)", "Link checking",
                       choices=("broken", "warnings", "never"),
                       metavar="{broken,warnings,never}")

    # -- state (minicrawl/state/store.py)
    state: str | None = opt(None, "keep the crawl state in this directory: running the same "
                            "command again resumes it (with --out appending)", "State",
                            metavar="DIR")
    recrawl: bool = opt(False, "revisit the pages recorded in --state with conditional GETs and "
                        "record what changed (new, changed, unchanged, gone)", "State")
    forget_gone: bool = opt(False, "with --recrawl: forget gone pages, so a link to one that "
                            "comes back finds it again; with --mirror or --save-pages, their "
                            "copies are deleted", "State")

    # -- a crawl shared by many processes through Redis (minicrawl/redis/)
    redis: str | None = opt(None, "share the crawl with other processes through this Redis: "
                            "redis://HOST:PORT/DB, or redis+cluster://HOST:PORT for a Redis "
                            "Cluster (a cluster node is also detected)", "Shared crawl (Redis)",
                            metavar="URL")
    crawl: str = opt("default", "name of the shared crawl: processes with the same --redis and "
                     "--crawl crawl together", "Shared crawl (Redis)", metavar="NAME")
    visited_shards: int = opt(0, "Redis keys the shared Visited bitmap is split into, spread "
                              "over a cluster's nodes; 0: what the crawl already uses, else one "
                              "per cluster primary (1 on a single server)",
                              "Shared crawl (Redis)", metavar="S", low=0, high=REDIS_CLUSTER_SLOTS)
    reclaim_after: float = opt(30.0, "seconds an item taken by a process may go without a "
                               "heartbeat before another process takes it over (a killed "
                               "process)", "Shared crawl (Redis)", metavar="SECONDS",
                               above=0, high=MAX_SECONDS)
    redis_retry: float = opt(30.0, "seconds to keep retrying (with backoff) while Redis is "
                             "unreachable before stopping with an error", "Shared crawl (Redis)",
                             metavar="SECONDS", low=0, high=MAX_SECONDS)

    def __post_init__(self) -> None:
        self.validate()

    @property
    def filter_error_rate(self) -> float:
        """The fixed Visited filter's rate at ``expected_urls`` (:meth:`visited_rate` without a
        page cap: a state directory or a shared crawl binds its size, the cap may change)."""
        return self.visited_rate()

    def visited_rate(self, pages: int | None = None) -> float:
        """Visited's first (or only) filter's rate: ``error_rate``, or by default
        minicrawl.visited.sizing.default_rate for ``expected_urls`` and a crawl of ``pages``
        (0.05/n without: under one page lost in a crawl of 10 n URLs)."""
        if self.error_rate is not None:
            return self.error_rate
        from minicrawl.visited.sizing import default_rate  # Visited's numbers

        return default_rate(self.expected_urls, pages)

    @property
    def records_links(self) -> bool:
        """Every link of every page is recorded (the walk asked for its edges, spooled, joined
        with its target at the end): for ``--links`` or ``--check-links``. A crawl without
        either pays nothing for it."""
        return self.links is not None or self.check_links

    @property
    def walks_edges(self) -> bool:
        """Each page's edges are found: to record its links, or its requisites for --mirror."""
        return self.records_links or self.mirror is not None

    def replace(self, **changes: object) -> Options:
        """A copy with some fields changed (validated like a new one)."""
        return dataclasses.replace(self, **changes)

    def validate(self) -> None:
        """Raise ``ValueError`` for the first value no crawl could use, naming its option.

        Types first (from the annotations), then each field's bounds: the values at which the
        code using it would fail, or silently crawl nothing or ignore the option.
        """
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            _check_type(f.name, value, str(f.type))
            choices = f.metadata.get("choices")
            if choices and value not in choices:
                raise ValueError(_msg(f.name, f"must be one of {', '.join(choices)}", value))
        for f in dataclasses.fields(self):  # numbers: each field's low/above and high
            _check_bounds(f.name, getattr(self, f.name), f.metadata)
        # What was given; the crawl checks the environment's proxies and CAs before it starts
        check_http(self.user_agent, self.proxy, self.ca_bundle)
        # -- visited
        if self.visited != "exact":  # the exact set is not sized in advance
            _check_filter_size(self.expected_urls, self.filter_error_rate,
                               local=self.redis is None, given=self.error_rate is not None)
        # -- scope and limits: scope's own checks (imported here: minicrawl.scope reads regexes)
        from minicrawl.scope import check_domain, check_pattern

        for domain in self.allow_domain:
            check_domain(domain)
        for name in ("include", "exclude"):
            for pattern in getattr(self, name):
                check_pattern(name, pattern)
        # -- output and state: an empty path would silently switch the option off
        for name in PATH_FIELDS:
            if getattr(self, name) is not None and not os.fspath(getattr(self, name)):
                raise ValueError(f"{_flag(name)} must not be empty")
        if self.warc is not None and not os.fspath(self.warc).endswith(".warc.gz"):
            raise ValueError(f"--warc must name a .warc.gz file (records are gzip members), "
                             f"got {self.warc!r}")
        # -- shared crawl
        if self.redis is not None:
            _check_redis_url(self.redis)
            if self.visited not in ("bloom", "auto"):
                raise ValueError(f"--visited {self.visited} does not work with --redis: the "
                                 "processes share one Bloom filter (--visited bloom)")
        if not CRAWL_NAME_RE.match(self.crawl):
            raise ValueError(_msg("crawl", "must be 1-100 letters, digits, '_', '.', ':' or '-'",
                                  self.crawl))
        # -- options that would do nothing: say so rather than crawl as if they were not given
        if self.redis is None:
            for name in REDIS_ONLY:
                if getattr(self, name) != _default(name):
                    raise ValueError(f"{_flag(name)} is for a crawl shared through Redis: give "
                                     f"--redis URL too, or leave {_flag(name)} out")
        for name, idle, why in (
                ("warc_max_size", self.warc is None, "it sizes --warc's files: give --warc too"),
                ("max_crawl_delay", self.ignore_robots, "it caps robots.txt's Crawl-delay, "
                 "which --ignore-robots does not read"),
                ("fail_on", not self.check_links, "it sets the exit status of --check-links: "
                 "give --check-links too"), ("mirror_external_requisites", self.mirror is None,
                                             "it widens what --mirror saves: give --mirror too"),
                ("mirror_names", self.mirror is None and self.save_pages is None,
                 "it names the copies: give --mirror or --save-pages too")):
            if idle and getattr(self, name) != _default(name):
                raise ValueError(f"{_flag(name)} would do nothing: {why}, or leave it out")
        checking = "--check-links" if self.check_links else "--mirror" if self.mirror else None
        if checking and self.redis is not None:  # (checks are journaled as such: --state keeps
            # them; Redis's ToDo does not)
            raise ValueError(f"{checking} does not work with --redis yet: its ToDo would not "
                             "keep which URLs are only to be checked")
        if self.mirror is not None and self.save_pages is not None:
            raise ValueError("--save-pages is --mirror's simpler case (the pages alone, as they "
                             "came): give one of them")
        if self.forget_gone and not self.recrawl and self.state is not None:  # (no --state:
            # minicrawl.state says both need it)
            raise ValueError("--forget-gone forgets the pages a --recrawl finds gone: give "
                             "--recrawl too, or leave --forget-gone out")


# Redis URL schemes and crawl names the shared crawl accepts (minicrawl.redis.conn uses these).
REDIS_SCHEMES = ("redis", "rediss", "unix", "redis+cluster", "rediss+cluster")
MAX_REDIS_DB = 2**31 - 1  # Redis's own limit on SELECT; a server has 16 unless configured
CRAWL_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,100}$")
PATH_FIELDS = frozenset({"out", "links", "stats", "trace", "report", "save_pages", "mirror",
                         "state", "warc"})
REDIS_ONLY = ("crawl", "visited_shards", "reclaim_after", "redis_retry")  # nothing without it


def _default(name: str) -> OptionValue:
    return next(f.default for f in dataclasses.fields(Options) if f.name == name)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _msg(name: str, problem: str, value: object) -> str:
    return f"{_flag(name)} {problem}, got {shown(value)}"


def _check_bounds(name: str, value: OptionValue, meta: Mapping[str, object]) -> None:
    """``value`` within the field's ``low`` (or ``above``) and ``high``; None means no limit.

    Only numbers have bounds (``opt`` gives them as numbers, and :meth:`Options.validate` has
    checked each value's type first), so a string or a list has none to be within.
    """
    if value is None or isinstance(value, (str, list)):
        return
    low, above, high, below = (meta.get(key) for key in ("low", "above", "high", "below"))
    check_number(_flag(name), value, low, high, above, below)  # type: ignore[arg-type]


def bounds_text(meta: Mapping[str, object]) -> str:
    """The bounds in a field's ``meta`` as the help says them: "1 to 1024", "over 0, at most
    86400", "over 0, under 1"; "" for a field without bounds."""
    if "below" in meta:
        return f"over {meta['above']}, under {meta['below']}"
    if "high" not in meta:
        return f"at least {meta['low']:,}" if "low" in meta else ""
    high = f"{meta['high']:,g}" if isinstance(meta["high"], float) else f"{meta['high']:,}"
    if "above" in meta:
        return f"over {meta['above']}, at most {high}"
    return f"{meta['low']:,} to {high}"


def _check_type(name: str, value: object, annotation: str) -> None:
    """``value`` fits the field's annotation (``int``, ``float``, ``str``, ``bool``,
    ``list[str]``, each maybe ``| None``); a float must be finite."""
    kind, optional = annotation.removesuffix(" | None"), annotation.endswith(" | None")
    if value is None and optional:
        return
    if kind == "bool":
        ok, wanted = isinstance(value, bool), "True or False"
    elif kind == "int":
        ok, wanted = (isinstance(value, numbers.Integral) and not isinstance(value, bool),
                      "an integer")
    elif kind == "float":
        ok, wanted = (isinstance(value, numbers.Real) and not isinstance(value, bool)
                      and finite(value), "a finite number")
    elif kind == "str":
        kinds = (str, os.PathLike) if name in PATH_FIELDS else str
        ok, wanted = isinstance(value, kinds), "a string"
    elif kind == "list[str]":
        # include/exclude may also be compiled patterns (the library's users have them so)
        kinds = str | re.Pattern if name in ("include", "exclude") else str
        ok = isinstance(value, (list, tuple)) and all(isinstance(v, kinds) for v in value)
        wanted = "a list of strings"
    else:  # a new field of another type: teach this function about it
        raise TypeError(f"Options.{name}: no check for type {annotation!r}")
    if not ok:
        raise ValueError(_msg(name, f"must be {wanted}", value))


def _check_filter_size(expected_urls: int, error_rate: float, local: bool,
                       given: bool = True) -> None:
    """The Bloom filter these numbers ask for must be one bitarray can index and, when it lives
    in this process (not in Redis), one this machine's memory can hold. (``given``: the rate is
    the user's --error-rate, not the default's.)"""
    from minicrawl.core.visited import bits_for
    from minicrawl.visited.sizing import MAX_BITS

    bits = bits_for(expected_urls, error_rate)
    size = f"{bits / 8 / 2**30:,.1f} GiB"
    rate = f"--error-rate {error_rate:g}" if given else f"the default rate ({error_rate:g})"
    if bits > MAX_BITS:
        raise ValueError(f"--expected-urls {expected_urls:,} at {rate} needs "
                         f"a Visited filter of {size}, more than a Bloom filter can index")
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not every system tells
        return
    if local and bits / 8 > memory:
        raise ValueError(f"--expected-urls {expected_urls:,} at {rate} needs "
                         f"a Visited filter of {size}, more than this machine's "
                         f"{memory / 2**30:,.1f} GiB of memory")


def _check_redis_url(url: str) -> None:
    """A URL redis-py can connect with: known scheme, a host, a port and database number that
    exist (whether the server has that many databases only the server can say)."""
    scheme, sep, _ = url.partition("://")
    problem = None
    if not sep or scheme not in REDIS_SCHEMES:
        problem = "must be a Redis URL (redis://HOST:PORT/DB or redis+cluster://HOST:PORT)"
    elif scheme != "unix":
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - raises ValueError for a port out of range
        except ValueError as e:
            problem = f"is not a valid URL ({e})"
        else:
            db = parts.path.strip("/")
            if not parts.hostname:
                problem = "has no host (redis://HOST:PORT/DB)"
            elif db and not (db.isascii() and db.isdigit()):
                problem = "must end in a database number (/0, /1 …)"
            elif db and scheme.endswith("+cluster") and int(db) != 0:
                problem = "names database " + db + ", but a Redis Cluster has only database 0"
            elif db and (bound := number_problem(int(db), high=MAX_REDIS_DB)):
                problem = f"database number {bound}"
    if problem is None and "?" in url:
        problem = _redis_query_problem(scheme, url)
    if problem:
        raise ValueError(f"--redis {problem}, got {shown(redact(url, typed=True))}")


# What a --redis URL's query may set: redis-py's connection options that leave alone what the
# shared crawl relies on (replies as text, RESP2, the database in the path); ssl_* with rediss.
REDIS_QUERY = ("client_name", "username", "password", "socket_timeout",
               "socket_connect_timeout", "socket_keepalive", "socket_read_size",
               "retry_on_timeout", "health_check_interval", "max_connections", "timeout")
REDIS_SSL_QUERY = ("ssl_cert_reqs", "ssl_ca_certs", "ssl_certfile", "ssl_keyfile",
                   "ssl_check_hostname", "ssl_ca_path", "ssl_password", "ssl_min_version",
                   "ssl_ciphers")
# The files a rediss:// client reads (CA certificates, its certificate and key): the crawl's
# inputs, which no output may overwrite (minicrawl.cli.outpaths).
REDIS_FILES = ("ssl_ca_certs", "ssl_certfile", "ssl_keyfile")
REDIS_OURS = {"db": "give the database as the path (redis://HOST:PORT/DB)",
              "decode_responses": "the shared crawl reads Redis's replies as text itself",
              "protocol": "the shared crawl speaks RESP2", "encoding": "the crawl's is UTF-8"}


def redis_query(url: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of a --redis URL's query (``?client_name=…&…``), each value
    percent-decoded, blank ones kept, a name given twice twice."""
    from urllib.parse import parse_qsl

    return parse_qsl(url.partition("?")[2], keep_blank_values=True)


def _redis_query_problem(scheme: str, url: str) -> str | None:
    """What is wrong with a --redis URL's query options (``?client_name=…``), or None: each a
    name redis-py takes and minicrawl leaves to the user, its value one redis-py parses and
    Redis takes (redis-py raised a TypeError for an unknown name, Redis a ResponseError for a
    client name with a space: 64-line tracebacks). Values are not shown (a password may be)."""
    import redis.connection

    base = scheme.removesuffix("+cluster")
    known = REDIS_QUERY + (REDIS_SSL_QUERY if base == "rediss" else ())
    for name, value in redis_query(url):
        if name in REDIS_OURS:
            return f"sets ?{name}=, which minicrawl sets itself: {REDIS_OURS[name]}"
        if name in REDIS_SSL_QUERY and name not in known:
            return f"has ?{name}=, a TLS option: it needs rediss:// (or rediss+cluster://)"
        if name not in known:
            return (f"has ?{name}=, an option minicrawl does not pass to Redis (it may set "
                    f"{', '.join(known)})")
        if not value:
            return f"has ?{name}= with no value: give one or leave it out"
        if name == "client_name" and not all(33 <= ord(c) <= 126 for c in value):
            return ("has a ?client_name= with a space or a special character, which Redis "
                    "refuses: use letters, digits and punctuation")
        if name == "ssl_ca_certs":  # read at each connection: missing, it looked like an outage
            if os.path.isdir(value):
                return (f"?ssl_ca_certs={shown(value)} is a directory: give a PEM file of CA "
                        f"certificates, or the directory as ?ssl_ca_path=")
            try:
                check_ca(value, f"?ssl_ca_certs={shown(value)}")
            except ValueError as e:
                return str(e)
    try:
        parsed = redis.connection.parse_url(f"{base}://{url.partition('://')[2]}")
    except ValueError as e:
        return f"has a query option redis-py cannot read: {str(e).rstrip('.')}"
    for name in ("socket_timeout", "socket_connect_timeout", "timeout", "health_check_interval"):
        low, above = (0, None) if name == "health_check_interval" else (None, 0)  # 0: off
        if parsed.get(name) is not None and (
                problem := number_problem(parsed[name], low, MAX_SECONDS, above)):
            return f"?{name}= {problem} (seconds)"
    if parsed.get("max_connections") is not None and (
            problem := number_problem(parsed["max_connections"], low=1)):
        return f"?max_connections= {problem}"
    if parsed.get("ssl_certfile") or parsed.get("ssl_keyfile"):
        return _client_certificate_problem(parsed.get("ssl_certfile"), parsed.get("ssl_keyfile"),
                                           parsed.get("ssl_password"))
    return None


def _client_certificate_problem(certfile: str | None, keyfile: str | None,
                                password: str | None) -> str | None:
    """What is wrong with a --redis URL's TLS client certificate (``?ssl_certfile=``, and its
    key, in that file or ``?ssl_keyfile=``), or None. redis-py loads them at each connection:
    one that cannot be loaded failed every connection, as if Redis were down."""
    import ssl

    if not certfile:
        return "has ?ssl_keyfile= without ?ssl_certfile=: give the certificate the key is for"
    for name, path in (("ssl_certfile", certfile), ("ssl_keyfile", keyfile)):
        if path is not None and not os.path.isfile(path):
            return f"?{name}={shown(path)} is no such file"
    try:
        # An encrypted key without ?ssl_password= would have OpenSSL ask on the terminal: ""
        # says "wrong passphrase" instead.
        ssl.create_default_context().load_cert_chain(certfile, keyfile, password or "")
    except (ssl.SSLError, OSError) as e:
        reason = re.sub(r" \(_ssl\.c:\d+\)$", "", getattr(e, "reason", None)
                        or getattr(e, "strerror", None) or str(e))
        key = f" with ?ssl_keyfile={shown(keyfile)}" if keyfile else ""
        # (No "ssl_password=" in the text: redaction would take what follows for a password.)
        return (f"?ssl_certfile={shown(certfile)}{key} cannot be loaded as a TLS client "
                f"certificate and its private key ({reason}): give both in PEM, the key in "
                f"?ssl_keyfile= unless the certificate's file holds it, an encrypted key's "
                f"passphrase as ssl_password")
    return None


def option_fields() -> list[dataclasses.Field]:
    """The fields of :class:`Options`, in declaration order (the CLI builds flags from them)."""
    return list(dataclasses.fields(Options))
