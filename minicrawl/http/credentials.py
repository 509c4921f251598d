"""A seed's ``user:password@``: taken out of its URL and sent to its origin with every request
(Basic authentication, as browsers send a URL's), so that no URL the crawl writes down holds a
password. Both crawlers' fetchers send it (:class:`minicrawl.core.fetch.Fetcher`)."""

import base64
from collections.abc import Iterable, Mapping
from urllib.parse import unquote

from minicrawl.origins import origin_of
from minicrawl.redact import split_userinfo, wire_url


def seed_credentials(seeds: Iterable[str]) -> tuple[list[str], dict[str, str]]:
    """``seeds`` (canonical) without their ``user:password@``, each once, and the Authorization
    value each origin is sent with every request, as its seed's URL asked (Basic, as browsers
    send a URL's; the first seed of an origin gives it): no URL of the crawl holds a password."""
    stripped, credentials = [], {}
    for seed in seeds:
        if userinfo := split_userinfo(seed)[1]:
            seed = wire_url(seed)
            credentials.setdefault(origin_of(seed), basic_auth(userinfo))
        stripped.append(seed)
    return list(dict.fromkeys(stripped)), credentials


def authorization(url: str, credentials: Mapping[str, str]) -> str | None:
    """The Authorization value a request for the canonical ``url`` carries: Basic for its own
    ``user:password@``, else its origin's in ``credentials`` (:func:`seed_credentials`)."""
    if not credentials and "@" not in url:  # every request asks: most crawls have none
        return None
    userinfo = split_userinfo(url)[1] if "@" in url else ""
    return basic_auth(userinfo) if userinfo else credentials.get(origin_of(url))


def basic_auth(userinfo: str) -> str:
    """The Authorization value for a URL's percent-encoded ``user:password``."""
    pair = ":".join(map(unquote, userinfo.partition(":")[::2])).encode("latin-1", "replace")
    return "Basic " + base64.b64encode(pair).decode("ascii")
