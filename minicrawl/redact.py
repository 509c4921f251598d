"""A URL's userinfo (``bob:s3cret@``): where it ends, what a request sends, what a line shows —
the one redaction, applied to every line that leaves the process.

A Redis URL carries its password (``redis://:secret@host:6379/0``, or redis-py's
``redis://host/0?password=secret``), a proxy URL may, and a seed URL may carry credentials
(``https://bob:s3cret@host/``, sent to the server as it asks: Basic authentication). The crawl
needs them; nothing it writes may show them.

* :func:`split_userinfo`: the one userinfo split. The userinfo runs to the authority's *last*
  ``@`` (a password may hold one; browsers and urllib3 read it so).
* :func:`wire_url`: a URL as a request carries it, without userinfo — the protocol's rule (a URI
  on the wire has none: credentials go in a header), not a redaction. A WARC record's target URI
  is one; so is a seed once its credentials are taken out.
* :func:`redact`: the one redaction, for every line that leaves the process — both command
  lines' stderr lines, every log record (:class:`RedactingFilter` on the handlers), ``--out``
  records, a fetch error quoting a URL, the trace, the report, the warcinfo description, the
  core's lines. One policy: ``bob:***@``, the user name kept and the password ``***`` (never
  ``***@`` alone, never the password); a Redis URL's ``?password=`` and ``?ssl_password=``
  values ``***`` too. A ``mailto:`` address is no userinfo.

What a URL's userinfo can hold: anything but ``/``, ``?``, ``#`` and white space, which end the
authority — so ``'``, ``"``, ``:``, ``;``, ``\\`` and even an unescaped ``@``, or their
percent-encodings. The text may be a ``repr`` (quotes around, ``\\'`` inside) or JSON (``\\"``
inside): the same rule finds the password in each, and when in doubt it hides more (the rest of
an authority run into following text), never less. A value as a user typed it (a ``--proxy``, a
``--redis`` URL, a seed) may hold anything in its password, a blank or a ``/`` too:
``typed=True`` reads its userinfo to the value's last ``@``.
"""

from __future__ import annotations

import logging
import re

_SCHEME = r"([A-Za-z][A-Za-z0-9+.\-]*://)"
# A URL's authority (a value may come without its scheme: bob:pw@proxy:8080): to / ? # or a
# blank. A typed value's: to its last @ (whatever the password holds), then to / ? # or a blank.
_AUTHORITY = re.compile(_SCHEME + r"?([^/?#\s]*)")
_TYPED_AUTHORITY = re.compile(_SCHEME + r"?((?:.*@)?[^/?#\s]*)", re.DOTALL)
# In a line: a URL's scheme and authority; or a value without a scheme (a --proxy or --redis
# written bob:pw@host:8080, shown quoted in a message) at the start or after a quote, with an @
# in it (not after a space: a mailto: address, which the trace shows, may come there).
_IN_TEXT = re.compile(_SCHEME + r"""[^/?#\s]*|(?:^|(?<=['"]))(?!['"])[^/?#\s]*@[^/?#\s]*""")
# redis-py also takes the password as a query parameter (?password=…, &password=…), and a TLS
# client key's passphrase (?ssl_password=…).
_QUERY_PASSWORD = re.compile(r"(?i)(?P<key>[?&;](?:ssl_)?(?:password|passwd|pwd)=)[^&#\s]*")
HIDDEN = "***"
PLACEHOLDER = "PASSWORD"  # a hint's "redis://:PASSWORD@host" is no secret


def split_userinfo(url: str, typed: bool = False) -> tuple[str, str, str, str]:
    """(``scheme://``, userinfo, ``host[:port]``, the rest) of ``url``, "" for a part it has
    not; ``typed``: ``url`` is one value as a user typed it (its userinfo runs to its last
    ``@``, past a blank or a ``/`` its password may hold)."""
    m = (_TYPED_AUTHORITY if typed else _AUTHORITY).match(url)
    assert m is not None  # both parts may be empty: it always matches
    userinfo, _, host = m[2].rpartition("@")
    return m[1] or "", userinfo, host, url[m.end():]


def wire_url(url: str) -> str:
    """``url`` (absolute; else as given) as a request puts it on the wire: without userinfo."""
    scheme, _, host, rest = split_userinfo(url)
    return scheme + host + rest if scheme else url


def redact(text: str, typed: bool = False) -> str:
    """``text`` with every password shown as ``***``: a URL's ``bob:s3cret@`` as ``bob:***@``
    (the user name kept), a ``?password=`` or ``?ssl_password=`` value as ``***``. ``typed``:
    ``text`` is one value as a user typed it (a ``--proxy``, a ``--redis`` URL, a seed), whose
    password may hold a blank or a ``/``, not a line."""
    if "@" in text:
        text = _hidden(text, True) if typed else _IN_TEXT.sub(lambda m: _hidden(m[0]), text)
    if "=" in text:
        text = _QUERY_PASSWORD.sub(rf"\g<key>{HIDDEN}", text)
    return text


def _hidden(url: str, typed: bool = False) -> str:
    """``url`` with its password ``***`` (the policy's one place)."""
    scheme, userinfo, host, rest = split_userinfo(url, typed)
    user, colon, password = userinfo.partition(":")
    if not colon or password in ("", HIDDEN, PLACEHOLDER) or (not scheme and
                                                             user.lower() == "mailto"):
        return url  # no password (bob@host), one already hidden, or a mailto: address
    return f"{scheme}{user}:{HIDDEN}@{host}{rest}"


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (arguments included)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact URL passwords in ``record``'s message and traceback text, in place;
        True: the record is always logged."""
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_text is None:  # a traceback may quote the URL too
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


def install_log_redaction(logger: logging.Logger | None = None) -> None:
    """Redact every message of ``logger`` (default: the ``minicrawl`` logger) and every
    message its handlers write (those of the root logger too: a library's records, urllib3's,
    reach them without passing the ``minicrawl`` logger's filter); idempotent. Call it again
    after adding a handler (``logging.basicConfig``)."""
    logger = logger or logging.getLogger("minicrawl")
    for target in (logger, *logger.handlers, *logging.getLogger().handlers):
        if not any(isinstance(f, RedactingFilter) for f in target.filters):
            target.addFilter(RedactingFilter())
