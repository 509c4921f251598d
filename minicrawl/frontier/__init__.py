"""ToDo, run.py's: the URLs waiting to be fetched, and what it is made of.

The core's ToDo (:mod:`minicrawl.core.todo`) is one FIFO line; run.py's is the same ``Frontier``
with what a polite crawler needs, in memory or with its cold end on disk, taken in turns.

=============  ===============================================================================
``todo``       the polite ToDo (a ``PoliteFrontier``, :mod:`minicrawl.seams`): a line per host,
               a URL handed out only when its host's pace says READY; how the crawl knows it is
               over
``hosts``      the hosts' pace in one process (a ``HostPace``): each host READY, RESTING or
               BUSY, and the request slots on it, held by ToDo items
``turns``      :class:`TakingTurns`: ToDo whose takers work at most N at once
``gate``       :class:`TokenGate`: at most N threads through at once, one C call each way (the
               workers' turns, the parse slots)
``disk``       :class:`SpillingToDo`: the polite ToDo keeping at most ``--frontier-memory`` MB
               in memory, its cold end on disk (the order per host, why every host keeps an
               item in memory, the budget's estimate)
``disklines``  that cold end: per-host lines in one scratch SQLite file (why SQLite, its
               throughput)
``scratch``    the scratch files a crawl's disk parts live in (the spilled ToDo's, and the
               duplicate-content map's of :mod:`minicrawl.records.digests`): SQLite files under
               ``TMPDIR`` unlinked as soon as they are open, so nothing is left behind
=============  ===============================================================================

The shared crawl's ToDo and pace are in Redis (:mod:`minicrawl.redis`); robots.txt, which the
worker asks before each request, is :mod:`minicrawl.visit.robots`.
"""
