"""A URL's origin: the key run.py groups its URLs by for robots.txt, sitemaps and seeds (its
``scheme://[user:pass@]host[:port]``). Its pace, caps and scope go by the host
(:func:`minicrawl.core.urls.host_of`: ``host[:port]``, either scheme, no user), the core's too.
Both read a canonical URL (:mod:`minicrawl.core.urls`), whose authority is spelled one way.
"""


def origin_of(url: str) -> str:
    """``scheme://[user:pass@]host[:port]`` of a canonical URL: a site's key (robots.txt,
    proxies)."""
    return url[: url.find("/", url.index("//") + 2)]
