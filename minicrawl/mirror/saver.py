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
``--mirror``, each HTML page and stylesheet in the table has its links rewritten
(:mod:`minicrawl.mirror.rewrite`): a URL that has a copy → the relative path to it (its
fragment kept), any other http(s) URL → absolute. A file is rewritten from its bytes as saved
once (the table says which are rewritten: :meth:`Mirror.rewrite_links`), so a crawl resumed
after a kill, or a recrawl, rewrites what earlier runs saved too. A URL that cannot be saved
safely (a symlink in its way) is an error of its own kind, ``UnsafePath``; a disk that fails
stops the crawl, told in one line. One crawl at a time writes into DIR (it holds a lock on the
table).
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import os
import posixpath
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from minicrawl.cli.outpaths import OutputPathError, cannot_write
from minicrawl.core.urls import canonical
from minicrawl.events import CrawlObserver
from minicrawl.html.encoding import sniff
from minicrawl.mirror.paths import (
    CSS_TYPE,
    HTML_TYPES,
    Claims,
    UnsafePath,
    clear_spool,
    href_between,
    local_path,
    media_of,
    read_inside,
    remove_spool,
    unlink_inside,
    write_inside,
)
from minicrawl.mirror.rewrite import rewrite_css, rewrite_html
from minicrawl.state.recrawl import GONE

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item
    from minicrawl.options import Options
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
    encoding: str | None  # None: not in the table (an older one): sniffed from the file


_ABSOLUTE = re.compile(r"[ \t\n\f\r]*https?:", re.IGNORECASE)  # an http(s) URL, as a link
CONVERTED_MAX = 200_000  # links converted kept for the next files (~40 MB at most)


class Mirror(CrawlObserver):
    """Writes the copies under ``root``; with ``rewrite`` (``--mirror``), rewrites their links
    at the end. ``flag``: the option that asked for it, as messages name it; ``stats``: the
    crawl's (files and bytes written, errors); ``on_failure``: the crawl's stop (a full disk:
    further copies would be lost)."""

    def __init__(self, root: str | os.PathLike[str], flag: str = "--mirror",
                 rewrite: bool = True, stats: Stats | None = None,
                 on_failure: Callable[[], None] | None = None,
                 delete_gone: bool = False, names: str = "unix") -> None:
        self.root = Path(root)
        self.flag, self.rewrite, self.stats = flag, rewrite, stats
        self.delete_gone = delete_gone  # --forget-gone: a page a recrawl finds gone loses its copy
        self.names = names  # --mirror-names: as Unix allows, or Windows too (paths.local_path)
        self._gone: dict[str, str] = {}  # path → URL of each copy deleted so (links lead out)
        self.claims = Claims()
        self._on_failure = on_failure
        self.failed = False  # a copy could not be written (a full disk): told in one line
        self._lock = threading.Lock()  # the manifest's appends, the list of files to rewrite
        self._saved: dict[str, Saved] = {}  # path → the file (saved by this crawl or before)
        self._rewritten: dict[str, str] = {}  # path → the MD5 of its bytes once rewritten
        self._redirects: list[tuple[str, str]] = []  # (URL, where it redirects: crawled before)
        # (href, its base's folder or a query's base, the file's folder, encoding) → as written
        self._converted: dict[tuple[str, str, str, str], str | None] = {}
        self.files = self.bytes = 0  # written by this crawl
        fd = -1
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            # (never through a symlink planted in DIR: appending to it would write outside)
            fd = os.open(self.root / MANIFEST,
                         os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o666)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the OS drops it if we die
            clear_spool(self.root)  # what a killed crawl was writing: written again
            self._load()
        except OSError as e:  # one line before the crawl starts (a usage error: exit 2)
            if fd >= 0:
                os.close(fd)
            where = str(self.root / MANIFEST)
            if e.errno == errno.ELOOP:
                raise OutputPathError(f"{flag} {where!r}: cannot write: a symlink, never "
                                      "followed out of the mirror") from None
            if isinstance(e, BlockingIOError):
                raise OutputPathError(f"{flag} {str(self.root)!r}: another crawl is writing "
                                      "into it; wait for it to end, or give another") from None
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
                if "rewritten" in entry:
                    self._rewritten[str(entry["rewritten"])] = str(entry["md5"])
                elif "deleted" in entry:
                    self._gone[str(entry["deleted"])] = str(entry["url"])
                    self._saved.pop(str(entry["deleted"]), None)
                elif entry.get("alias"):
                    self.claims.alias(entry["url"], entry["path"])
                else:
                    self.claims.claim(entry["url"], entry["path"])
                    self._gone.pop(entry["path"], None)  # (saved again since)
                    self._holds_links(entry["url"], entry["path"], entry.get("type"),
                                      entry.get("encoding"))
            except (ValueError, KeyError, TypeError, AttributeError):
                continue  # a line cut short by a kill: that URL is saved again, where it was

    def _holds_links(self, url: str, path: str, media: str | None,
                     encoding: str | None) -> None:
        """Note the file at ``path`` for the rewrite if it is HTML or CSS (lock held, or
        loading)."""
        kind = "html" if media in HTML_TYPES else "css" if media == CSS_TYPE else ""
        if kind:
            self._saved[path] = Saved(url, path, kind, encoding if kind == "html" else "utf-8")

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        """Save a page (or a requisite) fetched whole, before the state records where: a 200
        answer with a body, not a duplicate (its URL leads to the copy of the page it repeats),
        not a sitemap; a page unchanged since an earlier run keeps that run's copy."""
        if page.change == GONE and self.delete_gone and not self.failed:
            self._delete(page.url)
            return
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

    def _delete(self, url: str) -> None:
        """Delete the copy of ``url``, a page gone (the table says so first; its name stays
        its, should it come back); links to it lead to the URL again at the rewrite."""
        path = self.claims.file_of.get(url)
        if path is None or path in self._gone:
            return
        with self._lock:
            self._manifest.write(json.dumps({"deleted": path, "url": url}) + "\n")
            self._manifest.flush()
            self._gone[path] = url
            self._saved.pop(path, None)
        try:
            unlink_inside(self.root, path)
        except FileNotFoundError:
            pass
        except OSError as e:  # (a folder in its way, a symlink): left, said
            log.warning("%s: %s not deleted: %s", self.flag, path, e)
            return
        if self.stats is not None:
            self.stats.add(mirror_deleted=1)

    def save(self, page: Page) -> str:
        """Write ``page``'s body as the copy of its final URL; its local path (relative to the
        root). The other URLs of its chain lead to it too."""
        url, body = page.final_url, page.body
        path = self.claims.claim(url, local_path(url, page.content_type, self.names))
        try:
            write_inside(self.root, path, body)
        except (IsADirectoryError, NotADirectoryError, FileExistsError):
            # the disk has a folder where the file goes, or a file where a folder does (left
            # by something else than this table): a name of its own
            path = self.claims.moved(url, path)
            write_inside(self.root, path, body)
        media = media_of(page.content_type)
        line = {"url": url, "path": path, "type": media}
        if media in HTML_TYPES:  # (its links' queries are in it: the rewrite of a later run)
            line["encoding"] = sniff(body, page.content_type)[0]
        with self._lock:
            self._manifest.write(json.dumps(line) + "\n")
            self._manifest.flush()
            self._gone.pop(path, None)  # (a page that came back)
            self._holds_links(url, path, media, line.get("encoding"))
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
            self.close()

    def close(self) -> None:
        """Close the table, which frees the folder for another crawl, rewriting no link (a
        crawl that never ran); again, it does nothing."""
        remove_spool(self.root)  # empty now: no DIR/.minicrawl-part/ left behind
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
        """Rewrite every HTML page and stylesheet in the mirror (this crawl's, and an earlier
        one's left as saved: a crawl killed before its end, resumed); how many changed.

        A file is rewritten from the bytes saved, once: the table notes the MD5 of the result
        before the file is replaced, so a file whose bytes have it is known rewritten (a kill
        between the two leaves the file as saved, and it is rewritten again). In a rewritten
        file a relative link leads to a file already; only an absolute URL that has a copy now
        (saved by a later crawl) is rewritten."""
        changed = 0
        for saved in list(self._saved.values()):
            try:
                body = read_inside(self.root, saved.path)
                done = hashlib.md5(body).hexdigest() == self._rewritten.get(saved.path)
                encoding = saved.encoding or sniff(body, "text/html")[0]
                # (a query is in the page's encoding in its attributes; in CSS, UTF-8's)
                convert, in_css = (self._converter(saved.path, encoding, done),
                                   self._converter(saved.path, "utf-8", done))
                new = (rewrite_html(body, saved.url, encoding, convert, in_css)
                       if saved.kind == "html" else rewrite_css(body, saved.url, in_css))
                if done and new == body:
                    continue
                with self._lock:  # first: the table never calls a file rewritten that is not
                    digest = hashlib.md5(new).hexdigest()
                    self._manifest.write(json.dumps({"rewritten": saved.path,
                                                     "md5": digest}) + "\n")
                    self._manifest.flush()
                if new != body:
                    write_inside(self.root, saved.path, new)
                    changed += 1
            except OSError as e:  # (a file removed or replaced meanwhile): that one as it was
                log.warning("%s: links not rewritten in %s: %s", self.flag, saved.path, e)
        return changed

    def _out_of(self, source: str, href: str) -> str | None:
        """The URL of the deleted copy the relative ``href`` on the rewritten file at ``source``
        leads to (its fragment kept); None if it leads to none."""
        if not self._gone or href.startswith(("/", "?")) or ":" in href.partition("/")[0]:
            return None
        path, hash_, fragment = href.partition("#")
        folder = source.rpartition("/")[0]
        target = posixpath.normpath(posixpath.join(folder, unquote(path)))
        url = self._gone.get(target)
        return None if url is None else url + hash_ + fragment

    def _converter(self, source: str, encoding: str,
                   rewritten: bool = False) -> Callable[[str, str], str | None]:
        """How a URL on the file at ``source`` is written: to its copy, else absolute;
        ``encoding``: its query's (the page's, as a browser sends it). In a file ``rewritten``
        before, only an absolute URL is read (a relative one leads to a copy already)."""
        file_of = self.claims.file_of
        # A link is written the same way on every file of a folder whose base URL is in one
        # folder (a site's sidebar, on each of its pages: most of its links), unless it is
        # only a query (it names the base's own file): converted once for them all. Bounded.
        done, gone = self._converted, self._gone
        folder = source.rpartition("/")[0]

        def convert(href: str, base: str) -> str | None:
            if not href or href.startswith("#"):
                return None  # the file itself: right as it is
            if rewritten and not _ABSOLUTE.match(href):
                return self._out_of(source, href)  # a copy deleted since: its URL again
            key = (href, base if href.startswith("?") else
                   base.partition("#")[0].partition("?")[0].rpartition("/")[0], folder, encoding)
            if key in done:
                return done[key]
            url = canonical(href, base, encoding)[0]
            new = None  # mailto:, javascript:, data:, malformed: as written
            if url is not None:
                fragment = "#" + href.partition("#")[2] if "#" in href else ""
                target = file_of.get(url)
                if target in gone:
                    target = None
                new = (url if target is None else href_between(source, target)) + fragment
            if len(done) >= CONVERTED_MAX:
                done.clear()
            done[key] = new
            return new

        return convert


def open_saver(options: Options, stats: Stats, on_failure: Callable[[], None]) -> Mirror:
    """The copies ``--mirror`` asks for (their links rewritten), else ``--save-pages`` (kept as
    fetched): a :class:`Mirror` (``stats``, ``on_failure``: see there)."""
    root, flag = (options.mirror, "--mirror") if options.mirror else (options.save_pages,
                                                                       "--save-pages")
    assert root, "open_saver() needs --mirror or --save-pages"
    return Mirror(root, flag, bool(options.mirror), stats, on_failure, options.forget_gone,
                  options.mirror_names)
