"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order, each file using only those before it and the ones a first reading skips:
``interfaces`` (the seams), ``todo``, ``visited``, ``urls``, ``fetch``, ``links``, ``worker``,
``limits``, ``crawler``. Skip ``encoding``, ``meta`` (keep one idea: a link's query is in its
page's encoding), how ``fetch`` reads a body (``_read_body``, ``_proxies_for``,
``describe``), ``links``' walk (``_Walk``, ``_where``, ``_walk``), ``keep_heaps_small``. ``python
-m minicrawl.core URL`` runs it; ``from minicrawl.core.crawler import Crawler``: its library API.
Of the rest of minicrawl the core imports ``minicrawl.checks``; the rest plugs in by ``interfaces``.
"""
