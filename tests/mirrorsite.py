"""A small site to mirror (tests/test_mirror*.py): pages with every kind of requisite — nested
CSS @import and url(), srcset, an icon, a font, a script — query-string pages, directory URLs,
a redirect, non-ASCII, very long and hostile names; and a second host for a CDN stylesheet."""

from __future__ import annotations

import struct
import zlib

from minicrawl.demo.site import LocalSite, Request, Resource

LONG = "l" * 300  # a name over the file system's 255 bytes
HOSTILE = ["/..%2f..%2fescape.html", "/%2e%2e/%2e%2e/escape2.html", "/a%5c..%5c..%5cescape3",
           "/nul%00byte", "/%2Fetc%2Fpasswd", "/bidi%E2%80%AEtxt.html", "/CON", "/aux.txt"]
APP_JS = b"""
window.addEventListener('load', function () {
  var img = document.querySelector('img#logo');
  var h1 = document.querySelector('h1');
  var x = document.querySelector('.x');
  var b = document.body;
  b.setAttribute('data-img', String(img ? img.naturalWidth : -1));
  b.setAttribute('data-color', getComputedStyle(h1).color);
  b.setAttribute('data-nested', getComputedStyle(x).backgroundImage);
  b.setAttribute('data-font', document.fonts ? String(document.fonts.size) : '');
  b.setAttribute('data-ran', 'yes');
});
"""


def png(width: int = 2, height: int = 3) -> bytes:
    """A valid PNG of ``width`` x ``height`` red pixels."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2,
                                                              0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def html(body: str, head: str = "") -> Resource:
    return Resource(f"<!doctype html><html><head><meta charset=utf-8>{head}</head>"
                    f"<body>{body}</body></html>".encode())


def typed(body: bytes, kind: str) -> Resource:
    return Resource(body, headers={"Content-Type": kind})


HEAD = ('<link rel=stylesheet href="/css/main.css?v=3"><link rel="icon" href="/favicon.ico">'
        '<script src="/js/app.js"></script>')


def fill(site: LocalSite, cdn: LocalSite) -> None:
    """The pages of the site on ``site``, its CDN stylesheet on ``cdn``."""
    links = "".join(f'<a href="{h}">hostile</a>' for h in HOSTILE)
    site.pages.update({
        "/robots.txt": Resource(b"", 404),
        "/": html(
            '<h1 class="x">Home</h1>'
            '<img id=logo src="/img/logo.png" srcset="/img/logo.png 1x, /img/logo-2x.png 2x"'
            ' alt="logo">'
            '<div style="background: url(\'/img/bg.png\')">styled</div>'
            '<a href="/docs">docs (a directory, redirected)</a>'
            '<a href="/home">home (redirected to the seed, crawled before)</a>'
            '<a href="/list?page=2&amp;sort=up">list page 2</a>'
            '<a href="/about#team">about</a>'
            '<a href="/caf%C3%A9/na%C3%AFve">non-ASCII</a>'
            f'<a href="/long/{LONG}">long</a>'
            '<a href="https://example.invalid/elsewhere">off site</a>'
            + links,
            HEAD + f'<link rel=stylesheet href="{cdn.url("/cdn.css")}">'),
        "/docs": Resource(b"", 301, {"Location": "/docs/"}),
        "/home": Resource(b"", 302, {"Location": "/"}),
        "/docs/": html('<h1 class="x">Docs</h1><img id=logo src="../img/logo.png">'
                       '<a href="../">home</a><a href="page.html#s2">page</a>', HEAD),
        "/docs/page.html": html('<h1 class="x" id=s2>Page</h1><img id=logo src="/img/logo.png">'
                                '<a href="/docs/">docs</a>', HEAD),
        "/list?page=2&sort=up": html('<h1 class="x">List 2</h1><img id=logo src="img/logo.png">'
                                     '<a href="/list?page=3&amp;sort=up">3</a>', HEAD),
        "/list?page=3&sort=up": html('<h1 class="x">List 3</h1><img id=logo src="img/logo.png">',
                                     HEAD),
        "/about": html('<h1 class="x" id=team>About</h1><img id=logo src="img/logo.png">', HEAD),
        "/caf%C3%A9/na%C3%AFve": html('<h1 class="x">Café</h1>'
                                      '<img id=logo src="/img/logo.png">', HEAD),
        f"/long/{LONG}": html('<h1 class="x">Long</h1><img id=logo src="/img/logo.png">', HEAD),
        "/css/main.css?v=3": typed(b'@import "base.css";\n'
                                   b"body { background: url(../img/bg2.png) }\n"
                                   b'@font-face { font-family: F; src: url("/fonts/f.woff2") '
                                   b'format("woff2") }\n', "text/css"),
        "/css/base.css": typed(b'@import url("deep/nested.css");\nh1 { color: rgb(1, 2, 3) }\n',
                               "text/css"),
        "/css/deep/nested.css": typed(b".x { background-image: url(../../img/n.png) }\n",
                                      "text/css"),
        "/js/app.js": typed(APP_JS, "application/javascript"),
        "/favicon.ico": typed(png(1, 1), "image/x-icon"),
        "/fonts/f.woff2": typed(b"wOF2 not really a font", "font/woff2"),
        **{path: typed(png(), "image/png") for path in
           ("/img/logo.png", "/img/logo-2x.png", "/img/bg.png", "/img/bg2.png", "/img/n.png")},
    })

    def any_path(request: Request) -> Resource:  # every hostile path answers, naming itself
        return site.pages.get(request.path) or html(f"<p>{request.path}</p>")

    site.resolve = any_path  # type: ignore[method-assign]
    cdn.pages.update({"/robots.txt": Resource(b"", 404),
                      "/cdn.css": typed(b"p { margin: 0 }", "text/css")})
