"""The door: the one way a new URL enters ToDo — seeds, links, redirects; run.py's sitemaps, checks.

Three questions, in this order: may it be crawled at all (the admission rules; a seed is not
asked)? was it ever put in ToDo (Visited's atomic test-and-set)? for the new ones, is the crawl's
record written (``keep``: run.py journals them)? Then ToDo. A refused URL takes no room in
Visited; an item that goes back (to wait, be retried, a resumed journal: :meth:`Door.back`) is
not asked again. A URL to *check* (an image, a link out: run.py's) is wanted for its answer
alone: no rule asks, and Visited knows it by another name (:func:`visited_key`), so a URL
checked (a nofollow link's) is still crawled, once, if a followed link leads to it.
"""

from collections.abc import Callable, Sequence

from minicrawl.core.interfaces import Admission, Entry, Frontier, Item, SeenSet

CHECK = "check "


def visited_key(url: str, check: bool) -> str:
    """The name Visited (and a crawl's journal) knows ``url`` by: a check's apart."""
    return CHECK + url if check else url


class Door:
    def __init__(self, todo: Frontier, visited: SeenSet,
                 admission: Sequence[Admission] = ()) -> None:
        self.todo, self.visited, self.admission = todo, visited, admission

    def enter(self, urls: list[str], depth: int, referrer: str | None,
              keep: Callable[[Entry], None] | None = None, checks: Sequence[str] = ()) -> Entry:
        """Offer the canonical ``urls`` (and ``checks``) found at ``depth`` on ``referrer``: the
        rules refuse some, Visited says which others are new, ``keep`` is told, then ToDo."""
        entry = Entry()
        for url in urls:
            for rule in self.admission:  # the first rule that refuses says why
                if why := rule.refuses(url, depth):
                    entry.refused[url] = why
                    break
        admitted = [url for url in urls if url not in entry.refused]
        if admitted:
            entry.new = [Item(url, depth, referrer) for url in self.visited.add_new(admitted)]
        if checks:
            entry.new += [Item(key.removeprefix(CHECK), depth, referrer, check=True)
                          for key in self.visited.add_new([visited_key(u, True) for u in checks])]
        return self._put(entry, keep)

    def seed(self, urls: list[str], keep: Callable[[Entry], None] | None = None) -> Entry:
        """Offer seeds: the user's word, so no rule refuses them; Visited still drops a repeat."""
        return self._put(Entry([Item(url) for url in self.visited.add_new(urls)]), keep)

    def back(self, items: list[Item]) -> int:
        """Put ``items`` that passed the door before (a resumed crawl's journal; a redirect back
        into its own chain; a retry, whose ``not_before`` run.py's ToDo keeps: the core never sets
        it) in ToDo as they are: Visited holds them already. How many ToDo took."""
        return self.todo.put_many(items)

    def _put(self, entry: Entry, keep: Callable[[Entry], None] | None) -> Entry:
        if keep is not None:  # (if it raises, the URLs are in Visited only: run.py's crawl
            keep(entry)  # stops then, and a resume rebuilds Visited from its journal)
        entry.queued = self.todo.put_many(entry.new)
        return entry
