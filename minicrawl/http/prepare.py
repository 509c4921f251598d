"""A request for a canonical URL, prepared as ``requests`` prepares it, without asking it twice.

``PreparedRequest.prepare_url`` parses the URL again (urllib3's ``parse_url``), checks its host,
and requotes it: a tenth of a fetch's Python on a small page (bench/README.md, issue 49). A URL
minicrawl fetches is canonical already (``minicrawl.core.urls``): for one made only of characters
requoting leaves alone — no ``%`` (requests decodes ``%41`` to ``A``), no ``|``, ``^``, ``[``… —
on a plain lower-case host, the URL requests would send *is* the URL, so it is set as it is.
Any other goes through ``prepare_url``. tests/test_prepare.py holds the two equal.

The cookies too are set as ``prepare_cookies`` sets them, but without its walk when the crawl's
jar is empty (most crawls, most of the time): a request asked an empty jar through a mock
request of cookielib's, ~15 µs, to add no ``Cookie`` field (issue 49).
"""

import re
from http.cookiejar import CookieJar

from requests import PreparedRequest

# What requote_uri keeps as it is (its safe set and the unreserved characters) less "%", "#",
# "[", "]"; a host of lower-case labels (no userinfo, no IPv6, no leading dot: requests refuses
# it), an optional port, then a path.
_AS_SENT = re.compile(r"https?://[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?"
                      r"(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}"
                      r"|655[0-2][0-9]|6553[0-5]))?"  # a port of 1-65535 (0: requests drops it)
                      # segments not starting with "." (urllib3 removes dot segments), a query
                      # not empty (requests drops a "?" alone)
                      r"(?:/(?!\.)[A-Za-z0-9\-._~!$&'()*+,;=:@]*)+"
                      r"(?:\?[A-Za-z0-9\-._~!$&'()*+,;=:@/?]+)?")


def prepared(template: PreparedRequest, method: str, url: str,
             cookies: CookieJar) -> PreparedRequest:
    """A copy of ``template`` asking ``method`` of ``url`` (canonical) with the ``cookies`` that
    go to it, as ``requests`` would prepare it."""
    # template.copy() but for its copy of the template's own cookie jar (a new RequestsCookieJar
    # every request, ~10 µs), which prepare_cookies replaced with the crawl's jar at once
    request = PreparedRequest()
    request.method, request.headers = method, template.headers.copy()
    request.body, request.hooks = template.body, template.hooks
    request._body_position = template._body_position
    if _AS_SENT.fullmatch(url):
        request.url = url
    else:
        request.prepare_url(url, None)
    if cookies._cookies:  # {domain: …}, empty only if the jar holds no cookie: read atomically
        request.prepare_cookies(cookies)
    else:  # what prepare_cookies leaves of an empty jar: the jar, no Cookie field
        request._cookies = cookies
    return request
