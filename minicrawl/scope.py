"""Scope: which canonical URLs this crawl may follow.

By default a crawl stays on its seeds' hosts (a host is its name and port, by http or https:
:func:`~minicrawl.core.urls.host_of`, as the core's ``SameHost``); ``--allow-domain`` adds a
domain and its subdomains, on any port (``example.org`` or ``*.example.org``, in any case, an
IDN as typed or in punycode: each is the name the core's canonicalizer makes of it);
``--include`` / ``--exclude`` regexes narrow it further.

The regexes are matched by the ``regex`` module with a time limit (``MATCH_TIMEOUT``) and the GIL
released: Python's ``re`` can take hours on one URL with a pattern like ``(a|a)*$`` (catastrophic
backtracking), holding the GIL so that even Ctrl-C waits. A match that takes longer refuses the
URL (it may not be followed: an ``--include`` could not say yes, an ``--exclude`` could not say
no), told once per pattern; that pattern then gets ``SLOW_TIMEOUT`` per URL.

A seed file is read while the crawl runs (minicrawl.seeds), so the seeds' hosts arrive after the
first pages: until the crawl's pass over the seeds has ended (:meth:`Scope.learned`), a host not
known yet is answered only after it — a link is never refused for a seed not read yet.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from minicrawl.checks import shown
from minicrawl.core.urls import canonicalize, host_of

if TYPE_CHECKING:  # (imported with the first pattern: 20 ms a crawl without one, issue 49)
    import regex

log = logging.getLogger("minicrawl")

MATCH_TIMEOUT = 0.25  # seconds one pattern may take on one URL (a sane one takes microseconds)
SLOW_TIMEOUT = 0.001  # …once it took that long on one: a page of such links costs a second,
# not minutes (300 links: 1.1 s, at 0.25 s each 75 s that a Ctrl-C waits for: the page in flight)


def check_domain(domain: str) -> None:
    """An ``--allow-domain``: a host name like ``example.org`` (or ``*.example.org``, the same);
    ValueError for a URL, ``host:port`` or another wildcard, which would never match a host."""
    if allowed_host(domain) is None:
        raise ValueError(f"--allow-domain must be a host name like example.org or *.example.org "
                         f"(no scheme, port, path or other wildcard), got {shown(domain)}")


def check_pattern(name: str, pattern: str | re.Pattern[str]) -> None:
    """An ``--include`` / ``--exclude`` (``name``) regex: valid (Python's syntax, matched by the
    ``regex`` module), not empty (an unset shell variable), and for ``--exclude`` not one that
    matches the empty string, so every URL (``x*``): it would exclude the seeds too. ValueError
    otherwise, naming the option."""
    flag = "--" + name
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    if not text.strip():
        raise ValueError(f"{flag} {text!r} is an empty pattern, which matches every URL "
                         f"(an unset shell variable?): give a regex or leave {flag} out")
    import regex

    try:
        re.compile(text)
        compiled = compile_pattern(pattern)
    except (re.error, regex.error) as e:
        raise ValueError(f"{flag} {shown(text)} is not a valid regular expression: "
                         f"{e}") from None
    if name == "exclude" and compiled.search("") is not None:
        raise ValueError(f"--exclude {shown(text)} matches the empty string, so every URL (the "
                         "seeds too): give a pattern that needs some text")


def allowed_host(domain: str) -> str | None:
    """The host ``--allow-domain domain`` names, as canonical URLs spell hosts (lower case,
    punycode; ``*.`` in front, "this domain and its subdomains", dropped: a domain means that
    already); None if it names no host."""
    name = domain.strip().rstrip(".")
    if name.startswith("*."):
        name = name[2:]
    if not name or any(c in name for c in "/\\@?#*:" if not name.startswith("[")):
        return None
    url = canonicalize(f"http://{name}/")
    return host_of(url) if url is not None else None


def name_of(host: str) -> str:
    """The name of ``host`` (``host[:port]``) without its port: what a domain is matched on."""
    return host[: host.find("]") + 1] if host.startswith("[") else host.partition(":")[0]


def compile_pattern(pattern: str | re.Pattern[str]) -> regex.Pattern[str]:
    """An ``--include`` / ``--exclude`` pattern (a string, or ``re``'s compiled one with its
    flags) as the ``regex`` module's, which can be matched with a time limit."""
    import regex

    if isinstance(pattern, re.Pattern):  # re's flags as regex's (re.ASCII is another bit)
        flags = sum(getattr(regex, n) for n in "AILMSX" if pattern.flags & getattr(re, n))
        return regex.compile(pattern.pattern, flags)
    return regex.compile(pattern)


class Scope:
    """Decides whether a canonical URL is in this crawl (a core ``Admission`` rule)."""

    def __init__(self, seed_urls: Iterable[str], allow_domains: Iterable[str] = (),
                 include: Iterable[str | re.Pattern[str]] = (),
                 exclude: Iterable[str | re.Pattern[str]] = (), *,
                 more_seeds: bool = False) -> None:
        self.hosts = {host_of(u) for u in seed_urls}
        # Set once every seed's host is in ``hosts`` (at once, unless ``more_seeds`` will come).
        self.complete = threading.Event()
        if not more_seeds:
            self.complete.set()
        self.domains = tuple(host for d in allow_domains if (host := allowed_host(d)))
        self.include = [compile_pattern(p) for p in include]
        self.exclude = [compile_pattern(p) for p in exclude]
        self._host_cache: dict[str, bool] = {}
        self._slow: set[str] = set()  # patterns told to have timed out
        self._lock = threading.Lock()

    def allows_host(self, host: str) -> bool:
        """True if pages of ``host`` (``host[:port]``) belong to this crawl."""
        known = self._host_cache.get(host)
        if known is None:
            name = name_of(host)
            known = host in self.hosts or any(
                name == d or name.endswith("." + d) for d in self.domains)
            if not known and not self.complete.is_set():
                self.complete.wait()  # a seed not read yet may name it (a second or so)
                known = host in self.hosts
            self._host_cache[host] = known  # benign race: every thread computes the same value
        return known

    def learned(self, seed_origins: Iterable[str]) -> None:
        """Add the hosts of ``seed_origins`` (``scheme://host[:port]``, the pass over the seed
        files); the scope is complete when they are all in, or the pass failed."""
        try:
            for origin in seed_origins:
                self.hosts.add(host_of(origin))
        finally:
            self.complete.set()

    def refuses(self, url: str, depth: int) -> str | None:
        """"out_of_scope" unless the canonical ``url`` may be crawled (at any depth): None."""
        return None if self.admits(url) else "out_of_scope"

    def admits(self, url: str) -> bool:
        """True if the canonical ``url`` may be crawled."""
        if not self.allows_host(host_of(url)):
            return False
        if self.include and not any(self._search(p, "--include", url) is True
                                    for p in self.include):
            return False
        return not self.excludes(url)

    def excludes(self, url: str) -> bool:
        """True if an ``--exclude`` pattern matches the canonical ``url`` (or took too long): it
        is never requested, not even to be checked."""
        if not self.exclude:  # (asked of every link: no generator where there is no pattern)
            return False
        return any(self._search(p, "--exclude", url) is not False for p in self.exclude)

    def _search(self, pattern: regex.Pattern[str], flag: str, url: str) -> bool | None:
        """Whether ``pattern`` finds a match in ``url``; None if it took over MATCH_TIMEOUT."""
        limit = SLOW_TIMEOUT if pattern.pattern in self._slow else MATCH_TIMEOUT
        try:
            return pattern.search(url, timeout=limit, concurrent=True) is not None
        except TimeoutError:
            with self._lock:
                told, _ = pattern.pattern in self._slow, self._slow.add(pattern.pattern)
            if not told:
                log.warning("%s %r took over %g s on %s (catastrophic backtracking?): URLs it "
                            "takes that long on are not followed; simplify the pattern", flag,
                            pattern.pattern[:80], MATCH_TIMEOUT, url[:100])
            return None
