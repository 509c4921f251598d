"""HTTP: what the core's fetcher (:mod:`minicrawl.core.fetch`) leans on, and run.py's HTTP on
``requests`` over that fetcher.

The core's (they import nothing of minicrawl beyond the core: tests/core/test_shape.py):

* :mod:`~minicrawl.http.answer`: how an answer is read — its body bounded, a coding undone or
  kept as received, a redirect's Location — and a failure named;
* :mod:`~minicrawl.http.proxies`: the proxies of each origin, looked up once.

run.py's:

* :mod:`~minicrawl.http.fetch`: run.py's ``Fetcher`` (it answers the core's ``Response``) and
  the ``Wire`` it hands the WARC archive — the crawl's cookie jar, ``--proxy``, ``--ca-bundle``,
  error kinds, the request and status line as on the wire;
* :mod:`~minicrawl.http.transport`: the ``requests`` adapter for what urllib3 does not do — a
  host name lookup bounded by the time-out, 1xx answers read past, the request as sent;
* :mod:`~minicrawl.http.dns`: the bounded lookup itself.
"""
