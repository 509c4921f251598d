"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order: ``interfaces`` (the seams), ``todo``, ``visited``, ``fetch``, ``urls``,
``links``, ``worker``, ``crawler``, ``limits``; ``python -m minicrawl.core URL`` runs it, and
``from minicrawl.core.crawler import Crawler`` is its library API. The core imports nothing
from the rest of minicrawl; the rest plugs into it through ``interfaces``.
"""
