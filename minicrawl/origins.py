"""A URL's origin and host: the keys run.py groups its URLs by — robots.txt, sitemaps and seeds
per origin (:func:`origin_of`), the pace, caps and scope per host (:func:`host_of`). Both read
a canonical URL (:mod:`minicrawl.core.urls`), whose authority is spelled one way.
"""

from minicrawl.core.urls import origin


def origin_of(url: str) -> str:
    """``scheme://[user:pass@]host[:port]`` of a canonical URL: a site's key (robots.txt): the
    core's :func:`~minicrawl.core.urls.origin` without its ``/``."""
    return origin(url)[:-1]


def host_of(url: str) -> str:
    """The host of a canonical URL (no user, no port; "" for a non-URL): what run.py paces, caps
    and scopes by (the core's pace and SameHost take the port too, by its origin)."""
    host = url.partition("://")[2].partition("/")[0].rpartition("@")[2]
    return host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]
