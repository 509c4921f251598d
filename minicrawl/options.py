"""One options object for the library and the command line.

Every crawl setting is a field of :class:`Options`. The command line is generated from these
fields (their ``help`` and ``group`` metadata), so ``Crawler(seeds, threads=4)`` and
``run.py --threads 4`` can never drift apart.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from minicrawl import __version__

DEFAULT_USER_AGENT = f"minicrawl/{__version__} (+https://pypi.org/project/minicrawl/)"


def opt(default: Any, help: str, group: str, **extra: Any) -> Any:
    """A dataclass field that also describes its command-line option."""
    meta = {"help": help, "group": group, **extra}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


@dataclass
class Options:
    """Settings of one crawl. Construct with keywords; unknown names raise ``TypeError``."""

    # -- workers
    threads: int = opt(8, "worker threads fetching in parallel", "Workers")
    timeout: float = opt(10.0, "seconds to wait for a connection and for each read", "Workers")
    user_agent: str = opt(DEFAULT_USER_AGENT, "User-Agent header sent with every request",
                          "Workers")
    max_bytes: int = opt(10 * 1024 * 1024, "largest body read, after decompression; longer "
                         "bodies are cut and recorded as errors", "Workers")

    # -- visited
    visited: str = opt("bloom", "Visited filter: bloom (fixed size, sized for expected-urls), "
                       "scalable (grows past expected-urls, rate stays under error-rate) or "
                       "exact (a set)", "Visited", choices=("bloom", "scalable", "exact"))
    expected_urls: int = opt(1_000_000, "URLs the Bloom filter is sized for (n)", "Visited")
    error_rate: float = opt(0.001, "false-positive rate at expected-urls (p)", "Visited")

    # -- scope and limits
    allow_domain: list[str] = opt([], "also crawl this host and its subdomains (repeatable)",
                                  "Scope", action="append")
    include: list[str] = opt([], "only follow URLs matching this regex (repeatable)", "Scope",
                             action="append")
    exclude: list[str] = opt([], "never follow URLs matching this regex (repeatable)", "Scope",
                             action="append")
    max_depth: int | None = opt(None, "links deeper than this many hops from a seed are dropped "
                                "(default: no limit)", "Scope")
    max_pages: int | None = opt(None, "hard cap on pages fetched (default: no limit)", "Scope")
    sort_query: bool = opt(False, "sort query parameters when canonicalizing URLs", "Scope")
    max_url_length: int = opt(2048, "links longer than this (canonical, in characters) are "
                              "skipped as malformed", "Scope", metavar="N")
    max_repeated_segments: int = opt(3, "drop links whose path has one segment more often "
                                     "than this (/a/a/a/a/ has 4), a crawler trap; 0: no limit",
                                     "Scope", metavar="N")
    max_pages_per_host: int | None = opt(None, "at most this many requests to one host "
                                         "(default: no limit)", "Scope", metavar="N")

    # -- politeness and retries
    ignore_robots: bool = opt(False, "do not fetch or obey robots.txt", "Politeness")
    delay: float = opt(0.25, "minimum seconds between requests to the same host (0: none)",
                       "Politeness", metavar="SECONDS")
    max_crawl_delay: float = opt(10.0, "a robots.txt Crawl-delay above this many seconds is "
                                 "capped to it", "Politeness", metavar="SECONDS")
    per_host: int = opt(2, "at most this many requests in flight to one host", "Politeness",
                        metavar="N")
    retries: int = opt(2, "retry a URL this many times after a connection error, timeout, "
                       "408, 429 or 5xx", "Politeness", metavar="N")
    retry_backoff: float = opt(1.0, "seconds before the first retry, doubled for each next one "
                               "(with jitter)", "Politeness", metavar="SECONDS")
    max_backoff: float = opt(60.0, "longest wait before a retry, also for a Retry-After",
                             "Politeness", metavar="SECONDS")

    # -- output
    out: str | None = opt(None, "write one JSON line per fetched page to this file", "Output")
    stats: str | None = opt(None, "write the final stats as JSON to this file", "Output")
    trace: str | None = opt(None, "write one line per crawl decision (EXTRACT, VISITED?, TAKES, "
                            "FETCHED…) to FILE, or to stdout when FILE is omitted or - "
                            "(default: off)",
                            "Output", nargs="?", const="-", metavar="FILE")
    report: str | None = opt(None, "write an HTML crawl report with plots to this file at the "
                             "end (needs matplotlib: pip install 'minicrawl[plot]')", "Output",
                             metavar="FILE.html")
    save_pages: str | None = opt(None, "save each fetched body under this directory, mirroring "
                                 "host/path", "Output", metavar="DIR")

    # -- state (minicrawl/state.py)
    state: str | None = opt(None, "keep the crawl state in this directory: running the same "
                            "command again resumes it (with --out appending)", "State",
                            metavar="DIR")
    recrawl: bool = opt(False, "revisit the pages recorded in --state with conditional GETs and "
                        "record what changed (new, changed, unchanged, gone)", "State")
    forget_gone: bool = opt(False, "with --recrawl: forget gone pages, so a link to one that "
                            "comes back finds it again", "State")

    # -- a crawl shared by many processes through Redis (minicrawl/redis_*.py)
    redis: str | None = opt(None, "share the crawl with other processes through this Redis: "
                            "redis://HOST:PORT/DB, or redis+cluster://HOST:PORT for a Redis "
                            "Cluster (a cluster node is also detected)", "Shared crawl (Redis)",
                            metavar="URL")
    crawl: str = opt("default", "name of the shared crawl: processes with the same --redis and "
                     "--crawl crawl together", "Shared crawl (Redis)", metavar="NAME")
    visited_shards: int = opt(0, "Redis keys the shared Visited bitmap is split into, spread "
                              "over a cluster's nodes; 0: what the crawl already uses, else one "
                              "per cluster primary (1 on a single server)",
                              "Shared crawl (Redis)", metavar="S")
    reclaim_after: float = opt(30.0, "seconds an item taken by a process may go without a "
                               "heartbeat before another process takes it over (a killed "
                               "process)", "Shared crawl (Redis)", metavar="SECONDS")
    redis_retry: float = opt(30.0, "seconds to keep retrying (with backoff) while Redis is "
                             "unreachable before stopping with an error", "Shared crawl (Redis)",
                             metavar="SECONDS")

    def replace(self, **changes: Any) -> Options:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


def option_fields() -> list[dataclasses.Field]:
    """The fields of :class:`Options`, in declaration order (the CLI builds flags from them)."""
    return list(dataclasses.fields(Options))
