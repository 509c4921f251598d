"""The report's tables, first, as a person opens them: the report of ``python run.py
--check-links --report`` on a local site with known breakage, rendered by a real headless
Chromium (``--dump-dom``: the DOM after parsing and after any script would have run). The
broken-link table is the first table and holds every link to each broken URL, clickable, with
its line and text; link texts and URLs made to be markup stay text. Then the other tables
(redirects, slowest and largest pages, status by section) read from the file, the report of a
crawl that did not record links, and the report without matplotlib (``pip install .``).

Chromium: ``.ci/run`` installs it; here the test is skipped only if no binary can be found."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import lxml.html
import pytest

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "2", "--retries", "0", "--quiet"]
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
PWN = "document.documentElement.setAttribute('data-pwned', '{}')"
SCRIPT_TEXT = f"<script>{PWN.format(1)}</script>"
IMG_TEXT = f'<img src=x onerror="{PWN.format(2)}">'
ATTR_HREF = "/missing?\"><script>" + PWN.format(3) + "</script>"
PAGES = 6  # /p/0 … /p/5: each links to /missing from its menu


def browser() -> str | None:
    return next((path for name in BROWSERS if (path := shutil.which(name))), None)


def run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code, *args] if code else \
        [sys.executable, str(ROOT / "run.py"), *args]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def page(*rows: str) -> Resource:
    return Resource("\n".join(rows).encode())


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """/ links to /missing twice (once with a <script> as its text, once with an image whose
    alt is markup), with an href made to break out of an attribute, to a 500, to a redirect
    chain ending in a 404, to a fine redirect, and to six pages under /p/, each linking to
    /missing; /docs/big is the largest page, /docs/slow the slowest."""
    with LocalSite() as server:
        text = SCRIPT_TEXT.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        alt = IMG_TEXT.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
        href = ATTR_HREF.replace('"', "&quot;").replace("<", "&lt;")
        server.pages.update({
            # the image is fine: --check-links asks for it (what it checks: test_check_links.py)
            "/i.png": Resource(b"PNG", 200, {"Content-Type": "image/png"}),
            "/": page("<!DOCTYPE html><title>Home</title>",
                      f'<a href="/missing">{text}</a>',
                      f'<a href="/missing"><img src="/i.png" alt="{alt}"></a>',
                      f'<a href="{href}">Breaks out?</a>',
                      '<a href="/boom">Server error</a>',
                      '<a href="/old">Old</a> <a href="/moved">Moved</a>',
                      *(f'<a href="/p/{n}">p{n}</a>' for n in range(PAGES)),
                      '<a href="/docs/big">Big</a> <a href="/docs/slow">Slow</a>'),
            # (each its own bytes: a page with the bytes of one crawled before is a duplicate,
            # whose links are not read again)
            **{f"/p/{n}": page('<a href="/missing">Missing page</a>', f'<a href="/">Home {n}</a>')
               for n in range(PAGES)},
            "/boom": Resource(b"down", 500),
            "/old": Resource(b"", 301, {"Location": "/older"}),
            "/older": Resource(b"", 302, {"Location": "/gone"}),
            "/moved": Resource(b"", 301, {"Location": "/p/0"}),
            "/docs/big": Resource(b"<p>" + b"x" * 200_000 + b"</p>"),
            "/docs/slow": slow,
        })
        yield server


def slow(request: object) -> Resource:
    time.sleep(0.3)
    return Resource(b"slow")


def truth(o: str) -> dict[str, list[tuple[str, str, str]]]:
    """Each broken URL → every link to it: (page, line, text), by page then line."""
    missing = sorted([(o + "/", "2", SCRIPT_TEXT), (o + "/", "3", IMG_TEXT),
                      *((o + f"/p/{n}", "1", "Missing page") for n in range(PAGES))])
    return {
        o + "/boom": [(o + "/", "5", "Server error")],
        o + "/missing": missing,
        o + "/missing?%22%3E%3Cscript%3E" + PWN.format(3).replace(" ", "%20")
        .replace("'", "%27") + "%3C/script%3E": [(o + "/", "4", "Breaks out?")],
        o + "/old": [(o + "/", "6", "Old")],
    }


def broken_table(doc: lxml.html.HtmlElement) -> dict[str, list[tuple[str, str, str]]]:
    """The first table of the report, read: each target's URL → its links."""
    table = doc.find(".//table")
    assert table is not None and "broken" in table.get("class", "").split()
    found: dict[str, list[tuple[str, str, str]]] = {}
    for body in table.findall("tbody"):
        if body.get("class") != "target":
            continue
        head, *rows = body.findall("tr")
        target = head.find(".//a")
        assert target is not None and target.text == target.get("href")
        links = found.setdefault(target.get("href"), [])
        for row in rows:
            cells = row.findall("td")
            anchor = cells[1].find("a")
            assert anchor.text == anchor.get("href")  # clickable, to the page it is on
            links.append((anchor.get("href"), cells[2].text_content(),
                          cells[3].text_content()))
    return found


def test_chromium_shows_the_broken_links_first_every_referrer_hostile_text_as_text(
        site, tmp_path) -> None:
    chromium = browser()
    if chromium is None:
        pytest.skip("no Chromium binary (chromium, chromium-browser, google-chrome): "
                    ".ci/run installs it")
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--check-links", "--report", str(report), *FAST)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    args = [chromium, "--headless", "--disable-gpu", "--no-first-run", "--dump-dom",
            f"--user-data-dir={tmp_path / 'profile'}", report.as_uri()]
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Chromium's sandbox refuses root
        args.insert(1, "--no-sandbox")
    shown = subprocess.run(args, capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL)
    assert shown.returncode == 0, shown.stderr[-2000:]
    doc = lxml.html.document_fromstring(shown.stdout)
    assert doc.find(".//h1") is not None  # the rendered report, not an error page
    # no script ran: none was in the page, and the hostile texts did not make one
    assert doc.get("data-pwned") is None, doc.get("data-pwned")
    assert doc.find(".//script") is None
    assert [h.text for h in doc.iter("h2")][0] == "Broken links"
    found = broken_table(doc)
    o = site.origin
    expected = truth(o)
    assert found == expected
    # the hostile texts are text, cell for cell: no element was made of them
    table = doc.find(".//table")
    assert table.find(".//img") is None
    texts = [cell.text_content() for cell in table.find_class("text")]
    assert SCRIPT_TEXT in texts and IMG_TEXT in texts
    # the redirect chain that ends in a 404 says where it ended
    head = next(b for b in table.findall("tbody") if b.find(".//a").get("href") == o + "/old")
    assert [a.get("href") for a in head.find("tr").iter("a")] == [o + "/old", o + "/gone"]


def test_the_other_tables_redirects_slowest_largest_sections(site, tmp_path) -> None:
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--check-links", "--report", str(report), *FAST)
    assert done.returncode == 1, done.stderr
    doc = lxml.html.document_fromstring(report.read_text(encoding="utf-8"))
    tables = {t.get("class").split()[0]: t for t in doc.iter("table")}
    assert list(tables)[:6] == ["broken", "warnings", "redirects", "slowest", "largest",
                                "sections"]
    o = site.origin
    chains = {tuple(a.get("href") for a in row.iter("a")): row.findall("td")[0].text
              for row in tables["redirects"].iter("tr") if row.find(".//a") is not None}
    assert chains == {(o + "/old", o + "/older", o + "/gone"): "404",
                      (o + "/moved", o + "/p/0"): "301"}
    slowest = [row.find(".//a").get("href") for row in tables["slowest"].iter("tr")
               if row.find(".//a") is not None]
    assert slowest[0] == o + "/docs/slow"
    largest = [(row.find(".//a").get("href"), row.findall("td")[0].text)
               for row in tables["largest"].iter("tr") if row.find(".//a") is not None]
    assert largest[0] == (o + "/docs/big", f"{200_007:,}")
    sections = {row.findall("td")[0].text: [td.text for td in row.findall("td")[1:]]
                for row in tables["sections"].iter("tr") if row.findall("td")}
    # section: pages, problems, 2xx, 3xx, 4xx, 5xx, failed, not requested
    assert sections == {"/": ["6", "4", "1", "1", "3", "1", "0", "0"],
                        "/docs/": ["2", "0", "2", "0", "0", "0", "0", "0"],
                        "/p/": [str(PAGES), "0", str(PAGES), "0", "0", "0", "0", "0"]}


def test_without_recorded_links_the_first_table_lists_the_failed_pages(site, tmp_path) -> None:
    """--report alone does not record the links (it would cost the walk of every page 1.2× to
    2.2× its time): the first table is the pages that failed, each with the page it was found
    on, and says how to get every link."""
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--report", str(report), *FAST)
    assert done.returncode == 0, done.stderr
    doc = lxml.html.document_fromstring(report.read_text(encoding="utf-8"))
    table = doc.find(".//table")
    assert table.get("class") == "broken failed"
    o = site.origin
    rows = {tuple(a.get("href") for a in row.findall("td")[1].iter("a")):
            row.findall("td")[3].find("a").get("href")
            for row in table.find("tbody").findall("tr")}
    assert set(rows) == {(o + "/missing",), (o + "/boom",), (o + "/old", o + "/gone"),
                         (o + "/missing?%22%3E%3Cscript%3E" + PWN.format(3).replace(" ", "%20")
                          .replace("'", "%27") + "%3C/script%3E",)}
    assert all(referrer.startswith(o + "/") for referrer in rows.values())
    assert "--check-links" in doc.find_class("headline")[0].text_content()


def test_the_report_is_written_without_matplotlib(site, tmp_path) -> None:
    """After a plain ``pip install .`` (no matplotlib) --report runs: the tables, and one line
    saying how to get the plots. (matplotlib is made unimportable as it is when missing.)"""
    report = tmp_path / "report.html"
    code = ("import sys\n"
            "class NoMatplotlib:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.partition('.')[0] == 'matplotlib':\n"
            "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
            "sys.meta_path.insert(0, NoMatplotlib())\n"
            "from minicrawl.cli.main import main\n"
            "code = main(sys.argv[1:])\n"
            "assert not any(m.startswith('matplotlib') for m in sys.modules), 'imported'\n"
            "sys.exit(code)\n")
    done = run(site.url("/"), "--check-links", "--report", str(report), *FAST, code=code)
    assert done.returncode == 1, done.stderr  # (the broken links)
    assert done.stderr == ""
    text = report.read_text(encoding="utf-8")
    doc = lxml.html.document_fromstring(text)
    assert broken_table(doc) == truth(site.origin)
    assert doc.find(".//figure") is None and "data:image/png" not in text
    [line] = doc.find_class("noplots")
    assert re.search(r"matplotlib is not installed \(pip install 'minicrawl\[plot\]'",
                     line.text_content())
