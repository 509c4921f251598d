"""The seams: the interfaces the rest of minicrawl plugs into, each with its contract, and the
records that pass through them. A Redis ToDo is another Frontier: the worker never knows which.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Item:
    """A URL waiting in ToDo, with how it was found."""

    url: str
    depth: int = 0  # links followed from a seed (a redirect is no hop: its target keeps it)
    referrer: str | None = None  # the page linking here, or the URL redirecting here (None: a seed)
    attempt: int = 0  # fetches of it that failed so far (a crawler that retries counts them)
    check: bool = False  # to check, not crawl: only its answer is wanted (run.py's hooks)
    not_before: float = 0.0  # a retry's backoff: run.py's ToDo holds it till this time.monotonic()


@dataclass(slots=True)
class Response:
    """What one request (GET, HEAD) of ``url`` brought back. ``status`` is None when no answer
    came (then ``error`` says why); with an answer, ``error`` says why the body is not all of it
    (what was read is kept: nothing, for a body declared over the cap or an unknown coding)."""

    url: str  # whose answer: the URL asked (a redirect is not followed)
    status: int | None
    body: bytes = b""
    location: str | None = None  # a 3xx answer's Location header, as sent (read as UTF-8)
    error: str | None = None
    transient: bool = False  # the error was the network's (reset, time-out): worth a retry
    elapsed: float = 0.0  # seconds, request to last byte
    headers: Mapping[str, str] = field(default_factory=dict)  # case-insensitive, repeats kept


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
    checks: list[str] = field(default_factory=list)  # URLs it leads to, to check, not crawl
    new: int = 0  # of links and checks, how many were new to Visited (a stopped ToDo drops them)
    elapsed_ms: float = 0.0
    error: str | None = None
    redirect: str | None = None  # a 3xx answer's Location, made absolute (the page's one link)
    noindex: bool = False  # its Links.noindex
    # The core leaves these empty, run.py fills them: one record, so its observers are the core's
    fetched_at: str = ""  # when the fetch began (ISO 8601, UTC)
    worker: int = 0  # which worker (1…N)
    change: str | None = None  # the state's verdict: new, changed, unchanged, gone
    saved: str | None = None  # the copy --save-pages wrote
    duplicate_of: str | None = None  # the first URL that had this body (digests)
    digest: str | None = None  # the body's MD5
    sitemap: bool = False  # a sitemap file read, not a page
    check: bool = False  # the answer of a URL checked, not crawled (an image, a link out…)

    @property
    def content_type(self) -> str | None:
        """The Content-Type header, or None (``headers`` must be case-insensitive, as fetched)."""
        return self.headers.get("content-type")


@dataclass(slots=True)
class Links:
    """What one page links to, and what it tells robots: the record both crawlers use."""

    hrefs: list[str]  # as written, fragment cut, each once, in first-met order (a refresh met last)
    base: str | None = None  # the first <base href>, as written
    encoding: str = "windows-1252"  # the Encoding Standard's name: a query is encoded in it
    nofollow: bool = False  # the page says: follow none of my links
    noindex: bool = False  # the page says: do not index me (it is still crawled)
    nofollowed: frozenset[str] = field(default_factory=frozenset)  # hrefs only ever rel=nofollow

    def followed(self, ignore_nofollow: bool = False) -> list[str]:
        """The hrefs a crawler follows: all, less those the page says not to (unless ignored)."""
        if ignore_nofollow or not (self.nofollow or self.nofollowed):
            return self.hrefs
        return [] if self.nofollow else [h for h in self.hrefs if h not in self.nofollowed]


@dataclass(slots=True)
class Entry:
    """What the door did with the URLs offered in one call."""

    new: list[Item] = field(default_factory=list)  # admitted and new to Visited, in order
    refused: dict[str, str] = field(default_factory=dict)  # URL → the refusing rule's reason
    queued: int = 0  # of ``new``, how many ToDo took (a stopped one drops them)


@dataclass(frozen=True, slots=True)
class Go:
    """A trip's ``before`` hook says: fetch the item now, with ``headers`` added to the request."""

    headers: Mapping[str, str] | None = None
    method: str = "GET"  # HEAD: the status is all that is wanted


class Client(Protocol):
    """A worker's HTTP client: the core's ``fetch.Fetcher``, or run.py's around it. Contract:
    ``fetch`` GETs ``url`` (or HEADs), follows no redirect, and a network or HTTP failure never
    raises: it is the Response's ``error``."""

    def fetch(self, url: str, headers: Mapping[str, str] | None = None,
              method: str = "GET") -> Response: ...


class Frontier(Protocol):
    """ToDo: the URLs waiting to be fetched, and the crawl's end.

    Contract: every item put is returned by ``take`` once (unless ``stop`` came first; a shared
    ToDo hands it out again if the process that took it died). ``take`` waits while it is empty
    but a worker is busy (it may still put links); it returns None once it is empty and no
    worker busy — the crawl is over — or after ``stop``. The worker that took an item calls
    ``done`` once, after putting its links. ``put_many`` says how many it took (a stopped ToDo
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
    """Visited: every URL ever put in ToDo (even one a stopped ToDo dropped; a check's apart).

    Contract: ``add_new(urls)`` returns the URLs it had not seen, in order, and remembers them;
    for each URL, check and insert are one atomic step, so of any number of threads offering
    the same URL, one gets it back (a shared Visited gives a replayed call its first answer
    again: a retry, or a page re-run after its process died). A Bloom filter may withhold a
    URL it never saw (a false positive, at its stated rate).
    """

    def add_new(self, urls: list[str]) -> list[str]: ...


class Admission(Protocol):
    """A rule that decides whether a link may be crawled at all (scope, depth, traps, caps, …).

    Contract: the door asks ``refuses`` before Visited, for each URL but a seed or a check: it
    says why the rule refuses ``url`` at ``depth`` — what a refusal counts as: "out_of_scope",
    "trap", … — or None: admitted. It must not block for long and must be safe to call from
    many threads. A refused URL is not remembered in Visited: offered again, it is asked again.
    """

    def refuses(self, url: str, depth: int) -> str | None: ...


class Hooks(Protocol):
    """What a crawler does at the points of the one trip (``trip.Trip``): the core's own
    (``trip.CoreHooks``) the plain rules; run.py's (``visit.hooks.CrawlHooks``) robots.txt, its
    pace and page cap, retries, redirect chains, unchanged and duplicate pages, the page kept.

    Contract, one worker's, one item at a time: ``before`` says :class:`Go`, or ends the trip
    with a page not fetched (no links) or None (the item went back to ToDo); ``after`` makes the
    answer the page, or None (back to ToDo: a retry, a redirect chain's next hop); ``follows``
    may refuse links ``follows_links`` allows; ``resolve``: the links followed, as canonical
    URLs; ``keep`` hears of the page and what the door did, before its links are in ToDo;
    ``failed``: the trip raised — the page to give for it, or None (run.py's: the crawl stops)."""

    robot: str  # our name to robots <meta>s and X-Robots-Tag (besides "robots")

    def before(self, item: Item) -> Go | Page | None: ...
    def after(self, item: Item, answer: Response) -> Page | None: ...
    def follows(self, page: Page) -> bool: ...
    def resolve(self, page: Page, links: Links) -> list[str]: ...
    def keep(self, page: Page, entry: Entry) -> None: ...
    def failed(self, item: Item, error: Exception) -> Page | None: ...


class Observer(Protocol):
    """Told about every page when a worker has finished with it (stats, output, live view, …).

    Contract: ``on_page`` is called once per page a trip returned, from its worker's thread,
    after the page's new links are in ToDo; it must be thread-safe and must not raise."""

    def on_page(self, page: Page) -> None: ...
