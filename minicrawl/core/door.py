"""The door: the one way a new URL enters ToDo — seeds, links, redirect targets, sitemap URLs.

Three questions, in this order (:meth:`Door.enter`): may it be crawled at all (the admission
rules: scope, depth, traps…; a seed, the user's word, is not asked: :meth:`Door.seed`)? was it
ever put in ToDo (Visited's test-and-set, atomic per URL: of two workers offering one link, one
is told "new")? and, for the new ones, is the crawl's record of them written (``keep``: run.py
journals them)? Only then are they put in ToDo. A refused URL takes no room in Visited. An item
that passed the door once and goes back — to wait, to be retried, a resumed journal
(:meth:`Door.back`) — is not asked again.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from minicrawl.core.interfaces import Admission, Frontier, Item, SeenSet


@dataclass(slots=True)
class Entry:
    """What the door did with the URLs offered in one call."""

    new: list[Item] = field(default_factory=list)  # admitted and new to Visited, in order
    refused: dict[str, str] = field(default_factory=dict)  # URL → the refusing rule's reason
    queued: int = 0  # of ``new``, how many ToDo took (a stopped one drops them)


class Door:
    """The one way into ``todo``: ``admission`` rules, then ``visited``, then ToDo."""

    def __init__(self, todo: Frontier, visited: SeenSet,
                 admission: Sequence[Admission] = ()) -> None:
        self.todo, self.visited, self.admission = todo, visited, admission

    def enter(self, urls: list[str], depth: int, referrer: str | None,
              keep: Callable[[Entry], None] | None = None) -> Entry:
        """Offer the canonical ``urls`` found at ``depth`` on ``referrer`` (a seed: None):
        the rules refuse some, Visited says which of the rest are new, ``keep`` is told (before
        ToDo is), the new ones are put in ToDo."""
        entry = Entry()
        admitted = []
        for url in urls:
            for rule in self.admission:  # the first rule that refuses says why
                if why := rule.refuses(url, depth):
                    entry.refused[url] = why
                    break
            else:
                admitted.append(url)
        if admitted:
            entry.new = [Item(url, depth, referrer) for url in self.visited.add_new(admitted)]
        return self._put(entry, keep)

    def seed(self, urls: list[str], keep: Callable[[Entry], None] | None = None) -> Entry:
        """Offer seeds: the user's word, so no rule refuses them; Visited still drops a repeat."""
        entry = Entry([Item(url) for url in self.visited.add_new(urls)])
        return self._put(entry, keep)

    def back(self, items: list[Item]) -> int:
        """Put ``items`` that passed the door before (a resumed crawl's journal; a redirect back
        into its own chain) in ToDo as they are: Visited holds them already. How many ToDo took."""
        return self.todo.put_many(items)

    def _put(self, entry: Entry, keep: Callable[[Entry], None] | None) -> Entry:
        if keep is not None:
            keep(entry)
        entry.queued = self.todo.put_many(entry.new)
        return entry
