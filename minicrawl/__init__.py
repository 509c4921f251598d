"""minicrawl: a threaded web crawler you can read.

Seeds go into the ToDo queue; worker threads take URLs from ToDo, fetch them, extract their
links, and offer each link to Visited; only links Visited has never seen enter ToDo.

    >>> from minicrawl import Crawler
    >>> stats = Crawler(["https://example.org/"], threads=4, max_pages=50).run()
"""

__version__ = "0.1.0"

from minicrawl.bloom import BloomFilter  # noqa: E402
from minicrawl.crawler import Crawler, Page  # noqa: E402
from minicrawl.options import Options  # noqa: E402
from minicrawl.redact import install_log_redaction  # noqa: E402
from minicrawl.visited import ExactVisited  # noqa: E402

install_log_redaction()  # no password in a URL reaches a log line

__all__ = ["BloomFilter", "Crawler", "ExactVisited", "Options", "Page", "__version__"]
