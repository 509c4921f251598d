"""--save-pages: the URL → file mapping never leaves the directory, whatever the URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from minicrawl import Crawler
from minicrawl.demo.site import Resource
from minicrawl.state.pages import MAX_NAME, MAX_PATH, PageSaver, UnsafePath, relative_path

HOSTILE = [
    "http://h/../../etc/passwd",
    "http://h/a/../../../b",
    "http://h/%2e%2e/%2E%2E/etc/passwd",
    "http://h/..%2f..%2fetc%2fpasswd",
    "http://h/%2e%2e%2f%2e%2e%2fx",
    "http://h/..\\..\\windows\\win.ini",
    "http://h/a%5c..%5c..%5cb",
    "http://h//etc/passwd",
    "http://h/%2Fetc%2Fpasswd",
    "http://h/a%00b/c%00",
    "http://h/%0a%0d%09x",
    "http://h/.",
    "http://h/./..",
    "http://h/...",
    "http://h/" + "x" * 5000,
    "http://h/" + "/d" * 3000,
    "http://h/q?path=../../x&y=%2e%2e",
    "http://../x",
    "http://h:8080/C:/Windows/system32",
    "http://h/~user/%25252e%25252e/",
]


def names(path: str) -> list[str]:
    return path.split("/")


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_urls_map_to_plain_names_inside(url, tmp_path):
    rel = relative_path(url)
    assert not rel.startswith("/") and len(rel.encode()) <= MAX_PATH
    for name in names(rel):
        assert name not in ("", ".", "..")
        assert len(name.encode()) <= MAX_NAME
        assert "\\" not in name and "\0" not in name and ":" not in name
        assert all(ord(c) >= 0x20 for c in name)
    saver = PageSaver(tmp_path / "pages")
    target = saver.target(url)
    assert target.resolve().is_relative_to((tmp_path / "pages").resolve())
    written = Path(saver.save(url, b"body"))
    assert written.read_bytes() == b"body"
    assert written.resolve().is_relative_to((tmp_path / "pages").resolve())
    # nothing was written anywhere else
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pages"]


def test_the_mapping_mirrors_host_and_path():
    assert relative_path("http://example.org/") == "example.org/index.html"
    assert relative_path("http://example.org/a/b/") == "example.org/a/b/index.html"
    assert relative_path("http://example.org/a/page.html") == "example.org/a/page.html"
    assert relative_path("http://localhost:8080/x") == "localhost_8080/x"
    assert relative_path("http://h/list?page=2") == "h/list%3Fpage=2"
    assert relative_path("http://h/?page=2") == "h/index.html%3Fpage=2"
    assert relative_path("http://h/a%20b") == "h/a%20b"
    # dots that are names, not navigation
    assert names(relative_path("http://h/%2e%2e/x"))[1] == "%2E%2E"
    assert names(relative_path("http://h/."))[1] == "%2E"


def test_long_names_are_hashed_and_stay_distinct():
    a = relative_path("http://h/" + "x" * 300 + "a")
    b = relative_path("http://h/" + "x" * 300 + "b")
    assert a != b and all(len(n) <= MAX_NAME for n in names(a) + names(b))
    deep_a = relative_path("http://h/" + "/d" * 3000 + "/a")
    deep_b = relative_path("http://h/" + "/d" * 3000 + "/b")
    assert deep_a != deep_b and "/_long/" in deep_a


def test_a_symlink_out_of_the_directory_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    saver = PageSaver(tmp_path / "pages")
    (tmp_path / "pages" / "h").symlink_to(outside)
    with pytest.raises(UnsafePath):
        saver.save("http://h/file", b"x")
    assert list(outside.iterdir()) == []


def test_file_and_folder_of_the_same_name_both_kept(tmp_path):
    saver = PageSaver(tmp_path)
    first = saver.save("http://h/a", b"page a")
    second = saver.save("http://h/a/b", b"page a/b")  # "a" is a file already
    assert Path(first).read_bytes() == b"page a"
    assert Path(second).read_bytes() == b"page a/b"
    assert "_conflicts" in second


def test_writes_are_atomic_replacements(tmp_path):
    saver = PageSaver(tmp_path)
    path = Path(saver.save("http://h/p", b"one"))
    inode_before = path.stat().st_ino
    saver.save("http://h/p", b"two")
    assert path.read_bytes() == b"two"
    assert path.stat().st_ino != inode_before  # a new file renamed over, not rewritten in place
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".part-")]


def test_a_crawl_saves_bodies_inside_the_directory_only(server, tmp_path):
    hostile = ["/..%2f..%2fescape.html", "/%2e%2e/%2e%2e/escape2.html", "/a\\..\\..\\escape3",
               "/nul%00byte", "/" + "n" * 400, "/dir/", "/q?x=../../y"]
    links = "".join(f'<a href="{h}">x</a>' for h in hostile)
    server.pages["/"] = Resource(f"<html><body>{links}</body></html>".encode())
    server.pages["/robots.txt"] = Resource(b"", 404)

    def any_path(request):  # every hostile path exists, with its own path as the body
        return Resource(f"<html>{request.path}</html>".encode())

    server.resolve = lambda request: (server.pages.get(request.path)  # type: ignore[method-assign]
                                      or any_path(request))
    pages_dir, out = tmp_path / "pages", tmp_path / "out.jsonl"
    Crawler([server.url("/")], threads=4, delay=0, save_pages=str(pages_dir),
            out=str(out)).run()
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 1 + len(hostile)
    root = pages_dir.resolve()
    for record in records:
        assert record["saved"], record
        saved = Path(record["saved"])
        assert saved.resolve().is_relative_to(root)
        assert saved.read_bytes().startswith(b"<html>")
    every_file = [Path(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert all(p.resolve().is_relative_to(root) or p == out for p in every_file)
