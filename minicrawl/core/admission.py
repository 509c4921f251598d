"""Admission: which links a crawl may follow at all. The core's one rule keeps a crawl on the
hosts of its seeds; robots.txt, depth limits or traps are rules of the same kind."""

from __future__ import annotations

from collections.abc import Iterable

from minicrawl.core.urls import canonicalize, origin


class SameHost:
    """Admits a URL whose origin (scheme, host, port) is that of one of the seeds."""

    def __init__(self, seeds: Iterable[str]) -> None:
        # Canonical URLs spell an origin one way, so a prefix test is the whole check.
        self.prefixes = tuple({origin(url) for url in map(canonicalize, seeds) if url})

    def admits(self, url: str, depth: int) -> bool:
        """True if ``url`` (canonical) is on a seed's origin."""
        return url.startswith(self.prefixes)
