"""Secrets out of what minicrawl prints: passwords in URLs become ``***``.

A Redis URL carries its password (``redis://:secret@host:6379/0``) and a seed URL may carry
credentials (``https://user:pass@host/``). The crawl needs them; messages, logs, stats, the
report and ``--status`` must not show them. :func:`redact` is applied where text leaves the
program (the command line's error lines, the ``minicrawl`` logger through
:class:`RedactingFilter`, the report's settings), so a message built anywhere is covered.
"""

from __future__ import annotations

import logging
import re

# "scheme://user:password@" (user may be empty); the password runs to the last "@" before the
# host (passwords may contain "@" when a user writes them unescaped).
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@'\"]*:)[^\s/'\"]*@")


def redact(text: str) -> str:
    """``text`` with every URL password replaced by ``***`` (user names are kept)."""
    if "@" not in text:  # the common case: nothing to look at
        return text
    return _USERINFO.sub(_hide, text)


def _hide(m: re.Match[str]) -> str:
    if m.group(0).endswith(":PASSWORD@"):  # a placeholder in a hint, not a secret
        return m.group(0)
    return m.group("head") + "***@"


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
    """Redact every message of ``logger`` (default: the ``minicrawl`` logger); idempotent."""
    logger = logger or logging.getLogger("minicrawl")
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())
