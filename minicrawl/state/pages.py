"""Saving fetched bodies under a directory that mirrors ``host/path`` (``--save-pages DIR``).

:func:`relative_path` maps a URL to a path inside the directory; :class:`PageSaver` writes bodies
there atomically. The mapping is the security boundary — a URL comes from whatever server we
crawl — so it never trusts a single character of it:

* the path is split on ``/`` first and each segment percent-decoded *afterwards*, so ``%2F``
  cannot add a level and ``%2e%2e`` is just another name to escape;
* every byte outside a small safe set is percent-encoded again, which covers ``\\`` (a separator
  on Windows), NUL, control characters, ``:`` and ``%`` itself; the names ``.`` and ``..`` become
  ``%2E`` and ``%2E%2E``; empty segments (``//``) are dropped;
* a segment longer than :data:`MAX_NAME` bytes, or a whole path longer than :data:`MAX_PATH`, is
  replaced by a prefix plus a hash, so the file system never refuses the name;
* and :meth:`PageSaver.target` checks the result lies inside the directory anyway.

``/`` maps to ``index.html`` and so does any path ending in ``/``; a query string is encoded
into the file name (``/list?page=2`` → ``list%3Fpage=2``). ``http`` and ``https`` of one host share
a folder; a port is kept as ``host_port``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote_to_bytes, urlsplit

from minicrawl.atomic import write_atomically
from minicrawl.cli.outpaths import cannot_write
from minicrawl.events import CrawlObserver

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item
    from minicrawl.page import Page

log = logging.getLogger("minicrawl")

INDEX = "index.html"
MAX_NAME = 150  # bytes per file or folder name; NAME_MAX is 255 on common file systems
MAX_PATH = 1000  # bytes for the whole relative path; PATH_MAX is 4096 on Linux
# Bytes kept as they are in names; everything else is written %XX. No separator, no "%".
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~=+,;@!()'")


def _encode(raw: bytes) -> str:
    return "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in raw)


def _name(raw: bytes) -> str:
    """One safe file or folder name for a decoded segment (never empty, ``.`` or ``..``)."""
    name = _encode(raw)
    if name.strip(".") == "":  # ".", "..", "...": dots alone would be special or invisible
        name = name.replace(".", "%2E")
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(raw).hexdigest()[:20]
        name = f"{name[:MAX_NAME - 22]}~{digest}"
    return name


def relative_path(url: str) -> str:
    """Where the body of ``url`` goes, relative to the save directory (``/``-separated).

    Always ``host[_port]/name/…/name``: no absolute path, no ``.``/``..`` segment, no backslash,
    NUL or control character, no name over :data:`MAX_NAME` bytes, at most :data:`MAX_PATH` bytes.
    """
    parts = urlsplit(url)
    host = _name((parts.hostname or "no-host").encode("utf-8", "surrogateescape"))
    try:
        port = parts.port
    except ValueError:  # not a number: ignore it rather than fail the save
        port = None
    if port is not None:
        host = f"{host}_{port}"
    raw_segments = parts.path.split("/")
    names = [_name(unquote_to_bytes(s)) for s in raw_segments[:-1] if s]
    last = unquote_to_bytes(raw_segments[-1]) if raw_segments[-1] else INDEX.encode()
    if parts.query:
        last += b"?" + unquote_to_bytes(parts.query)
    names.append(_name(last))
    path = "/".join([host, *names])
    if len(path) > MAX_PATH:
        # Too deep or too long to mirror: a hash of the whole URL, so two long URLs never share
        # a file (the record still says which file holds which URL).
        digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()
        path = f"{host}/_long/{digest}"
    return path


class UnsafePath(ValueError):
    """A mapped path that would leave the save directory (a bug in the mapping if ever raised)."""


class PageSaver(CrawlObserver):
    """Writes page bodies under ``root`` (see :func:`relative_path`), atomically."""

    flag = "--save-pages"

    def __init__(self, root: str | os.PathLike[str],
                 on_failure: Callable[[], None] | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._resolved_root = self.root.resolve()
        self._on_failure = on_failure  # the crawl's stop: further copies would be lost
        self.failed = False  # a copy could not be written (a full disk): told in one line
        self._fail_lock = threading.Lock()

    def target(self, url: str) -> Path:
        """The file ``url`` is saved to; :class:`UnsafePath` if it would not be inside root."""
        target = self.root.joinpath(*relative_path(url).split("/"))
        # Belt and braces: relative_path cannot produce an escape, and this proves it for the
        # path as the OS sees it (symlinks included) before anything is written.
        resolved = target.resolve()
        if not resolved.is_relative_to(self._resolved_root) or resolved == self._resolved_root:
            raise UnsafePath(f"{url!r} maps outside {self.root}: {resolved}")
        return target

    def page_kept(self, page: Page, new: Sequence[Item]) -> None:
        """Save a fetched page's body (before the state records where); an unchanged page
        already has its copy from an earlier run."""
        if page.saved is None and page.status == 200 and not page.error and not self.failed \
                and page.duplicate_of is None and not page.sitemap \
                and (page.body or not page.check):  # saved once: the first (a HEAD: no body)
            try:
                page.saved = self.save(page.final_url, page.body)
            except OSError as e:  # a full disk: one line (not one per worker), the crawl stops
                with self._fail_lock:
                    if self.failed:
                        return
                    self.failed = True
                log.error("%s; the crawl stops", cannot_write(self.flag, str(self.root), e))
                if self._on_failure is not None:
                    self._on_failure()

    def save(self, url: str, body: bytes) -> str:
        """Write ``body`` as the copy of ``url``; return the file's path (as a string).

        Written to a temporary file in the same folder and renamed, so a reader (or a crash) sees
        the old copy or the new one, never half of one. A name that clashes with a folder (the
        site has both ``/a`` and ``/a/b``) goes to ``_conflicts/`` under a hash of the URL.
        """
        target = self.target(url)
        try:
            _write(target, body)
        except (FileExistsError, IsADirectoryError, NotADirectoryError):
            digest = hashlib.sha256(url.encode("utf-8", "surrogateescape")).hexdigest()
            target = self.root / "_conflicts" / digest
            _write(target, body)
        return str(target)


def _write(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(path)
    write_atomically(path, body, durable=False)  # a copy for browsing: no fsync per page
