"""The link case pages (tests/data/linkcases/): what they are, a site that serves them all, and
what a crawler should request from each — the links headless Chromium found on it (truth.json,
recorded by tests/linkcases_record.py), less those it should not follow.

Each case is ``<category>-<name>.html`` (its bytes as served) with an entry in ``cases.json``:
``about`` (what it tests), ``headers`` (the answer's headers, in order; none at all: no
Content-Type), and for nofollow cases ``page_nofollow`` / ``noindex`` (what the page says to a
robot: written by hand, as no browser has the idea). ``{{ORIGIN}}`` and ``{{DIR}}`` in a page's
bytes stand for the site's origin and the case's directory, filled in when served.

The site (:class:`CaseSite`) serves ``/`` (a page linking every case), each case at
``/c/<case>/page.html``, a 404 for ``/robots.txt`` and a short text/plain 200 for any other URL:
the targets of the cases' links, which a crawler requests and finds no link in.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

from requests.utils import requote_uri

from minicrawl.core.urls import canonicalize
from minicrawl.demo.site import LocalSite, Request, Resource

DATA = Path(__file__).parent / "data" / "linkcases"
ORIGIN = "{{ORIGIN}}"  # in truth.json: the recording site's origin
# The links a crawler follows, of what a browser finds: <a>/<area> (HTML and SVG), frames, and
# <link> with one of these rels (not a stylesheet, icon or preload: no page), and the navigations
# the browser made itself: a refresh (``document``), a frame's page (``iframe``, ``frame``).
LINK_RELS = {"next", "prev", "alternate", "canonical"}
NAVIGATIONS = {"document", "iframe", "frame"}


@dataclass(frozen=True)
class Case:
    """One case page: its bytes, its answer's headers, and what it says to robots."""

    name: str
    body: bytes
    headers: tuple[tuple[str, str], ...]
    about: str
    page_nofollow: bool = False
    noindex: bool = False

    @property
    def category(self) -> str:
        """encoding, whitespace, base, element, refresh, sniff, nofollow or broken."""
        return self.name.split("-", 1)[0]

    @property
    def path(self) -> str:
        """Where the site serves it."""
        return f"/c/{self.name}/page.html"

    def served(self, origin: str) -> bytes:
        """The bytes as served by the site at ``origin``."""
        return self.body.replace(b"{{ORIGIN}}", origin.encode()).replace(
            b"{{DIR}}", f"/c/{self.name}/".encode())


@cache
def cases() -> dict[str, Case]:
    """Every case, by name."""
    manifest = json.loads((DATA / "cases.json").read_text("utf-8"))
    return {name: Case(name, (DATA / f"{name}.html").read_bytes(),
                       tuple(map(tuple, entry["headers"])), entry["about"],
                       entry.get("page_nofollow", False), entry.get("noindex", False))
            for name, entry in sorted(manifest.items())}


@cache
def truth() -> dict[str, dict]:
    """What Chromium found on each case (see tests/linkcases_record.py)."""
    return json.loads((DATA / "truth.json").read_text("utf-8"))


class CaseSite(LocalSite):
    """Serves every case (see the module's docstring) and logs every request."""

    def resolve(self, request: Request) -> Resource:
        """The index, a case, a 404 robots.txt, or a text/plain target."""
        path = request.path
        if path == "/":
            index = "".join(f'<a href="{case.path}">{name}</a>\n' for name, case in cases().items())
            return Resource(index.encode(), headers={"Content-Type": "text/html"})
        if path == "/robots.txt":
            return Resource(b"", 404, {"Content-Type": "text/plain"})
        if (match := re.fullmatch(r"/c/([^/?]+)/page\.html", path)) and match[1] in cases():
            return Resource(send=self._case_sender(cases()[match[1]]))
        return Resource(b"target\n", headers={"Content-Type": "text/plain"})

    def _case_sender(self, case: Case):  # noqa: ANN202 - http.server's handler type
        body = case.served(self.origin)

        def send(handler: BaseHTTPRequestHandler) -> None:
            handler.send_response(200)
            for name, value in case.headers:  # repeats kept (two X-Robots-Tag lines)
                handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        return send

    def requested(self) -> dict[str, set[str]]:
        """The canonical URLs requested under each case's directory, by case (the case page
        itself left out)."""
        seen: dict[str, set[str]] = {name: set() for name in cases()}
        for request in list(self.requests):
            if (match := re.match(r"/c/([^/?]+)/", request.path)) and match[1] in seen:
                url = canonicalize(self.origin + request.path)
                if url is not None and request.path != cases()[match[1]].path:
                    seen[match[1]].add(url)
        return seen

    def stray(self) -> list[str]:
        """Requests of no case's directory (the index and robots.txt aside)."""
        return [r.path for r in self.requests
                if r.path not in ("/", "/robots.txt") and not re.match(r"/c/[^/?]+/", r.path)]


def link_urls(found: dict) -> list[tuple[str, str | None]]:
    """(absolute URL, rel) of each link a crawler follows among what Chromium found on a page
    (see ``LINK_RELS`` and ``NAVIGATIONS``), fragments kept."""
    urls = []
    for link in found["links"]:
        kind, rel = link["kind"], link.get("rel")
        tokens = set((rel or "").lower().split())
        if kind in ("a", "area", "svg:a", "iframe", "frame") or (
                kind == "link" and tokens & LINK_RELS and "stylesheet" not in tokens):
            urls.append((link["resolved"], rel))
    urls += [(url, None) for dest, url in found["requests"] if dest in NAVIGATIONS]
    return urls


def expected(name: str, origin: str, follow_nofollow: bool = False) -> set[str]:
    """The canonical URLs a crawler should request from case ``name`` on the site at ``origin``:
    Chromium's links (``link_urls``) on the site's host, the case page itself left out, as an
    HTTP client sends them (``requote_uri``: a ``{`` or ``\\`` that a browser sends as it is,
    requests percent-encodes, as RFC 3986 wants); less,
    unless ``follow_nofollow``, those the page forbids following (all of them for a page that
    says nofollow; those whose every link has rel=nofollow). Nofollow is no browser idea: that
    part is the case's manifest and the rel Chromium parsed, not a browser's behaviour."""
    case = cases()[name]
    if case.page_nofollow and not follow_nofollow:
        return set()
    urls: dict[str, bool] = {}  # canonical URL → followed by some link
    for url, rel in link_urls(truth()[name]):
        canonical = canonicalize(url.replace(ORIGIN, origin).split("#", 1)[0])
        canonical = canonical and requote_uri(canonical)
        nofollow = "nofollow" in (rel or "").lower().split() and not follow_nofollow
        if canonical is not None and canonical.startswith(origin + "/"):
            urls[canonical] = urls.get(canonical, False) or not nofollow
    urls.pop(origin + case.path, None)
    return {url for url, followed in urls.items() if followed}


def host_of(url: str) -> str:
    """``host:port`` of ``url``."""
    return urlsplit(url).netloc
