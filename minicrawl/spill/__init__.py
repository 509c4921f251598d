"""Spilling: a ToDo that keeps at most ``--frontier-memory`` MB in memory and the rest on disk.

What this wing adds to the model: nothing to the order — the polite ToDo
(:mod:`minicrawl.politeness.todo`) still decides what is handed out and when; the wing decides
where an item waits until the polite ToDo has room for it.

* :mod:`~minicrawl.spill.todo`: :class:`SpillingToDo`, the polite ToDo with its cold end on disk
  (the order per host, why every host keeps an item in memory, the budget's estimate);
* :mod:`~minicrawl.spill.disk`: the cold end, per-host lines in one scratch SQLite file (why
  SQLite, its throughput);
* :mod:`~minicrawl.spill.scratch`: the scratch files a crawl's disk parts live in (this ToDo's,
  and the duplicate-content map's of :mod:`minicrawl.digests`): SQLite files under ``TMPDIR``
  unlinked as soon as they are open, so nothing is left behind, whatever ends the crawl.
"""
