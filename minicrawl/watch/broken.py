"""What ``--check-links`` prints when the crawl is over: every broken link, grouped by the URL it
leads to, with every page linking to it — made to be read in a CI log and acted on.

::

    Broken links: 3 URLs, linked 4 times from 2 pages (of 51 links on 12 pages, 11 not checked)
    404  http://h/missing  (Not Found)
         http://h/  line 9  "A missing page"  <a href="/missing">
         http://h/about  line 6  "Broken, again"  <a href="missing">
    404  http://h/old → http://h/gone  (Not Found)
         http://h/  line 11  "Old address"  <a href="/old">
    ERR  http://h/reset  (ConnectionError: ('Connection aborted.', …))
         http://h/  line 14  "Resets"  <a href="/reset">

Then, when there are any, the warnings: each link whose ``#fragment`` names nothing on the page it
leads to (``--fail-on warnings`` makes them fail the exit status), grouped the same way under
the URL with that fragment, after a headline of their own::

    Warnings: 1 #fragment not found, linked 2 times from 2 pages
    200  http://h/a.html#gone  (fragment #gone not found)
         http://h/  line 3  "Details"  <a href="/a.html#gone">
         http://h/b  line 8  (no text)  <a href="a.html#gone">

A target's line: the status of the answer its redirects ended at (``ERR``: none came), the URL,
where its redirects ended when that is another URL, and why it is broken (the status's reason
phrase, or the error). Under it, each link to it: the page it is on, the line of the page's
source, its text and the element as written (the href to search the source for). In a stable
order: by URL, then page, then line. A seed that failed is listed with ``(a seed)`` under it.

Everything that came from the pages is shortened (a link's text to ``TEXT`` characters, an href
to ``HREF``) and made printable: a control character, a bidirectional override, a line break in
a link's text is shown as an escape (``\\x1b``, ``\\u202e``), never sent to the terminal.
"""

from __future__ import annotations

import http
import unicodedata
from collections.abc import Iterator

from minicrawl.records.broken import BrokenLinks, Counts, Referrer, Target, Warned
from minicrawl.records.links import SEED
from minicrawl.redact import redact

TEXT = 60  # characters of a link's text shown
HREF = 100  # of an href
ERROR = 200  # of an error
INDENT = " " * 5  # the referrers' lines, under the target's URL
# Characters never printed as they are: controls, format characters (bidirectional overrides,
# zero widths), surrogates, private use, unassigned, line and paragraph separators
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def broken_lines(broken: BrokenLinks, interrupted: bool = False) -> Iterator[str]:
    """The list, a line at a time (without newlines): the headline, then each broken URL and
    the links to it. ``interrupted``: the crawl did not reach every page."""
    yield headline(broken.counts, interrupted)
    for target, referrers in broken.groups():
        yield target_line(target)
        for referrer in referrers:
            yield referrer_line(referrer)
    if broken.counts.warnings:
        yield warnings_headline(broken.counts)
        for warned, referrers in broken.warnings():
            yield warned_line(warned)
            for referrer in referrers:
                yield referrer_line(referrer)
    if broken.failed or not broken.complete:
        yield "(the list is incomplete: the links could not all be kept, as said above)"


def headline(counts: Counts, interrupted: bool = False) -> str:
    """"Broken links: 3 URLs, linked 4 times from 2 pages (of 51 links on 12 pages, 11 not
    checked)", or "Broken links: none (…)"."""
    of = f"{_n(counts.links, 'link')} on {_n(counts.pages, 'page')}"
    if counts.unchecked:
        of += f", {counts.unchecked:,} not checked"
    if not counts.any:
        said = f"Broken links: none ({of})"
    else:
        said = f"Broken links: {_n(counts.targets, 'URL')}"
        if counts.seeds:
            said += (" (a seed)" if counts.targets == counts.seeds == 1 else
                     f" ({counts.seeds:,} of them {'a seed' if counts.seeds == 1 else 'seeds'})")
        if counts.broken:
            said += (f", linked {_n(counts.broken, 'time')} from "
                     f"{_n(counts.broken_pages, 'page')}")
        said += f" (of {of})"
    if interrupted:
        said += "; the crawl was interrupted: pages it did not reach may have more"
    return said


def warnings_headline(counts: Counts) -> str:
    """"Warnings: 2 #fragments not found, linked 3 times from 2 pages", or "Warnings: none
    (…)" (the report says it; the printed list has no warnings' part then)."""
    if not counts.warnings:
        return "Warnings: none (every #fragment linked names a part of its page)"
    found = (f"{counts.warned_targets:,} #fragment{'' if counts.warned_targets == 1 else 's'}"
             " not found")
    return (f"Warnings: {found}, linked {_n(counts.warnings, 'time')} from "
            f"{_n(counts.warned_pages, 'page')}")


def warned_line(warned: Warned) -> str:
    """``200  http://h/a.html#gone  (fragment #gone not found)``."""
    return f"200  {warned_where(warned)}  ({warned_why(warned)})"


def warned_where(warned: Warned) -> str:
    """``http://h/a.html#gone``, printable: its fragment cut as an href is (it came from a
    page, as written)."""
    url, _, fragment = warned.url.partition("#")
    return printable(f"{url}#{shortened(fragment, HREF)}")


def warned_why(warned: Warned) -> str:
    """``fragment #gone not found``, cut as an error is and printable."""
    return printable(shortened(warned.warning, ERROR))


def target_line(target: Target) -> str:
    """``404  http://h/old → http://h/gone  (Not Found)``."""
    status = "ERR" if target.status is None else str(target.status)
    where = printable(redact(target.url))
    if target.final_url and target.final_url != target.url:
        where += f" → {printable(redact(target.final_url))}"
    return f"{status:<3}  {where}  ({why(target)})"


def why(target: Target) -> str:
    """Why ``target`` is broken: its status's reason phrase (``Not Found``, ``Service
    Unavailable (gave up after 3 attempts)``) where its error says ``HTTP <status>``, else the
    error (``redirect loop``, ``ConnectionError: …``)."""
    error, status = target.error or "", target.status
    said = f"HTTP {status}"
    if status is not None and (not error or error.startswith(said)):
        try:  # and what the error adds: "(gave up after 3 attempts)"
            said = http.HTTPStatus(status).phrase
        except ValueError:  # a status no standard names (499, 599)
            pass
        error = said + error.removeprefix(f"HTTP {status}")
    return printable(shortened(error or "no answer", ERROR))


def referrer_line(referrer: Referrer) -> str:
    """``     http://h/a  line 12  "Missing page"  <a href="/missing">`` (a seed: ``(a seed)``)."""
    if referrer.kind == SEED or not referrer.page:
        return f"{INDENT}(a seed)"
    line = "line ?" if referrer.line is None else f"line {referrer.line:,}"
    text = f'"{printable(shortened(referrer.text, TEXT))}"' if referrer.text else "(no text)"
    href = printable(shortened(referrer.href, HREF))
    element = ("<Refresh header>" if referrer.tag == "header" else
               f'<{printable(referrer.tag)} {printable(referrer.attr)}="{href}">')
    return f"{INDENT}{printable(referrer.page)}  {line}  {text}  {element}"


def shortened(text: str, at_most: int) -> str:
    """``text``, cut to ``at_most`` characters with "…" when longer."""
    return text if len(text) <= at_most else text[:at_most - 1] + "…"


def printable(text: str) -> str:
    """``text`` with each character a terminal must not be sent as it is (see ``_HIDDEN``)
    written as a Python escape: a link's text cannot clear the screen, recolour the log or
    reorder what follows it."""
    if text.isprintable() and text.isascii():  # the common case, at C speed
        return text
    out = []
    for char in text:
        if char == " " or unicodedata.category(char) not in _HIDDEN:
            out.append(char)
        else:
            code = ord(char)
            out.append(f"\\x{code:02x}" if code < 0x100 else
                       f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return "".join(out)


def _n(count: int, what: str) -> str:
    return f"{count:,} {what}{'' if count == 1 else 's'}"
