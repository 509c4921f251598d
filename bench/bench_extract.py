"""Link extraction per page: the core's extractor (both crawlers') on the Java API docs, on the
link case pages and on the demo site's pages.

Run by hand: ``python bench/bench_extract.py``. Prints µs per page (and per href) for each set,
one thread, the best of three rounds of at least a second each; ``--edges``: each page's edges
recorded too (:mod:`minicrawl.html.edges`, what ``--links`` asks of the walk). The Java docs
are Debian's ``openjdk-17-doc`` (``apt-get install openjdk-17-doc``; the set is skipped without
it): every 200th of its ~10,000 pages, and ``java/lang/String.html`` (~400 KB, 1,700 links)
alone.

``--facts``: the page facts' cost (:mod:`minicrawl.html.facts`, what run.py asks of every walk
for ``--out``): each set walked plain, with facts, with edges and with both, the four
alternated round by round (a burst of load from elsewhere hits all of them), each the best of
``--rounds`` rounds, CPU time (``process_time``): µs per page, and the facts' extra over the
plain walk and over the edges'. Adds ``allclasses-index.html`` (1.9 MB: a streamed page; with
edges, a pulled one).
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
from minicrawl.html.facts import record_facts, recorded_walk  # noqa: E402
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


MODES = ("plain", "facts", "edges", "edges+facts")


def one_pass(pages: Sequence[Page], mode: str) -> float:
    """CPU seconds of one pass over ``pages`` walked as ``mode`` asks (one of ``MODES``)."""
    facts, edges = "facts" in mode, "edges" in mode
    start = time.process_time()
    for body, headers in pages:
        if facts:
            record_facts(edges)
        elif edges:
            record_edges()
        extract_links(body, headers)
        if facts:
            walked = recorded_walk()
            assert walked is not None and walked.reader is not None
            walked.reader.facts()
        elif edges:
            recorded_edges()
    return time.process_time() - start


def compare(pages: Sequence[Page], rounds: int, seconds: float) -> dict[str, float]:
    """µs of CPU per page for each of ``MODES``: the best round's, the modes alternated in
    each round (each pass repeated for at least ``seconds``)."""
    best = dict.fromkeys(MODES, float("inf"))
    for _ in range(rounds):
        for mode in MODES:
            done, spent = 0, 0.0
            while spent < seconds or not done:
                spent += one_pass(pages, mode)
                done += 1
            best[mode] = min(best[mode], spent / done)
    return {mode: cpu / len(pages) * 1e6 for mode, cpu in best.items()}


def main() -> None:
    html = {"Content-Type": "text/html"}
    sets: dict[str, list[Page]] = {}
    facts = "--facts" in sys.argv[1:]
    if DOCS.is_dir():
        docs = sorted(DOCS.rglob("*.html"))
        sample = [(p.read_bytes(), html) for p in docs[::200]]
        if facts:  # the big page alone (as in bench/README.md's table of --edges)
            sample = [page for page in sample if len(page[0]) <= 512 * 1024]
        sets[f"Java API docs, every 200th of {len(docs):,} pages"] = sample
        sets["Java API docs, java/lang/String.html"] = [
            ((DOCS / "java.base/java/lang/String.html").read_bytes(), html)]
        if facts:
            sets["Java API docs, allclasses-index.html"] = [
                ((DOCS / "allclasses-index.html").read_bytes(), html)]
    sets[f"link case pages ({len(cases())})"] = [(c.body, dict(c.headers))
                                                 for c in cases().values()]
    site = generate_site("http://127.0.0.1:8000", pages=300)
    sets["demo site pages"] = [(r.body, html) for r in site.pages.values()
                               if r.body.startswith(b"<!DOCTYPE")]
    if facts:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1]) if "--rounds" in sys.argv else 5
        for name, pages in sets.items():
            us = compare(pages, rounds, 1.0)
            size = sum(len(body) for body, _ in pages) / len(pages) / 1024
            print(f"{name}: {len(pages)} pages, {size:.1f} KiB each, µs/page: " + ", ".join(
                f"{mode} {us[mode]:,.1f}" for mode in MODES)
                + f"; facts add {us['facts'] - us['plain']:,.1f} "
                f"({(us['facts'] / us['plain'] - 1) * 100:+.0f} %), to edges "
                f"{us['edges+facts'] - us['edges']:,.1f}", flush=True)
        return
    edges = "--edges" in sys.argv[1:]
    for name, pages in sets.items():
        per_page, per_href = measure(pages, edges=edges)
        size = sum(len(body) for body, _ in pages) / len(pages) / 1024
        print(f"{name}: {len(pages)} pages, {size:.1f} KiB each: "
              f"{per_page:9.1f} µs/page {per_href:6.2f} µs/href")


if __name__ == "__main__":
    main()
