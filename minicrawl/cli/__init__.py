"""The command line: ``python run.py SEEDS [options]``, ``minicrawl`` (its console script is
:func:`minicrawl.cli.main.main`), ``python -m minicrawl``.

=============  ===============================================================================
``main``       the crawl's flags (generated from :class:`minicrawl.options.Options`), ``--demo``,
               ``--status``, exit statuses; ``minicrawl bloom`` is handed to ``bloom``
``bloom``      ``minicrawl bloom size|table|plot|measure``: the Bloom filter's math, taught
``outpaths``   output paths checked before the crawl starts, files written when it ends
=============  ===============================================================================

The crawl imports nothing here but :mod:`~minicrawl.cli.outpaths`: run.py's crawler checks the
paths its options name (a library caller's too), and the files it writes use its one way to
open and write them.
"""
