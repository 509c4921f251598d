"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order, each file using only those before it:
``interfaces`` (the seams), ``todo``, ``visited``, ``urls``, ``fetch``, ``links``, ``worker``,
``limits``, ``crawler``. The browser's rules ``urls`` and ``links`` lean on are in
:mod:`minicrawl.html` (keep one idea: a link's query is in its page's encoding); skip how
``fetch`` reads a body (``_read_body``, ``_proxies_for``, ``describe``) and ``keep_heaps_small``.
``python -m minicrawl.core URL`` runs it; ``from minicrawl.core.crawler import Crawler``: its
library API. Of the rest of minicrawl the core imports :mod:`minicrawl.html` and
:mod:`minicrawl.checks` (what a user gives, checked); the rest plugs in through ``interfaces``.
"""
