"""The model in one sitting: a complete small crawler, one idea per file.

Read in this order, each file using only those before it: ``interfaces`` (the seams), ``todo``,
``visited``, ``urls``, ``fetch``, ``links``, ``door``, ``worker``, ``limits``, ``crawler``; then
``__main__``, ``python -m minicrawl.core URL``. ``from minicrawl.core.crawler import Crawler``:
its library API. What the core leans on is outside it, named for what it is, and a first reading
skips it (and ``keep_heaps_small``): the browser's rules, :mod:`minicrawl.html` (keep one idea: a
link's query is in its page's encoding); how an answer is read, :mod:`minicrawl.http.answer`;
the input checks, :mod:`minicrawl.checks`; the command line's lines, :mod:`minicrawl.lines`.
The rest of minicrawl plugs into the core through ``interfaces``.
"""
