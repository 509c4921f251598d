"""Link extraction per page: the core's extractor (both crawlers') on the Java API docs, on the
link case pages and on the demo site's pages.

Run by hand: ``python bench/bench_extract.py``. Prints µs per page (and per href) for each set,
one thread, the best of three rounds of at least a second each; ``--edges``: each page's edges
recorded too (:mod:`minicrawl.html.edges`, what ``--links`` asks of the walk). The Java docs
are Debian's ``openjdk-17-doc`` (``apt-get install openjdk-17-doc``; the set is skipped without
it): every 200th of its ~10,000 pages, and ``java/lang/String.html`` (~400 KB, 1,700 links)
alone.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from minicrawl.core.links import extract_links  # noqa: E402
from minicrawl.demo import generate_site  # noqa: E402
from minicrawl.html.edges import record_edges, recorded_edges  # noqa: E402
from tests.linkcases import cases  # noqa: E402

DOCS = Path("/usr/share/doc/openjdk-17-jre-headless/api")
Page = tuple[bytes, dict[str, str]]


def measure(pages: Sequence[Page], rounds: int = 3, seconds: float = 1.0,
            edges: bool = False) -> tuple[float, float]:
    """(µs per page, µs per href): the best round's; ``edges``: recorded too, as a crawl with
    ``--links`` asks (before each page) and takes them (after)."""
    best = float("inf")
    hrefs = sum(len(extract_links(body, headers).hrefs) for body, headers in pages)
    for _ in range(rounds):
        done, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds or not done:
            for body, headers in pages:
                if edges:
                    record_edges()
                extract_links(body, headers)
                if edges:
                    recorded_edges()
            done += 1
        best = min(best, elapsed / done)
    return best / len(pages) * 1e6, best / max(1, hrefs) * 1e6


def main() -> None:
    html = {"Content-Type": "text/html"}
    sets: dict[str, list[Page]] = {}
    if DOCS.is_dir():
        docs = sorted(DOCS.rglob("*.html"))
        sets[f"Java API docs, every 200th of {len(docs):,} pages"] = [
            (p.read_bytes(), html) for p in docs[::200]]
        sets["Java API docs, java/lang/String.html"] = [
            ((DOCS / "java.base/java/lang/String.html").read_bytes(), html)]
    sets[f"link case pages ({len(cases())})"] = [(c.body, dict(c.headers))
                                                 for c in cases().values()]
    site = generate_site("http://127.0.0.1:8000", pages=300)
    sets["demo site pages"] = [(r.body, html) for r in site.pages.values()
                               if r.body.startswith(b"<!DOCTYPE")]
    edges = "--edges" in sys.argv[1:]
    for name, pages in sets.items():
        per_page, per_href = measure(pages, edges=edges)
        size = sum(len(body) for body, _ in pages) / len(pages) / 1024
        print(f"{name}: {len(pages)} pages, {size:.1f} KiB each: "
              f"{per_page:9.1f} µs/page {per_href:6.2f} µs/href")


if __name__ == "__main__":
    main()
