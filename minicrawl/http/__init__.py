"""run.py's HTTP, on ``requests`` over the core's fetcher (:mod:`minicrawl.core.fetch`).

* :mod:`~minicrawl.http.fetch`: run.py's ``Fetcher`` and ``FetchResult`` — the crawl's cookie jar,
  ``--proxy``, ``--ca-bundle``, error kinds and retry verdicts, the WARC exchange;
* :mod:`~minicrawl.http.transport`: the ``requests`` adapter for what urllib3 does not do — a
  host name lookup bounded by the time-out, 1xx answers read past, the request as sent;
* :mod:`~minicrawl.http.dns`: the bounded lookup itself;
* :mod:`~minicrawl.http.answer`: how the core's fetcher reads an answer (its body bounded, a
  coding undone or kept as received; a redirect's Location) and names a failure — the one module
  here the core imports (it imports nothing of minicrawl: tests/core/test_shape.py).
"""
