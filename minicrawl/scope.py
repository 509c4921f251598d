"""Scope: which canonical URLs this crawl may follow.

By default a crawl stays on its seeds' hosts (any port, either scheme); ``--allow-domain`` adds a
host and its subdomains; ``--include`` / ``--exclude`` regexes narrow it further.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from minicrawl.core.urls import host_of


class Scope:
    """Decides whether a canonical URL is in this crawl (a core ``Admission`` rule)."""

    reason = "out_of_scope"

    def __init__(self, seed_urls: Iterable[str], allow_domains: Iterable[str] = (),
                 include: Iterable[str] = (), exclude: Iterable[str] = ()) -> None:
        self.hosts = {host_of(u) for u in seed_urls}
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
            self._host_cache[host] = known  # benign race: every thread computes the same value
        return known

    def admits(self, url: str, depth: int) -> bool:
        """True if the canonical ``url`` may be crawled, at any depth."""
        if not self.allows_host(host_of(url)):
            return False
        if self.include and not any(p.search(url) for p in self.include):
            return False
        return not any(p.search(url) for p in self.exclude)
