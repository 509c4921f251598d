"""Opening a state directory: claim it, check it is this crawl's, load the Visited checkpoint.

Every check refuses with a :class:`~minicrawl.state.db.StateError` that says what is wrong and
what to do; nothing here ever resets or repairs a directory on its own.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from minicrawl.core.door import CHECK
from minicrawl.jsontypes import JSON
from minicrawl.options import Options
from minicrawl.records.edges import Damaged, is_urls
from minicrawl.state.db import (
    DEMO_KEY,
    DIGESTS_TABLE,
    EDGES_TABLE,
    FORMAT,
    HOPS_TABLE,
    LINKS_IN_TABLE,
    SCHEMA,
    StateError,
    Transaction,
)
from minicrawl.visited import BloomFileError
from minicrawl.visited.bloom import OutdatedBloomFile
from minicrawl.visited.make import Visited, make_visited

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows: no lock against a second crawl
    fcntl = None  # type: ignore[assignment]

DB_NAME, FILTER_NAME, LOCK_NAME = "crawl.db", "visited.bloom", "lock"

log = logging.getLogger("minicrawl")


def claim_directory(directory: Path, db_path: Path) -> int | None:
    """Create ``directory`` or check it holds a crawl, and lock it against a second crawl;
    the lock's file descriptor (closing it releases the lock)."""
    directory.mkdir(parents=True, exist_ok=True)
    if not db_path.exists():
        strangers = sorted(p.name for p in directory.iterdir() if p.name != LOCK_NAME)
        if strangers:
            what = ("has visited.bloom but no crawl.db: the database was removed"
                    if FILTER_NAME in strangers else
                    f"is not empty ({', '.join(strangers[:5])}) and has no {DB_NAME}")
            raise StateError(f"state dir {directory} {what}; refusing to use it "
                             f"(give an empty or new directory for a new crawl)")
    if fcntl is None:
        return None
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise StateError(f"state dir {directory} is in use by another crawl "
                         f"(pid {other})") from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


def claimed_by_us(state: str | os.PathLike[str]) -> bool:
    """The state directory's lock names this process: it is the one that created the directory
    (not a second crawl that found it in use a moment after it did)."""
    try:
        return (Path(state) / LOCK_NAME).read_text().strip() == str(os.getpid())
    except OSError:
        return False


def check_meta(db: sqlite3.Connection, directory: Path, config: JSON,
               demo: int | None = None, damaged: Damaged | None = None) -> tuple[int, int]:
    """Create the tables of a new database, or check an old one is this crawl's (same format,
    same configuration, a demo crawl's if and only if ``demo``: the port of the demo site this
    run crawls); (the checkpoint's ``seq``, the highest ``seq`` written). The tables added since
    are made, filled if need be: a damaged value read then is skipped, counted in ``damaged``."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
    if "meta" not in tables:
        with Transaction(db):  # not executescript: it would commit on its own
            for statement in SCHEMA.split(";"):
                if statement.strip():
                    db.execute(statement)
            # (the demo's mark in the same transaction: no demo state is ever without it)
            db.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("format", str(FORMAT)), ("config", json.dumps(config, sort_keys=True)),
                ("filter_seq", "0"), *([(DEMO_KEY, str(demo))] if demo is not None else [])])
    meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("format") != str(FORMAT):
        raise StateError(f"state dir {directory} has format {meta.get('format')!r}; this "
                         f"minicrawl reads format {FORMAT} — use a new state dir")
    # (read before the demo mark is checked: a state whose meta cannot be read is told so, not
    # taken for another demo crawl's because peek could not read its mark)
    try:
        saved = json.loads(meta["config"])  # RecursionError: nested past the parser's depth
        filter_seq = int(meta["filter_seq"])
    except (KeyError, ValueError, RecursionError) as e:
        raise StateError(f"{directory / DB_NAME}: corrupt meta table ({e!r})") from None
    if not isinstance(saved, dict):  # (a config is always an object: its keys are compared)
        raise StateError(f"{directory / DB_NAME}: corrupt meta table (its config is not a "
                         f"JSON object)")
    check_demo(directory, meta.get(DEMO_KEY), demo)
    if saved != config:
        diffs = "; ".join(f"{key}: {saved.get(key)!r} then, {config.get(key)!r} now"
                          for key in sorted(set(saved) | set(config))
                          if saved.get(key) != config.get(key))
        raise StateError(f"state dir {directory} belongs to a crawl with another "
                         f"configuration ({diffs}); rerun with the same seeds and options, "
                         f"or use another --state dir")
    for name, table in (("digests", DIGESTS_TABLE), ("edges", EDGES_TABLE),
                        ("linksin", LINKS_IN_TABLE)):
        if name not in tables:  # (added after format 1 first shipped)
            with Transaction(db):
                db.execute(table)
    seq = max(filter_seq, *(db.execute(
        f"SELECT coalesce(max(seq), 0) FROM {table}").fetchone()[0]  # noqa: S608
        for table in ("pages", "todo", *(("hops",) if "hops" in tables else ()))))
    if "hops" not in tables:  # (added later still: filled from what the state knows, below)
        with Transaction(db):  # the table and its rows at once: a kill leaves neither
            db.execute(HOPS_TABLE)
            if backfill_hops(db, directory, seq + 1, damaged or Damaged()):
                seq += 1
    return filter_seq, seq


def backfill_hops(db: sqlite3.Connection, directory: Path, seq: int, damaged: Damaged) -> int:
    """Fill the ``hops`` table of a state made before it (created just now, in the caller's
    transaction) with the URLs its recorded redirect chains left behind (see HOPS_TABLE): the
    URLs each chain requested that no record and no journal row names, each at ``seq``; the
    rows written. A chain's packed hops that are damaged are skipped, counted in ``damaged``
    (told with the run's others, in one line).

    What an older state knows of its chains is the ``edges`` table's ``hops``: the URLs of a
    chain after its start, to where it ended — each one requested but the last maybe, which is
    then the record's final URL (pack_hops), so dropping the URLs records name drops it. A page
    has its row there only if recorded once a run of the state kept links (--links,
    --check-links; the runs after keep them too): of a state whose runs kept none, only the
    start and the end of each chain are known, so its middle hops stay unknown, and a resume
    fetches one again if a page links it, as before this table. ``linksin``'s ``requested`` is
    not read: it is written only beside the ``edges`` row of the same page, whose hops name
    every URL it names. Not known either: the start of a chain a resumed run carried on at its
    hop, once that hop was recorded under its own URL (that record's referrer is the URL before
    it in the chain, but other records' is a page linking them — not told apart).
    """
    # ``seq``: the backfill's own commit, after every row and the Visited checkpoint, so the
    # rows are replayed into Visited and its checkpoint (where the writer before this table never
    # put a chain's last redirect)
    where = "edges.hops IS NOT NULL AND pages.forgotten = 0"
    if db.execute("SELECT 1 FROM meta WHERE key = 'recrawling'").fetchone():
        # A recrawl starts with no hops (CrawlState.start): it follows each chain again, so the
        # hops of the crawl before's records are not its own. It journaled its queue, on an
        # empty journal, before any record of its own: while its journal lasts, a record at the
        # journal's lowest seq or later is its own (one made before that row is missed: its hops
        # stay unknown, as before this table). A recrawl whose journal is done has no run that
        # needs its hops (the next --recrawl drops them; a plain run has nothing to do).
        where += " AND pages.seq >= (SELECT min(seq) FROM todo)"
    chains = db.execute("SELECT edges.url, edges.hops FROM edges JOIN pages "  # noqa: S608
                        f"ON pages.url = edges.url WHERE {where}")
    db_file = str(directory / DB_NAME)

    def left_behind() -> Iterator[tuple[str, int]]:
        for url, packed in chains:
            if (hops := damaged.read(db_file, "edges.hops", url, packed, is_urls)) is None:
                continue
            check = CHECK if url.startswith(CHECK) else ""  # a check's chain: named as Visited
            yield from ((check + hop, seq) for hop in hops)  # knows its hops (visited_key)

    db.executemany("INSERT OR IGNORE INTO hops VALUES (?, ?)", left_behind())
    # A URL a record (not forgotten) or the journal names is in Visited by that row already:
    # the chain's end (a loop's: one of its URLs), a hop waiting in ToDo, the start its row
    # names. (A forgotten record's URL that a chain requested stays: seen, as CrawlState.hop
    # keeps it.)
    db.execute("DELETE FROM hops WHERE url IN (SELECT url FROM pages WHERE forgotten = 0) "
               "OR url IN (SELECT final_url FROM pages WHERE forgotten = 0) "
               "OR url IN (SELECT url FROM todo) "
               "OR url IN (SELECT chain FROM todo WHERE chain IS NOT NULL)")
    return db.execute("SELECT count(*) FROM hops").fetchone()[0]


def check_demo(directory: Path, marked: str | None, demo: int | None) -> None:
    """Refuse a run that is not the demo's on a demo crawl's state (``marked``: its demo mark,
    the port) and the demo's on a state without the mark (:func:`mark_demo` marks a demo
    state made before the mark first); ``demo``: the port of the demo site this run crawls."""
    if marked is not None and demo is None:
        raise StateError(f"state dir {directory} holds a crawl of the demo site (on port "
                         f"{marked}): resume it with --demo (python run.py --demo --state "
                         f"{directory}), or give another --state dir")
    if demo is not None and marked is None:
        raise StateError(f"state dir {directory} holds a crawl that is not a demo crawl (it "
                         f"has no demo mark): give another --state dir, or run it without "
                         f"--demo")
    if demo is not None and marked != str(demo):
        raise StateError(f"state dir {directory} holds the demo crawl of port {marked}, not "
                         f"of port {demo}: give another --state dir")


def load_checkpoint(options: Options, path: Path, filter_seq: int, rebuild: bool = False
                    ) -> tuple[Visited, Visited | None, int]:
    """(the live Visited, the shadow to checkpoint, the ``seq`` after which the database's rows
    must be added to both) from the file at ``path``, or new ones; an exact set has no
    checkpoint (it is rebuilt from the database) and no shadow.

    The checkpoint is the database's URLs in a filter, saved for speed: the file of an older
    minicrawl, at other positions, is rebuilt from the database (every row: ``seq`` 0), never
    read as this one's. With ``rebuild`` (a recrawl about to start) the file is checked but not
    used either: it holds the hops of the crawl before, which a recrawl follows again — a filter
    cannot forget them, so it is rebuilt without them, as every other kind of Visited is.
    """
    live = make_visited(options)
    if not (callable(getattr(live, "save", None))
            and callable(getattr(type(live), "load", None))):
        return live, None, 0
    if path.exists():
        try:
            # (read even when it is rebuilt: a damaged file says the directory is, and is
            # refused, never overwritten)
            loaded = _load_filter(live, path)
        except OutdatedBloomFile as e:
            log.warning("%s: rebuilding Visited from %s", e, DB_NAME)
            return live, make_visited(options), 0
        if rebuild:
            return live, make_visited(options), 0
        return loaded, _load_filter(live, path), filter_seq
    if filter_seq:
        raise StateError(f"{path} is missing although {DB_NAME} says it was saved; the state "
                         f"dir was damaged — not resetting it")
    return live, make_visited(options), 0


def _load_filter(like: Visited, path: Path) -> Visited:
    try:
        loaded = type(like).load(path)  # type: ignore[attr-defined]
    except OutdatedBloomFile:
        raise
    except (BloomFileError, OSError) as e:
        raise StateError(f"Visited checkpoint is unusable: {e}; not resetting it — move "
                         f"the state dir away to start afresh") from None
    for name in ("bits", "hashes", "hash_family"):
        if getattr(loaded, name, None) != getattr(like, name, None):
            raise StateError(f"{path} has {name}={getattr(loaded, name, None)}"
                             f" but this crawl's Visited has {getattr(like, name, None)}: "
                             f"not this crawl's filter")
    return loaded


def crawl_config(options: Options, seeds: Iterable[str]) -> JSON:
    """The settings a state directory is bound to: those that decide which URLs exist for the
    crawl (seeds, scope, canonicalization) and how Visited is built. Resuming with different
    ones would mix two crawls; per-run settings (threads, max_pages, timeouts) may change."""
    return {
        "seeds": sorted(set(seeds)), "allow_domain": sorted(options.allow_domain),
        # compiled patterns (the library accepts them) are bound by their source text
        "include": [getattr(p, "pattern", p) for p in options.include],
        "exclude": [getattr(p, "pattern", p) for p in options.exclude],
        "max_depth": options.max_depth, "sort_query": options.sort_query,
        "visited": options.visited, "expected_urls": options.expected_urls,
        "error_rate": options.error_rate,
    }


class Held(NamedTuple):
    """What a state holds, as :func:`peek` reads it."""

    seeds: list[str]  # the seeds its configuration is bound to
    urls: set[str]  # every URL it has a record of: each record's URL and final URL
    demo: int | None  # the port of the demo site, for a demo crawl's state (its mark)


def peek(directory: str | os.PathLike[str]) -> Held | None:
    """What the state in ``directory`` holds, read without claiming it or changing what it
    holds; None when there is no readable state there (opening it for a crawl says why). The
    demo reads it to serve its site where the state's crawl found it (``--demo --state``)."""
    path = Path(directory) / DB_NAME
    if not path.is_file():
        return None
    try:  # mode=rw: an existing database only, never a new one
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('config', ?)",
                                   (DEMO_KEY,)).fetchall())
            rows = db.execute("SELECT url, final_url FROM pages").fetchall()
        finally:
            db.close()
        seeds = json.loads(meta["config"])["seeds"] if "config" in meta else None
        demo = int(meta[DEMO_KEY]) if DEMO_KEY in meta else None
    except (sqlite3.Error, ValueError, KeyError, TypeError, RecursionError):
        # (RecursionError: a config nested past the parser's depth)
        return None
    if not isinstance(seeds, list):
        return None
    return Held([s for s in seeds if isinstance(s, str)], {url for row in rows for url in row},
                demo)


def mark_demo(directory: str | os.PathLike[str], port: int) -> None:
    """Mark the state in ``directory`` a demo crawl's, on ``port``: for a demo crawl's state made
    before the mark, which the demo recognised by its seed (it is then the demo's from here on);
    :class:`StateError` if it cannot be written."""
    path = Path(directory) / DB_NAME
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", uri=True,
                             isolation_level=None)
        try:
            db.execute("PRAGMA busy_timeout = 5000")  # (a crawl's writer may hold it a moment)
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (DEMO_KEY, str(port)))
        finally:
            db.close()
    except sqlite3.Error as e:
        raise StateError(f"cannot mark {path} as the demo's: {e}") from None
