"""Link resolution speed: the core's ``resolve`` and run.py's ``LinkResolver`` (its caches over it).

    python bench/bench_urls.py [ROUNDS]

Two sets of links, each resolved ROUNDS times (the best and the median round are printed):

* typical links: 100k (href, page) pairs as pages hold them — relative paths, ``../`` and
  ``?query`` forms, absolute URLs on a few hundred hosts (ASCII, as nearly all are; 1 in 200 an
  IDN, 1 in 500 an IPv4 literal), some with ports and fragments;
* the Java docs: every href of every page of Debian's ``openjdk-17-doc`` API docs (~10,000
  pages, ~660,000 hrefs, read once with lxml and kept in a file under the temporary directory),
  the pages in path order, as a crawl of ``http://docs.test/api/`` meets them; skipped if the
  docs are not installed (``bench/javadoc.py`` installs them).

Each set goes through the core's ``resolve(page, href)`` one link at a time, and through one
``LinkResolver`` (fresh each round, so its caches fill as in a crawl) a page's hrefs at a time.
Run it from a checkout's root: it imports that checkout's ``minicrawl``. Compare two checkouts in
the same run (the baseline and the change), as bench/README.md says.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from minicrawl.core.urls import resolve  # noqa: E402
from minicrawl.options import Options  # noqa: E402
from minicrawl.resolve import LinkResolver  # noqa: E402
from minicrawl.scope import Scope  # noqa: E402

N = 100_000
DOCS = Path("/usr/share/doc/openjdk-17-jre-headless/api")
DOCS_URL = "http://docs.test/api/"
Pages = list[tuple[str, list[str]]]  # (page URL, its hrefs in page order)


def typical_links(n: int = N, seed: int = 5) -> Pages:
    """``n`` one-link pages, the same for the same seed."""
    rng = random.Random(seed)
    hosts = [f"www.site{i}.example" for i in range(300)]
    hosts += ["b\u00fccher.example", "fa\u00df.example", "\u4f8b\u3048.jp"]
    words = ["news", "about", "products", "2024", "index.html", "a-long-article-title", "img"]
    out = []
    for j in range(n):
        host = hosts[rng.randrange(300)] if rng.random() > 0.005 else rng.choice(hosts[300:])
        if rng.random() < 0.002:
            host = f"10.0.{rng.randrange(256)}.{rng.randrange(256)}"
        base = f"https://{host}/{rng.choice(words)}/{rng.choice(words)}"
        path = "/".join(rng.choice(words) for _ in range(rng.randrange(1, 4)))
        href = (f"/{path}", path, f"../{path}", f"?page={j % 50}", "#top",
                f"https://{host}/{path}?id={j}", f"http://{host}:8080/{path}",
                f"//{host}/{path}#x")[j % 8]
        out.append((base, [href]))
    return out


def javadoc_links() -> Pages | None:
    """The Java docs' pages and their hrefs (read once, then from the file kept), or None."""
    kept = Path(tempfile.gettempdir()) / "minicrawl-bench-javadoc-links.json"
    if kept.exists():
        return [(page, hrefs) for page, hrefs in json.loads(kept.read_text())]
    if not DOCS.is_dir():
        return None
    import lxml.html

    pages = []
    for path in sorted(DOCS.rglob("*.html")):
        tree = lxml.html.parse(str(path))
        hrefs = [el.get("href") or el.get("src") or ""
                 for el in tree.iter("a", "area", "frame", "iframe")]
        hrefs = list(dict.fromkeys(h.strip() for h in hrefs if h))
        pages.append((DOCS_URL + path.relative_to(DOCS).as_posix(), hrefs))
    kept.write_text(json.dumps(pages))
    return pages


def core_resolve(pages: Pages) -> None:
    for page, hrefs in pages:
        for href in hrefs:
            resolve(page, href)


def link_resolver(pages: Pages) -> None:
    resolver = LinkResolver(Options(), [Scope([DOCS_URL])])
    counts: dict[str, int] = {}
    for page, hrefs in pages:
        resolver.resolve(hrefs, page, counts)


def timed(run: Callable[[Pages], None], pages: Pages, rounds: int) -> str:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run(pages)
        times.append(time.perf_counter() - started)
    links = sum(len(hrefs) for _, hrefs in pages)
    best = min(times)
    return (f"best {best:.3f} s, median {statistics.median(times):.3f} s, "
            f"{best / links * 1e6:.2f} us/link")


def main() -> None:
    """Time both ways on both sets of links."""
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sets = {"typical links": typical_links()}
    if (javadoc := javadoc_links()) is not None:
        sets["Java docs"] = javadoc
    for name, pages in sets.items():
        links = sum(len(hrefs) for _, hrefs in pages)
        print(f"{name}: {len(pages):,} pages, {links:,} hrefs, {rounds} rounds")
        print(f"  core resolve    {timed(core_resolve, pages, rounds)}")
        print(f"  LinkResolver    {timed(link_resolver, pages, rounds)}")


if __name__ == "__main__":
    main()
