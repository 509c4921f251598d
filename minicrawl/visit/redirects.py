"""Redirect chains: a redirect's target is a link like any other, and the chain keeps one record.

The fetcher never follows a redirect. The crawler offers the target to Visited and, if it was
never seen, puts it in ToDo — so robots.txt, politeness and retries apply to every hop, and a
redirect to a page already crawled is not fetched twice. The page's record waits for the end of
the chain: a :class:`Chain` rides along with the target while it waits in ToDo, and the record
(under the URL that started the chain) is written once the last hop is fetched.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from minicrawl.resolve import canonical_url

if TYPE_CHECKING:
    from minicrawl.core.interfaces import Item, Response
    from minicrawl.state.recrawl import Prior

MAX_REDIRECTS = 10


@dataclass
class Chain:
    """A redirect chain in progress: the ToDo item that started it (its record names it), when,
    what a state knew of it, the URLs fetched so far, their time, and the redirects."""

    item: Item
    fetched_at: str
    prior: Prior | None = None
    urls: list[str] = field(default_factory=list)
    elapsed_ms: float = 0.0
    # the answers that redirected, in order: (URL, status); a chain carried by an older
    # process of a shared crawl has their URLs only (status None)
    redirects: list[tuple[str, int | None]] = field(default_factory=list)


class Chains:
    """Redirect targets waiting in ToDo → the chain that led there.

    Plain dict operations on distinct keys: atomic under the GIL, so no lock is needed.
    """

    def __init__(self) -> None:
        self._by_target: dict[str, Chain] = {}

    def waiting_at(self, url: str) -> Chain | None:
        """The chain ``url`` is the next hop of, if it is one."""
        return self._by_target.get(url)

    def carry(self, target: str, chain: Chain) -> None:
        """``chain`` goes on at ``target`` (call before ``target`` enters ToDo)."""
        self._by_target[target] = chain

    def end(self, url: str) -> None:
        """The chain waiting at ``url`` (if any) is over: recorded, refused or failed."""
        self._by_target.pop(url, None)


def next_hop(chain: Chain, url: str, response: Response, *, sort_query: bool,
             max_length: int, cookies: bool = False) -> tuple[str, str | None]:
    """(canonical target, None) for ``response``'s redirect from ``url``, or (target, error)
    when the chain must end there: a bad Location, a loop, more than ``MAX_REDIRECTS`` hops.

    Back to a URL of the chain is a loop, unless ``cookies`` are kept and the answer set one:
    the next request differs (a cookie wall: set a cookie, come back with it), so it is made,
    within the same bound on hops."""
    target, why = canonical_url(response.location or "", response.url, sort_query=sort_query,
                                max_length=max_length)
    if target is None:
        return url, f"bad redirect location ({why})"
    if target in chain.urls and not (cookies and "set-cookie" in response.headers):
        return target, "redirect loop"
    if len(chain.urls) > MAX_REDIRECTS:
        return target, f"more than {MAX_REDIRECTS} redirects"
    return target, None
