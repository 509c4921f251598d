"""What a crawl writes: its page records (``--out``), its links (``--links``), its WARC archive
(``--warc``), and the duplicate-content map that says which records share a body.

================  ============================================================================
``output``        :class:`Output`: the ``--out`` file, one JSON (or CSV) line a page, complete
                  under ``kill -9`` (in a shared crawl flushed before the ack; with a state,
                  written after each commit through its :class:`Outbox`)
``links``         :class:`LinkJoin`: every link of every page, joined at the end with what
                  its target answered (``broken``) in one pass that its readers share: the
                  ``--links FILE``, the broken links; its rows wait in a scratch file
``broken``        :class:`BrokenLinks`: a reader of that join: the broken links grouped by
                  target, each with every page linking to it (in a scratch file of its own)
``edges``         :class:`LinkEdge`: one link of one page, as written and resolved (run.py's
                  hooks make them from the walk's edges, :mod:`minicrawl.html.edges`)
``facts``         :class:`Facts`: what a page says of itself (title, description, canonical,
                  language, words: the walk's reader's, :mod:`minicrawl.html.facts`, with its
                  headers'), on its ``--out`` record
``linksin``       :class:`LinksIn`: each ``--out`` record's ``links_in``, counted in a scratch
                  file as the crawl runs, written over the file at its end where it is true
``csvlines``      CSV for ``--out`` and ``--links`` files named ``….csv``
``digests``       duplicate content: a first-wins map body digest → URL (in a scratch file, in
                  the state, or in Redis), so a page served under two URLs is recorded twice
                  but crawled once (``duplicate_of``)
``warc``          :class:`WarcArchive` (``--warc FILE.warc.gz``): every request the crawl makes
                  (robots.txt, each redirect hop, each retry) and the answer it got, written by
                  one thread, rolled over at ``--warc-max-size``, cut back to its last complete
                  record on resume
``warcrecords``   the WARC/1.1 records built with ``warcio`` (``request``, ``response``,
                  ``revisit`` for a 304 and for a duplicate), and what is reconstructed
================  ============================================================================

The seams: the output hears the crawl as an observer (``on_page``), the links' join too
(``page_edges``, ``redirected``, ``on_page``; ``crawl_finished``: the join, the
file written); each worker's :class:`~minicrawl.http.fetch.Fetcher` hands every finished fetch to
:meth:`WarcArchive.exchange <minicrawl.records.warc.WarcArchive.exchange>` (its ``on_exchange``
hook, so robots.txt fetches are caught too), and the archive hears the crawl as an observer
(``page_kept``: is the page a duplicate?; ``crawl_finished``: write the rest, close). The crawl's
memory on disk (``--state``), which these records may be written through, is
:mod:`minicrawl.state`.
"""
