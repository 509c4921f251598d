"""Nofollow and noindex, from outside: what run.py and the core's CLI request from a real local
site, what run.py counts (``links_nofollow``), traces (``NOFOLLOW → drop``) and records
(``"noindex": true``), and ``--ignore-nofollow``. (Which pages say nofollow, read as a browser
reads the page: tests/test_linkcases.py's nofollow cases.)"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from minicrawl.demo.site import LocalSite, Resource

ROOT = Path(__file__).resolve().parents[1]
HTML = {"Content-Type": "text/html"}
PAGES = {
    "/": (b'<a href="/a" rel="nofollow">a</a><a href="/b">b</a><a href="/meta">m</a>'
          b'<a href="/header">h</a><a href="/noindex">n</a><a href="/ours">o</a>', {}),
    "/meta": (b'<meta name="robots" content="nofollow"><a href="/c">c</a>', {}),
    "/header": (b'<a href="/d">d</a>', {"X-Robots-Tag": "nofollow"}),
    "/noindex": (b'<meta name="robots" content="noindex"><a href="/e">e</a>', {}),
    "/ours": (b'<meta name="mybot" content="nofollow"><a href="/f">f</a>',
              {"X-Robots-Tag": "minicrawl: nofollow"}),
}
LEAVES = ["/a", "/b", "/c", "/d", "/e", "/f"]


@pytest.fixture
def site() -> Iterator[LocalSite]:
    with LocalSite() as site:
        for path, (body, headers) in PAGES.items():
            site.pages[path] = Resource(body, headers={**HTML, **headers})
        for path in LEAVES:
            site.pages[path] = Resource(b"leaf", headers={"Content-Type": "text/plain"})
        yield site


def run_py(site: LocalSite, tmp_path: Path, *args: str) -> dict:
    """Crawl ``site`` with run.py; its stats, --out records by path and trace."""
    out, stats, trace = tmp_path / "out.jsonl", tmp_path / "stats.json", tmp_path / "trace.txt"
    done = subprocess.run([sys.executable, "run.py", site.url("/"), "--delay", "0", "--quiet",
                           "--ignore-robots", "--out", str(out), "--stats", str(stats),
                           "--trace", str(trace), *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    return {"stats": json.loads(stats.read_text()), "trace": trace.read_text(),
            "records": {r["url"].removeprefix(site.origin): r for r in records}}


def requested(site: LocalSite) -> set[str]:
    return set(site.fetch_counts()) & set(LEAVES)


def test_run_py_does_not_follow_what_pages_say_not_to(site: LocalSite, tmp_path: Path) -> None:
    crawl = run_py(site, tmp_path)
    # /a rel=nofollow; /c a robots <meta>; /d X-Robots-Tag; /f X-Robots-Tag to minicrawl (the
    # <meta name=mybot> is another robot's)
    assert requested(site) == {"/b", "/e"}
    assert crawl["stats"]["links_nofollow"] == 4
    for href in ("/a", "/c", "/d", "/f"):
        assert f"EXTRACT {href} from " in crawl["trace"]
    assert crawl["trace"].count("NOFOLLOW → drop") == 4
    assert crawl["records"]["/noindex"]["noindex"] is True  # crawled, its links followed
    assert "noindex" not in crawl["records"]["/meta"]


def test_run_py_ignore_nofollow(site: LocalSite, tmp_path: Path) -> None:
    crawl = run_py(site, tmp_path, "--ignore-nofollow")
    assert requested(site) == set(LEAVES)
    assert "links_nofollow" not in crawl["stats"] and "NOFOLLOW" not in crawl["trace"]
    assert crawl["records"]["/noindex"]["noindex"] is True


def test_run_py_answers_to_its_user_agent_s_token(site: LocalSite, tmp_path: Path) -> None:
    """With --user-agent mybot/2.0, <meta name=mybot> is ours and "minicrawl:" another's."""
    run_py(site, tmp_path, "--user-agent", "mybot/2.0 (+https://example.test/bot)")
    assert requested(site) == {"/b", "/e"}  # /f: the <meta name=mybot> now
    site.requests.clear()
    site.pages["/ours"] = Resource(b'<a href="/f">f</a>', headers={
        **HTML, "X-Robots-Tag": "minicrawl: nofollow"})
    run_py(site, tmp_path, "--user-agent", "mybot/2.0")
    assert "/f" in requested(site)


def test_the_core_cli(site: LocalSite) -> None:
    def core(*args: str) -> set[str]:
        site.requests.clear()
        done = subprocess.run([sys.executable, "-m", "minicrawl.core", site.url("/"), *args],
                              cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return requested(site)

    assert core() == {"/b", "/e"}  # the core is "minicrawl", whom /ours' X-Robots-Tag addresses
    assert core("--ignore-nofollow") == set(LEAVES)
