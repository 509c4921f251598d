"""From the hrefs of a page to the canonical URLs the crawl wants: resolved once, then cached.

Most hrefs of a site are the same navigation links on every page, so resolving (against the
page's base), canonicalizing and judging them (scope, traps) is done once per (base directory,
href) and remembered. Resolution depends only on the base's directory, except for ``""`` and
``"?…"``; the fragment never matters, so ``#sec-3`` and ``x.html#top`` share the entry of ``""``
and ``x.html``. The caches are bounded: when full they are cleared, and the hot links come back
at once. Dict reads and writes are atomic, and a racing miss only computes the same answer twice.
"""

from __future__ import annotations

from collections.abc import Iterable

from minicrawl.options import Options
from minicrawl.scope import Scope
from minicrawl.urls import BadURL, absolute, canonicalize, repeated_segments

CACHE_SIZE = 200_000  # entries per cache; ~50 MB at the most

Verdict = tuple[str | None, str | None]  # (canonical URL, why unwanted) or (None, why no URL)


class LinkResolver:
    """Resolves and judges links for one crawl (thread-safe)."""

    def __init__(self, options: Options, scope: Scope) -> None:
        self.options = options
        self.scope = scope
        self._by_href: dict[tuple[str, str], Verdict] = {}  # (directory, href) → verdict
        self._by_target: dict[str, Verdict] = {}  # absolute URL → verdict

    def resolve(self, hrefs: Iterable[str], base: str, counts: dict[str, int]
                ) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
        """({canonical link: why unwanted, or None if wanted}, [(href, why it is no URL)]) for
        the hrefs of a page whose base URL is ``base``; the rejected are counted in ``counts``
        (``links_not_http``, ``links_malformed``). Links come once each, in page order."""
        candidates: dict[str, str | None] = {}
        rejected: list[tuple[str, str]] = []
        directory = base.split("?", 1)[0].rsplit("/", 1)[0]
        cache = self._by_href
        for href in hrefs:
            key = href.split("#", 1)[0] if "#" in href else href
            key = (base if not key or key[0] == "?" else directory, key)
            hit = cache.get(key)
            if hit is None:
                if len(cache) >= CACHE_SIZE:
                    cache.clear()
                hit = cache[key] = self._judge(key[1], base)
            url, why = hit
            if url is None:  # not a URL we could ever fetch: why is BadURL's reason
                name = "links_not_http" if why == "not http(s)" else "links_malformed"
                counts[name] = counts.get(name, 0) + 1
                rejected.append((href, why or ""))
            else:
                candidates[url] = why
        return candidates, rejected

    def out_of_bounds(self, url: str) -> str | None:
        """Why the canonical ``url`` is never for this crawl (a stats counter suffix), or None:
        out of scope, or a path repeating a segment (a trap)."""
        if not self.scope.allows(url):
            return "out_of_scope"
        limit = self.options.max_repeated_segments
        if limit > 0 and url.count("/") > limit + 2 and repeated_segments(url) > limit:
            return "trap"
        return None

    def _judge(self, href: str, base: str) -> Verdict:
        """The verdict for one href, cached by its absolute URL too, so the same link written
        relative to different directories (``../api/x.html``) is canonicalized once."""
        opts = self.options
        try:
            target = absolute(href, base, max_length=opts.max_url_length)
        except BadURL as e:
            return None, e.reason
        cache = self._by_target
        hit = cache.get(target)
        if hit is None:
            try:
                url = canonicalize(target, sort_query=opts.sort_query,
                                   max_length=opts.max_url_length)
                hit = (url, self.out_of_bounds(url))
            except BadURL as e:
                hit = (None, e.reason)
            if len(cache) >= CACHE_SIZE:
                cache.clear()
            cache[target] = hit
        return hit
