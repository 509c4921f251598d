"""From the hrefs of a page to the canonical URLs the crawl wants: the core's answers, cached.

Every answer is :func:`minicrawl.core.urls.canonical`'s, with run.py's two options after it
(:func:`canonical_url`: ``--max-url-length``, ``--sort-query``). Most hrefs of a site are the same
navigation links on every page, so the answer for an href is remembered (``_by_href``) under what
it can depend on, by the URL Standard: an ``http(s)://`` href on no page; an href with no path
(``""``, ``?q``, ``http:``) on the whole page URL; any other on the page's folder (``../x.html``
is one URL on all pages of a folder), and one that climbs (``../../x.html``) on the folder it
climbs to, as the href that is left (``x.html`` there): the Java API docs' pages link to each
other that way from every package, and their 60,715 (folder, href) become 21,106. A fragment
never counts (``#sec-3`` shares the entry of ``""``) unless a blank is before it, nor a page's
encoding unless it is not UTF-8. Each canonical
URL is then judged once by the rules that answer from the URL alone (scope, traps:
``_by_target``). No cached answer differs from a fresh one (tests/test_resolve.py).

An entry not yet known whose href the URL parser would only join to its folder (characters it
keeps as they are, no ``.`` or ``..`` segment: ``java/lang/String.html``) is that join, made
here (``LinkResolver._known``; so is an ``http(s)://`` URL the parser keeps as it is, and an
href of another scheme): the core's answer without asking it, on a page with a canonical URL.
Asking cost the Java API docs' crawl 56,353 calls of the parser, four C calls each, each letting
go of the GIL, where 16 workers wait for it: a join made here instead took the crawl ×16 from
10.96 to 10.16 s (8 pairs A/B, 0.955, CPU 0.943; 45,559 of the calls were such joins).

The caches are bounded (:class:`minicrawl.memo.Memo`) twice: each holds at most a third of the
URLs Visited holds (or ``memo.FLOOR`` entries, what a small crawl's links need), so a
Bloom-filter crawl never holds more URL strings than an exact set would;
and by their memory, 8 MB together (``HREF_BYTES`` + ``TARGET_BYTES``, as :func:`_href_bytes` and
:func:`_target_bytes` estimate an entry: its strings' lengths and the overhead tracemalloc
measured), so that on a site where every href is new (issue 38's endless tree) they do not grow with
the crawl. They were bounded by entries (200,000 each), which held ~170 MB of a 100,000-page crawl
of the tree. 8 MB (6 + 2; it was 12 + 4), because the Java API docs, where they pay, need no more:
their 662,513 hrefs replayed page by page (bench_urls.py's order) make 31,657 (folder, href)
entries, 12.1 MB as estimated here (6.3 MB by tracemalloc with the targets: the estimate counts a
folder once per href, a URL in both caches), and 10,665 targets, 2.0 MB; at 12 + 4 MB the core is
asked 36,494 times (31,657 unbounded), at 6 + 2 MB 36,891, at 3 + 1 MB 39,116: a miss costs ~3 µs,
so any of these keeps the benefit, and in a crawl the third of Visited bounds them first there. The
Java docs crawl (``bench/javadoc.py --threads 16 --reps 2 --peers none``, 2026-11-26, loaded
machine): wall 18.97 vs 18.78 s, CPU 18.27 vs 20.47 s, peak RSS 106 vs 103 MB, after vs before
(bounded at 16 MB). 16 → 8 MB (this session's issue 38: the million-page tree crawl peaked at 200
MB, its target): the tree's ``--max-pages 100000`` 110 → 98 MB of peak RSS, wall 113.6 → 109.4 s
(one run each, load 11-13). The tree (``--max-pages 100000 --threads 16``, politeness off, one run
each): peak RSS 341 → 192 MB at ``--frontier-memory 64``, 533 → 351 MB at 4096; wall 133.9 → 115.8 s
and 121.1 → 118.3 s.
Dict reads and writes are atomic, and a racing miss only computes the same answer twice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from minicrawl.core.interfaces import Admission
from minicrawl.core.urls import MAX_LENGTH, canonical
from minicrawl.memo import Memo
from minicrawl.options import Options
from minicrawl.refused import scheme_of

# The caches' memory (see the module's doc): bytes as _href_bytes/_target_bytes estimate them.
HREF_BYTES = 6 << 20
TARGET_BYTES = 2 << 20
# Bytes an entry takes beyond its strings' characters (tracemalloc, every string its own: one
# href a page; a dict between resizes; bench/cache_bytes.py): (folder, href) → (URL, why) about
# 280 (the key's tuple and two strings, the dict's slot, the URL's string when the target cache
# has forgotten it), URL → (URL, why) about 190 (its string, the tuple, the slot).
HREF_OVERHEAD = 240
TARGET_OVERHEAD = 120

Judged = tuple[str | None, str | None]  # (canonical URL, why unwanted) or (None, why no URL)

_BLANKS = "".join(map(chr, range(0x21)))  # what the URL parser strips around an href
# What the URL parser keeps as it is in a path and a query: RFC 3986's unreserved characters and
# sub-delimiters, "@" ("'" is escaped in a special URL's query, ":" may end a scheme)
_KEPT = r"A-Za-z0-9\-._~!$&()*+,;=@"
# An href the URL parser's path state keeps as it is (no "%", ":", "?", "#"; "/" not first):
# what LinkResolver._known joins to a folder itself
_PATH_AS_IS = re.compile(rf"[{_KEPT}'][{_KEPT}'/]*").fullmatch
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# An http(s) URL as the parser writes it (see _as_is for what is checked after; a punycode label
# is left to the parser: the URL Standard decodes and checks it, though ada_url keeps any now)
_ABSOLUTE_AS_IS = re.compile(r"(?P<scheme>https?)://"
                             r"(?P<host>(?!xn--)[a-z0-9-]+(?:\.(?!xn--)[a-z0-9-]+)*)"
                             r"(?::(?P<port>[1-9][0-9]{0,4}))?"
                             rf"(?:/(?!\.\.?(?:[/?]|$))[{_KEPT}':]*)+"
                             rf"(?P<query>\?[{_KEPT}:/?]+)?").fullmatch
_HEX = frozenset("0123456789abcdef")
_OWN_PORT = {"http": "80", "https": "443"}


def canonical_url(href: str, base: str | None = None, encoding: str = "utf-8", *,
                  sort_query: bool = False, max_length: int = MAX_LENGTH) -> tuple[str | None, str]:
    """The core's :func:`~minicrawl.core.urls.canonical` (``max_length``: ``--max-url-length``),
    then ``--sort-query``: the query's ``&``-separated parameters in order, one URL for sites that
    write them in any order (a different page on others, so not the default)."""
    url, why = canonical(href, base, encoding, max_length)
    if url is not None and sort_query and "?" in url:
        path, _, query = url.partition("?")
        url = f"{path}?{'&'.join(sorted(query.split('&')))}"
    return url, why


class LinkResolver:
    """Resolves and judges links for one crawl (thread-safe)."""

    def __init__(self, options: Options, rules: Sequence[Admission],
                 budget: Callable[[], int] | None = None) -> None:
        """``rules``: the admission rules that answer from the URL alone (scope, traps), whose
        verdict is kept with it; ``budget``: how many URLs Visited holds (the caches' bound
        follows it)."""
        self.options = options
        self.rules = rules
        # (what the answer depends on, href) → judged, and canonical URL → judged
        self._by_href: Memo[tuple[str, str], Judged] = Memo(HREF_BYTES, _href_bytes, budget)
        self._by_target: Memo[str, Judged] = Memo(TARGET_BYTES, _target_bytes, budget)

    def resolve(self, hrefs: Iterable[str], base: str, counts: dict[str, int],
                encoding: str = "utf-8", *, each: list[Judged] | None = None,
                ) -> tuple[dict[str, str | None], list[tuple[str, str]]]:
        """({canonical link: why unwanted, or None if wanted}, [(href, why it is no URL)]) for
        the hrefs of a page whose base URL is ``base`` and encoding ``encoding``; the rejected
        are counted in ``counts`` (``links_not_http``, ``links_malformed``). Links come once
        each, in page order. ``each``: given, the answer for each href is added to it, in
        order: (canonical URL, why unwanted) or (None, why no URL)."""
        candidates: dict[str, str | None] = {}
        rejected: list[tuple[str, str]] = []
        # The memory's keys are the base's folders as a canonical URL spells them: a base as
        # written (``http://h/a\\b/``, ``/a/./b``) has other folders than the URL parser reads.
        spelled = self._spelled(base)
        page = spelled if encoding == "utf-8" else f"{encoding} {spelled}"
        folder = page.split("?", 1)[0].rsplit("/", 1)[0] if "#" not in spelled else page
        # Folders ``../`` may climb (a fragment's slashes are no folders: then none).
        depth = folder.count("/") - 2 if "#" not in spelled else 0
        anywhere = "" if encoding == "utf-8" else encoding
        # Where the keys' URLs start (after the encoding), if the page has a canonical URL
        start = -1 if "#" in spelled else len(anywhere) + 1 if anywhere else 0
        cache = self._by_href.data  # read without a call: most hrefs are found here
        for href in hrefs:
            key = href
            if "#" in href:  # a fragment never reaches a server: one entry for x#a and x#b…
                head = href.partition("#")[0]
                if not head or head[-1] > " ":  # …unless a blank ends x (the parser strips it)
                    key = head
            first = key[:1]
            if first > " " and first not in "?#" and ":" not in key:  # a path: most hrefs
                entry = (folder, key)
                if first == "." and key.startswith("../") and depth:
                    entry = _climbed(folder, key, depth)
            elif key.startswith(("http://", "https://")):
                entry = (anywhere, key)
            else:
                entry = (page if _no_path(key) else folder, key)
            hit = cache.get(entry)
            if hit is None:
                known = self._known(entry[0][start:] if start >= 0 else None, entry[1])
                hit = self._by_href.put(entry, known or self._judge(key, base, encoding))
            if each is not None:
                each.append(hit)
            url, why = hit
            if url is None:  # not a URL we could ever fetch: why is the core's reason
                name = "links_not_http" if why == "not http(s)" else "links_malformed"
                counts[name] = counts.get(name, 0) + 1
                rejected.append((href, why or ""))
            else:
                candidates[url] = why
        return candidates, rejected

    def judge(self, hrefs: Iterable[str], base: str, encoding: str = "utf-8") -> list[Judged]:
        """For each of ``hrefs`` (a page's, its base ``base``), in order: (canonical URL, why
        unwanted, or None) or (None, why it is no URL). The answers :meth:`resolve` gives, from
        the same memories; nothing counted."""
        each: list[Judged] = []
        self.resolve(hrefs, base, {}, encoding, each=each)
        return each

    def refuses(self, url: str, depth: int) -> str | None:
        """Why the canonical ``url`` is never for this crawl (the first of the rules to refuse
        it: out of scope, a trap), or None: an ``Admission`` rule for the door, whose answer is
        remembered with the URL (these rules answer alike at every depth)."""
        hit = self._by_target.data.get(url)
        if hit is None:
            hit = self._by_target.put(url, (url, self._verdict(url)))
        return hit[1]

    def _spelled(self, base: str) -> str:
        """``base`` as the memory keys it: itself if it is a canonical URL (a crawl's pages and
        ``<base>``s are: found among the judged URLs, or made so once), else its canonical URL,
        or, if it has none, itself with a ``#`` (keyed as a whole, no folder of its own)."""
        if base in self._by_target.data:  # a URL judged is canonical: one dict read a page
            return base
        if len(base) <= self.options.max_url_length and _as_is(base, self.options.sort_query):
            return base  # (a page the memory forgot: the Java API docs' crawl, 4,632 of them)
        url = canonical_url(base, sort_query=self.options.sort_query,
                            max_length=self.options.max_url_length)[0]
        if url is None:
            return base if "#" in base else base + "#"
        if url == base:
            self._by_target.put(url, (url, self._verdict(url)))
        return url

    def _known(self, at: str | None, href: str) -> Judged | None:
        """The answer for a key's ``href`` where the URL Standard leaves nothing to work out, on
        the canonical URL ``at`` (a folder; the page itself for ``""``; None: the page has no
        canonical URL), or None: the core is asked (as for a URL over ``--max-url-length``).

        * a path of characters the parser keeps as they are (no ``%``, ``:``, ``?``, ``\\``,
          blank…), no ``.`` or ``..`` segment, not starting with ``/``: ``at/href`` (``""``:
          ``at``);
        * an ``http(s)://`` URL the parser would leave as it is (:func:`_as_is`): itself;
        * any other scheme: no URL to crawl, whatever the rest.

        Most of a site's hrefs are such (the Java API docs asked the core 56,353 times, 45,559
        of them for a join; the CPython docs 4,250, 3,000 of them absolute URLs off the site),
        and asking costs ~2.5 µs where this costs a tenth of it."""
        if href.startswith(("http://", "https://")):
            url = href if _as_is(href, self.options.sort_query) else None
        elif (scheme := scheme_of(href)) is not None:
            if scheme in ("http", "https") or len(href) > self.options.max_url_length:
                return None
            return None, "not http(s)"
        elif at is None:
            return None
        elif href:
            if not _PATH_AS_IS(href) or "/./" in (padded := f"/{href}/") or "/../" in padded:
                return None
            url = f"{at}/{href}"
        else:
            url = at
        if url is None or len(url) > self.options.max_url_length:
            return None
        hit = self._by_target.data.get(url)
        if hit is None:
            hit = self._by_target.put(url, (url, self._verdict(url)))
        return hit

    def _verdict(self, url: str) -> str | None:
        return next((why for rule in self.rules if (why := rule.refuses(url, 0))), None)

    def _judge(self, href: str, base: str, encoding: str) -> Judged:
        """The core's answer for one href, and the rules' verdict on it (cached by URL, so a
        link written relative to different folders, ``../api/x.html``, is judged once)."""
        opts = self.options
        url, why = canonical_url(href, base, encoding, sort_query=opts.sort_query,
                                 max_length=opts.max_url_length)
        if url is None:
            return None, why
        hit = self._by_target.data.get(url)
        if hit is None:
            hit = self._by_target.put(url, (url, self._verdict(url)))
        return hit


def _href_bytes(entry: tuple[str, str], judged: Judged) -> int:
    """What an entry of ``_by_href`` takes at most: its folder (shared by a page's hrefs, counted
    for each), href and URL (shared with ``_by_target`` while it holds it) and the overhead."""
    return HREF_OVERHEAD + len(entry[0]) + len(entry[1]) + len(judged[0] or "")


def _target_bytes(url: str, judged: Judged) -> int:
    """What an entry of ``_by_target`` takes (its reason is one of a few shared strings)."""
    return TARGET_OVERHEAD + len(url)


def _climbed(folder: str, href: str, depth: int) -> tuple[str, str]:
    """``href`` (``../`` first) on ``folder`` as the href left after its leading ``../`` on the
    folder they climb to (at most ``depth``, the folder's own): the URL parser pops a folder
    for each, then reads the rest as on that folder's pages. Only if what is left is such a
    path itself (not empty, no ``/``, ``\\``, ``?``, ``#`` or blank first), else the same entry."""
    up, rest = 0, href
    while rest.startswith("../") and up < depth:
        up, rest = up + 1, rest[3:]
    first = rest[:1]
    if first > " " and first not in "/\\?#":
        return folder.rsplit("/", up)[0], rest
    return folder, href


def _as_is(url: str, sort_query: bool) -> bool:
    """True if the parser leaves the ``http(s)://`` ``url`` as it is (and so does canonical):
    a host of lower-case ASCII labels (none punycode; the last a number only in an IPv4 address
    written as the parser writes one: four numbers of 0-255, no leading zero), a port that is
    not the scheme's own, a path of RFC 3986's characters less ``%`` with no dot segment, a
    query of them less ``'`` (which a special URL's query escapes)."""
    if (parts := _ABSOLUTE_AS_IS(url)) is None or (sort_query and parts["query"]):
        return False
    host = parts["host"]
    last = host.rpartition(".")[2]
    if last.isdigit():
        numbers = host.split(".")
        if len(numbers) != 4 or not all(n.isdigit() and str(int(n)) == n and int(n) < 256
                                        for n in numbers):
            return False
    elif last.startswith("0x") and all(c in _HEX for c in last[2:]):
        return False
    port = parts["port"]
    return port is None or (int(port) <= 65535 and port != _OWN_PORT[parts["scheme"]])


def _no_path(href: str) -> bool:
    """True if ``href`` has no path of its own, so that its URL keeps the page's whole path (and
    query): ``""``, ``?q``, `` #f``, ``http:`` (on an http page, the page itself)."""
    rest = href.strip(_BLANKS)
    if "\t" in rest or "\n" in rest or "\r" in rest:  # the parser drops them anywhere
        rest = rest.replace("\t", "").replace("\n", "").replace("\r", "")
    if (scheme := _SCHEME.match(rest)) is not None:
        rest = rest[scheme.end():]
    return not rest or rest[0] in "?#"
