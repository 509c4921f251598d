"""Secrets out of everything minicrawl writes: passwords in URLs become ``***``.

A Redis URL carries its password (``redis://:secret@host:6379/0``, or redis-py's
``redis://host/0?password=secret``), a proxy URL may, and a seed URL may carry credentials
(``https://user:pass@host/``, sent to the server as it asks: Basic authentication). The crawl
needs them; nothing it writes may show them. :func:`redact` is the one redaction, applied where
text leaves the process: the command line's error lines, every log record (through
:class:`RedactingFilter` on the handlers), the trace, the report, the ``--out`` records, the
core's command line; :func:`without_userinfo` gives a WARC record's target URI (a URI as sent
on the wire has no userinfo, and the request record's ``Authorization`` header is left out).

What a URL's userinfo can hold: anything but ``/``, ``?``, ``#`` and white space, which end the
authority — so ``'``, ``"``, ``:``, ``;``, ``\\`` and even an unescaped ``@`` (the userinfo runs
to the *last* ``@`` of the authority, as browsers and urllib3 read it), or their
percent-encodings. The text may be a ``repr`` (quotes around, ``\\'`` inside) or JSON
(``\\"`` inside): the same rule finds the password in each, and when in doubt it hides more
(the rest of an authority run into following text), never less.
"""

from __future__ import annotations

import logging
import re

from minicrawl.core.urls import redact as redact_urls

# The same without a scheme, as a value standing alone (a --proxy or --redis given without
# "http://", shown quoted in a message): user:password@host after the start or a quote.
# (After a space it would be a mailto: link's address, in the trace.)
_BARE = re.compile(r"""(?:^|(?<=['"]))(?!mailto:)(?P<user>[^\s/?#:@'"]*):(?P<password>[^\s/?#]*)"""
                   r"""@(?P<host>[^\s/?#@]+)""")
# redis-py also takes the password as a query parameter (?password=…, &password=…), and a TLS
# client key's passphrase (?ssl_password=…).
_QUERY_PASSWORD = re.compile(r"(?i)(?P<key>[?&;](?:ssl_)?(?:password|passwd|pwd)=)[^&#\s]*")
PLACEHOLDER = "PASSWORD"  # a hint's "redis://:PASSWORD@host" is no secret
HIDDEN = "***"


def redact(text: str) -> str:
    """``text`` with every URL password replaced by ``***`` (user names are kept): the core's
    :func:`minicrawl.core.urls.redact` (a URL's userinfo), and around it the forms run.py's
    options meet (a Redis URL's ``?password=``, a value without its scheme)."""
    if "@" in text:
        text = _BARE.sub(_hide_bare, redact_urls(text))
    if "=" in text:
        text = _QUERY_PASSWORD.sub(_hide_query, text)
    return text


def without_userinfo(url: str) -> str:
    """``url`` (absolute) without ``user:password@``, as requested on the wire: a WARC record's
    target URI."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return redact(url)
    cut = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    return redact(f"{scheme}://{rest[:cut].rpartition('@')[2]}{rest[cut:]}")


def _hide_bare(m: re.Match[str]) -> str:
    if not m.group("password") or m.group("password") in (PLACEHOLDER, HIDDEN):
        return m.group(0)
    return f"{m.group('user')}:{HIDDEN}@{m.group('host')}"


def _hide_query(m: re.Match[str]) -> str:
    return m.group("key") + HIDDEN


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
