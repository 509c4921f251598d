"""Checks of what a user gives, before the first request: one line naming the input and what to
do, as a ``ValueError`` (a command line's exit status 2). A first reading can skip this module:
the crawl never asks it anything once it runs.

* :func:`check_http`: the HTTP settings — the User-Agent, a proxy (given, or the environment's
  ``HTTP_PROXY`` …), a CA bundle (given, or ``REQUESTS_CA_BUNDLE`` …). Each wrong one would
  otherwise fail every request of the crawl, one page at a time, and end "successfully".
* :func:`check_number`: a number within its bounds (run.py's options and the core's command
  line say the same of the same value), the one check of every bound on a user's number
  (:func:`number_problem`: the rule, for a caller that words its own line: ``minicrawl bloom``'s
  arguments, a Bloom file's header, a ``--redis`` URL's query).
* :func:`check_crawler`: the core Crawler's arguments, as a library user gives them.
* :func:`check_core_options`: the core's command line's options (its numbers, its environment).
"""

import argparse
import math
import numbers
import os
import re
import ssl
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from minicrawl.core.fetch import CA_VARIABLES  # the fetcher reads the first one set
from minicrawl.redact import redact

# Bounds shared by run.py's options and the core's command line: beyond them a crawl fails or
# silently misbehaves (0 threads crawl nothing; a million threads never start; socket timeouts
# overflow time_t near 1e10 s, waits even sooner).
MAX_THREADS = 1024  # each worker is an OS thread with its own stack and connection pool
MAX_SECONDS = 86_400.0  # a day
MAX_COUNT = 10**12  # counts kept in SQLite and Redis (64-bit; exact as Lua numbers)
MAX_BODY_BYTES = 2**30  # the highest body cap a crawl may set: each worker holds its page's body


def check_http(user_agent: str, proxy: str | None = None, ca_bundle: str | None = None,
               environ: Mapping[str, str] | None = None) -> None:
    """Raise ``ValueError`` (one line) for an HTTP setting no request could be sent with:
    ``user_agent``, ``proxy`` (None: the environment's, checked in ``environ``) and
    ``ca_bundle`` (None: the first of ``CA_VARIABLES`` set in ``environ``). Without
    ``environ``, only what was given is checked."""
    _check_user_agent(user_agent)
    env = environ or {}
    if proxy is not None:  # given: with its scheme and port, as --help says (the environment's
        # may go without: requests takes http and the scheme's port, as curl does)
        what = f"--proxy {shown(redact(proxy, typed=True))}"
        _check_proxy(proxy, what)
        if "://" not in proxy or not re.search(r":\d+/?$", proxy):
            raise ValueError(f"{what} must be http://HOST:PORT, https://… or socks5://…")
    else:
        for name, value in _environ_proxies(env):
            _check_proxy(value, f"the environment's {name}={shown(redact(value, typed=True))}",
                         f"; fix or unset {name}")
    if ca_bundle is not None:
        check_ca(ca_bundle, f"--ca-bundle {shown(ca_bundle)}")
    elif (name := next((n for n in CA_VARIABLES if env.get(n)), None)) is not None:
        check_ca(env[name], f"the environment's {name}={shown(env[name])}",
                  f"; fix or unset {name}")


def _check_user_agent(user_agent: str) -> None:
    """A User-Agent requests can send: not blank, Latin-1, no control characters, no leading
    blank (requests refuses it; a header value cannot start with one)."""
    if not user_agent.strip():
        raise ValueError(f"--user-agent must not be empty, got {shown(user_agent)}")
    try:
        user_agent.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("--user-agent must be ISO-8859-1 text (HTTP headers are), got "
                         f"{shown(user_agent)}") from None
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in user_agent):
        raise ValueError("--user-agent must not contain control characters, got "
                         f"{shown(user_agent)}")
    if user_agent[0] == " ":
        raise ValueError(f"--user-agent must not start with a space, got {shown(user_agent)}: "
                         f"write {shown(user_agent.strip())}")


def _environ_proxies(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """(variable, value) of the proxies requests takes from ``environ`` for http(s): those of
    http_proxy, https_proxy and all_proxy, a lower-case name winning (urllib's rule)."""
    found: dict[str, tuple[str, str]] = {}
    for name in sorted(environ, key=lambda n: n.islower()):  # lower case last: it wins
        if name.lower() in ("http_proxy", "https_proxy", "all_proxy", "no_proxy") \
                and environ[name]:
            found[name.lower()] = (name, environ[name])
    if found.pop("no_proxy", ("", ""))[1].strip() == "*":  # no host goes through a proxy
        return []
    return list(found.values())


def _check_proxy(url: str, what: str, fix: str = "") -> None:
    """A proxy URL requests can use: ``[http|https|socks…]://[user:pass@]host[:port]`` (no
    scheme: http), nothing blank in it; a SOCKS one only with PySocks installed."""
    problem = None
    if not url.strip():
        problem = "is empty"
    elif any(c.isspace() or ord(c) < 0x20 for c in url):
        problem = "has a blank or control character in it"
    else:
        parts = urlsplit(url if "://" in url else "http://" + url)
        try:
            parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        except ValueError as e:
            problem = f"is not a valid URL ({e})"
        else:
            if parts.scheme in ("socks4", "socks4a", "socks5", "socks5h"):
                if not _has_pysocks():
                    problem = ("is a SOCKS proxy, which needs PySocks "
                               "(pip install 'requests[socks]')")
            elif parts.scheme not in ("http", "https"):
                problem = "must be http://HOST:PORT, https://… or socks5://…"
            if problem is None and not parts.hostname:
                problem = "has no host (http://HOST:PORT)"
    if problem:
        raise ValueError(f"{what} {problem}{fix}")


def _has_pysocks() -> bool:
    try:
        import socks  # noqa: F401 - only whether it is there
    except ImportError:
        return False
    return True


def check_ca(path: str, what: str, fix: str = "") -> None:
    """Raise ``ValueError`` (one line: ``what``, the problem, ``fix``) unless ``path`` is a CA
    bundle requests can verify with: a PEM file of certificates, or a directory."""
    if os.path.isdir(path):
        return  # a directory of hashed certificates (c_rehash): OpenSSL reads it as it goes
    if not os.path.isfile(path):
        raise ValueError(f"{what} is no such file{fix or '; give a PEM file of CA certificates'}")
    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        if key not in _GOOD_CAS:
            _first_certificate_loads(path)
            _GOOD_CAS.add(key)
    except (ssl.SSLError, OSError, ValueError) as e:
        raise ValueError(f"{what} is not a PEM file of CA certificates ({_reason(e)})"
                         f"{fix}") from None


# A PEM certificate block as OpenSSL writes it (RFC 7468); "TRUSTED CERTIFICATE" is OpenSSL's
# own kind, which a bundle file may hold and cadata does not take.
_PEM_BLOCK = re.compile(rb"-----BEGIN (TRUSTED )?CERTIFICATE-----.+?-----END \1?CERTIFICATE-----",
                        re.DOTALL)
_PEM_READ = 4 * 2**20  # a bundle's first certificate is near its start; a huge file is not read


def _first_certificate_loads(path: str) -> None:
    """Raise ``ssl.SSLError``, ``OSError`` or ``ValueError`` unless ``path`` holds a PEM
    certificate OpenSSL can load. Only the first is loaded: a system's bundle of ~150 took
    ~80 ms of CPU to load whole, at the start of every crawl that has one set (issue 49), and
    requests loads it again, whole, when it makes its first HTTPS connection."""
    with open(path, "rb") as f:
        block = _PEM_BLOCK.search(f.read(_PEM_READ))
    if block is None:
        raise ValueError("no certificate in it")
    if block.group(1):  # a TRUSTED CERTIFICATE: OpenSSL reads it from a file only
        ssl.create_default_context(cafile=path)
    else:
        ssl.create_default_context(cadata=block.group().decode("ascii"))


_GOOD_CAS: set[tuple[str, int, int]] = set()


def _reason(error: Exception) -> str:
    return getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)


def check_number(flag: str, value: float, low: float | None = None, high: float | None = None,
                 above: float | None = None, below: float | None = None) -> None:
    """Raise ``ValueError`` (``FLAG must be …, got VALUE``) unless ``value`` is within its bounds
    (:func:`number_problem`), naming ``flag`` as the user wrote it."""
    if problem := number_problem(value, low, high, above, below):
        raise ValueError(f"{flag} {problem}, got {shown(value)}")


def number_problem(value: float, low: float | None = None, high: float | None = None,
                   above: float | None = None, below: float | None = None) -> str | None:
    """What is wrong with ``value`` ("must be at least 1"), or None if it is finite, at least
    ``low``, over ``above``, at most ``high`` and under ``below`` (each None: no such bound):
    the one rule on a user's number, for a caller that words its own line (an argparse type, a
    file's header). Over ``above`` and under ``below`` both, a rate's ``0 < p < 1``, is said as
    one range."""
    if isinstance(value, float) and not finite(value):
        return "must be a finite number"
    if above is not None and below is not None and not above < value < below:
        return f"must be between {_number(above)} and {_number(below)} (exclusive)"
    if low is not None and not value >= low:
        return f"must be at least {low}"
    if above is not None and not value > above:
        return f"must be greater than {above}"
    if high is not None and not value <= high:
        return f"must be at most {_number(high)}"
    if below is not None and not value < below:
        return f"must be less than {_number(below)}"
    return None


def finite(value: float) -> bool:
    """True for a finite number (False for NaN, infinities and ints too large for a float)."""
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float (10**400)
        return False


def _number(value: float) -> str:
    """1024, 86400 (not 86400.0), 1000000000000."""
    return str(int(value)) if float(value).is_integer() else str(value)


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a message: cut to ``limit`` characters (a 5000-digit int, a
    megabyte of text), never failing."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**limit:
        return f"an integer of about {int(abs(value).bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_crawler(seeds: object, threads: object, max_pages: object, delay: object) -> list[str]:
    """The core Crawler's ``seeds`` as a list, once each argument is checked: ``seeds`` URLs
    (not one str: its letters would be the seeds), the numbers of their type within run.py's
    bounds. A TypeError or ValueError names the argument as the caller wrote it."""
    if isinstance(seeds, (str, bytes, bytearray)) or not isinstance(seeds, Iterable):
        one = " (one URL: put it in a list)" if isinstance(seeds, str) else ""
        raise TypeError(f"seeds must be a list of URLs, got {type(seeds).__name__} "
                        f"{shown(seeds, 60)}{one}")
    given = list(seeds)
    for n, seed in enumerate(given):
        if not isinstance(seed, str):
            raise TypeError(f"seeds[{n}] must be a str (a URL), got {type(seed).__name__} "
                            f"{shown(seed, 40)}")
    for name, value, integral, low, high in (("threads", threads, True, 1, MAX_THREADS),
                                             ("max_pages", max_pages, True, 1, MAX_COUNT),
                                             ("delay", delay, False, 0, MAX_SECONDS)):
        if value is None and name == "max_pages":
            continue  # no cap
        kind = numbers.Integral if integral else numbers.Real
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TypeError(f"{name} must be {'an int' if integral else 'a number'}, got "
                            f"{type(value).__name__} {shown(value, 40)}")
        check_number(name, value, low, high)  # type: ignore[arg-type]
    return given


def check_core_options(options: argparse.Namespace, user_agent: str,
                       environ: Mapping[str, str]) -> None:
    """Raise ``ValueError`` (one line) for the options of the core's command line (``python -m
    minicrawl.core``, parsed: ``options``): its numbers within run.py's bounds (a NaN delay, a
    million threads), then the HTTP settings of ``environ`` (its proxies and CA bundle: each
    wrong one would fail every request)."""
    for flag, low, high, above in (("--threads", 1, MAX_THREADS, None),
                                   ("--timeout", None, MAX_SECONDS, 0),
                                   ("--delay", 0, MAX_SECONDS, None),
                                   ("--max-pages", 1, MAX_COUNT, None),
                                   ("--max-bytes", 1, MAX_BODY_BYTES, None)):
        if (value := getattr(options, flag[2:].replace("-", "_"))) is not None:
            check_number(flag, value, low, high, above)
    check_http(user_agent, environ=environ)
