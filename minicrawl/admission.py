"""run.py's admission rules: may this link be crawled at all? Each is a core ``Admission``.

A link is offered to Visited only if every rule admits it; the first that refuses names why
(its ``reason``, counted as ``links_<reason>``, or ``redirects_<reason>`` for a redirect target).

* :class:`minicrawl.scope.Scope` — the seeds' hosts, ``--allow-domain``, ``--include``,
  ``--exclude``;
* :class:`Traps` — a path repeating one segment (``/a/b/a/b/a/b/…``: a calendar, a relative link
  to itself) more than ``--max-repeated-segments`` times;
* :class:`HostCap` — a host that had its ``--max-pages-per-host`` requests.

Scope and traps answer from the URL alone, so :class:`minicrawl.resolve.LinkResolver` keeps
their verdict with the URL; the host cap's answer changes as the crawl goes, so it is asked
for every link. ``robots.txt`` is no admission rule: it needs a request, so it is asked when a
worker takes the URL (:mod:`minicrawl.politeness.robots`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Admission
    from minicrawl.politeness.robots import RobotsGate


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

    reason = "trap"

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def admits(self, url: str, depth: int) -> bool:
        """False for a trap's URL (a path can only repeat a segment if it has enough of them)."""
        limit = self.limit
        return not (limit > 0 and url.count("/") > limit + 2 and repeated_segments(url) > limit)


class HostCap:
    """Refuses a URL whose host had its ``max_pages_per_host`` requests (asked of politeness,
    which counts them: this process's, or a shared crawl's)."""

    reason = "host_full"

    def __init__(self, politeness: RobotsGate) -> None:
        self.politeness = politeness

    def admits(self, url: str, depth: int) -> bool:
        """False once ``url``'s host is known to be full (links to it are dropped before they
        take room in Visited and ToDo)."""
        return not self.politeness.host_full(url)


def refusal(rules: Sequence[Admission], url: str, depth: int) -> str | None:
    """The ``reason`` of the first of ``rules`` that refuses ``url`` at ``depth``, or None."""
    for rule in rules:
        if not rule.admits(url, depth):
            return rule.reason
    return None
