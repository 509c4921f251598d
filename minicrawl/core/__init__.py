"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order, each file using only those before it:
``interfaces`` (the seams), ``todo``, ``visited``, ``urls``, ``fetch``, ``links``, ``worker``,
``limits``, ``crawler``. What it leans on is outside, named for what it is: the browser's rules
in :mod:`minicrawl.html` (keep one idea: a link's query is in its page's encoding), how a body is
read in :mod:`minicrawl.http.body`, the input checks in :mod:`minicrawl.checks`; skip them, and
``keep_heaps_small``. ``python -m minicrawl.core URL`` runs it; ``from minicrawl.core.crawler
import Crawler``: its library API. The rest of minicrawl plugs in through ``interfaces``.
"""
