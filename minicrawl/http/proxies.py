"""The proxies the core's fetcher sends each request through: the session's (run.py's
``--proxy``), else the environment's (``http_proxy``, ``no_proxy``…), looked up once per origin —
requests would read the environment again for each request (~0.5 ms).

run.py's workers share one table (:class:`minicrawl.crawler.Crawler` hands the first worker's to
the others, as it hands them one cookie jar): their sessions' proxies are the same ``--proxy``, and
a table per worker read the environment once per worker and origin — at ×64 on 8 hosts 512
lookups instead of 8 (0.16 ms each with 38 variables set: ~80 ms of a 3,200-page crawl's CPU,
more in a fuller environment; issue 49).
"""

import threading

import requests
from requests.utils import get_environ_proxies

from minicrawl.origins import origin_of


class Proxies:
    """The proxies of each origin ``session`` asks, looked up on its first request (by any of the
    threads that share the table: once)."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session
        self._known: dict[str, dict[str, str]] = {}
        self._looking = threading.Lock()  # only on a miss: an origin's first request

    def of(self, url: str) -> dict[str, str]:
        """The proxies for ``url`` (canonical): the session's, else the environment's for its
        origin."""
        if (proxies := self._known.get(key := origin_of(url))) is None:
            with self._looking:  # two workers' first requests to one origin: one lookup
                if (proxies := self._known.get(key)) is None:
                    proxies = self._known[key] = self.session.proxies or get_environ_proxies(key)
        return proxies
