"""run.py's admission rules: may this link be crawled at all? Each is a core ``Admission``.

The core's door (:mod:`minicrawl.core.door`) offers a URL to Visited only if every rule admits
it; the first that refuses names why (counted as ``links_<why>``, or ``redirects_<why>`` for a
redirect target). run.py's door asks, in this order:

* :class:`DepthLimit` — a link more than ``--max-depth`` hops from a seed;
* :class:`minicrawl.resolve.LinkResolver` — the verdicts of the rules that answer from the URL
  alone, remembered with it: :class:`minicrawl.scope.Scope` (the seeds' hosts,
  ``--allow-domain``, ``--include``, ``--exclude``) and :class:`Traps`;
* :class:`Traps` — a path repeating one segment (``/a/b/a/b/a/b/…``: a calendar, a relative link
  to itself) more than ``--max-repeated-segments`` times;
* :class:`HostCap` — a host that had its ``--max-pages-per-host`` requests: its answer changes
  as the crawl goes, so it is asked for every link.

``robots.txt`` is no admission rule: it needs a request, so it is asked when a
worker takes the URL (:mod:`minicrawl.visit.robots`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.visit.robots import RobotsGate


def repeated_segments(url: str) -> int:
    """How often the most frequent segment occurs in the path of the canonical ``url``: 4 for
    ``/a/a/a/a/`` or ``/x/a/y/a/a/a``. Calendars and relative-link loops build such paths."""
    path = url.split("://", 1)[1].partition("/")[2].split("?", 1)[0]
    segments = [seg for seg in path.split("/") if seg]
    distinct = set(segments)
    if len(distinct) == len(segments):  # the common case: no segment repeats
        return min(1, len(segments))
    return max(segments.count(seg) for seg in distinct)


class Traps:
    """Refuses a URL whose path repeats a segment more than ``limit`` times (0: no limit)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def refuses(self, url: str, depth: int) -> str | None:
        """"trap" for a trap's URL, else None (a path can only repeat a segment if it has
        enough of them)."""
        limit = self.limit
        trap = limit > 0 and url.count("/") > limit + 2 and repeated_segments(url) > limit
        return "trap" if trap else None


class DepthLimit:
    """Refuses a URL more than ``max_depth`` hops from a seed (None: no limit)."""

    def __init__(self, max_depth: int | None) -> None:
        self.max_depth = max_depth

    def refuses(self, url: str, depth: int) -> str | None:
        """"too_deep" past ``max_depth``, else None."""
        return "too_deep" if self.max_depth is not None and depth > self.max_depth else None


class HostCap:
    """Refuses a URL whose host had its ``max_pages_per_host`` requests (asked of politeness,
    which counts them: this process's, or a shared crawl's)."""

    def __init__(self, politeness: RobotsGate) -> None:
        self.politeness = politeness

    def refuses(self, url: str, depth: int) -> str | None:
        """"host_full" once ``url``'s host is known to be full (links to it are dropped before
        they take room in Visited and ToDo), else None."""
        return "host_full" if self.politeness.host_full(url) else None
