"""The crawl report: a valid, self-contained HTML file whose plots are real images."""

from __future__ import annotations

import base64
import io
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import lxml.html
import pytest

from minicrawl import Crawler
from minicrawl.demo import generate_site
from minicrawl.demo.site import LocalSite, Resource

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")  # installed with matplotlib

ROOT = Path(__file__).resolve().parent.parent
# Loopback servers need no politeness pacing (the politeness tests cover it).
FAST = {"delay": 0, "per_host": 64}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class StrictStructure(HTMLParser):
    """Checks that every element is closed in order (html.parser alone forgives anything)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.doctype = ""

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """One crawl of a generated site with a report, shared by the tests that read it."""
    with LocalSite() as server:
        server.pages.update(generate_site(server.origin, pages=150).pages)
        path = tmp_path_factory.mktemp("report") / "report.html"
        stats = Crawler([server.url("/")], threads=4, report=str(path), expected_urls=500,
                        **FAST).run()
    return path.read_text(encoding="utf-8"), stats


def test_report_is_valid_html(report):
    text, _ = report
    checker = StrictStructure()
    checker.feed(text)
    checker.close()
    assert checker.doctype.lower() == "doctype html"
    assert checker.errors == [] and checker.stack == []
    doc = lxml.html.document_fromstring(text)
    assert doc.tag == "html" and doc.find("head/title") is not None
    assert doc.find("head/meta[@charset='utf-8']") is not None
    assert [h.text for h in doc.iter("h2")] == [
        "Broken links", "Warnings", "Redirects", "Slowest pages", "Largest pages",
        "Status by section", "Plots", "Seeds", "Stats", "Settings"]


def test_report_has_the_stats_table(report):
    text, stats = report
    doc = lxml.html.document_fromstring(text)
    rows = {tr.find("th").text: tr.find("td").text for tr in doc.find_class("stats")[0].iter("tr")}
    assert rows["pages"] == f"{stats['pages']:,}"
    assert rows["links_filtered"] == f"{stats['links_filtered']:,}"
    assert "visited_fill_ratio" in rows


def test_report_embeds_every_plot_as_a_real_png(report):
    text, _ = report
    doc = lxml.html.document_fromstring(text)
    figures = doc.findall(".//figure")
    captions = [f.find("figcaption").text_content() for f in figures]
    for topic in ("Pages per second", "ToDo length", "Depth histogram", "Status codes",
                  "Response time", "false-positive rate"):
        assert any(topic in c for c in captions), topic
    for figure in figures:
        src = figure.find("img").get("src")
        assert src.startswith("data:image/png;base64,")
        png = base64.b64decode(src.split(",", 1)[1], validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
        image = Image.open(io.BytesIO(png))
        image.verify()
        assert image.size[0] >= 600 and image.size[1] >= 300
        # a plot, not a blank canvas: many distinct colours
        assert len(Image.open(io.BytesIO(png)).convert("RGB").getcolors(1 << 24)) > 50


def test_report_is_self_contained(report):
    """Nothing is loaded from elsewhere (an image is a data: URI); what links out are the
    tables' links to the crawled pages (and the report's own #anchors)."""
    text, _ = report
    doc = lxml.html.document_fromstring(text)
    for element in doc.iter():
        src = element.get("src")
        assert src is None or src.startswith("data:"), (element.tag, src)
        href = element.get("href")
        assert href is None or element.tag == "a" and href.startswith(
            ("#", "http://127.0.0.1:")), (element.tag, href)
    assert doc.find(".//script") is None and doc.find(".//link") is None


def test_report_for_an_exact_visited(make_site, tmp_path):
    server, _ = make_site(pages=30)
    path = tmp_path / "exact.html"
    Crawler([server.url("/")], visited="exact", report=str(path), **FAST).run()
    text = path.read_text()  # no fill ratio to plot: Visited's size instead, and no crash
    assert text.count("data:image/png;base64,") == 6 and "ExactVisited" in text


def test_report_from_the_command_line(make_site, tmp_path):
    server, _ = make_site(pages=30)
    path = tmp_path / "cli.html"
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), server.url("/"), "--report",
                             str(path), "--delay", "0"], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert f"Written: {path} (--report)" in result.stdout  # the summary says where it went
    assert path.read_text().count("data:image/png;base64,") == 6


def test_a_long_crawl_keeps_a_bounded_number_of_samples(server, monkeypatch):
    import minicrawl.watch.report as report

    monkeypatch.setattr(report, "MAX_SAMPLES", 10)
    server.pages["/"] = Resource(b"end")
    recorder = report.Recorder(Crawler([server.url("/")]).watched, interval=0.1)
    for _ in range(35):
        recorder._sample()
    assert len(recorder.samples) <= 10  # halved at 11 samples: after the 11th, 16th, … 31st
    assert recorder.interval == pytest.approx(0.1 * 2**5)
    elapsed = [s.elapsed for s in recorder.samples]
    assert elapsed == sorted(elapsed)  # still a time series, from the start
