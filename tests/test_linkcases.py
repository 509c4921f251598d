"""Both crawlers request exactly the links a browser finds on each link case page.

The cases (tests/data/linkcases/, described in tests/linkcases.py) are crafted pages: encodings
(BOMs, HTTP charset against <meta>, WHATWG labels Python does not know, legacy encodings with
non-ASCII paths and queries, pages that declare none in 12 languages), whitespace in hrefs,
<base>, which elements are links, meta refresh, pages with no Content-Type, nofollow, broken
HTML.

How the truth was obtained: tests/linkcases_record.py served these same bytes and headers on
127.0.0.1 and loaded each case in headless Chromium 156.0.8078.108 (Debian 12's ``chromium``
package, driven through ``chromedriver``; scripting on, ``--lang=en-US``), and recorded into
tests/data/linkcases/truth.json what the browser resolved from the parsed DOM (``a.href``,
``area.href``, ``iframe.src``, ``frame.src``, ``link.href``, an SVG ``<a>``'s href against
``document.baseURI``; ``document.characterSet`` and ``baseURI`` too) and the navigations it made
itself (refreshes, frames: the requests the server saw). CI has no browser: the truth is
committed, and re-recorded by hand when a case changes.

What a crawler should request from a page is Chromium's links (tests/linkcases.py: ``expected``)
on the page's host, fragment dropped and in the core's canonical form — <a>, <area>, SVG <a>,
frames, <link rel=next|prev|alternate|canonical>, a refresh — less the ones the page says not
to follow: nofollow is no browser idea, so for those cases the expected requests are the
browser's links minus the nofollow ones (rel=nofollow as Chromium parsed it; a page's
``nofollow`` from its manifest entry, written by hand).

Each crawler crawls the site once (an index page linking every case, then the cases' links);
the site's log says what each requested from each case's directory.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.linkcases import CaseSite, cases, expected, truth

ROOT = Path(__file__).resolve().parents[1]

CRAWLERS = {
    "run.py": lambda url: [sys.executable, "run.py", url, "--delay", "0", "--per-host", "8",
                           "--ignore-robots", "--max-depth", "2", "--keep-duplicates",
                           "--quiet"],
    "core": lambda url: [sys.executable, "-m", "minicrawl.core", url, "--threads", "8"],
}

# What the crawlers do not get right (strict: once fixed, take it off): a windows-1250 page that
# declares none, which Chromium's detector guesses; minicrawl keeps windows-1252 for a Latin-script
# guess (minicrawl/html/encoding.py: beautifulsoup4's detector takes Western windows-1252 pages for
# windows-1250), so the page's non-ASCII path is another URL (its query keeps the page's bytes).
KNOWN: dict[str, dict[str, str]] = {crawler: {
    "encoding-undeclared-windows-1250": "Chromium guesses windows-1250 for a page that declares "
                                        "none; minicrawl keeps windows-1252 for a Latin script"}
    for crawler in ("run.py", "core")}


@pytest.fixture(scope="module")
def site() -> Iterator[CaseSite]:
    with CaseSite() as site:
        yield site


@pytest.fixture(scope="module")
def requested(site: CaseSite) -> dict[str, dict[str, set[str]]]:
    """Crawler → case → the canonical URLs it requested from the case's directory."""
    runs = {}
    for crawler, command in CRAWLERS.items():
        site.requests.clear()
        done = subprocess.run(command(site.url("/")), cwd=ROOT, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert not site.stray(), site.stray()  # every request belongs to a case
        runs[crawler] = site.requested()
    return runs


def test_the_truth_is_of_every_case() -> None:
    assert set(truth()) - {"_chromium"} == set(cases())
    assert truth()["_chromium"].startswith("Chromium 156.")


def test_enough_cases_in_every_category() -> None:
    counts: dict[str, int] = {}
    for case in cases().values():
        counts[case.category] = counts.get(case.category, 0) + 1
    assert len(cases()) >= 80
    assert counts["encoding"] >= 20 and counts["nofollow"] >= 9, counts
    assert set(counts) == {"encoding", "whitespace", "base", "element", "refresh", "sniff",
                           "nofollow", "broken"}


def _params() -> list:
    params = []
    for crawler in CRAWLERS:
        for name, case in cases().items():
            marks = []
            if name in KNOWN[crawler]:
                marks.append(pytest.mark.xfail(strict=True, reason=f"{case.category}: "
                                                                   f"{KNOWN[crawler][name]}"))
            params.append(pytest.param(crawler, name, marks=marks, id=f"{crawler}:{name}"))
    return params


@pytest.mark.parametrize(("crawler", "name"), _params())
def test_requests_what_the_browser_finds(requested: dict[str, dict[str, set[str]]],
                                         site: CaseSite, crawler: str, name: str) -> None:
    assert requested[crawler][name] == expected(name, site.origin), cases()[name].about

