"""Both crawlers request exactly the links a browser finds on each link case page.

The cases (tests/data/linkcases/, described in tests/linkcases.py) are crafted pages: encodings
(BOMs, HTTP charset against <meta>, WHATWG labels Python does not know, legacy encodings with
non-ASCII paths and queries), whitespace in hrefs, <base>, which elements are links, meta
refresh, pages with no Content-Type, nofollow, broken HTML.

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

# Cases a crawler does not get right yet, by crawler: each an xfail (strict: a fixed case fails
# the run until it is taken off this list).
XFAIL: dict[str, dict[str, str]] = {
    "run.py": {
        "base-in-template-ignored": "not yet",
        "base-invalid-ignored": "not yet",
        "base-not-http": "not yet",
        "base-query-fragment": "not yet",
        "base-relative": "not yet",
        "element-entities-in-href": "not yet",
        "element-frame-outside-frameset": "not yet",
        "element-link-rel": "not yet",
        "element-mathml": "not yet",
        "element-noscript": "not yet",
        "element-svg": "not yet",
        "element-template": "not yet",
        "encoding-big5-header": "not yet",
        "encoding-bom-utf16be-beats-header": "not yet",
        "encoding-bom-utf8-beats-header": "not yet",
        "encoding-euc-kr-label": "not yet",
        "encoding-eucjp-http-equiv": "not yet",
        "encoding-gb2312-is-gbk": "not yet",
        "encoding-header-beats-meta": "not yet",
        "encoding-http-equiv-attributes-reversed": "not yet",
        "encoding-http-equiv-quoted-charset": "not yet",
        "encoding-iso-8859-1-is-1252": "not yet",
        "encoding-iso-8859-11-is-874": "not yet",
        "encoding-iso-8859-2": "not yet",
        "encoding-koi8r-http-equiv": "not yet",
        "encoding-latin1-label": "not yet",
        "encoding-meta-after-1024-bytes": "not yet",
        "encoding-meta-in-comment-skipped": "not yet",
        "encoding-meta-label-blanks-case": "not yet",
        "encoding-meta-utf16-means-utf8": "not yet",
        "encoding-meta-utf16be-means-utf8": "not yet",
        "encoding-none-1252-bytes": "not yet",
        "encoding-none-utf8-bytes": "not yet",
        "encoding-replacement": "not yet",
        "encoding-sjis-meta": "not yet",
        "encoding-unknown-header-label": "not yet",
        "encoding-us-ascii-header": "not yet",
        "encoding-x-sjis-label": "not yet",
        "encoding-x-user-defined-meta": "not yet",
        "encoding-xml-declaration": "not yet",
        "nofollow-a-rel": "not yet",
        "nofollow-area-rel": "not yet",
        "nofollow-meta-minicrawl": "not yet",
        "nofollow-meta-robots-list": "not yet",
        "nofollow-meta-robots-nofollow": "not yet",
        "nofollow-meta-robots-none": "not yet",
        "nofollow-x-robots-tag": "not yet",
        "nofollow-x-robots-tag-list": "not yet",
        "nofollow-x-robots-tag-ours": "not yet",
        "refresh-basic": "not yet",
        "refresh-comma-delay": "not yet",
        "refresh-header": "not yet",
        "refresh-in-body": "not yet",
        "refresh-no-url-keyword": "not yet",
        "refresh-non-ascii-query": "not yet",
        "refresh-quoted-upper": "not yet",
        "refresh-two-same-delay": "not yet",
        "refresh-two-shorter-later": "not yet",
        "refresh-two-shorter-wins": "not yet",
        "sniff-a-first": "not yet",
        "sniff-comment-first": "not yet",
        "sniff-doctype": "not yet",
        "sniff-leading-blanks-html": "not yet",
        "whitespace-controls": "not yet",
        "whitespace-ideographic-space": "not yet",
        "whitespace-nbsp": "not yet",
    },
    "core": {
        "base-in-template-ignored": "not yet",
        "base-invalid-ignored": "not yet",
        "base-not-http": "not yet",
        "element-entities-in-href": "not yet",
        "element-frame-outside-frameset": "not yet",
        "element-link-rel": "not yet",
        "element-mathml": "not yet",
        "element-noscript": "not yet",
        "element-svg": "not yet",
        "element-template": "not yet",
        "encoding-big5-header": "not yet",
        "encoding-bom-utf16be-beats-header": "not yet",
        "encoding-bom-utf8-beats-header": "not yet",
        "encoding-euc-kr-label": "not yet",
        "encoding-eucjp-http-equiv": "not yet",
        "encoding-gb2312-is-gbk": "not yet",
        "encoding-header-beats-meta": "not yet",
        "encoding-http-equiv-attributes-reversed": "not yet",
        "encoding-http-equiv-quoted-charset": "not yet",
        "encoding-iso-8859-1-is-1252": "not yet",
        "encoding-iso-8859-11-is-874": "not yet",
        "encoding-iso-8859-2": "not yet",
        "encoding-koi8r-http-equiv": "not yet",
        "encoding-latin1-label": "not yet",
        "encoding-meta-after-1024-bytes": "not yet",
        "encoding-meta-in-comment-skipped": "not yet",
        "encoding-meta-label-blanks-case": "not yet",
        "encoding-meta-utf16-means-utf8": "not yet",
        "encoding-meta-utf16be-means-utf8": "not yet",
        "encoding-none-1252-bytes": "not yet",
        "encoding-none-utf8-bytes": "not yet",
        "encoding-replacement": "not yet",
        "encoding-sjis-meta": "not yet",
        "encoding-unknown-header-label": "not yet",
        "encoding-us-ascii-header": "not yet",
        "encoding-x-sjis-label": "not yet",
        "encoding-x-user-defined-meta": "not yet",
        "encoding-xml-declaration": "not yet",
        "nofollow-a-rel": "not yet",
        "nofollow-area-rel": "not yet",
        "nofollow-meta-minicrawl": "not yet",
        "nofollow-meta-robots-list": "not yet",
        "nofollow-meta-robots-nofollow": "not yet",
        "nofollow-meta-robots-none": "not yet",
        "nofollow-x-robots-tag": "not yet",
        "nofollow-x-robots-tag-list": "not yet",
        "nofollow-x-robots-tag-ours": "not yet",
        "refresh-basic": "not yet",
        "refresh-comma-delay": "not yet",
        "refresh-header": "not yet",
        "refresh-in-body": "not yet",
        "refresh-no-url-keyword": "not yet",
        "refresh-non-ascii-query": "not yet",
        "refresh-quoted-upper": "not yet",
        "refresh-two-same-delay": "not yet",
        "refresh-two-shorter-later": "not yet",
        "refresh-two-shorter-wins": "not yet",
        "sniff-bom-then-html": "not yet",
        "sniff-plain-text": "not yet",
        "sniff-png": "not yet",
        "whitespace-ideographic-space": "not yet",
        "whitespace-nbsp": "not yet",
    },
}


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
            if name in XFAIL[crawler]:
                marks.append(pytest.mark.xfail(strict=True, reason=f"{case.category}: "
                                                                   f"{XFAIL[crawler][name]}"))
            params.append(pytest.param(crawler, name, marks=marks, id=f"{crawler}:{name}"))
    return params


@pytest.mark.parametrize(("crawler", "name"), _params())
def test_requests_what_the_browser_finds(requested: dict[str, dict[str, set[str]]],
                                         site: CaseSite, crawler: str, name: str) -> None:
    assert requested[crawler][name] == expected(name, site.origin), cases()[name].about
