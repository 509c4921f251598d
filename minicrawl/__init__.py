"""minicrawl: a threaded web crawler you can read.

Seeds go into the ToDo queue; worker threads take URLs from ToDo, fetch them, extract their
links, and offer each link to Visited; only links Visited has never seen enter ToDo.

    >>> from minicrawl import Crawler
    >>> stats = Crawler(["https://example.org/"], threads=4, max_pages=50).run()

The map of the package is in docs/architecture.md.
"""

from minicrawl.bloom import BloomFilter
from minicrawl.crawler import Crawler
from minicrawl.options import Options
from minicrawl.page import Page
from minicrawl.version import __version__
from minicrawl.visited import ExactVisited

__all__ = ["BloomFilter", "Crawler", "ExactVisited", "Options", "Page", "__version__"]
