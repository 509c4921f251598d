"""run.py's HTTP, on ``requests`` over the core's fetcher (:mod:`minicrawl.core.fetch`).

* :mod:`~minicrawl.http.fetch`: run.py's ``Fetcher`` and ``FetchResult`` — the crawl's cookie jar,
  ``--proxy``, ``--ca-bundle``, error kinds and retry verdicts, the WARC exchange;
* :mod:`~minicrawl.http.transport`: the ``requests`` adapter for what urllib3 does not do — a
  host name lookup bounded by the time-out, 1xx answers read past, the request as sent;
* :mod:`~minicrawl.http.dns`: the bounded lookup itself;
* :mod:`~minicrawl.http.body`: how the core's fetcher reads a body (bounded, a coding undone or
  kept as received) and names a failure — the one module here the core imports (it imports
  nothing of minicrawl: tests/core/test_shape.py).
"""
