"""The proxies the core's fetcher sends each request through: the session's (run.py's
``--proxy``), else the environment's (``http_proxy``, ``no_proxy``…), looked up once per origin —
requests would read the environment again for each request (~0.5 ms).
"""

import requests
from requests.utils import get_environ_proxies

from minicrawl.origins import origin_of


class Proxies:
    """The proxies of each origin ``session`` asks, looked up on its first request."""

    def __init__(self, session: requests.Session) -> None:
        self.session = session
        self._known: dict[str, dict[str, str]] = {}

    def of(self, url: str) -> dict[str, str]:
        """The proxies for ``url`` (canonical): the session's, else the environment's for its
        origin."""
        if (proxies := self._known.get(key := origin_of(url))) is None:
            proxies = self._known[key] = self.session.proxies or get_environ_proxies(key)
        return proxies
