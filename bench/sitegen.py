"""A deterministic, link-dense documentation-like site, written to a directory.

The shape imitates a Sphinx-style documentation site, because that is where a crawler's per-link
cost shows: every page carries the same sidebar of ~200 relative links (so almost every link a
crawler extracts is one it has already seen), plus breadcrumbs, prev/next, a local table of
contents of fragment-only links, cross-references with fragments, a few absolute and off-site
links; a few index pages carry thousands of links. Pages are padded with text, code and tables to
20 KB – 2 MB so parsing costs what it costs on real pages.

Every link is built from the path it means (``targets``) and then *spelled* relative to the page
(``../``, ``./``, root-relative, absolute); the spelled hrefs are resolved again with ``urljoin``
and checked against the intended targets, so the expected set written to ``expected.json`` is
not just the generator agreeing with itself.

``python bench/sitegen.py DIR --origin http://127.0.0.1:8080`` writes a site; ``run.py`` calls
:func:`generate` itself.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import posixpath
import random
import shutil
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

# Offsite hosts use the reserved .invalid TLD so that a crawler leaving scope by mistake gets a
# resolver error, never a request to a real host.
OFFSITE = [
    "https://github.invalid/minicrawl/minicrawl",
    "https://pypi.invalid/project/minicrawl/",
    "https://docs.python.invalid/3/library/urllib.parse.html#urllib.parse.urljoin",
    "http://www.w3.invalid/TR/html52/",
]
NOT_HTTP = ["mailto:docs@example.invalid", "javascript:void(0)"]

WORDS = (
    "the crawler queue worker fetch page link visited filter bloom hash thread lock request "
    "response header body parse extract canonical scheme host port path query fragment relative "
    "absolute redirect status timeout session connection keep alive index module function class "
    "method argument return value default option setting example note warning see also section "
    "table content version release change deprecated added removed parameter type string bytes "
    "integer list dict set tuple iterator generator callback handler error exception retry limit "
    "depth scope domain include exclude pattern regular expression output record stats summary"
).split()


@dataclass
class Site:
    """What was written: the URL paths a BFS from ``/`` reaches, and the link graph."""

    root: Path
    origin: str
    graph: dict[str, list[str]] = field(default_factory=dict)  # URL path → URL paths it links
    files: dict[str, int] = field(default_factory=dict)  # file path → bytes
    links_per_page: dict[str, int] = field(default_factory=dict)  # file path → <a> count
    expected: dict[str, int] = field(default_factory=dict)  # URL path → BFS depth

    def describe(self) -> str:
        counts = sorted(self.links_per_page.values())
        sizes = sorted(self.files.values())
        total = sum(counts)
        return (f"{len(self.files)} files, {sum(sizes) / 1e6:.1f} MB "
                f"(page {sizes[0] / 1e3:.0f} KB – {sizes[-1] / 1e6:.2f} MB, median "
                f"{sizes[len(sizes) // 2] / 1e3:.0f} KB); links/page median "
                f"{counts[len(counts) // 2]}, min {counts[0]}, max {counts[-1]}, total {total}; "
                f"{len(self.expected)} URLs reachable from /")


# -- the page inventory ----------------------------------------------------------------------

def _inventory() -> dict[str, list[str]]:
    """Section name → file paths of its pages (index first). Fixed, so the site is the same
    for every seed; the seed only changes the text, the cross-links and the sizes."""
    topics = ["install", "quickstart", "configuration", "seeds", "scope", "politeness", "robots",
              "output", "stats", "bloom", "visited", "threads", "timeouts", "redirects", "errors",
              "encoding", "logging", "signals", "library", "cli", "testing", "deploy", "proxies",
              "cookies", "headers", "compression", "limits", "depth", "sitemaps", "canonical"]
    sections: dict[str, list[str]] = {
        "": ["/index.html", "/genindex.html", "/py-modindex.html", "/search.html"],
        "guide": ["/guide/index.html"] + [f"/guide/{t}.html" for t in topics]
                 + [f"/guide/{t}-advanced.html" for t in topics],
        "tutorial": ["/tutorial/index.html"] + [f"/tutorial/part{n:02d}.html" for n in range(30)],
        "howto": ["/howto/index.html"] + [f"/howto/recipe{n:02d}.html" for n in range(40)],
        "reference": ["/reference/index.html", "/reference/all.html"]
                     + [f"/reference/{t}-{k}.html" for t in topics[:20] for k in ("opt", "api",
                                                                                 "faq", "cli")],
        "api": ["/api/index.html"],
        "changelog": ["/changelog/index.html"] + [f"/changelog/v{n}.html" for n in range(40)],
    }
    for p in range(12):
        sections["api"].append(f"/api/pkg{p}/index.html")
        sections["api"] += [f"/api/pkg{p}/mod{m:02d}.html" for m in range(16)]
        sections["api"] += [f"/api/pkg{p}/sub/mod{m:02d}.html" for m in range(9)]
    return sections


# Never linked from anywhere: a correct crawler never fetches them.
ORPHANS = [f"/orphan/old{n}.html" for n in range(5)]
# Linked, but no file: nginx answers 404 (each must still be requested exactly once).
BROKEN = ["/guide/removed-page.html", "/api/pkg3/gone.html", "/howto/recipe99.html"]
# Linked without the trailing slash: nginx answers 301 to the slash form.
SLASHLESS = ["/tutorial", "/howto"]


def _dir_url(file_path: str) -> str:
    return posixpath.dirname(file_path).rstrip("/") + "/"


# -- spelling links --------------------------------------------------------------------------

def spell(target: str, page_dir: str, origin: str, style: int) -> str:
    """``target`` (a URL path, maybe with ``#frag``) as written on a page in ``page_dir``."""
    path, _, frag = target.partition("#")
    suffix = f"#{frag}" if frag else ""
    if style == 0 or style == 1:  # relative, the Sphinx way (../../api/x.html)
        rel = posixpath.relpath(path, page_dir) if path != "/" else posixpath.relpath("/",
                                                                                      page_dir)
        if path.endswith("/") and rel != ".":
            rel += "/"
        if rel == ".":
            rel = "./"
        if style == 1 and not rel.startswith(".."):
            rel = "./" + rel if not rel.startswith("./") else rel
        return rel + suffix
    if style == 2:  # root-relative
        return path + suffix
    return origin + path + suffix  # absolute, same site


# -- text padding ----------------------------------------------------------------------------

class Padding:
    """A pool of paragraphs, code blocks and tables, drawn from to reach a page's target size.
    Built once per site so padding 80 MB costs joins, not random draws per word."""

    def __init__(self, rng: random.Random) -> None:
        self.blocks: list[str] = []
        for n in range(400):
            kind = n % 8
            if kind < 5:
                words = [rng.choice(WORDS) for _ in range(rng.randint(40, 160))]
                for i in range(0, len(words), rng.randint(5, 12)):
                    words[i] = f"<code class=\"xref\">{words[i]}()</code>"
                text = " ".join(words)
                self.blocks.append(f"<p>{text[0].upper()}{text[1:]}.</p>\n")
            elif kind < 7:
                lines = [f"    {rng.choice(WORDS)} = crawl({rng.choice(WORDS)!r}, "
                         f"threads={rng.randint(1, 64)})  # {rng.choice(WORDS)}"
                         for _ in range(rng.randint(4, 20))]
                self.blocks.append('<div class="highlight"><pre><span class="n">'
                                   + html.escape("\n".join(lines)) + "</span></pre></div>\n")
            else:
                rows = "".join(f"<tr><td><code>{rng.choice(WORDS)}</code></td><td>"
                               f"{' '.join(rng.choice(WORDS) for _ in range(12))}</td></tr>"
                               for _ in range(rng.randint(3, 12)))
                self.blocks.append(f'<table class="docutils"><tbody>{rows}</tbody></table>\n')

    def take(self, rng: random.Random, size: int) -> list[str]:
        out: list[str] = []
        n = 0
        while n < size:
            block = self.blocks[rng.randrange(len(self.blocks))]
            out.append(block)
            n += len(block)
        return out


def _target_size(rng: random.Random, path: str) -> int:
    """Bytes a page is padded to: mostly 20–60 KB, a tail up to 2 MB (long API pages)."""
    if path == "/reference/all.html":
        return 2_000_000  # the one 2 MB page
    r = rng.random()
    if r < 0.6:
        return rng.randint(20_000, 60_000)
    if r < 0.9:
        return rng.randint(60_000, 250_000)
    if r < 0.98:
        return rng.randint(250_000, 800_000)
    return rng.randint(800_000, 1_900_000)


# -- the site --------------------------------------------------------------------------------

def generate(root: str | os.PathLike[str], origin: str, seed: int = 1) -> Site:
    """Write the site under ``root`` (emptied first) for a crawl of ``origin``; return it."""
    origin = origin.rstrip("/")
    rng = random.Random(seed)
    pad = Padding(rng)
    root_path = Path(root)
    if root_path.exists():
        shutil.rmtree(root_path)
    root_path.mkdir(parents=True)
    site = Site(root_path, origin)

    sections = _inventory()
    all_pages = [p for paths in sections.values() for p in paths]
    api_mods = [p for p in sections["api"] if "/mod" in p]
    api_objects = [f"{m}#{m[5:-5].replace('/', '.')}.{rng.choice(WORDS)}{k}"
                   for m in api_mods for k in range(12)]  # 12 documented objects per module
    # The sidebar: every page of the small sections, the section indexes and some reference
    # pages — about 200 links, identical on every page except for how they are spelled.
    sidebar = (["/index.html"] + [s[0] for s in sections.values() if s[0] != "/index.html"]
               + sections["guide"][1:] + sections["tutorial"][1:] + sections["howto"][1:]
               + [p for p in sections["api"] if p.endswith("/index.html")][1:]
               + sections["reference"][2:22] + ["/genindex.html", "/py-modindex.html"])
    sidebar = list(dict.fromkeys(sidebar))
    # Changelog pages are reachable only through the prev/next chain from the changelog index,
    # so the crawl has a long tail of depth (BFS depth ~40) with little parallelism.
    chain = sections["changelog"]

    for path in all_pages:
        page_dir = _dir_url(path)
        section = path.split("/")[1] if path.count("/") > 1 else ""
        peers = sections[section] if section in sections else sections[""]
        targets: list[tuple[str, int]] = []  # (URL path[#frag], spelling style)

        def add(target: str, style: int = 0, targets: list[tuple[str, int]] = targets) -> None:
            targets.append((target, style))

        # Header: logo to "/", home, search, the section directory with a trailing slash.
        add("/", 0)
        add("/index.html", 2)
        add("/search.html", 0)
        add("/genindex.html", 0)
        if section:
            add(f"/{section}/", 0)
        for n, target in enumerate(sidebar):  # sidebar, relative; every 40th with "./"
            add(target, 1 if n % 40 == 7 else 0)
        # Local table of contents: fragment-only links, each a link to this very page.
        n_sections = rng.randint(5, 25)
        local_toc = [f"#sec-{k}" for k in range(n_sections)]
        # Breadcrumbs and prev/next within the section.
        idx = peers.index(path)
        if idx > 0:
            add(peers[idx - 1], 1)
        if idx + 1 < len(peers):
            add(peers[idx + 1], 0)
        # Cross-references in the text: API objects with fragments, other pages, some spelled
        # root-relative, one absolute permalink.
        if path in chain[1:] or path == "/changelog/index.html":
            body = []
        elif path.startswith("/api/"):
            body = rng.sample(api_objects, rng.randint(30, 90))
        else:
            body = (rng.sample(api_objects, rng.randint(5, 30))
                    + rng.sample(all_pages[:-41], rng.randint(5, 40)))
        for n, target in enumerate(body):
            add(target, 2 if n % 9 == 4 else 0)
        add(path + "#sec-0", 3)  # absolute permalink to itself
        # Index pages: thousands of links.
        if path == "/genindex.html":
            for n, target in enumerate(api_objects):
                add(target, 0 if n % 13 else 2)
        elif path == "/api/index.html":
            for target in api_objects[::2] + api_mods:
                add(target, 0)
        elif path == "/reference/all.html":
            for target in api_objects[1::3] + sections["reference"] + sections["guide"]:
                add(target, 1)
        elif path == "/py-modindex.html":
            for target in api_mods:
                add(target, 0)
        elif path.endswith("/index.html") and section in ("api", "guide", "tutorial", "howto",
                                                          "reference"):
            for target in peers:
                if _dir_url(target).startswith(page_dir):
                    add(target, 0)
        # The odd ones: broken links, slashless directory links (redirects), the changelog.
        if path in ("/guide/errors.html", "/api/pkg3/mod05.html", "/howto/index.html"):
            add(BROKEN[("/guide/errors.html", "/api/pkg3/mod05.html",
                        "/howto/index.html").index(path)], 0)
        if path in ("/index.html", "/guide/quickstart.html"):
            add(SLASHLESS[0] if path == "/index.html" else SLASHLESS[1], 2)
        if path == "/index.html":
            add("/changelog/index.html", 0)

        hrefs = [spell(t, page_dir, origin, s) for t, s in targets]
        # + one headerlink per content section (as many as local TOC entries)
        site.links_per_page[path] = (len(hrefs) + 2 * len(local_toc) + len(OFFSITE)
                                     + len(NOT_HTTP))
        size = _target_size(rng, path)
        body_html = _render(path, hrefs, len(sidebar), local_toc, size, pad, rng)
        out = root_path / path.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(body_html)
        site.files[path] = len(body_html)

        # The graph, from the spelled hrefs resolved the way a browser would (not from targets).
        page_url = origin + path
        resolved = []
        for href in hrefs:
            absolute, _frag = urldefrag(urljoin(page_url, href))
            parts = urlsplit(absolute)
            assert f"{parts.scheme}://{parts.netloc}" == origin, (path, href)
            resolved.append(parts.path)
        intended = [t.partition("#")[0] for t, _ in targets]
        assert resolved == intended, (path, [(h, r, i) for h, r, i in
                                             zip(hrefs, resolved, intended, strict=True)
                                             if r != i][:3])
        site.graph[path] = list(dict.fromkeys(resolved))

    for path in ORPHANS:
        out = root_path / path.lstrip("/")
        out.parent.mkdir(parents=True, exist_ok=True)
        data = _render(path, [spell("/index.html", "/orphan/", origin, 0)], 0, [], 25_000, pad,
                       rng)
        out.write_bytes(data)
        site.files[path] = len(data)
        site.links_per_page[path] = 1

    # URL aliases as nginx serves them: a directory URL is its index.html; a slashless
    # directory is a 301 to the slash form; a missing file is a 404 with no links.
    for path in list(site.graph):
        if path.endswith("/index.html"):
            site.graph[path[: -len("index.html")]] = site.graph[path]
    for d in SLASHLESS:
        site.graph[d] = [d + "/"]
    for path in BROKEN:
        site.graph[path] = []
    site.expected = bfs(site.graph, "/")
    return site


def bfs(graph: dict[str, list[str]], start: str) -> dict[str, int]:
    """URL path → hops from ``start``: every URL a correct crawl requests, exactly once."""
    depth = {start: 0}
    todo = deque([start])
    while todo:
        path = todo.popleft()
        for target in graph.get(path, ()):
            if target not in depth:
                depth[target] = depth[path] + 1
                todo.append(target)
    return depth


def _render(path: str, hrefs: list[str], sidebar_len: int, local_toc: list[str], size: int,
            pad: Padding, rng: random.Random) -> bytes:
    """The page's HTML: header, sidebar, content sections with links spread through the text,
    footer. ``hrefs`` keep their order: header, sidebar, then the body links."""
    title = path.rsplit("/", 1)[-1].removesuffix(".html").replace("-", " ").title()
    n_nav = min(len(hrefs), 4 + (1 if path.count("/") > 1 else 0))
    head = hrefs[:n_nav]
    rest = hrefs[n_nav:]
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f"<title>{title} — minicrawl documentation</title>\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<style>body{font-family:sans-serif;margin:0}.sidebar{width:18em;float:left}"
        ".body{margin-left:19em}.headerlink{visibility:hidden}</style>\n</head>\n<body>\n"
        '<div class="header">'
    ]
    labels = ["minicrawl", "Home", "Search", "Index", "Section"]
    parts += [f'<a class="nav" href="{html.escape(h)}">{labels[n]}</a> '
              for n, h in enumerate(head)]
    parts.append('</div>\n<div class="sidebar" role="navigation"><ul class="toctree">\n')
    # The sidebar is the run of hrefs that follows the header; the body links come after it.
    sidebar_len = min(len(rest), sidebar_len)
    for h in rest[:sidebar_len]:
        name = h.rsplit("/", 1)[-1].removesuffix(".html") or "index"
        parts.append(f'<li class="toctree-l1"><a class="reference internal" '
                     f'href="{html.escape(h)}">{name}</a></li>\n')
    parts.append("</ul>\n<ul class=\"local-toc\">")
    parts += [f'<li><a href="{t}">Section {t[5:]}</a></li>' for t in local_toc]
    parts.append(f'</ul></div>\n<div class="body" role="main">\n<h1>{title}</h1>\n')
    body_links = rest[sidebar_len:]
    n_sections = max(1, len(local_toc))
    per_section = -(-len(body_links) // n_sections)
    # What the links and the page frame weigh (about 70 bytes of markup per link), so the
    # padding brings the whole page to ``size``.
    fixed = sum(len(h) for h in hrefs) * 2 + 70 * len(hrefs) + 120 * n_sections + 1_000
    pad_each = max(0, size - fixed) // n_sections
    for k in range(n_sections):
        parts.append(f'<div class="section" id="sec-{k}"><h2>Section {k}'
                     f'<a class="headerlink" href="#sec-{k}" title="Permalink">¶</a></h2>\n')
        blocks = pad.take(rng, pad_each)
        mine = body_links[k * per_section:(k + 1) * per_section]
        for n, h in enumerate(mine):  # links sit inside the text, as cross-references do
            at = rng.randrange(len(blocks) + 1)
            blocks.insert(at, f'<p>See <a class="reference internal" href="{html.escape(h)}">'
                              f"<code>{html.escape(h.rsplit('/', 1)[-1])}</code></a>"
                              f"{'.' if n % 2 else ' for details.'}</p>\n")
        parts += blocks
        parts.append("</div>\n")
    parts.append('</div>\n<div class="footer">')
    parts += [f'<a href="{html.escape(h)}">elsewhere</a> ' for h in OFFSITE + NOT_HTTP]
    parts.append("&copy; minicrawl authors.</div>\n</body></html>\n")
    return "".join(parts).encode()


def write_expected(site: Site, path: str | os.PathLike[str]) -> None:
    """The expected set (URL path → BFS depth) and the orphans, as JSON."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"origin": site.origin, "expected": site.expected, "orphans": ORPHANS,
                   "broken": BROKEN, "redirects": SLASHLESS}, f, indent=1, sort_keys=True)


def main() -> None:
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", help="directory to write the site into (emptied first)")
    ap.add_argument("--origin", default="http://127.0.0.1:8080",
                    help="scheme://host:port the site will be crawled at (for absolute links)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    started = time.perf_counter()
    site = generate(args.dir, args.origin, args.seed)
    write_expected(site, os.path.join(args.dir, "expected.json"))
    print(f"{site.describe()}; written in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
