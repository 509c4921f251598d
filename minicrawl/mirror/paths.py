"""Where a URL's copy goes in a mirror (``--mirror DIR``, ``--save-pages DIR``), and writing it
there without ever leaving DIR.

:func:`local_path` names the file of a canonical URL: ``host[:port]/path``, a URL ending in ``/``
as ``index.html``, its query part of the file name (``list?page=2``), an HTML page without an
``.html`` name given one and a stylesheet a ``.css`` (as ``wget -E``: a browser reading the copy
from ``file://`` knows a file's type by its name only). It is the security boundary — the names
come from whatever server is crawled — so nothing of the URL is trusted:

* the URL is put in canonical form first (``..`` and ``.`` segments resolved, ``\\`` read as
  ``/``, as a browser does), then split on ``/``; a segment's escapes are decoded only where they
  spell printable non-ASCII text (``caf%C3%A9`` is ``café``): ``%2F``, ``%00``, ``%2E%2E``, a
  control or bidi character stay written ``%XX``, so no name holds a separator, NUL or control
  character, and none is ``.`` or ``..`` (dots alone are written ``%2E``);
* no name is one an OS reserves, so the mirror can be copied to Windows, macOS or a FAT, NTFS
  or SMB share as it is: a Windows device name (``CON``, ``PRN``, ``AUX``, ``NUL``,
  ``COM0``–``COM9``, ``LPT0``–``LPT9``, ``COM¹²³``, ``LPT¹²³``; any case, with any extension:
  ``nul.html`` is the device too) has its first letter escaped (``con`` → ``%63on``), and a
  name ending in a dot (Windows drops it: ``a.`` would be ``a``) has it escaped (``a%2E``).
  Neither changes what names another URL: a canonical URL writes letters and dots as they
  are, never as an escape, so an escape of one appears in no other name. With
  ``names="windows"`` (as ``wget --restrict-file-names=windows``) the characters Windows
  forbids in a name, ``< > : " | ? * \\``, are escaped too (``host%3A8080``,
  ``list%3Fpage=2.html``), and so is ``%`` itself: an escape of a set that holds ``%`` is
  undone by decoding it, so it too is one-to-one (wget's ``+`` and ``@`` for ``:`` and ``?``
  are not: ``a@b`` is a name of its own). The default is ``"unix"``, wget's on Unix (and
  wget2's: the same names as theirs for the same site);
* a name over :data:`MAX_NAME` bytes is cut and given a hash of the whole name (its extension
  kept, so the copy still opens as what it is); a path over :data:`MAX_PATH` bytes goes to
  ``host/_long/HASH``;
* :func:`write_inside` opens each folder from DIR down with ``O_NOFOLLOW``, creating it if need
  be, so a symlink in DIR (planted, or left by anything) is never followed, and writes the file
  under a temporary name renamed over the target (a reader sees the old copy or the new one),
  created as ``open()`` and ``mkdir`` create them (0666 and 0777 less the umask; a copy written
  again keeps the mode of the one it replaces).

Two URLs never share a file: the names are one-to-one for canonical URLs as far as the file
system allows (``/a`` and ``/a/`` differ: ``a`` and ``a/index.html``), and :class:`Claims`, the
mirror's table of who has which file, gives any later claimant of a taken name (``/a`` a file and
``/a/b`` needing a folder ``a``; ``/x/index.html`` and ``/x/``) a name of its own.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import secrets
import stat
import threading
import unicodedata
from urllib.parse import quote, urlsplit

from minicrawl.core.urls import canonical as canonical_of

INDEX = "index.html"
MAX_NAME = 200  # bytes per name: NAME_MAX is 255, less room for the temporary name's affixes
MAX_PATH = 3000  # bytes for the whole relative path (PATH_MAX is 4096 on Linux)
SPOOL = ".minicrawl-part"  # in DIR: each file as it is written, renamed into place when whole
LONG, CONFLICTS = "_long", "_conflicts"  # a host's folders for names that cannot be as they are
HTML_TYPES = ("text/html", "application/xhtml+xml")
CSS_TYPE = "text/css"
# Characters a canonical URL's path may hold as they are that stay as they are in a name;
# anything else is written as %XX (a canonical URL's escapes stay escapes: "%20", "%2F").
_KEPT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
_TOKENS = re.compile(r"(?:%[0-9A-Fa-f]{2})+|.", re.DOTALL)


class UnsafePath(OSError):
    """A copy that cannot be written safely: a symlink (or what is no folder) in its way."""


def media_of(content_type: str | None) -> str:
    """The media type of a Content-Type header, lower case, without parameters ("" if none)."""
    return (content_type or "").partition(";")[0].strip().lower()


def local_path(url: str, content_type: str | None = None, names: str = "unix") -> str:
    """The copy of ``url`` relative to the mirror's folder, ``/``-separated: ``host[:port]/…``,
    never absolute, no ``.``/``..``, separator, NUL or control character in a name, no name an
    OS reserves, each name at most :data:`MAX_NAME` bytes (+4: the reserved names' escapes), the
    whole at most :data:`MAX_PATH`. ``content_type``: its answer's (an HTML page is given
    ``.html``, a stylesheet ``.css``); ``names``: ``"unix"`` or ``"windows"`` (no character
    Windows forbids either). ValueError for what is no http(s) URL."""
    if names not in NAMES:
        raise ValueError(f"names: one of {', '.join(NAMES)}, not {names!r}")
    canonical = canonical_of(url, max_length=9 * len(url) + 64)[0]  # (long: hashed below)
    if canonical is None:
        raise ValueError(f"not an http(s) URL: {url!r}")
    parts = urlsplit(canonical)
    host = canonical.partition("://")[2].partition("/")[0].rpartition("@")[2]
    windows = names == "windows"
    out = [_name(host)]
    segments = parts.path.split("/")[1:]  # (a canonical path starts with "/")
    out += [_name(s) for s in segments[:-1] if s]  # ("a//b": one folder a)
    last = _name(segments[-1]) if segments[-1] else INDEX
    if parts.query:  # "?" is never in an encoded name: the query cannot pass for a path
        last += "?" + _name(parts.query.replace("/", "%2F"))
    last = _typed(last, media_of(content_type))
    out.append(last)
    if windows:  # (before the names are cut: they hold their escapes within MAX_NAME)
        out = [_WINDOWS_FORBIDDEN.sub(_escape_match, name) for name in out]
    out = [_unreserved(_short(name)) for name in out]
    path = "/".join(out)
    if len(path.encode()) > MAX_PATH:  # too deep to mirror as it is: a hash of the whole URL
        path = f"{out[0]}/{LONG}/{_digest(canonical, 40)}{_extension(last)}"
    return path


NAMES = ("unix", "windows")  # local_path's rules: wget's --restrict-file-names=unix|windows
# Windows's device names: a file named so (whatever its extension, any case) is the device
_DEVICES = frozenset(["con", "prn", "aux", "nul"] + [f"{port}{n}" for port in ("com", "lpt")
                                                      for n in "0123456789\u00b9\u00b2\u00b3"])
_WINDOWS_FORBIDDEN = re.compile(r'[<>:"|?*\\%]')  # (and "/", NUL, controls: never in a name)


def _escape_match(match: re.Match[str]) -> str:
    return "".join(f"%{b:02X}" for b in match[0].encode())


def _unreserved(name: str) -> str:
    """``name``, or if an OS reserves it (a Windows device's, one ending in a dot) the name with
    one letter or dot escaped: one-to-one, as no other name holds an escaped letter or dot."""
    if name.partition(".")[0].lower() in _DEVICES:
        name = f"%{ord(name[0]):02X}{name[1:]}"  # (an ASCII letter: c, p, a, n or l)
    if name.endswith("."):  # (a space is never in a name as it is: %20)
        name = name[:-1] + "%2E"
    return name


def _name(segment: str) -> str:
    """One safe name for a canonical URL's path segment: escapes kept as escapes except those
    spelling printable non-ASCII text; never "", "." or ".."."""
    out = []
    for token in _TOKENS.findall(segment):
        if token[0] == "%" and len(token) > 1:
            out.append(_decoded(token))
        elif token in _KEPT:
            out.append(token)
        else:  # (no canonical URL has it: a hostile input's) its UTF-8 bytes escaped
            out.append("".join(f"%{b:02X}" for b in token.encode("utf-8", "surrogatepass")))
    name = "".join(out)
    if name.strip(".") == "":  # "", ".", "..": dots alone are navigation, not a name
        name = name.replace(".", "%2E") or "%"
    return name


def _decoded(escapes: str) -> str:
    """A run of ``%XX``: the text it spells where that is printable non-ASCII UTF-8 (a name a
    person can read), else the escapes as they are (upper case)."""
    raw = bytes.fromhex(escapes.replace("%", ""))
    out, start = [], 0
    for match in re.finditer(rb"[\x80-\xff]+", raw):
        out.append(_escaped(raw[start:match.start()]))
        try:
            text = match[0].decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if text and all(unicodedata.category(c)[0] not in "CZ" for c in text):
            out.append(text)  # (no control, format (bidi), separator or unassigned character)
        else:
            out.append(_escaped(match[0]))
        start = match.end()
    out.append(_escaped(raw[start:]))
    return "".join(out)


def _escaped(raw: bytes) -> str:
    return "".join(f"%{b:02X}" for b in raw)


def _typed(name: str, media: str) -> str:
    """``name`` with the extension its type needs to open as it is from ``file://``."""
    lower = name.lower()
    if media in HTML_TYPES and not lower.endswith((".html", ".htm")):
        return name + ".html"
    if media == CSS_TYPE and not lower.endswith(".css"):
        return name + ".css"
    return name


def _extension(name: str) -> str:
    """A short extension of ``name`` (".html", ".png"), kept when a name is cut; else ""."""
    stem, dot, ext = name.rpartition(".")
    return f".{ext}" if dot and stem and 0 < len(ext) <= 8 and ext.isalnum() else ""


def _short(name: str) -> str:
    """``name``, or if over :data:`MAX_NAME` bytes its start, a hash of it and its extension."""
    if len(name.encode()) <= MAX_NAME:
        return name
    ext = _extension(name)
    head = name.encode()[:MAX_NAME - 34 - len(ext)].decode("utf-8", "ignore")
    return f"{head}~{_digest(name, 32)}{ext}"


def _digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def href_between(source: str, target: str) -> str:
    """The relative URL a file at ``source`` (a local path) uses to reach ``target``'s file:
    each name percent-encoded (a ``?`` in a name is no query, a ``:`` no scheme)."""
    here, there = source.split("/")[:-1], target.split("/")
    common = 0
    while common < min(len(here), len(there) - 1) and here[common] == there[common]:
        common += 1
    steps = [".."] * (len(here) - common) + there[common:]
    return "/".join(quote(step, safe="!$&'()*+,;=@~") if step != ".." else step
                    for step in steps)


class Claims:
    """Which URL has which file in the mirror: one file per URL, never two URLs to one file.
    Thread-safe: workers save at once."""

    def __init__(self) -> None:
        self.file_of: dict[str, str] = {}  # URL → its local path
        self._owner: dict[str, str] = {}  # local path → the URL that has it
        self._folders: set[str] = set()  # every folder some claimed file needs
        self._lock = threading.Lock()

    def claim(self, url: str, path: str) -> str:
        """The local path ``url`` is to be saved at: its own if it has one, else ``path``, else
        (taken, or a folder another file needs, or under a name that is a file) a name of its
        own under ``host/_conflicts/``."""
        with self._lock:
            if (have := self.file_of.get(url)) is not None:
                return have
            if not self._free(path, url):
                host, _, rest = path.partition("/")
                last = rest.rpartition("/")[2]
                path = f"{host}/{CONFLICTS}/{_digest(url, 24)}-{last}"[:MAX_PATH]
                while not self._free(path, url):  # (a name taken already: a hash more)
                    path = f"{host}/{CONFLICTS}/{_digest(path + url, 24)}-{last}"
            self._take(url, path)
            return path

    def alias(self, url: str, path: str) -> None:
        """``url`` is another name of the file at ``path`` (a redirect to it): links to it lead
        there too."""
        with self._lock:
            self.file_of.setdefault(url, path)

    def moved(self, url: str, path: str) -> str:
        """``url`` could not be saved at its claimed path (the disk has a folder or a file in its
        way): a path of its own under ``_conflicts``."""
        with self._lock:
            host = path.partition("/")[0]
            new = f"{host}/{CONFLICTS}/{_digest('moved ' + url, 24)}-{path.rpartition('/')[2]}"
            self._take(url, new)
            return new

    def _free(self, path: str, url: str) -> bool:
        if self._owner.get(path, url) != url or path in self._folders:
            return False
        folders = path.split("/")[:-1]
        return not any("/".join(folders[:n]) in self._owner for n in range(1, len(folders) + 1))

    def _take(self, url: str, path: str) -> None:
        self.file_of[url] = path
        self._owner[path] = url
        folders = path.split("/")[:-1]
        self._folders.update("/".join(folders[:n]) for n in range(1, len(folders) + 1))


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def _folder(parent: int, name: str, create: bool) -> int:
    """The folder ``name`` in the folder open as ``parent``, opened without following a symlink
    (created if ``create``); UnsafePath if a symlink is there, NotADirectoryError if a file."""
    for _ in range(2):
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
            try:
                os.mkdir(name, 0o777, dir_fd=parent)  # (less the umask, as mkdir -p)
            except FileExistsError:
                pass  # (another worker made it meanwhile)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK) and stat.S_ISLNK(
                    os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                raise UnsafePath(errno.ELOOP, f"a symlink is in the way: {name!r}") from None
            raise
    return os.open(name, _DIR_FLAGS, dir_fd=parent)


def _descend(root: str | os.PathLike[str], path: str, create: bool) -> tuple[int, str]:
    """The folder of ``path`` under ``root`` (open; the caller closes it) and the file's name."""
    *folders, name = path.split("/")
    if not name or any(n in ("", ".", "..") or "\0" in n for n in path.split("/")):
        raise UnsafePath(errno.EINVAL, f"not a path inside the mirror: {path!r}")
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for folder in folders:
            inner = _folder(fd, folder, create)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd, name


def write_inside(root: str | os.PathLike[str], path: str, body: bytes) -> None:
    """Write ``body`` as the file ``path`` (``/``-separated, relative) under ``root``, never
    through a symlink: written under a temporary name in ``root``'s :data:`SPOOL`, then
    renamed over the file (which replaces a symlink there rather than follow it; a kill
    leaves no part of a file among the copies, only in the spool: :func:`clear_spool`; a crawl
    that ends removes it, empty: :func:`remove_spool`).
    UnsafePath: a symlink in the way; IsADirectoryError / NotADirectoryError: a folder where
    the file goes, a file where a folder does; another OSError: the disk's."""
    fd, name = _descend(root, path, create=True)
    try:
        kept = None  # an existing copy's permissions, kept by the new one
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                raise IsADirectoryError(errno.EISDIR, f"a folder is in the way: {path!r}")
            if stat.S_ISREG(st.st_mode):
                kept = stat.S_IMODE(st.st_mode) & 0o777
        except FileNotFoundError:
            pass
        spool, temp = _descend(root, f"{SPOOL}/{secrets.token_hex(8)}.part", create=True)
        try:
            # 0666 & ~umask, as open() creates a file (wget's copies too)
            out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666,
                          dir_fd=spool)
            try:
                with os.fdopen(out, "wb") as fh:
                    if kept is not None:
                        os.fchmod(fh.fileno(), kept)
                    fh.write(body)
                os.replace(temp, name, src_dir_fd=spool, dst_dir_fd=fd)
            except BaseException:
                try:
                    os.unlink(temp, dir_fd=spool)
                except OSError:
                    pass
                raise
        finally:
            os.close(spool)
    finally:
        os.close(fd)


def clear_spool(root: str | os.PathLike[str]) -> int:
    """Delete what a killed crawl left in ``root``'s :data:`SPOOL` (files cut short, never
    renamed into place; no symlink followed: unlinking one removes the link); how many."""
    try:
        fd = _descend(root, f"{SPOOL}/-", create=False)[0]
    except FileNotFoundError:
        return 0
    try:
        names = [n for n in os.listdir(fd) if n.endswith(".part")]
        for name in names:
            os.unlink(name, dir_fd=fd)
        return len(names)
    finally:
        os.close(fd)


def remove_spool(root: str | os.PathLike[str]) -> bool:
    """Remove ``root``'s :data:`SPOOL` if it is empty (a crawl that ended: each file was
    renamed into place); one that holds anything (a part another crawl left, a file not ours)
    stays. True if removed."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        # (rmdir never follows a symlink: one in SPOOL's place is ENOTDIR, and stays)
        os.rmdir(SPOOL, dir_fd=fd)
        return True
    except OSError:  # not empty, gone already, not a folder
        return False
    finally:
        os.close(fd)


def unlink_inside(root: str | os.PathLike[str], path: str) -> None:
    """Delete the file ``path`` under ``root`` (a symlink there is removed, never followed)."""
    fd, name = _descend(root, path, create=False)
    try:
        os.unlink(name, dir_fd=fd)
    finally:
        os.close(fd)


def read_inside(root: str | os.PathLike[str], path: str) -> bytes:
    """The bytes of the file ``path`` under ``root``, read without following a symlink."""
    fd, name = _descend(root, path, create=False)
    try:
        inner = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=fd)
    finally:
        os.close(fd)
    with os.fdopen(inner, "rb") as fh:
        return fh.read()
