"""The report's warnings: ``python run.py --check-links --report`` on a local site whose pages
link to another page's missing ``#fragment`` (and to parts it has) shows each missing one in a
table of its own, after the broken links, with every link to it — page, line, text — as the
list ``--check-links`` prints has them; link texts and fragments made to be markup stay text.
Without ``--check-links`` no fragment is checked, and the report says so rather than "none".

The file is read with lxml, as a browser's parser would build it (the report runs no script:
tests/test_report_tables.py opens it in Chromium)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import lxml.html
import pytest

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--delay", "0", "--threads", "2", "--retries", "0"]
SCRIPT_TEXT = "<script>document.documentElement.setAttribute('data-pwned', '1')</script>"
HOSTILE_FRAGMENT = '"><script>alert(2)</script>'  # made to break out of an href attribute
LONG = "x" * 150  # a fragment longer than an href is shown (HREF, 100 characters)
Links = dict[str, list[tuple[str, str, str]]]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)


def escaped(text: str) -> str:
    return (text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")
            .replace(">", "&gt;"))


def page(*rows: str) -> Resource:
    return Resource("\n".join(rows).encode())


@pytest.fixture
def site() -> Iterator[LocalSite]:
    """/ links to /a.html#gone (missing), #here (an id it has), to a missing fragment made of
    markup with a <script> as its text, and to /missing (broken); /b links to /a.html#gone
    again, to #named (an <a name> it has) and to a missing fragment of 150 characters."""
    with LocalSite() as server:
        server.pages.update({
            "/": page("<!DOCTYPE html><title>Home</title>",
                      '<a href="/a.html#gone">Gone part</a>',
                      '<a href="/a.html#here">Here</a>',
                      f'<a href="/a.html#{escaped(HOSTILE_FRAGMENT)}">{escaped(SCRIPT_TEXT)}</a>',
                      '<a href="/missing">Missing</a> <a href="/b">B</a>'),
            "/b": page("<title>B</title>", "<p>b</p>",
                       '<a href="a.html#gone">Again</a> <a href="/a.html#named">Named</a>',
                       f'<a href="/a.html#{LONG}">Long</a>'),
            "/a.html": page("<title>A</title>", '<h1 id="here">A</h1>',
                            '<p><a name="named">named</a></p>'),
        })
        yield server


def section_tables(doc: lxml.html.HtmlElement) -> dict[str, lxml.html.HtmlElement]:
    """The report's tables by their first class, in order."""
    return {t.get("class").split()[0]: t for t in doc.iter("table")}


def grouped(table: lxml.html.HtmlElement) -> tuple[Links, dict[str, str]]:
    """A grouped table read: each target's href → its links (page, line, text), and → what its
    head row says after the link (why)."""
    found: Links = {}
    why: dict[str, str] = {}
    for body in table.findall("tbody"):
        if body.get("class") != "target":
            continue
        head, *rows = body.findall("tr")
        target = head.find(".//a")
        assert target is not None
        why[target.get("href")] = head.find_class("why")[0].text_content()
        links = found.setdefault(target.get("href"), [])
        for row in rows:
            cells = row.findall("td")
            anchor = cells[1].find("a")
            assert anchor.text == anchor.get("href")  # clickable, to the page it is on
            links.append((anchor.get("href"), cells[2].text_content(), cells[3].text_content()))
    return found, why


def test_the_report_lists_each_missing_fragment_after_the_broken_links(site, tmp_path) -> None:
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--check-links", "--report", str(report), *FAST)
    assert done.returncode == 1, done.stderr  # (/missing is broken)
    assert "Traceback" not in done.stderr
    doc = lxml.html.document_fromstring(report.read_text(encoding="utf-8"))
    o = site.origin
    # its own section and table, right after the broken links, and in the contents
    headings = [h.text for h in doc.iter("h2")]
    assert headings[:2] == ["Broken links", "Warnings"]
    assert list(section_tables(doc))[:2] == ["broken", "warnings"]
    assert doc.xpath('//p[@class="contents"]/a[@href="#warnings"]')
    found, why = grouped(section_tables(doc)["warnings"])
    gone, hostile = o + "/a.html#gone", o + "/a.html#" + HOSTILE_FRAGMENT
    long = o + "/a.html#" + LONG
    assert found == {gone: [(o + "/", "2", "Gone part"), (o + "/b", "3", "Again")],
                     hostile: [(o + "/", "4", SCRIPT_TEXT)],
                     long: [(o + "/b", "4", "Long")]}  # no #here, no #named
    assert why[gone] == "(fragment #gone not found)"
    # linked in full, shown cut as the printed list cuts it
    [shown] = [a.text for a in doc.xpath(f'//table[@class="warnings"]//a[@href="{long}"]')]
    assert shown == o + "/a.html#" + "x" * 99 + "…"
    assert f"200  {shown}  (" in done.stdout
    # the warnings' headline, the one the printed list has
    warned = next(p for p in doc.find_class("headline")
                  if p.getprevious() is not None and p.getprevious().text == "Warnings")
    assert warned.text_content() == \
        "Warnings: 3 #fragments not found, linked 4 times from 2 pages."
    assert "Warnings: 3 #fragments not found, linked 4 times from 2 pages" in done.stdout
    # the hostile text and fragment are text: no element was made of them
    assert doc.find(".//script") is None
    assert SCRIPT_TEXT in [cell.text_content() for cell in doc.find_class("text")]
    # the broken links' table is as it was: /missing alone
    broken, _ = grouped(section_tables(doc)["broken"])
    assert broken == {o + "/missing": [(o + "/", "5", "Missing")]}


def test_no_missing_fragment_the_section_says_none(site, tmp_path) -> None:
    # every fragment linked names a part of its page now
    site.pages["/"] = page("<title>Home</title>", '<a href="/a.html#here">Here</a>',
                           '<a href="/b">B</a>')
    site.pages["/b"] = page("<title>B</title>", '<a href="a.html#named">Named</a>')
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--check-links", "--report", str(report), *FAST)
    assert done.returncode == 0, done.stderr
    doc = lxml.html.document_fromstring(report.read_text(encoding="utf-8"))
    table = section_tables(doc)["warnings"]
    assert grouped(table) == ({}, {})
    assert table.find(".//td").text_content().startswith("None")
    assert "Warnings: none" in doc.text_content()


def test_without_check_links_the_fragments_are_not_said_to_be_fine(site, tmp_path) -> None:
    """--links records the links but checks no fragment (only --check-links does): the
    section says so, not "none"."""
    report = tmp_path / "report.html"
    done = run(site.url("/"), "--links", str(tmp_path / "links.jsonl"), "--report", str(report),
               "--quiet", *FAST)
    assert done.returncode == 0, done.stderr
    doc = lxml.html.document_fromstring(report.read_text(encoding="utf-8"))
    assert "warnings" not in section_tables(doc)
    heading = next(h for h in doc.iter("h2") if h.text == "Warnings")
    said = heading.getnext().text_content()
    assert "not checked" in said and "--check-links" in said
