"""The demo: a generated site, and the offline demo crawl (``python run.py --demo``).

:func:`generate_site` builds a site of interlinked pages with everything a crawler meets: cycles,
self-links, relative / ``../`` / absolute links, the same link spelled differently (case of scheme
and host, ``./``, percent-escapes, fragments), ``<base href>``, broken links (404), redirects,
non-HTML files, off-site links (to ``.invalid`` names, which never resolve), non-http links,
and (``robots=True``) a robots.txt whose Disallow covers pages that are linked but must never
be fetched; ``duplicates=N`` gives N pages a "print version" (``?print=1``) with the very same
bytes (duplicate content), and
``sitemap=True`` serves ``/sitemap.xml`` (named in robots.txt) listing some pages and one page
linked from nowhere else. It also returns the link graph it meant, so a breadth-first search
over that graph says exactly which pages a correct crawl fetches.

The site is served by :class:`~minicrawl.demo.site.LocalSite` (:mod:`minicrawl.demo.site`): an
HTTP server on 127.0.0.1 serving pages from a dict, with a request log and fault injection, which
the tests and the benchmarks serve their sites with too. ``python -m minicrawl.demo`` serves the
demo site alone (:func:`serve`). Nothing in the crawl imports this package; the command line
does, for ``--demo`` only.
"""

from __future__ import annotations

import os
import posixpath
import random
import re
import sys
from collections import deque
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from typing import TextIO

from minicrawl.core.urls import canonicalize
from minicrawl.demo.site import LocalSite, Resource
from minicrawl.errors import OneLineParser  # run.py's parser: a usage error is one line
from minicrawl.visited.make import ExactVisited

HTML = {"Content-Type": "text/html; charset=utf-8"}
ROBOTS_TXT = b"User-agent: *\nDisallow: /private/\n\nUser-agent: badbot\nDisallow: /\n"
# The demo crawls our own loopback server: no need to pace requests (flags still win).
DEMO_DEFAULTS = {"delay": 0.0, "per_host": 64}


@dataclass
class Site:
    """A generated site: what to serve, and which paths link to which."""

    origin: str
    pages: dict[str, Resource] = field(default_factory=dict)
    graph: dict[str, list[str]] = field(default_factory=dict)  # path → paths it leads to
    start: str = "/"
    disallowed: tuple[str, ...] = ()  # path prefixes robots.txt forbids
    copies: dict[str, str] = field(default_factory=dict)  # print version → page, same bytes
    sitemap: list[str] = field(default_factory=list)  # paths /sitemap.xml lists

    def allowed(self, path: str) -> bool:
        """True if robots.txt lets a crawler fetch ``path``."""
        return not path.startswith(self.disallowed)

    def reachable(self, max_depth: int | None = None,
                  sitemaps: bool = False) -> dict[str, int]:
        """Breadth-first search from ``start`` (and, with ``sitemaps``, the pages the sitemap
        lists, also at depth 0): every path a crawl must fetch, with its depth."""
        depth = {self.start: 0} | ({p: 0 for p in self.sitemap} if sitemaps else {})
        todo = deque(depth)
        while todo:
            path = todo.popleft()
            if max_depth is not None and depth[path] >= max_depth:
                continue
            for target in self.graph.get(path, ()):
                if target not in depth:
                    depth[target] = depth[path] + 1
                    todo.append(target)
        return depth


def generate_site(origin: str, pages: int = 300, seed: int = 7, links_per_page: int = 6,
                  redirects: bool = True, orphans: int = 5, robots: bool = False,
                  duplicates: int = 0, sitemap: bool = False) -> Site:
    """A site of about ``pages`` HTML pages served at ``origin`` (``http://host:port``)."""
    rng = random.Random(seed)
    site = Site(origin)
    paths = ["/"] + [_page_path(i) for i in range(1, pages)]
    linked = paths[: pages - orphans]  # the last few pages are never linked: orphans
    scheme, host = origin.split("://", 1)
    shouting = f"{scheme.upper()}://{host.upper()}"

    for i, path in enumerate(paths):
        # A chain through every linked page makes them all reachable; random links add cycles.
        targets = [paths[(i + 1) % len(linked)]] if i < len(linked) else []
        targets += rng.sample(linked, min(links_per_page, len(linked)))
        base = None
        if i % 17 == 3:  # some pages resolve their links against a <base href>
            base = "/section0/"
        body_links = []
        for n, target in enumerate(targets):
            body_links.append(_spell(target, path, base, origin, shouting, n + i))
        site.graph[path] = list(dict.fromkeys(targets))
        body_links += [
            f"{path}#top",  # a self-link with a fragment
            body_links[0],  # a duplicate
            "mailto:someone@example.org", "javascript:void(0)", "tel:+15555550100",
            # off the site: reserved names that never resolve (.invalid, RFC 2606): the demo
            # needs no internet, and --check-links finds the same everywhere
            "http://offsite.invalid/page.html", "https://www.example.invalid/",
        ]
        if i % 10 == 5:  # a broken link
            missing = f"/missing/{i}.html"
            body_links.append(missing)
            site.graph[path].append(missing)
        if redirects and i % 25 == 9:  # a redirect to some page
            old = f"/old/{i}"
            site.pages[old] = Resource(b"", 301, {"Location": targets[-1]})
            site.graph[old] = [targets[-1]]
            body_links.append(old)
            site.graph[path].append(old)
        if robots and i % 30 == 7:  # linked, served, but disallowed: never to be fetched
            private = f"/private/{i}.html"
            site.pages[private] = Resource(_html(-1, ["/secret.html"], None), 200, dict(HTML))
            body_links.append(private)
            site.graph[path].append(private)
        if i == 0:
            for extra in ("/files/notes.txt", "/img/logo.png"):
                body_links.append(extra)
                site.graph[path].append(extra)
        copy = None
        if len(site.copies) < duplicates and i % 11 == 4 and i < len(linked):
            copy = f"{path}?print=1"  # same bytes, so the same links (absolute paths)
            body_links.append(copy)
            site.graph[path].append(copy)
            site.copies[copy] = path
        site.pages[path] = Resource(_html(i, body_links, base), 200, dict(HTML))
        if copy is not None:
            site.pages[copy] = site.pages[path]
            site.graph[copy] = site.graph[path]

    # Links inside non-HTML files must never be followed.
    site.pages["/files/notes.txt"] = Resource(b"not html: <a href='/secret.html'>no</a>\n", 200,
                                              {"Content-Type": "text/plain"})
    site.pages["/img/logo.png"] = Resource(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4, 200,
                                           {"Content-Type": "image/png"})
    site.pages["/secret.html"] = Resource(_html(-1, [], None), 200, dict(HTML))
    robots_txt = ROBOTS_TXT
    if sitemap:  # the home page, a few linked pages, and an orphan only the sitemap lists
        site.sitemap = ["/", *paths[1:pages - orphans:max(1, pages // 10)], paths[-1]]
        site.pages["/sitemap.xml"] = Resource(_sitemap(origin, site.sitemap), 200,
                                              {"Content-Type": "application/xml"})
        robots_txt += f"\nSitemap: {origin}/sitemap.xml\n".encode()
    if robots:
        site.pages["/robots.txt"] = Resource(robots_txt, 200, {"Content-Type": "text/plain"})
        site.disallowed = ("/private/",)
    site.graph = {p: list(dict.fromkeys(t)) for p, t in site.graph.items()}
    return site


def _sitemap(origin: str, paths: list[str]) -> bytes:
    urls = "".join(f"<url><loc>{origin}{path}</loc><lastmod>2020-01-01</lastmod></url>\n"
                   for path in paths)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns='
            f'"http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n').encode()


def _page_path(i: int) -> str:
    section = i % 7
    return f"/section{section}/page{i}.html" if i % 3 else f"/section{section}/sub/page{i}.html"


def _spell(target: str, page: str, base: str | None, origin: str, shouting: str,
           n: int) -> str:
    """One of many spellings of a link to ``target`` found on ``page``."""
    style = n % 7
    if style == 0:
        return target
    if style == 1:
        return origin + target
    if style == 2:
        return shouting + target + "#section-2"
    if style == 3:
        directory = base or posixpath.dirname(page) or "/"
        relative = posixpath.relpath(target, directory)
        return relative if relative != "." else "./"
    if style == 4:
        return target.replace("page", "%70age", 1) + "#x"  # %70 is "p": same page
    if style == 5:
        directory = base or posixpath.dirname(page) or "/"
        return "./" + posixpath.relpath(target, directory) if target != "/" else "/"
    return "/./section0/../" + target.lstrip("/")  # dot segments


def _html(i: int, hrefs: list[str], base: str | None) -> bytes:
    head = f'<base href="{base}">' if base else ""
    items = "\n".join(f'<li><a href="{h}">link {n}</a></li>' for n, h in enumerate(hrefs))
    return (f"<!DOCTYPE html><html><head><title>Page {i}</title>{head}</head><body>"
            f"<h1 id=top>Page {i}</h1><ul>\n{items}\n</ul>"
            # The parts _spell's links name (#section-2, #x): there, so --check-links warns of
            # no #fragment on the demo (the links keep their line)
            f"<p id=section-2><a name=x></a>Demo page {i} of the minicrawl demo site.</p>"
            "</body></html>").encode()


class DemoRefused(Exception):
    """The demo cannot be served as asked: a usage error (one line, exit status 2)."""


def run_demo(crawl: Callable[[list[str], Callable[[], None], int],
                             tuple[int, Container[str] | None]],
             pages: int = 300, sitemaps: bool = False, max_depth: int | None = None,
             capped: bool = False, state: str | None = None, quiet: bool = False,
             out: TextIO | None = None, recrawl: bool = False) -> int:
    """Serve the demo site on loopback, ``crawl`` it, and print what the server saw.

    ``crawl`` is the command line's crawl, given the seeds, a function to call once the
    crawl could start (its options and state accepted) and the port the site is served on
    (its state's demo mark): it returns an exit code and the
    crawl's Visited, or None if the crawl could not start or failed. A crawl refused before it
    starts prints nothing here: its code is returned, its one line said. Returns an exit code:
    the crawl's, or 1 if a reachable URL was missed, fetched twice, or an unreachable one
    fetched. The crawl's settings that change what it must fetch: ``sitemaps`` (the page only
    the sitemap lists is expected too), ``max_depth``, and ``capped`` (a cap on pages: which
    ones it leaves out is not foreseen, so none counts as missed).

    With ``state`` (``--state DIR``) holding a demo crawl (its demo mark says so, and on which
    port), the site is served on the port that crawl used, so its seed is the same and it
    resumes (:class:`DemoRefused` if the port is taken, or the state holds a crawl that is not
    the demo's); the pages the state recorded count as fetched, and once more as fetched
    twice (unless ``recrawl``: then each is fetched again, once). The demo's lines go to
    ``out`` (standard output by default); with ``quiet``, the banner and the server log are
    left out and what went wrong (missed, fetched twice) goes to stderr, as a warning does."""
    out = out or sys.stdout
    told = sys.stderr if quiet else out
    # The site is this process's, on loopback, and the crawl stays on it: a proxy the
    # environment names could not reach it, so none is used (and none is checked: "*").
    os.environ["no_proxy"] = "*"
    port, unmarked = _state_port(state)
    server = LocalSite(port=port)
    try:
        server.start()
    except OSError as e:
        if not port:
            raise
        raise DemoRefused(f"--state {state}: its crawl is of the demo site on port {port}, "
                          f"which is in use now ({e.strerror or e}); free the port (a demo "
                          f"crawl of this state still running?) or give another --state "
                          f"dir") from None
    try:
        site = generate_site(server.origin, pages=pages, robots=True, duplicates=5,
                             sitemap=True)
        server.pages.update(site.pages)
        reached = site.reachable(max_depth, sitemaps=sitemaps)
        expected = {p for p in reached if site.allowed(p)}
        unreachable = len(set(site.pages) - set(reached) - {"/robots.txt", "/sitemap.xml"})
        before = _recorded_paths(state, server.origin)  # by earlier runs of the state's crawl
        if unmarked and state:  # a demo crawl's state from before the mark, if its pages are
            _mark_old_state(state, port, before, site)
        started = False

        def start() -> None:  # the crawl could start: the banner comes first
            nonlocal started
            started = True
            if quiet:
                return
            print(f"Demo site at {server.origin}/: {len(expected)} URLs reachable from the seed"
                  + (f" in {max_depth} hops" if max_depth is not None else "") + " "
                  f"(pages, broken links, redirects, files); {len(reached) - len(expected)} "
                  f"more linked but disallowed by robots.txt; {unreachable} pages linked from "
                  f"nowhere; {len(site.copies)} pages have a print version with the same "
                  f"bytes; /sitemap.xml lists {len(site.sitemap)} pages"
                  + ("" if sitemaps else " (--sitemaps reads it)")
                  + (f"; served on the port of the crawl in {state}" if port else ""), file=out)

        code, visited = crawl([server.url("/")], start, server.port)
        if not started:  # refused (its one line said): nothing was served, nothing to check
            return code
        counts = server.fetch_counts(exclude=("/robots.txt", "/sitemap.xml"))
        recorded = _recorded_paths(state, server.origin) if state else set()
        again = set() if recrawl else before  # a recrawl fetches each recorded page again
        twice = sorted(p for p, c in counts.items() if c > 1 or p in again)
        missed = [] if capped else sorted(set(expected) - set(counts) - recorded)
        extra = sorted(set(counts) - set(expected))
        if not quiet:
            print(f"Server log: {sum(counts.values())} requests for {len(counts)} paths; "
                  f"reachable {len(expected)}, "
                  + (f"recorded by earlier runs {len(before & expected)}, " if before else "")
                  + ("missed: not counted under a page cap, " if capped
                     else f"missed {len(missed)}, ")
                  + f"fetched twice {len(twice)}, "
                  f"unreachable fetched {len(extra)}", file=out)
        for label, paths in (("Missed", missed), ("Fetched twice", twice),
                             ("Unreachable fetched", extra)):
            if paths:
                print(f"{label}: {_some(paths)}", file=told)
        if missed and visited is not None and code == 0:  # (not after Ctrl-C)
            linked = {t for p in counts for t in site.graph.get(p, ())}  # by fetched pages
            taken = [p for p in missed if canonicalize(server.url(p)) in visited]
            print(_why_missed(missed, taken, [p for p in missed if p in linked],
                              exact=isinstance(visited, ExactVisited)), file=told)
        return code if not (twice or missed or extra) else 1
    finally:
        server.stop()


DEMO_SEED = re.compile(r"http://127\.0\.0\.1:(\d+)/")  # (the seed of every demo crawl)


def _state_port(state: str | None) -> tuple[int, bool]:
    """(the port the demo crawl in ``state`` served its site on, or 0 for a free one: no state
    or a new one; whether the state is unmarked: a demo crawl's from before the demo mark, as
    its one seed says, to be marked once its pages are found to be the demo's). A state that
    holds another crawl is refused (:class:`DemoRefused`); one that cannot be read is left to
    the crawl, which refuses it as without ``--demo``."""
    from minicrawl.state.opening import peek  # (here: a test's site needs no state)

    held = peek(state) if state else None
    if held is None:
        return 0, False
    if held.demo is not None:  # the mark: a demo crawl's, and its port
        return held.demo, False
    # Before the mark, a demo crawl was known by its seed: resumed, and marked, if it is one
    seed = DEMO_SEED.fullmatch(held.seeds[0]) if len(held.seeds) == 1 else None
    if seed and 0 < int(seed[1]) < 65536:
        return int(seed[1]), True
    seeds = _some(held.seeds, 2) or "none"
    raise DemoRefused(f"--state {state}: its crawl is not a demo crawl (seeds: {seeds}); give "
                      f"another --state dir, or run it without --demo")


def _mark_old_state(state: str, port: int, recorded: set[str], site: Site) -> None:
    """Mark the state of a demo crawl made before the demo mark (its seed the demo's) the
    demo's, if the pages it ``recorded`` are all the demo ``site``'s (else refused: a crawl of
    another site at the demo's seed)."""
    from minicrawl.state.db import StateError
    from minicrawl.state.opening import mark_demo

    strangers = sorted(recorded - set(site.pages) - {t for ts in site.graph.values()
                                                     for t in ts})
    if strangers:
        raise DemoRefused(f"--state {state}: its crawl is of another site at {site.origin}/, "
                          f"not the demo's (it has {_some(strangers, 3)}); give another "
                          f"--state dir")
    try:
        mark_demo(state, port)
    except StateError as e:
        raise DemoRefused(f"--state {state}: {e}") from None


def _recorded_paths(state: str | None, origin: str) -> set[str]:
    """The paths on ``origin`` the crawl in ``state`` has a record of (none without one)."""
    from minicrawl.state.opening import peek

    held = peek(state) if state else None
    return {url[len(origin):] for url in held.urls if url.startswith(origin + "/")} if held \
        else set()


def _some(paths: list[str], shown: int = 5) -> str:
    more = len(paths) - shown
    return " ".join(paths[:shown]) + (f" and {more} more" if more > 0 else "")


def _why_missed(missed: list[str], taken: list[str], unfollowed: list[str],
                exact: bool) -> str:
    """Why reachable URLs were never fetched. ``taken``: those Visited answers "seen" for —
    never requested, so taken for seen before any request: a Bloom filter's false positives
    (with an exact Visited, URLs lost between Visited and a worker). ``unfollowed``: those a
    fetched page links to; the rest are linked only from pages that were missed."""
    unknown = set(missed) - set(taken)
    reasons = []
    if taken:
        reasons.append(f"{len(taken)} lost after the exact Visited took them ({_some(taken)})"
                       if exact else
                       f"Visited answers \"seen\" for {len(taken)}: false positives of its "
                       "Bloom filter (size it with --expected-urls and --error-rate)")
    not_followed = sorted(unknown & set(unfollowed))
    if not_followed:
        reasons.append(f"{len(not_followed)} linked from fetched pages but never offered to "
                       f"Visited ({_some(not_followed)})")
    behind = len(unknown) - len(not_followed)
    if behind:
        reasons.append(f"{behind} linked only from pages that were missed")
    return f"Of the {len(missed)} missed: " + "; ".join(reasons)



def serve(argv: list[str] | None = None) -> None:
    """``python -m minicrawl.demo``: serve the demo site on 127.0.0.1 (a free port, or
    ``--port``) until killed, printing its start URL first — for crawlers run by hand, such as
    ``python -m minicrawl.core``, which has no ``--demo`` of its own."""
    import threading

    parser = OneLineParser(
        prog="python -m minicrawl.demo", allow_abbrev=False,  # --po: an error, not --port
        description="Serve the demo site (the one 'minicrawl --demo' crawls) on 127.0.0.1 "
                    "until killed (Ctrl-C); its start URL is printed first.")
    parser.add_argument("--port", type=int, default=0,
                        help="the port to serve on (default: a free one)")
    args = parser.parse_args(argv)
    if not 0 <= args.port < 65536:
        parser.error(f"--port must be 0 to 65535, got {args.port}")
    server = LocalSite(port=args.port)
    try:
        server.start()
    except OSError as e:
        parser.error(f"--port {args.port}: {e.strerror or e}")
    try:
        server.pages.update(generate_site(server.origin).pages)
        print(server.url("/"), flush=True)
        threading.Event().wait()
    finally:
        server.stop()
