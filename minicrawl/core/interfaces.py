"""The seams: the few interfaces the rest of minicrawl plugs into, each with its contract, and
the records that pass through them. A polite or a Redis ToDo, a Redis Visited, a Redis pace
are other implementations of the same interfaces; the worker never knows which it has.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Item:
    """A URL waiting in ToDo, with how it was found."""

    url: str
    depth: int = 0  # hops from a seed
    referrer: str | None = None  # the page that linked here (None for a seed)
    attempt: int = 0  # fetches of it that failed so far (a crawler that retries counts them)


@dataclass(slots=True)
class Response:
    """What one GET of ``url`` brought back. ``status`` is None when no answer came (then
    ``error`` says why); with an answer, ``error`` says why the body is not all of it (what was
    read is kept: nothing, for a body declared over the cap or in an unknown Content-Encoding)."""

    url: str  # whose answer: the URL asked (a redirect is not followed)
    status: int | None
    body: bytes = b""
    location: str | None = None  # a 3xx answer's Location header, as sent (read as UTF-8)
    error: str | None = None
    transient: bool = False  # the error was the network's (reset, time-out): worth a retry
    elapsed: float = 0.0  # seconds, request to last byte
    # A case-insensitive mapping, as the fetcher's (urllib3's HTTPHeaderDict: repeats in items())
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Page:
    """What a worker learned about one item (its URL, depth and referrer): what observers are
    given. ``error`` says why no answer came, or why the body is not all of it."""

    url: str
    depth: int
    referrer: str | None
    final_url: str  # whose answer this is: the URL (run.py: the end of its redirect chain)
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)  # the Response's (case-insensitive)
    body: bytes = b""
    links: list[str] = field(default_factory=list)  # distinct canonical links (or the target)
    new: int = 0  # of those, how many were admitted and new to Visited: put in ToDo (which,
    # stopped meanwhile, may drop them)
    elapsed_ms: float = 0.0
    error: str | None = None
    redirect: str | None = None  # a 3xx answer's Location, made absolute (the page's one link)
    noindex: bool = False  # the page asks robots not to index it (it is crawled all the same)
    # The core leaves the rest empty; run.py and its parts outside the core fill them: one
    # record for both crawlers is what lets run.py's observers be the core's.
    fetched_at: str = ""  # when the fetch began (ISO 8601, UTC)
    worker: int = 0  # which worker (1…N)
    change: str | None = None  # the state's verdict: new, changed, unchanged, gone
    saved: str | None = None  # the copy --save-pages wrote
    duplicate_of: str | None = None  # the first URL that had this body (digests)
    digest: str | None = None  # the body's MD5
    sitemap: bool = False  # a sitemap file read, not a page

    @property
    def content_type(self) -> str | None:
        """The Content-Type header, or None (``headers`` must be case-insensitive, as fetched)."""
        return self.headers.get("content-type")


class Frontier(Protocol):
    """ToDo: the URLs waiting to be fetched, and the crawl's end.

    Contract: every ``put`` item is returned by ``take`` once (unless ``stop`` came first; a
    shared ToDo hands it out again if the process that took it died). ``take`` waits while the
    frontier is empty but some worker is busy (a busy worker may still ``put`` links); it returns
    None once it is empty and no worker is busy — the crawl is over — or after ``stop``. A worker
    calls ``done`` once for every item it took, after putting that page's links (it, not another
    worker: a shared ToDo ties an item to the worker that took it, whatever ``item`` it is told).
    ``put_many`` puts a page's new links at once and says how many it took (a stopped ToDo
    drops them; a shared one, those another process put before).
    """

    def put(self, item: Item) -> None: ...
    def put_many(self, items: list[Item]) -> int: ...
    def take(self) -> Item | None: ...
    def done(self, item: Item) -> None: ...
    def stop(self) -> None: ...


class Pace(Protocol):
    """Politeness: may a request to this host start now?

    Contract: ``take`` answers the seconds to wait, or 0.0: the request may start now (and a
    pace that bounds the requests in flight counts it, for ``item``, until ``release``). Starts
    on a host are at least its gap apart: the pace's delay, or ``gap`` if longer. A ``pause``
    (a Retry-After) keeps the host quiet that long after the release.
    """

    def take(self, item: Item, host: str, gap: float = 0.0) -> float: ...
    def release(self, item: Item, host: str, gap: float = 0.0, pause: float = 0.0) -> None: ...


class SeenSet(Protocol):
    """Visited: every URL ever put in ToDo (even one a stopped ToDo dropped).

    Contract: ``add_new(urls)`` returns the URLs it had not seen, in order, and remembers them;
    for each URL, check and insert are one atomic step, so of any number of threads offering
    the same URL, one gets it back (a shared Visited gives a replayed call its first answer
    again: a retry, or a page re-run after its process died). A Bloom filter may withhold a
    URL it never saw (a false positive, at its stated rate). It is asked by the door
    (``core.door``), a page's links in one call.
    """

    def add_new(self, urls: list[str]) -> list[str]: ...


class Admission(Protocol):
    """A rule that decides whether a link may be crawled at all (scope, depth, traps, caps, …).

    Contract: the door asks ``refuses`` before Visited, for every URL but a seed; it answers
    why the rule refuses ``url`` at ``depth`` — what a refusal is counted as: "out_of_scope",
    "trap", … — or None: admitted. It must not block for long and must be safe to call from
    many threads. A refused URL is not remembered in Visited, so another rule set could take it.
    """

    def refuses(self, url: str, depth: int) -> str | None: ...


class Visitor(Protocol):
    """What a worker does with each item it takes: the core's ``Trip`` fetches it, finds its
    links, puts the new ones in ToDo; run.py's also asks robots.txt, retries, keeps the page.

    Contract: ``visit`` returns the item's page once its new links are in ToDo, or None: back
    to ToDo (to wait, be retried, carry a redirect on), turned back by a cap, crawl failed.
    """

    def visit(self, item: Item) -> Page | None: ...


class Observer(Protocol):
    """Told about every page when a worker has finished with it (stats, output, live view, …).

    Contract: ``on_page`` is called once per page a visitor returned (or made of its error, if
    the visit raised; not for an item the page cap turned back), from its worker's thread, after
    the page's new links are in ToDo; it must be thread-safe and must not raise.
    """

    def on_page(self, page: Page) -> None: ...
