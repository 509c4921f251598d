"""The crawl's memory on disk (``--state DIR``): resume after any stop, and recrawl.

What this wing adds to the model: ToDo and Visited survive the process. Every URL put in ToDo is
journaled in SQLite before it enters ToDo, every page's record is committed with the journal rows
of its new links in one transaction, and a checkpoint of the Visited filter is written atomically
— so ``kill -9`` at any moment loses nothing (the argument is in :mod:`minicrawl.state.store`).
A recrawl fetches recorded pages with conditional GETs and says what changed
(:mod:`minicrawl.state.recrawl`); ``--save-pages`` and ``--mirror`` keep the bodies
(:mod:`minicrawl.mirror.saver`).

The one seam where the crawl uses it: :func:`minicrawl.state.store.open_state` gives the crawler
its ``state`` (a :class:`~minicrawl.state.store.NoState` without ``--state``), which the loop asks
for ``prior`` records and hears the crawl as an observer (``page_kept`` commits).
"""
