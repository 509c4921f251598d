"""--save-pages, --mirror's simpler case: the pages' bodies as they came, named as --mirror
names them (tests/test_mirror_paths.py tests the names and the writes), never outside DIR."""

from __future__ import annotations

import json
import os
from pathlib import Path

from minicrawl import Crawler
from minicrawl.demo.site import Resource


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
