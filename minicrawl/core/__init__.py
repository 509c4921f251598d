"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order, each file using only those before it: ``interfaces`` (the seams), ``todo``,
``visited``, ``urls``, ``fetch``, ``links``, ``door``, ``trip``, ``worker``, ``limits``,
``crawler``; then ``__main__``, ``python -m minicrawl.core URL``. ``from minicrawl.core.crawler
import Crawler``: its library API. What the core leans on is outside it, named for what it is,
skipped on a first reading: :mod:`minicrawl.html`, the browser's rules (keep one idea: a link's
query is in its page's encoding); :mod:`minicrawl.http` (answer, credentials, proxies);
:mod:`minicrawl.checks`, ``refused``, ``origins``, ``lines``, ``heaps``, ``redact`` (passwords
out of what is shown). The rest of minicrawl plugs into the core through ``interfaces``.
"""
