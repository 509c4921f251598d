"""One robots.txt read as RFC 9309 says, for one crawler: :func:`parse_robots`.

The gate (:class:`~minicrawl.visit.robots.RobotsGate`) asks only this module: ``parse_robots(
body, token)`` once per origin, then ``can_fetch(url)``, ``crawl_delay``, ``request_rate`` and
``sitemaps`` of what it returns. Google's reference tests (``tests/data/robotstxt/``) call the
same two functions.

Split in two, so that each half is done by the code that does it right:

* **Which rules apply** — here. protego (0.7) reads three things otherwise than RFC 9309, so
  the lines are read and grouped here first: a UTF-8 byte order mark is skipped (protego reads
  ``\\ufeffUser-agent`` as an unknown line, so a BOM'd ``Disallow: /`` allowed everything); a
  group is one or more user-agent lines and the rules after them, and only a user-agent line
  *after a rule* starts the next group (2.1: an unknown line, a Sitemap or a Crawl-delay between
  two user-agent lines must not split them — protego ended the group there); the group is the
  one whose product token *equals* ours, case-insensitively (2.2.1: protego also took a group for
  ``foo`` for ``foobot``, so ``foobot`` lost its fallback to ``*``), every such group merged,
  else every ``*`` group merged, else none.
* **How a rule matches a URL** — protego: ``*``, ``$``, the longest match winning and Allow
  winning a tie (2.2.2-2.2.3), and Crawl-delay / Request-rate read as it always was. It is
  handed the chosen group alone, as ``User-agent: *``. A fourth thing it reads its own way: it
  decodes escapes before comparing, so a rule ``/%62%61%7A`` matched ``/baz``; RFC 9309 2.2.2
  compares octets, percent-encoded (a rule's non-ASCII octets are escaped first, as a URL's
  already are), and Google's tests say ``%62`` is not ``b``. So every ``%`` reaches protego as
  ``%25`` — the one escape it leaves alone — in rules and URLs alike (:func:`_octets`), hex
  digits upper-cased (``%aa`` is ``%AA``, RFC 3986 2.1), and protego compares the octets as
  written.

Google's own extensions, followed because site owners check their robots.txt with Google's
tester, so they read as the owner meant (README "robots.txt"): a missing colon (``Disallow
/x``), the typos ``disalow`` and its kin, ``useragent``, ``user agent`` and ``site-map``; a
user-agent value read up to its first character that cannot be in a product token (``Foo Bar``
is ``foo``); a line cut at 16,663 bytes (8 × 2083 − 1, Google's limit: the cut rule is a
prefix of what was written, so it matches more); ``/index.html`` at the end of an Allow
allowing its directory (protego's). Not followed: none of those Google's tests hold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from protego import Protego, RequestRate

__all__ = ["RobotsRules", "parse_robots", "product_token"]

BOM = b"\xef\xbb\xbf"
# Google's: a longer line is read up to here (module doc); 8 × 2083 bytes of buffer, one of them
# the C string's terminating NUL
MAX_LINE_BYTES = 2083 * 8 - 1
LINE_BREAK = re.compile(rb"\r\n|\r|\n")  # RFC 9309 2.2: CR, LF or CRLF; nothing else ends one
TOKEN = re.compile(r"[A-Za-z0-9_-]*")

# Field names, lower-cased, as each is spelt (RFC 9309 2.2; the rest are Google's typos,
# which protego accepts too).
USER_AGENT = {"user-agent", "useragent", "user agent"}
ALLOW = {"allow"}
DISALLOW = {"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
SITEMAP = {"sitemap", "sitemaps", "site-map"}
# Other records (2.2.4) kept with the group they are in, for the pace: they never start or end one.
GROUP_EXTRAS = {"crawl-delay": "Crawl-delay", "crawl delay": "Crawl-delay",
                "request-rate": "Request-rate", "request rate": "Request-rate"}
KNOWN = USER_AGENT | ALLOW | DISALLOW | SITEMAP | set(GROUP_EXTRAS)
ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})?")


def _hide(escape: re.Match[str]) -> str:
    return "%25" + (escape.group(1) or "").upper()


def _octets(value: str, rule: bool = False) -> str:
    r"""``value`` (a rule, or a URL) spelt so that protego compares its octets (module doc):
    each ``%`` as ``%25``, hex digits upper-cased; a rule's non-ASCII characters and controls
    first escaped as their UTF-8 octets, as a canonical URL's are (minicrawl's URLs are: theirs
    are escaped already). That also keeps the rule on one line for protego, which splits its
    text at ``\x0b``, ``\x1c``, ``\x85``, ``\u2028`` and the like, where RFC 9309 does not."""
    if rule and not (value.isascii() and value.isprintable()):
        value = "".join(c if " " <= c < "\x7f" else "".join(f"%{b:02X}" for b in c.encode())
                        for c in value)
    return ESCAPE.sub(_hide, value) if "%" in value else value


def product_token(value: str) -> str:
    """The product token a user-agent line names, lower-cased: ``*``, or its value up to the
    first character a token cannot hold (Google's reading of ``Foo Bar`` as ``foo``; RFC 9309
    2.2.1 allows letters, ``-`` and ``_``; digits are kept, as :func:`~minicrawl.visit.robots.
    robots_token` keeps them, so ``Foobot2`` stays ``foobot2`` on both sides). Empty: no crawler
    can match it."""
    if value == "*" or (value[:1] == "*" and value[1:2].isspace()):
        return "*"
    return TOKEN.match(value).group(0).lower()


@dataclass
class _Group:
    tokens: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # its rules and extras, spelt for protego


def _lines(body: bytes) -> list[str]:
    """The body's lines, BOM skipped, each cut at Google's limit, decoded (bad UTF-8 replaced)."""
    skip = 0
    while skip < len(BOM) and body[skip:skip + 1] == BOM[skip:skip + 1]:  # a partial BOM too,
        skip += 1  # as Google's parser skips one
    return [line[:MAX_LINE_BYTES].decode("utf-8", errors="replace")
            for line in LINE_BREAK.split(body[skip:] if skip else body)]


def _field(line: str) -> tuple[str, str] | None:
    """(field name lower-cased, value) of a line, comment and white space gone; None if empty
    or not a line of the form ``name: value`` (or Google's ``name value``, two words)."""
    line = line.split("#", 1)[0].strip()
    if not line:
        return None
    name, colon, value = line.partition(":")
    if not colon:
        words = line.split()
        if len(words) != 2:
            return None
        name, value = words
    return name.strip().lower(), value.strip()


def _groups(body: bytes) -> tuple[list[_Group], list[str]]:
    """The groups (RFC 9309 2.1) and the Sitemap values of a robots.txt."""
    groups: list[_Group] = []
    sitemaps: list[str] = []
    group: _Group | None = None
    in_rules = False  # the current group's rules have begun: a user-agent line starts another
    for line in _lines(body):
        parsed = _field(line)
        if parsed is None or parsed[0] not in KNOWN:
            continue  # an unknown line is skipped and ends nothing (2.1, 2.2.4)
        name, value = parsed
        if name in USER_AGENT:
            if group is None or in_rules:
                group, in_rules = _Group(), False
                groups.append(group)
            group.tokens.append(product_token(value))
        elif name in SITEMAP:
            if value:
                sitemaps.append(value)
        elif group is None:
            continue  # a rule before any user-agent line applies to no one
        elif name in ALLOW or name in DISALLOW:
            in_rules = True
            if value:  # an empty one matches nothing; protego would drop it too
                group.lines.append(f"{'Allow' if name in ALLOW else 'Disallow'}: "
                                   f"{_octets(value, rule=True)}")
        else:
            # its value on one line for protego (see _octets): white space of any kind is one
            group.lines.append(f"{GROUP_EXTRAS[name]}: {' '.join(value.split())}")
    return groups, sitemaps


class RobotsRules:
    """The rules of one robots.txt for one product token (:func:`parse_robots`)."""

    def __init__(self, matcher: Protego | None, sitemaps: list[str]) -> None:
        self._matcher = matcher  # None: no group applies, everything is allowed
        self.sitemaps: list[str] = sitemaps
        self.crawl_delay: float | None = matcher.crawl_delay("*") if matcher else None
        self.request_rate: RequestRate | None = matcher.request_rate("*") if matcher else None

    def can_fetch(self, url: str) -> bool:
        """May the crawler fetch ``url`` (absolute, percent-encoded as minicrawl's URLs are)?"""
        return self._matcher is None or self._matcher.can_fetch(_octets(url), "*")

    def __bool__(self) -> bool:
        """True if any rule applies to us (the gate's log says "rules" or "allow all")."""
        return self._matcher is not None


def parse_robots(body: bytes, token: str) -> RobotsRules:
    """What ``body`` (a robots.txt, as served) says to the crawler whose product token is
    ``token`` (:func:`~minicrawl.visit.robots.robots_token`; matched case-insensitively and
    exactly, RFC 9309 2.2.1)."""
    groups, sitemaps = _groups(body)
    token = token.lower()
    chosen = [g for g in groups if token in g.tokens] or \
        [g for g in groups if "*" in g.tokens]
    if not chosen:
        return RobotsRules(None, sitemaps)
    text = "User-agent: *\n" + "".join(line + "\n" for g in chosen for line in g.lines)
    return RobotsRules(Protego.parse(text), sitemaps)
