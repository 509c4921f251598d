"""A request for a canonical URL, prepared as ``requests`` prepares it, without asking it twice.

``PreparedRequest.prepare_url`` parses the URL again (urllib3's ``parse_url``), checks its host,
and requotes it: a tenth of a fetch's Python on a small page (bench/README.md, issue 49). A URL
minicrawl fetches is canonical already (``minicrawl.core.urls``): for one made only of characters
requoting leaves alone — no ``%`` (requests decodes ``%41`` to ``A``), no ``|``, ``^``, ``[``… —
on a plain lower-case host, the URL requests would send *is* the URL, so it is set as it is.
Any other goes through ``prepare_url``. tests/test_prepare.py holds the two equal.
"""

import re

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


def prepared(template: PreparedRequest, method: str, url: str) -> PreparedRequest:
    """A copy of ``template`` asking ``method`` of ``url`` (canonical), as ``requests`` would
    prepare it."""
    request = template.copy()
    request.method = method
    if _AS_SENT.fullmatch(url):
        request.url = url
    else:
        request.prepare_url(url, None)
    return request
