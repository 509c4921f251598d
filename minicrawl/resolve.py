"""From the hrefs of a page to the canonical URLs the crawl wants: resolved once, then cached.

Most hrefs of a site are the same navigation links on every page, so canonicalizing and judging
them (scope, traps) is done once per absolute URL and remembered (``_by_target``). Before that,
each href is resolved once per (base directory, href) (``_by_href``): resolution depends only on
the base's directory, except for ``""`` and ``"?…"`` (keyed by the whole base) and an absolute
``http(s)://`` URL (by the base's scheme: one entry for all pages). The fragment never
matters, so ``#sec-3`` and ``x.html#top`` share the entry of ``""`` and ``x.html``. The common
href, a plain relative path (``x.html``, ``../../java/lang/String.html``), is made absolute by
slicing the page's directory (:class:`_Folders`, which keeps the directories above it for the
page's other hrefs); other hrefs by :func:`minicrawl.urls.absolute`, 2.5–3× the cost. The two
agree wherever slicing answers, and no cached answer differs from a fresh one
(tests/test_resolve.py).

The caches are bounded (:class:`minicrawl.speed.memo.Memo`): each holds at most a third of the URLs
Visited holds, so a Bloom-filter crawl never holds more URL strings than an exact set would.
Dict reads and writes are atomic, and a racing miss only computes the same answer twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from minicrawl.admission import refusal
from minicrawl.core.interfaces import Admission
from minicrawl.options import Options
from minicrawl.speed.memo import Memo
from minicrawl.urls import TRIM, BadURL, absolute, canonicalize, origin_of

CACHE_SIZE = 200_000  # entries per cache; ~50 MB at the most

Verdict = tuple[str | None, str | None]  # (canonical URL, why unwanted) or (None, why no URL)

# A relative path that resolves by slicing: "../" steps, then a path with no scheme, query,
# fragment, backslash, blank or control character that starts with neither "." nor "/" (dot
# segments further on are looked for apart).
_PLAIN_RELATIVE = re.compile(
    r"(?:\.\./)*(?:[^./:?#\\\x00-\x20\x7f][^:?#\\\x00-\x20\x7f]*)?").fullmatch
# An absolute http(s) URL with a host (a blank is none: "http://\t" is "http://", no host).
_ABSOLUTE = re.compile(r"https?://[^/?\\\x00-\x20]").match


class LinkResolver:
    """Resolves and judges links for one crawl (thread-safe)."""

    def __init__(self, options: Options, rules: Sequence[Admission],
                 budget: Callable[[], int] | None = None) -> None:
        """``rules``: the admission rules that answer from the URL alone (scope, traps), whose
        verdict is kept with it; ``budget``: how many URLs Visited holds (the caches' bound
        follows it)."""
        self.options = options
        self.rules = rules
        # (base, directory or scheme; href) → verdict, and absolute URL → verdict
        self._by_href: Memo[tuple[str, str], Verdict] = Memo(CACHE_SIZE, budget)
        self._by_target: Memo[str, Verdict] = Memo(CACHE_SIZE, budget)

    def resolve(self, hrefs: Iterable[str], base: str, counts: dict[str, int]
                ) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
        """({canonical link: why unwanted, or None if wanted}, [(href, why it is no URL)]) for
        the hrefs of a page whose base URL is ``base``; the rejected are counted in ``counts``
        (``links_not_http``, ``links_malformed``). Links come once each, in page order."""
        candidates: dict[str, str | None] = {}
        rejected: list[tuple[str, str]] = []
        folders = _Folders(base)
        directory, scheme = folders.directory, base.partition(":")[0]
        cache = self._by_href.data  # read without a call: most hrefs are found here
        for href in hrefs:
            key = href.split("#", 1)[0] if "#" in href else href
            first = key[:1]
            if first and first <= " ":  # blanks and controls around an href are dropped
                first = key.lstrip(TRIM)[:1]
            if not first or first == "?":
                entry = (base, key)
            elif first == "h" and _ABSOLUTE(key):
                # urljoin rewrites an absolute URL of the page's own scheme ("x;" loses its
                # empty ";"), so the page's scheme is all it depends on
                entry = (scheme, key)
            else:
                entry = (directory, key)
            hit = cache.get(entry)
            if hit is None:
                hit = self._by_href.put(entry, self._judge(key, base, folders))
            url, why = hit
            if url is None:  # not a URL we could ever fetch: why is BadURL's reason
                name = "links_not_http" if why == "not http(s)" else "links_malformed"
                counts[name] = counts.get(name, 0) + 1
                rejected.append((href, why or ""))
            else:
                candidates[url] = why
        return candidates, rejected

    def out_of_bounds(self, url: str) -> str | None:
        """Why the canonical ``url`` is never for this crawl (the refusing rule's ``reason``:
        out of scope, a trap), or None."""
        return refusal(self.rules, url, 0)  # these rules answer alike at every depth

    def _judge(self, href: str, base: str, folders: _Folders) -> Verdict:
        """The verdict for one href, cached by its absolute URL too, so the same link written
        relative to different directories (``../api/x.html``) is canonicalized once."""
        opts = self.options
        target = folders.resolve(href) if len(href) <= opts.max_url_length else None
        if target is None:
            try:
                target = absolute(href, base, max_length=opts.max_url_length)
            except BadURL as e:
                return None, e.reason
        hit = self._by_target.data.get(target)
        if hit is None:
            try:
                url = canonicalize(target, sort_query=opts.sort_query,
                                   max_length=opts.max_url_length)
                hit = (url, self.out_of_bounds(url))
            except BadURL as e:
                hit = (None, e.reason)
            self._by_target.put(target, hit)
        return hit


class _Folders:
    """A page's base URL read once for resolving its hrefs: its directory (the cache key of
    most), and as origin and directory path, with the directories above it, what a plain
    relative href (``../../x.html``) resolves against, as RFC 3986 resolution would (``..``
    never climbs above the root)."""

    __slots__ = ("directory", "origin", "_above")

    def __init__(self, base: str) -> None:
        page = base.split("?", 1)[0]
        self.directory = page.rsplit("/", 1)[0]  # what most hrefs' resolution depends on
        self.origin = ""  # empty: this base is not resolved by slicing
        self._above: list[str] = []
        if page.startswith(("http://", "https://")) and "#" not in base:
            origin = origin_of(page)
            path = page[len(origin):]
            # A canonical base has a path and no dot segment; any other goes the general way.
            if path.startswith("/") and "/./" not in path + "/" and "/../" not in path + "/":
                self.origin = origin
                self._above = [path[: path.rfind("/") + 1]]

    def resolve(self, href: str) -> str | None:
        """The absolute URL of ``href`` if it is a plain relative path (``_PLAIN_RELATIVE``),
        else None (other hrefs need :func:`minicrawl.urls.absolute`)."""
        if not (self.origin and href and _PLAIN_RELATIVE(href)):
            return None
        steps = 0
        while href.startswith("../", 3 * steps):
            steps += 1
        if "/." in href[3 * steps:]:  # a dot segment (or a name starting with a dot)
            return None
        above = self._above
        while len(above) <= steps:
            folder = above[-1]
            above.append(folder[: folder.rfind("/", 0, len(folder) - 1) + 1] or "/")
        return self.origin + above[steps] + href[3 * steps:]
