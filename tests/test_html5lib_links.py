"""Pages parsed as the HTML standard says (issue 48): the html5lib tree-construction documents
that hold links (tests/data/html5lib/, MIT), each given hrefs where its tree shows a link, and
the links a browser finds in the standard's tree (links.json, made by
tests/html5lib_links_record.py with html5lib as the oracle). minicrawl's links of each document —
lxml's libxml2 tree, mended by the walk where it is no browser's — must be exactly those: a
``<frameset>`` after a ``<p>``, blanks or an empty ``<svg>`` replaces the body (its frames are
frames), after text or an image it is ignored; a ``<template>`` in a frameset is ignored."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from minicrawl.core.links import extract_links
from minicrawl.html import walk

DATA = Path(__file__).parent / "data" / "html5lib"
CASES = json.loads((DATA / "links.json").read_text("utf-8"))["cases"]
HTML = {"content-type": "text/html; charset=utf-8"}


@pytest.mark.parametrize("case", CASES, ids=[f"{c['file']}:{c['index']}" for c in CASES])
def test_the_links_of_the_standard_s_tree(case: dict) -> None:
    assert sorted(set(extract_links(case["data"].encode(), HTML).hrefs)) == case["links"]


def test_every_document_with_links_is_kept() -> None:
    """The oracle left out only what it must (html5lib 1.1 older than the standard on a few
    documents; a given href that changed the tree): at least the 56 documents of today."""
    assert len(CASES) >= 56 and len({c["data"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("data,links", [
    ("<!doctype html><p><frameset><frame src=/f>", ["/f"]),  # <p>: frameset-ok still "ok"
    ("<!doctype html><p>x<frameset><frame src=/f>", []),  # text: the frameset is ignored
    ("<!doctype html><img src=/i><frameset><frame src=/f>", []),  # an image: the same
    ("<!doctype html><input type=hidden><frameset><frame src=/f>", ["/f"]),
    ("<frameset><template><frame src=/f></template></frameset>", ["/f"]),
    ("<frameset><frame src=/f></frameset>", ["/f"]),
    ("<body><frame src=/f>", []),  # a frame outside a frameset is none
])
def test_frames_as_the_standard_builds_them(data: str, links: list[str]) -> None:
    assert extract_links(data.encode(), HTML).hrefs == links


def test_a_streamed_page_s_frameset_in_its_body_gives_no_frame(monkeypatch) -> None:
    """A big page is streamed (no tree to read what came before its frameset): a frame in a
    frameset libxml2 put in the body is none, as before; one in a frameset of its own is."""
    monkeypatch.setattr(walk, "STREAM_ABOVE", 10)
    assert extract_links(b"<!doctype html><p><frameset><frame src=/f>", HTML).hrefs == []
    assert extract_links(b"<frameset><frame src=/g></frameset>", HTML).hrefs == ["/g"]
