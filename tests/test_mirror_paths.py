"""The mirror's names (minicrawl/mirror/paths.py): every URL one file inside DIR, whatever the
URL holds, and no symlink followed out of DIR."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from minicrawl.core.urls import canonicalize
from minicrawl.mirror.paths import (
    CONFLICTS,
    MAX_NAME,
    MAX_PATH,
    Claims,
    UnsafePath,
    href_between,
    local_path,
    read_inside,
    write_inside,
)

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
    "http://h/%2e",
    "http://h/" + "x" * 5000,
    "http://h/" + "/d" * 3000,
    "http://h/" + "é" * 300,
    "http://h/q?path=../../x&y=%2e%2e",
    "http://h/q?a=/etc/passwd",
    "http://h:8080/C:/Windows/system32",
    "http://h/~user/%25252e%25252e/",
    "http://h/bidi%E2%80%AEgpj.exe",
    "http://h/%C0%AE%C0%AE/overlong",
    "http://h/CON",
    "http://h/nul.txt",
    "http://user:pass@h/x",
]


def names(path: str) -> list[str]:
    return path.split("/")


def test_a_url_is_named_as_wget_names_it() -> None:
    assert local_path("http://example.org/") == "example.org/index.html"
    assert local_path("http://example.org/a/b/") == "example.org/a/b/index.html"
    assert local_path("http://example.org/a/page.html") == "example.org/a/page.html"
    assert local_path("http://localhost:8080/x.png") == "localhost:8080/x.png"
    assert local_path("https://h/x.png") == "h/x.png"
    # -E: a page is given .html, a stylesheet .css, whatever its URL says
    assert local_path("http://h/about", "text/html; charset=utf-8") == "h/about.html"
    assert local_path("http://h/a.htm", "text/html") == "h/a.htm"
    assert local_path("http://h/list?page=2", "text/html") == "h/list?page=2.html"
    assert local_path("http://h/?page=2", "text/html") == "h/index.html?page=2.html"
    assert local_path("http://h/s.css?v=3", "text/css") == "h/s.css?v=3.css"
    assert local_path("http://h/s.css", "text/css") == "h/s.css"
    assert local_path("http://h/logo", "image/png") == "h/logo"
    # printable non-ASCII is read as such; an escape of ASCII stays an escape
    assert local_path("http://h/caf%C3%A9/na%C3%AFve") == "h/café/naïve"
    assert local_path("http://h/a%20b") == "h/a%20b"
    assert local_path("http://h/a%2Fb") == "h/a%2Fb"


@pytest.mark.parametrize("url", HOSTILE)
def test_hostile_urls_map_to_plain_names_inside(url: str, tmp_path: Path) -> None:
    rel = local_path(url, "text/html")
    assert not rel.startswith("/") and len(rel.encode()) <= MAX_PATH
    for name in names(rel):
        assert name not in ("", ".", "..")
        assert len(name.encode()) <= MAX_NAME
        assert "\\" not in name and "\0" not in name
        assert all(ord(c) >= 0x20 and c not in "\u202e\u202d\u200f" for c in name)
    root = tmp_path / "mirror"
    root.mkdir()
    write_inside(root, rel, b"body")
    assert read_inside(root, rel) == b"body"
    written = [Path(d, f) for d, _, files in os.walk(tmp_path) for f in files]
    assert written == [root.joinpath(*names(rel))]  # nothing anywhere else


def test_dots_that_are_names_are_not_navigation() -> None:
    # (a browser resolves %2e%2e as ..: so does the canonical URL, before the name is made)
    assert local_path("http://h/%2e%2e/x") == "h/x"
    assert names(local_path("http://h/a/%252e%252e/x"))[2] == "%252e%252e"


def test_two_urls_never_get_one_name() -> None:
    urls = ["http://h/a", "http://h/a/", "http://h/a?b", "http://h/a%3Fb", "http://h/a%2Fb",
            "http://h/a/b", "http://h/A", "http://h/a%20b", "http://h/a+b", "http://h/a%2Bb",
            "http://h/" + "x" * 300 + "1", "http://h/" + "x" * 300 + "2",
            "http://h:81/a", "http://h/index.html", "http://h/"]
    claims = Claims()
    paths = [claims.claim(u, local_path(u)) for u in urls]
    assert len(set(paths)) == len(paths)
    # a file where another needs a folder, a folder where another is a file: each its own
    assert claims.claim("http://h/a", "h/a") == paths[0]  # (the same URL: the same file)
    assert CONFLICTS not in paths[0]
    folder = claims.claim("http://h/z", "h/a/b")  # "h/a/b" is taken: another name
    assert folder != paths[5]


def test_claims_hold_under_threads() -> None:
    claims = Claims()
    got: list[str] = []

    def claim(n: int) -> None:
        got.append(claims.claim(f"http://h/{n}", "h/same"))

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 32


def test_a_symlink_in_the_mirror_is_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "mirror", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "h").symlink_to(outside)  # a folder planted as a link out
    with pytest.raises(UnsafePath):
        write_inside(root, "h/file", b"x")
    (root / "g").mkdir()
    (root / "g" / "f").symlink_to(outside / "target")  # a file planted as a link out
    write_inside(root, "g/f", b"mine")  # replaces the link, never writes through it
    assert not (outside / "target").exists()
    assert not (root / "g" / "f").is_symlink() and (root / "g" / "f").read_bytes() == b"mine"
    (root / "g" / "r").symlink_to(outside / "secret")
    (outside / "secret").write_bytes(b"secret")
    with pytest.raises(OSError):
        read_inside(root, "g/r")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]


def test_a_folder_or_a_file_in_the_way_is_told(tmp_path: Path) -> None:
    write_inside(tmp_path, "h/a", b"file a")
    with pytest.raises(NotADirectoryError):
        write_inside(tmp_path, "h/a/b", b"needs folder a")
    write_inside(tmp_path, "h/d/x", b"in folder d")
    with pytest.raises(IsADirectoryError):
        write_inside(tmp_path, "h/d", b"file d")


def test_paths_that_are_not_inside_are_refused(tmp_path: Path) -> None:
    for bad in ("../x", "h/../../x", "/etc/passwd", "h//x", "h/./x", "h/x\0y", "h/"):
        with pytest.raises(UnsafePath):
            write_inside(tmp_path, bad, b"x")
    assert list(tmp_path.iterdir()) == []


def test_writes_are_atomic_replacements(tmp_path: Path) -> None:
    write_inside(tmp_path, "h/p", b"one")
    inode = (tmp_path / "h" / "p").stat().st_ino
    write_inside(tmp_path, "h/p", b"two")
    assert (tmp_path / "h" / "p").read_bytes() == b"two"
    assert (tmp_path / "h" / "p").stat().st_ino != inode  # renamed over, not written in place
    assert [p.name for p in (tmp_path / "h").iterdir()] == ["p"]  # no temporary file left


def test_relative_hrefs_between_files() -> None:
    assert href_between("h/a/b.html", "h/a/c.png") == "c.png"
    assert href_between("h/a/b.html", "h/x/c.png") == "../x/c.png"
    assert href_between("h/index.html", "h/list?page=2.html") == "list%3Fpage=2.html"
    assert href_between("h/index.html", "h/%2Fetc") == "%252Fetc"  # the name, not a separator
    assert href_between("h/index.html", "h:81/x.html") == "../h%3A81/x.html"  # no scheme
    assert href_between("h/index.html", "h/café.png") == "caf%C3%A9.png"


# Windows's device names (any case, any extension), its forbidden characters, a trailing dot
DEVICES = ["con", "CON", "Prn", "aux", "nul", "com1", "COM9", "lpt1", "LPT9", "com0", "lpt0",
           "com%C2%B9", "LPT%C2%B3"]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("names_", ["unix", "windows"])
def test_no_name_is_a_windows_device(device: str, names_: str) -> None:
    for url, typed in [(f"http://h/{device}", None), (f"http://h/{device}", "text/html"),
                       (f"http://h/{device}.txt", None), (f"http://h/{device}.tar.gz", None),
                       (f"http://h/{device}/x.png", None), (f"http://{device}/x", None)]:
        for name in names(local_path(url, typed, names_)):
            stem = name.partition(".")[0].lower()
            assert stem not in ("con", "prn", "aux", "nul") and not (
                stem[:3] in ("com", "lpt") and len(stem) == 4 and (stem[3].isdigit()
                                                                   or stem[3] in "¹²³")), url


def test_reserved_names_are_escaped_one_to_one() -> None:
    assert local_path("http://h/con") == "h/%63on"
    assert local_path("http://h/CON", "text/html") == "h/%43ON.html"
    assert local_path("http://h/nul.html", "text/html") == "h/%6Eul.html"
    assert local_path("http://h/aux/x") == "h/%61ux/x"
    assert local_path("http://h/com%C2%B9.txt") == "h/%63om¹.txt"
    assert local_path("http://h/trailing.") == "h/trailing%2E"
    assert local_path("http://h/dir./x") == "h/dir%2E/x"
    assert local_path("http://h/a..") == "h/a.%2E"
    # names that only look like one stay as they are
    for name in ("console", "com10", "lpt", "auxiliary.txt", "nul_", "a.b", "x.con"):
        assert local_path(f"http://h/{name}") == f"h/{name}"
    # an escape of a letter or a dot is no canonical URL's: no other URL has these names
    urls = ["http://h/con", "http://h/%63on", "http://h/c%6Fn", "http://h/%2563on",
            "http://h/trailing.", "http://h/trailing%2E", "http://h/trailing%252E",
            "http://h/trailing", "http://h/...", "http://h/%2e%2e%2e"]
    paths = {local_path(u) for u in urls}
    assert len(paths) == len({canonicalize(u) for u in urls})


def test_windows_names_escape_what_windows_forbids_one_to_one() -> None:
    assert local_path("http://h:8080/list?a=b:c*d", "text/html", "windows") == \
        "h%3A8080/list%3Fa=b%3Ac%2Ad.html"
    assert local_path("http://h/a%20b", names="windows") == "h/a%2520b"  # ("%" escaped too)
    # no character Windows forbids in any name
    for url in HOSTILE:
        for name in names(local_path(url, "text/html", "windows")):
            assert not set(name) & set('<>:"|?*\\'), url
    # one-to-one: what unix names keep apart, windows names keep apart too
    urls = ["http://h/a?b", "http://h/a%3Fb", "http://h/a%253Fb", "http://h/a:b",
            "http://h/a%3Ab", "http://h:81/x", "http://h/a*b", "http://h/a%2Ab",
            "http://h/a%25b", "http://h/a%2525b"]
    unix = {local_path(u) for u in urls}
    windows = {local_path(u, names="windows") for u in urls}
    assert len(windows) == len(unix)
    with pytest.raises(ValueError):
        local_path("http://h/", names="dos")


def test_links_to_reserved_names_resolve(tmp_path: Path) -> None:
    # each file written, then found again from the page's folder by its href percent-decoded,
    # as a browser reads a relative URL from file://
    from urllib.parse import unquote

    page = local_path("http://h/docs/index.html", "text/html")
    for url in ["http://h/con", "http://h/docs/nul.html", "http://h/aux/x",
                "http://h/trailing.", "http://h/list?page=2"]:
        for mode in ("unix", "windows"):
            target = local_path(url, "text/html", mode)
            write_inside(tmp_path, target, b"x")
            href = href_between(page, target)
            assert (tmp_path / page).parent.joinpath(unquote(href)).resolve() == \
                (tmp_path / target).resolve(), (url, mode, href)
