"""The copies a crawl keeps: ``--mirror DIR`` (the pages, what they need to be shown, links
rewritten to browse offline) and ``--save-pages DIR``, its simpler case (the pages' bodies as
they came, nothing fetched for them, nothing rewritten). One saver, :class:`Mirror`, for both.

Each page kept with a body (a 200 answer, not a duplicate of one saved) is written at its
:func:`~minicrawl.mirror.paths.local_path`, claimed in the mirror's table (:class:`Claims`: never
two URLs to one file), through :func:`~minicrawl.mirror.paths.write_inside` (no symlink followed).
With ``--mirror`` the requisites come through the door as checks (:mod:`minicrawl.visit.hooks`)
and are saved the same way. Every URL of a page's redirect chain, and a duplicate's URL, leads to
its file.

The table is kept in ``DIR/.minicrawl-mirror.jsonl`` (a JSON line per file: its URL, path and
type; an alias line per other URL leading to it), read again by the next crawl into DIR, so the
same URL keeps its file and a new one never takes another's. At the crawl's end, with
``--mirror``, each HTML page and stylesheet this crawl saved has its links rewritten
(:mod:`minicrawl.mirror.rewrite`): a URL that has a copy → the relative path to it (its
fragment kept), any other http(s) URL → absolute. A URL that cannot be saved safely (a symlink in
its way) is an error of its own kind, ``UnsafePath``; a disk that fails stops the crawl, told
in one line.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from minicrawl.cli.outpaths import OutputPathError, cannot_write
from minicrawl.core.urls import canonical
from minicrawl.events import CrawlObserver
from minicrawl.html.encoding import sniff
from minicrawl.mirror.paths import (
    CSS_TYPE,
    HTML_TYPES,
    Claims,
    UnsafePath,
    href_between,
    local_path,
    media_of,
    read_inside,
    write_inside,
)
from minicrawl.mirror.rewrite import rewrite_css, rewrite_html

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item
    from minicrawl.page import Page
    from minicrawl.stats import Stats, StatsSnapshot

log = logging.getLogger("minicrawl")

MANIFEST = ".minicrawl-mirror.jsonl"  # the table of files, in DIR (no host's folder: a dot)
UNSAFE = "UnsafePath"  # the error kind of a URL that cannot be saved safely


@dataclass(frozen=True, slots=True)
class Saved:
    """A file this crawl wrote that may hold links: its URL, local path, kind, encoding."""

    url: str
    path: str
    kind: str  # "html" or "css"
    encoding: str


CONVERTED_MAX = 200_000  # links converted kept for the next files (~40 MB at most)


class Mirror(CrawlObserver):
    """Writes the copies under ``root``; with ``rewrite`` (``--mirror``), rewrites their links
    at the end. ``flag``: the option that asked for it, as messages name it; ``stats``: the
    crawl's (files and bytes written, errors); ``on_failure``: the crawl's stop (a full disk:
    further copies would be lost)."""

    def __init__(self, root: str | os.PathLike[str], flag: str = "--mirror",
                 rewrite: bool = True, stats: Stats | None = None,
                 on_failure: Callable[[], None] | None = None) -> None:
        self.root = Path(root)
        self.flag, self.rewrite, self.stats = flag, rewrite, stats
        self.claims = Claims()
        self._on_failure = on_failure
        self.failed = False  # a copy could not be written (a full disk): told in one line
        self._lock = threading.Lock()  # the manifest's appends, the list of files to rewrite
        self._saved: list[Saved] = []
        self._redirects: list[tuple[str, str]] = []  # (URL, where it redirects: crawled before)
        # (href, its base's folder or a query's base, the file's folder, encoding) → as written
        self._converted: dict[tuple[str, str, str, str], str | None] = {}
        self.files = self.bytes = 0  # written by this crawl
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._load()
            # (never through a symlink planted in DIR: appending to it would write outside)
            fd = os.open(self.root / MANIFEST,
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as e:  # one line before the crawl starts (a usage error: exit 2)
            where = str(self.root / MANIFEST)
            if e.errno == errno.ELOOP:
                raise OutputPathError(f"{flag} {where!r}: cannot write: a symlink, never "
                                      "followed out of the mirror") from None
            raise OutputPathError(cannot_write(flag, where, e)) from None
        self._manifest = os.fdopen(fd, "a", encoding="utf-8")

    def _load(self) -> None:
        """The table of an earlier crawl into the same folder: its URLs keep their files."""
        try:
            lines = read_inside(self.root, MANIFEST).decode("utf-8", "replace").splitlines()
        except FileNotFoundError:
            return
        for line in lines:
            try:
                entry = json.loads(line)
                if entry.get("alias"):
                    self.claims.alias(entry["url"], entry["path"])
                else:
                    self.claims.claim(entry["url"], entry["path"])
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by a kill: that URL is saved again, where it was

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        """Save a page (or a requisite) fetched whole, before the state records where: a 200
        answer with a body, not a duplicate (its URL leads to the copy of the page it repeats),
        not a sitemap; a page unchanged since an earlier run keeps that run's copy."""
        if page.duplicate_of is not None:
            if (path := self.claims.file_of.get(page.duplicate_of)) is not None:
                self._alias([page.url, page.final_url], path)
            return
        if page.final_url != page.url and page.status is not None \
                and 300 <= page.status < 400:  # a redirect to a URL seen before: its chain
            with self._lock:  # leads to that URL's file, known at the end
                self._redirects += [(url, page.final_url) for url in
                                    (page.url, *getattr(page, "requested", ()))]
            return
        if page.saved is not None or page.status != 200 or page.error or self.failed \
                or page.sitemap or (page.check and not page.body):  # (a HEAD: no body)
            return
        try:
            page.saved = str(self.root / self.save(page))
        except UnsafePath as e:  # this URL is not saved; the crawl goes on
            page.error = f"{UNSAFE}: {e.strerror or e}"
            if self.stats is not None:
                self.stats.add({"errors": 1, f"error_{UNSAFE}": 1, "problems": 1})
        except OSError as e:  # a full disk: one line (not one per worker), the crawl stops
            with self._lock:
                if self.failed:
                    return
                self.failed = True
            log.error("%s; the crawl stops", cannot_write(self.flag, str(self.root), e))
            if self._on_failure is not None:
                self._on_failure()

    def save(self, page: Page) -> str:
        """Write ``page``'s body as the copy of its final URL; its local path (relative to the
        root). The other URLs of its chain lead to it too."""
        url, body = page.final_url, page.body
        path = self.claims.claim(url, local_path(url, page.content_type))
        try:
            write_inside(self.root, path, body)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            # the disk has a folder where the file goes, or a file where a folder does (left
            # by something else than this table): a name of its own
            path = self.claims.moved(url, path)
            write_inside(self.root, path, body)
        media = media_of(page.content_type)
        kind = "html" if media in HTML_TYPES else "css" if media == CSS_TYPE else ""
        encoding = sniff(body, page.content_type)[0] if kind == "html" else "utf-8"
        with self._lock:
            self._manifest.write(json.dumps({"url": url, "path": path, "type": media}) + "\n")
            self._manifest.flush()
            if kind:
                self._saved.append(Saved(url, path, kind, encoding))
            self.files += 1
            self.bytes += len(body)
        if self.stats is not None:
            self.stats.add(mirror_files=1, mirror_bytes=len(body))
        self._alias([page.url, *getattr(page, "requested", ())], path)
        return path

    def _alias(self, urls: Sequence[str], path: str) -> None:
        for other in dict.fromkeys(urls):
            if self.claims.file_of.get(other) is None:
                self.claims.alias(other, path)
                with self._lock:
                    self._manifest.write(json.dumps({"url": other, "path": path,
                                                     "alias": True}) + "\n")

    def crawl_finished(self, stats: StatsSnapshot) -> None:
        """With ``--mirror``: rewrite the links of the pages and stylesheets saved (the table
        is complete now); then close the table."""
        try:
            self._follow_redirects()
            if self.rewrite and not self.failed:
                rewritten = self.rewrite_links()
                stats["mirror_rewritten"] = rewritten
        finally:
            self._manifest.close()

    def _follow_redirects(self) -> None:
        """Each redirect to a URL that has a file leads to that file too (a chain of them: each
        step; a loop ends)."""
        file_of = self.claims.file_of
        for _ in range(10):  # (at most the crawl's redirect hops)
            found = [(url, file_of[target]) for url, target in self._redirects
                     if url not in file_of and target in file_of]
            if not found:
                return
            for url, path in found:
                self._alias([url], path)

    def rewrite_links(self) -> int:
        """Rewrite every saved HTML page and stylesheet of this crawl; how many changed."""
        changed = 0
        for saved in self._saved:
            try:
                body = read_inside(self.root, saved.path)
                # (a query is in the page's encoding in its attributes; in CSS, UTF-8's)
                convert, in_css = (self._converter(saved.path, saved.encoding),
                                   self._converter(saved.path, "utf-8"))
                new = (rewrite_html(body, saved.url, saved.encoding, convert, in_css)
                       if saved.kind == "html" else rewrite_css(body, saved.url, in_css))
                if new != body:
                    write_inside(self.root, saved.path, new)
                    changed += 1
            except OSError as e:  # (a file removed or replaced meanwhile): that one as it was
                log.warning("%s: links not rewritten in %s: %s", self.flag, saved.path, e)
        return changed

    def _converter(self, source: str, encoding: str) -> Callable[[str, str], str | None]:
        """How a URL on the file at ``source`` is written: to its copy, else absolute;
        ``encoding``: its query's (the page's, as a browser sends it)."""
        file_of = self.claims.file_of
        # A link is written the same way on every file of a folder whose base URL is in one
        # folder (a site's sidebar, on each of its pages: most of its links), unless it is
        # only a query (it names the base's own file): converted once for them all. Bounded.
        done = self._converted
        folder = source.rpartition("/")[0]

        def convert(href: str, base: str) -> str | None:
            if not href or href.startswith("#"):
                return None  # the file itself: right as it is
            key = (href, base if href.startswith("?") else
                   base.partition("#")[0].partition("?")[0].rpartition("/")[0], folder, encoding)
            if key in done:
                return done[key]
            url = canonical(href, base, encoding)[0]
            new = None  # mailto:, javascript:, data:, malformed: as written
            if url is not None:
                fragment = "#" + href.partition("#")[2] if "#" in href else ""
                target = file_of.get(url)
                new = (url if target is None else href_between(source, target)) + fragment
            if len(done) >= CONVERTED_MAX:
                done.clear()
            done[key] = new
            return new

        return convert
