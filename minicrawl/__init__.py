"""minicrawl: a threaded web crawler you can read.

Seeds go into the ToDo queue; worker threads take URLs from ToDo, fetch them, extract their
links, and offer each link to Visited; only links Visited has never seen enter ToDo.

    >>> from minicrawl import Crawler
    >>> stats = Crawler(["https://example.org/"], threads=4, max_pages=50).run()

The map of the package is in docs/architecture.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from minicrawl.redact import install_log_redaction
from minicrawl.version import __version__

install_log_redaction()  # no password in a URL reaches a log line

# Imported when first used (PEP 562), so that "run.py --threads 0" or "minicrawl bloom" answer
# without loading requests, lxml and the crawler: a usage error is told in 50 ms, not 300.
_EXPORTS = {"BloomFilter": "minicrawl.visited", "Crawler": "minicrawl.crawler",
            "Page": "minicrawl.page", "Options": "minicrawl.options",
            "ExactVisited": "minicrawl.visited.exact"}

if TYPE_CHECKING:
    from minicrawl.crawler import Crawler
    from minicrawl.options import Options
    from minicrawl.page import Page
    from minicrawl.visited import BloomFilter
    from minicrawl.visited.exact import ExactVisited


def __getattr__(name: str) -> type[BloomFilter | Crawler | ExactVisited | Options | Page]:
    """The class ``name`` of :data:`_EXPORTS`, imported on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'minicrawl' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value

__all__ = ["BloomFilter", "Crawler", "ExactVisited", "Options", "Page", "__version__"]
