"""Scope: which canonical URLs this crawl may follow.

By default a crawl stays on its seeds' hosts (any port, either scheme); ``--allow-domain`` adds a
host and its subdomains; ``--include`` / ``--exclude`` regexes narrow it further.

A seed file is read while the crawl runs (minicrawl.seeds), so the seeds' hosts arrive after the
first pages: until the crawl's pass over the seeds has ended (:meth:`Scope.learned`), a host not
known yet is answered only after it — a link is never refused for a seed not read yet.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

from minicrawl.core.urls import host_of


class Scope:
    """Decides whether a canonical URL is in this crawl (a core ``Admission`` rule)."""

    reason = "out_of_scope"

    def __init__(self, seed_urls: Iterable[str], allow_domains: Iterable[str] = (),
                 include: Iterable[str] = (), exclude: Iterable[str] = (), *,
                 more_seeds: bool = False) -> None:
        self.hosts = {host_of(u) for u in seed_urls}
        # Set once every seed's host is in ``hosts`` (at once, unless ``more_seeds`` will come).
        self.complete = threading.Event()
        if not more_seeds:
            self.complete.set()
        self.domains = tuple(d.lower().strip(".") for d in allow_domains if d.strip("."))
        self.include = [re.compile(p) for p in include]
        self.exclude = [re.compile(p) for p in exclude]
        self._host_cache: dict[str, bool] = {}

    def allows_host(self, host: str) -> bool:
        """True if pages of ``host`` belong to this crawl."""
        known = self._host_cache.get(host)
        if known is None:
            known = host in self.hosts or any(
                host == d or host.endswith("." + d) for d in self.domains)
            if not known and not self.complete.is_set():
                self.complete.wait()  # a seed not read yet may name it (a second or so)
                known = host in self.hosts
            self._host_cache[host] = known  # benign race: every thread computes the same value
        return known

    def learned(self, seed_origins: Iterable[str]) -> None:
        """Add the hosts of ``seed_origins`` (``scheme://host[:port]``, the pass over the seed
        files); the scope is complete when they are all in, or the pass failed."""
        try:
            for origin in seed_origins:
                self.hosts.add(host_of(origin))
        finally:
            self.complete.set()

    def admits(self, url: str, depth: int) -> bool:
        """True if the canonical ``url`` may be crawled, at any depth."""
        if not self.allows_host(host_of(url)):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)
