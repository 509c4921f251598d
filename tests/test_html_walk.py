"""minicrawl.html's walk and readers, below what tests/core/test_links.py asks of the core's
extract_links: a big page is streamed and gives the tree's links; a refresh's content as the
HTML standard reads it."""

from __future__ import annotations

import pytest

from minicrawl.core.links import Links, extract_links
from minicrawl.html import walk
from minicrawl.html.meta import refresh as _refresh
from tests.linkcases import cases

HTML = {"Content-Type": "text/html"}


def hrefs_of(body: bytes, headers: dict[str, str] | None = None) -> list[str]:
    return extract_links(body, headers or HTML).hrefs


# --- refresh ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("content", "expected"), [
    ("0; url=r1", (0, "r1")), ("0;URL='r2'", (0, "r2")), ("0; r3", (0, "r3")),
    ("1,url=r4", (1, "r4")), ("  5 ; url = \"r5\" x", (5, "r5")), ("0.5; url=r6", (0, "r6")),
    (".5;url=r7", (0, "r7")), ("0", (0, "")), ("3;", (3, "")), ("0; up.html", (0, "up.html")),
    ("0; url x", (0, "url x")), ("0; 'quoted'", (0, "quoted")),
    ("soon; url=x", None), ("", None), ("0x; url=x", None), ("-1; url=x", None),
])
def test_refresh_content(content: str, expected: tuple[int, str] | None) -> None:
    assert _refresh(content) == expected


# --- big pages: streamed, the same links --------------------------------------------------------

def _padded(body: bytes) -> bytes:
    """``body`` with filler before its ``</body>`` (or at its end), grown past STREAM_ABOVE."""
    filler = b"<p>" + b"filler text " * 80 + b"</p>\n"
    filler *= walk.STREAM_ABOVE // len(filler) + 1
    at = body.rfind(b"</body>")
    return body[:at] + filler + body[at:] if at >= 0 else body + filler


def _both_paths(body: bytes, headers: dict[str, str], chunk: int,
                monkeypatch: pytest.MonkeyPatch) -> tuple[Links, Links]:
    """(the page's links from a tree, streamed in pieces of ``chunk`` bytes)."""
    monkeypatch.setattr(walk, "STREAM_ABOVE", 1 << 40)
    tree = extract_links(body, headers)
    monkeypatch.setattr(walk, "STREAM_ABOVE", 0)
    monkeypatch.setattr(walk, "STREAM_CHUNK", chunk)
    streamed = extract_links(body, headers)
    monkeypatch.undo()
    return tree, streamed


@pytest.mark.parametrize("name", list(cases()))
def test_the_streamed_path_gives_the_tree_s_links(name: str, monkeypatch) -> None:
    """Each case page through both paths, streamed in pieces small enough to cut its tags and
    characters in two; and padded past STREAM_ABOVE (where it is streamed unless told)."""
    case = cases()[name]
    headers = dict(case.headers)
    tree, streamed = _both_paths(case.body, headers, 7, monkeypatch)
    assert streamed == tree
    if "utf16" not in name:  # (ASCII filler would be no UTF-16)
        big = _padded(case.body)
        assert len(big) > walk.STREAM_ABOVE
        tree, streamed = _both_paths(big, headers, walk.STREAM_CHUNK, monkeypatch)
        assert streamed == tree == extract_links(big, headers)


def test_a_big_page_is_streamed(monkeypatch) -> None:
    """Above STREAM_ABOVE the parser is given a target and builds no tree."""
    targets: list[bool] = []
    real = walk.etree.HTMLParser

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        targets.append(kwargs.get("target") is not None)
        return real(*args, **kwargs)

    monkeypatch.setattr(walk, "_local", walk.threading.local())  # no cached tree parser
    monkeypatch.setattr(walk.etree, "HTMLParser", spy)
    page = _padded(b'<html><body><a href="/x">x</a></body></html>')
    assert hrefs_of(page) == ["/x"] and hrefs_of(b'<a href="/y">') == ["/y"]
    assert targets == [True, False]
