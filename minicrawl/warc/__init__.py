"""The crawl as a WARC archive (``--warc FILE.warc.gz``): what a web archive keeps of each fetch.

What this wing adds to the model: every request the crawl makes (robots.txt, each redirect hop,
each retry) and the answer it got, as WARC/1.1 ``request`` and ``response`` records — or
``revisit`` records for a 304 and for a page recorded as a duplicate of another — written by one
thread, rolled over at ``--warc-max-size``, cut back to its last complete record on resume.
:mod:`minicrawl.warc.archive` is the writer (queue, thread, files, the resume cut);
:mod:`minicrawl.warc.records` builds the records with ``warcio`` and says what is reconstructed.

The seams: each worker's :class:`~minicrawl.http.fetch.Fetcher` hands every finished fetch to
:meth:`WarcArchive.exchange <minicrawl.warc.archive.WarcArchive.exchange>` (its ``on_exchange``
hook, so robots.txt fetches are caught too), and the archive hears the crawl as an observer
(``page_kept``: is the page a duplicate?; ``crawl_finished``: write the rest, close).
"""
