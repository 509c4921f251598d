"""The state database's tables and the few statements that write them (see :mod:`.store`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from minicrawl.core.door import visited_key
from minicrawl.records.edges import pack_hops
from minicrawl.state.recrawl import REDIRECTS, UNCHANGED, body_md5

if TYPE_CHECKING:
    from minicrawl.page import Page

FORMAT = 1  # bump when the tables or the filter checkpoint change incompatibly
# The meta row that marks a crawl of the demo site (``--demo``), its value the port the demo
# served the site on: the demo resumes such a state on that port, and only such a state; a run
# without --demo refuses it (nothing would serve the site at its seed).
DEMO_KEY = "demo"

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages (
    url TEXT PRIMARY KEY, final_url TEXT NOT NULL, status INTEGER, etag TEXT,
    last_modified TEXT, md5 TEXT, size INTEGER NOT NULL, fetched_at TEXT NOT NULL,
    depth INTEGER NOT NULL, referrer TEXT, change TEXT NOT NULL, saved TEXT, error TEXT,
    forgotten INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL);
CREATE INDEX pages_seq ON pages (seq);
CREATE TABLE todo (
    url TEXT PRIMARY KEY, depth INTEGER NOT NULL, referrer TEXT,
    attempt INTEGER NOT NULL DEFAULT 0, seq INTEGER NOT NULL,
    chain TEXT);  -- a redirect hop: the URL whose record the chain will end in
CREATE INDEX todo_seq ON todo (seq);
CREATE INDEX todo_chain ON todo (chain);
"""
# Content digest → the URL first recorded with it (duplicate content, minicrawl.records.digests).
# Added after format 1 first shipped: created on opening when missing, so older dirs gain it.
DIGESTS_TABLE = ("CREATE TABLE IF NOT EXISTS digests ("
                 "digest TEXT PRIMARY KEY, url TEXT NOT NULL) WITHOUT ROWID")

# The links of each page recorded while links were recorded (--links, --check-links), as the
# links' join reads them (minicrawl.records.links): the URL of the page they are on (the record's
# final URL), the hops of its redirect chain, its anchors and its edges (minicrawl.records.edges
# packs them: one row a page), written in the transaction of the page's record; ``id`` gives the
# order the pages were recorded in. Added after format 1 first shipped: created on opening when
# missing, so older dirs gain it.
EDGES_TABLE = ("CREATE TABLE IF NOT EXISTS edges (id INTEGER PRIMARY KEY, url TEXT NOT NULL "
               "UNIQUE, page TEXT NOT NULL, hops TEXT, anchors TEXT, edges TEXT)")
# What ``links_in`` counts of each page (minicrawl.records.linksin), in a state that keeps it
# (LINKS_IN_KEY), written in the transaction of the page's record as its edges are: ``links``,
# the links the crawl follows (``page.links``, packed; not the edges, which also hold links it
# does not follow — nofollow, a <link rel=author>, requisites — and not which of them a run
# with --ignore-nofollow followed), and ``requested``, the URLs its redirect chain requested
# besides its own (not the edges' hops, which end where the chain ended, requested or not). A
# table of its own, not columns of ``edges``: a row there is a page's every edge, and one a
# third longer fits half as many to a database page (the demo site at 1,000 pages: +78 % of
# crawl.db, not +26 %). Added after format 1 first shipped: created on opening when missing.
LINKS_IN_TABLE = ("CREATE TABLE IF NOT EXISTS linksin (url TEXT PRIMARY KEY, links TEXT, "
                  "requested TEXT) WITHOUT ROWID")
# Each URL a redirect chain requested and left behind: a middle hop, whose answer redirected to
# the next and whose journal row the next one's replaced (CrawlState.hop), with the ``seq`` of
# that commit; the chain's last redirect when its target was not followed (seen before, out of
# scope, an error), which replaced no journal row, with the ``seq`` of the chain's record
# (CrawlState.commit); and the start of a chain a resumed run carries on at its hop (recorded
# under the hop's URL: CrawlState.start). The chain's record names only its start and its end,
# so this row is what keeps such a URL in a resumed crawl's Visited: without it, linked, it was
# fetched again. One short row a URL left behind (none for a chain of one redirect), in every
# state (not only with --links: a crawl fetches no URL twice with or without them); cleared
# when a recrawl starts, which follows each chain again. Added after format 1 first shipped:
# created on opening when missing, and filled then from the chains the state's ``edges`` kept
# (opening.backfill_hops); a state made before without them has no hops of the runs before.
HOPS_TABLE = ("CREATE TABLE IF NOT EXISTS hops (url TEXT PRIMARY KEY, seq INTEGER NOT NULL) "
              "WITHOUT ROWID")
# The meta row that says every page recorded has its row in ``linksin``: written by a run that
# records links (--links, --check-links) on a state with no page yet, and kept true by every
# later run, which writes them too; so links_in is counted from the state, over every run.
LINKS_IN_KEY = "links_in"

UPSERT_PAGE = """
INSERT INTO pages (url, final_url, status, etag, last_modified, md5, size, fetched_at, depth,
                   referrer, change, saved, error, forgotten, seq)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (url) DO UPDATE SET
    final_url = excluded.final_url, status = excluded.status, etag = excluded.etag,
    last_modified = excluded.last_modified, md5 = excluded.md5, size = excluded.size,
    fetched_at = excluded.fetched_at, depth = excluded.depth, referrer = excluded.referrer,
    change = excluded.change, saved = coalesce(excluded.saved, pages.saved),
    error = excluded.error, forgotten = excluded.forgotten, seq = excluded.seq
"""

# An unchanged page (a 304, the same body, a redirect to the same target) confirms its record:
# keep its status, signature and file — what a redirect's target is compared with — and refresh
# the rest.
CONFIRM_PAGE = """
UPDATE pages SET etag = coalesce(?, etag), last_modified = coalesce(?, last_modified),
    fetched_at = ?, change = ?, error = NULL, forgotten = 0, seq = ?
WHERE url = ?
"""


class StateError(Exception):
    """A state directory that cannot be used as asked; the message says why and what to do."""


class StateUnwritable(StateError):
    """The state directory could not be written (a full disk, an I/O error): a failure of the
    crawl (exit 1), not of its options, and no sign the directory is damaged."""


_SQLITE_IOERR, _SQLITE_FULL = 10, 13  # primary result codes (extended ones share the low byte)


def open_db(path: Path) -> sqlite3.Connection:
    """The state database at ``path``, opened (WAL, NORMAL sync) and checked; tables are
    created by the caller when it is new."""
    # isolation_level=None: transactions are the explicit BEGIN ... COMMIT below.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        db.execute("PRAGMA busy_timeout = 5000")
        db.execute("PRAGMA journal_mode = WAL")
        # NORMAL in WAL mode: a commit survives the process dying (kill -9) at once and a
        # power cut once checkpointed; FULL would fsync every page.
        db.execute("PRAGMA synchronous = NORMAL")
        problems = [row[0] for row in db.execute("PRAGMA quick_check")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems[:3]))
        tables = {row[0] for row in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as e:
        db.close()
        if getattr(e, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_IOERR, _SQLITE_FULL):
            raise StateUnwritable(f"cannot write {path}: {e}") from None
        raise StateError(f"{path} is corrupt or not a minicrawl state database "
                         f"({e}); left untouched — move the state dir away to start "
                         f"afresh") from None
    if not tables:  # new (or created by a run killed before its first commit)
        return db
    if not {"meta", "pages", "todo"} <= tables:
        db.close()
        raise StateError(f"{path} is not a minicrawl state database "
                         f"(tables: {', '.join(sorted(tables))})")
    return db


def record_page(db: sqlite3.Connection, page: Page, forget: bool, seq: int) -> None:
    """Write ``page``'s record (or confirm an unchanged one) and end its journal rows."""
    if page.digest is not None:  # its holder too, so a replay of the holder knows it
        db.execute("INSERT OR IGNORE INTO digests VALUES (?, ?)",
                   (page.digest, page.duplicate_of or page.url))
    # Rows name a URL as Visited does: a check's apart from the page of the same URL.
    url, final_url = visited_key(page.url, page.check), visited_key(page.final_url, page.check)
    # Its own journal row, and those of the redirect hops it ended (see hop()).
    db.execute("DELETE FROM todo WHERE url = ?1 OR chain = ?1", (url,))
    # Validators only describe the URL asked for if no redirect intervened.
    same = final_url == url
    etag = page.headers.get("etag") if same else None
    modified = page.headers.get("last-modified") if same else None
    if page.change == UNCHANGED and db.execute(
            CONFIRM_PAGE, (etag, modified, page.fetched_at, page.change, seq,
                           url)).rowcount:
        return
    md5 = (page.digest or body_md5(page.body)) if page.status is not None else None
    db.execute(UPSERT_PAGE, (
        url, final_url, page.status, etag, modified, md5, len(page.body),
        page.fetched_at, page.depth, page.referrer, page.change or "new", page.saved,
        page.error, int(forget), seq))


class PageLinks(NamedTuple):
    """A page's links as the state keeps them, packed (each None: none, or not read)."""

    edges: str | None
    anchors: str | None
    counted: bool = False  # the state keeps what links_in counts (then the two below)
    links: str | None = None  # the links it follows
    requested: str | None = None  # the URLs its redirect chain requested besides its own


def record_links(db: sqlite3.Connection, page: Page, links: PageLinks) -> None:
    """Keep ``page``'s ``links`` with its record, in place of those of its last fetch. A page
    unchanged in a recrawl, whose links were not read again, keeps those recorded — unless it
    is a redirect that now stops at a URL seen before (its links are that URL's record's
    now)."""
    url = visited_key(page.url, page.check)
    if page.change == UNCHANGED and page.status not in REDIRECTS:
        return
    hops = pack_hops(page)
    if links.edges is None and links.anchors is None and hops is None:
        db.execute("DELETE FROM edges WHERE url = ?", (url,))
    else:
        db.execute("INSERT OR REPLACE INTO edges (url, page, hops, anchors, edges) "
                   "VALUES (?, ?, ?, ?, ?)", (url, page.final_url, hops, links.anchors,
                                              links.edges))
    if not links.counted:
        return
    if links.links is None and links.requested is None:
        db.execute("DELETE FROM linksin WHERE url = ?", (url,))
    else:
        db.execute("INSERT OR REPLACE INTO linksin VALUES (?, ?, ?)",
                   (url, links.links, links.requested))


class Transaction:
    """``with``: BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, kind: object, *exc: object) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
