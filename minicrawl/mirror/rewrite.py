"""Links rewritten for reading a mirror offline (``--mirror``, as ``wget -k``): in a saved HTML
page or stylesheet, each URL is replaced by what a caller's ``convert`` says — the relative path
to its copy, or the URL made absolute — and nothing else of the file changes.

The file is never parsed into a tree and written out again (that would re-encode it, re-quote its
attributes, drop what a parser does not keep): the URLs are found where they are in its bytes (a
markup scan the way a browser's tokenizer reads tags, attributes, comments and raw text; the CSS
``url()``, ``@import`` strings, comments and strings) and each is spliced in place. A value is
decoded in the page's encoding to be resolved and written back in it, entity-escaped as HTML
wants (``&`` is ``&amp;``); every other byte is the server's.

Where the time goes is the scan (a documentation page holds ~2,000 tags, a tenth with a URL):
one regex match skips text, comments and every tag that cannot hold a URL, and an attribute
regex the attributes that do not, so Python steps through the URLs only; each distinct URL of a
file is converted once, its fragment apart.

What is rewritten: ``href`` (``a``, ``area``, ``link``), ``src`` (``img``, ``script``,
``iframe``, ``frame``, ``embed``, media, ``input``), ``srcset`` (each candidate's URL),
``poster``, ``object data``, ``background``, form ``action`` and ``formaction``, inline
``style`` and ``<style>`` (as CSS); ``<base href>`` is emptied — every URL written is already
right for the file where it is.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable

from minicrawl.core.urls import canonical
from minicrawl.html.encoding import CODECS, decode

Convert = Callable[[str, str], str | None]
"""``convert(href, base)``: what the URL ``href`` (as written, entities decoded, its fragment
cut) on a file whose base URL is ``base`` becomes, or None to leave it as it is. The fragment is
written back after it as it was; a fragment alone (``#top``: the file itself, wherever it is) is
left as it is, never asked. Asked once per distinct ``href`` of a file: it must be a function of
its arguments while a file is rewritten."""

# Where URLs are: (tag, attribute) — "" for any tag.
_URL_ATTRS = {
    b"href": {b"a", b"area", b"link"},
    b"src": {b"img", b"script", b"iframe", b"frame", b"embed", b"video", b"audio", b"source",
             b"track", b"input"},
    b"poster": {b"video"},
    b"data": {b"object"},
    b"background": {b"body", b"table", b"td", b"th"},
    b"action": {b"form"},
    b"formaction": {b"button", b"input"},
}
_URL_TAGS = frozenset().union(*_URL_ATTRS.values(), {b"img", b"source"})  # (srcset's too)
_STYLE = re.compile(rb"style", re.I).search  # a tag whose attributes may hold a style: read
# What a page's own CSS is in, found fast (the requisites of a page being crawled): a style
# attribute, a <style> element (in a comment or a script too: a request more, no harm)
_STYLE_ATTR = re.compile(rb"""\sstyle\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""", re.I)
_STYLE_ELEMENT = re.compile(rb"<style[^>]*>(.*?)</style", re.I | re.S)
_BASE = re.compile(rb"<base[\s/][^>]*>", re.I)
_RAW_TEXT = {b"script", b"style", b"textarea", b"title", b"xmp", b"iframe", b"noembed",
             b"noframes", b"plaintext"}  # their content is no markup: skipped to their end tag
# (its attributes' loop is possessive: each step is decided by its first character — a quote
# opens a value, anything else is one run — so it never has another way to match; as fast as runs)
_MARKUP = re.compile(
    rb"<!--.*?(?:-->|\Z)|<![^>]*>?|<\?[^>]*>?"
    rb"|<([A-Za-z][^\s/>]*)((?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>", re.S)
# (an unquoted value runs to a blank or ">", as a browser's tokenizer reads it: "=" and quotes in
# it are parse errors, kept)
_ATTR = re.compile(rb"""([^\s"'>/=]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")


def _any_case(words: set[bytes], end: bytes) -> bytes:
    """A pattern for any of ``words`` (ASCII, any case) followed by ``end``, as a trie: the
    regex engine tries the few words of a tag's first letter, not each word in turn."""
    tree: dict[int, dict] = {}
    for word in words:
        node = tree
        for byte in word.lower():
            node = node.setdefault(byte, {})
        node[-1] = {}

    def emit(node: dict[int, dict]) -> bytes:
        alts = [end if byte < 0 else b"[%c%c]" % (byte, bytes([byte]).upper()[0]) + emit(sub)
                for byte, sub in sorted(node.items(), reverse=True)]
        return alts[0] if len(alts) == 1 else b"(?:" + b"|".join(alts) + b")"

    return emit(tree)


# What the scan need not look at, skipped in one match (the regex engine, not a Python step per
# tag: a page has ~2,000 tags, a tenth of them with a URL): text, comments, doctypes, processing
# instructions and the tags read exactly as _MARKUP reads them whose name is none of those with a
# URL, <base> or a raw-text element, and whose attributes hold no "style" (_STYLE: any case,
# anywhere in them, in a value too). It stops at a "<" and a letter that is not such a tag; there
# _MARKUP reads it (or, if it is no tag, the scan goes on one byte further, as a search does).
_NO_STYLE = rb"(?:[^%s]++|[sS](?![tT][yY][lL][eE]))"
_SKIP = re.compile(
    rb"(?:[^<]++|<(?:/"  # (an end tag: its "<" is text to _MARKUP, as the rest of it)
    rb"|(?!" + _any_case(_URL_TAGS | _RAW_TEXT | {b"base"}, rb"[\s/>]") + rb")"
    rb"[A-Za-z][^\s/>]*+(?:" + _NO_STYLE % b">\"'sS" + rb"|\"" + _NO_STYLE % b"\"sS"
    + rb"*+\"|'" + _NO_STYLE % b"'sS" + rb"*+')*+>"
    rb"|!--.*?(?:-->|\Z)|![^>]*+>?|\?[^>]*+>?|(?![A-Za-z])))*+", re.S).match
# The attributes of a tag the scan reads that cannot hold a URL, skipped in one match as
# _ATTR.finditer passes them (a byte no name starts with, or a whole attribute): it stops at an
# attribute named as one with a URL (for some tag) or "style".
_ATTR_SKIP = re.compile(
    rb"""(?:[\s"'>/=]|(?!""" + _any_case(set(_URL_ATTRS) | {b"srcset", b"style"},
                                       rb"""(?:[\s"'>/=]|\Z)""")
    + rb""")[^\s"'>/=]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?)*+""").match
_CLOSE = {tag: re.compile(rb"</" + re.escape(tag) + rb"[\s/>]", re.I).search
          for tag in _RAW_TEXT}  # a raw-text element's end tag

_CSS = re.compile(
    rb"/\*.*?(?:\*/|\Z)"
    rb"|(?<![\w-])(?i:url)\(\s*(?:\"([^\"\\\n]*)\"|'([^'\\\n]*)'|([^\s\"'()\\]*))\s*\)"
    rb"|@(?i:import)\s*(?:\"([^\"\\\n]*)\"|'([^'\\\n]*)')"
    rb"|\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'", re.S)
_CSS_UNSAFE = re.compile(r"[\s()'\"\\]")


def rewrite_html(body: bytes, base: str, encoding: str, convert: Convert,
                 css_convert: Convert | None = None) -> bytes:
    """``body`` (an HTML page at ``base``, in ``encoding``: the Encoding Standard's name) with
    each URL replaced as ``convert`` says (``css_convert``, if given, for those in its CSS: a
    ``style`` attribute or element); the same bytes when its encoding is not ASCII-based
    (UTF-16: its markup is not in these bytes) or nothing changes."""
    convert = _once(convert)
    css_convert = _once(css_convert) if css_convert is not None else convert
    codec = CODECS.get(encoding, "utf-8")
    if codec.startswith("utf-16") or codec.startswith("utf-32"):
        return body
    base = _base(body, base, encoding)
    # A value repeated in the page (a site's sidebar, the links of an index) is converted once:
    # (srcset?, its bytes) → its new bytes or None
    done: dict[tuple[bool, bytes], bytes | None] = {}
    out: list[bytes] = []
    at = 0
    pos = 0
    size = len(body)
    while (pos := _SKIP(body, pos).end()) < size:  # (at a "<" and a letter)
        if (m := _MARKUP.match(body, pos)) is None:  # no tag: text, as a browser reads it
            pos += 1
            continue
        pos = m.end()
        tag = m[1].lower()
        if tag not in _URL_TAGS and tag != b"base" and not _STYLE(body, m.start(2), m.end(2)):
            pass  # (most tags: no URL in them; their attributes are not read)
        elif tag == b"base":  # its URL is no longer needed: every one written is right as it is
            for a in _ATTR.finditer(m[2]):
                if a[1].lower() == b"href" and a.end() > a.start(1) + 4:
                    out += [body[at:m.start(2) + a.start()], b'href=""']
                    at = m.start(2) + a.end()
        else:
            at_attr, attrs_end = m.start(2), m.end(2)
            while (at_attr := _ATTR_SKIP(body, at_attr, attrs_end).end()) < attrs_end:
                if (a := _ATTR.match(body, at_attr, attrs_end)) is None:
                    break  # (never: the skip stops at a name)
                at_attr = a.end()
                name = a[1].lower()
                group = 2 if a[2] is not None else 3 if a[3] is not None else 4
                if (raw := a[group]) is None:
                    continue
                if name == b"style":
                    new = _css_value(raw, base, css_convert, b"'" if group == 3 else b'"')
                elif raw.lstrip()[:1] == b"#":  # a fragment alone: this file, as it is
                    continue
                elif name == b"srcset" and tag in (b"img", b"source"):
                    if (key := (True, raw)) not in done:
                        done[key] = _value(raw, encoding, lambda v: _srcset(v, base, convert))
                    new = done[key]
                elif tag in _URL_ATTRS.get(name, ()):
                    if (key := (False, raw)) not in done:
                        done[key] = _value(raw, encoding, lambda v: convert(v, base))
                    new = done[key]
                else:
                    continue
                if new is not None:
                    start, end = a.start(group), a.end(group)
                    if group == 4:  # unquoted: quoted now (the value may hold what ends one)
                        new = b'"' + new + b'"'
                    elif group == 3:
                        new = new.replace(b"'", b"&#39;")
                    out += [body[at:start], new]
                    at = end
        if tag in _RAW_TEXT:  # its text runs to its end tag
            close = _CLOSE[tag](body, pos)
            end = close.start() if close else len(body)
            if tag == b"style":
                css = _rewrite_css(body[pos:end], base, css_convert)
                if css != body[pos:end]:
                    out += [body[at:pos], css]
                    at = end
            pos = end
    if not out:
        return body
    out.append(body[at:])
    return b"".join(out)


def _once(convert: Convert) -> Convert:
    """``convert`` asked once per distinct URL of a file (its fragment cut, written back): a
    page names the same file many times (``os.html#os.getcwd``, ``os.html#os.getpid``), and
    what it becomes is the same for them all."""
    known: dict[str, str | None] = {}

    def converted(href: str, base: str) -> str | None:
        url, hashed, fragment = href.partition("#")
        if not url:
            return None  # "" or a fragment alone: this file, right as it is
        if url in known:
            new = known[url]
        else:
            new = known[url] = convert(url, base)
        return new + hashed + fragment if new is not None else None

    return converted


def _base(body: bytes, url: str, encoding: str) -> str:
    """The URL the page's links are relative to: its first ``<base href>`` (read as a browser
    does, against the page's URL), else the page's."""
    for m in _BASE.finditer(body):  # (a "<base" in a comment or a script would be read too)
        for a in _ATTR.finditer(m[0], 5, len(m[0]) - 1):
            value = a[2] if a[2] is not None else a[3] if a[3] is not None else a[4]
            if a[1].lower() == b"href" and value is not None:
                joined = canonical(html.unescape(decode(value, encoding)).strip(), url)[0]
                return joined or url
    return url


def _value(raw: bytes, encoding: str, change: Callable[[str], str | None]) -> bytes | None:
    """An attribute value's new bytes (entities escaped, in ``encoding``), or None: unchanged."""
    text = raw.decode("ascii") if raw.isascii() else decode(raw, encoding)
    if "&" in text:
        text = html.unescape(text)
    new = change(text.strip())
    if new is None or new == text:
        return None
    escaped = new.replace("&", "&amp;").replace('"', "&quot;")
    return escaped.encode(CODECS.get(encoding, "utf-8"), "xmlcharrefreplace")


def _srcset(value: str, base: str, convert: Convert) -> str | None:
    """A ``srcset`` with each candidate's URL converted (its descriptors as they are)."""
    out, i, n, changed = [], 0, len(value), False
    while i < n:
        j = i
        while j < n and (value[j].isspace() or value[j] == ","):
            j += 1
        out.append(value[i:j])
        if j >= n:
            break
        k = j
        while k < n and not value[k].isspace():
            k += 1
        url = value[j:k].rstrip(",")
        new = convert(url, base)
        if new is not None and new != url:
            changed = True
            url = new
        out.append(url + value[j + len(value[j:k].rstrip(",")):k])
        m, depth = k, 0
        if not value[j:k].endswith(","):  # its descriptors: up to a comma outside brackets
            while m < n and (value[m] != "," or depth):
                depth += (value[m] == "(") - (value[m] == ")")
                m += 1
        out.append(value[k:m])
        i = m
    return "".join(out) if changed else None


def _css_value(raw: bytes, base: str, convert: Convert, quote: bytes) -> bytes | None:
    """A ``style`` attribute's value rewritten as CSS (written back inside ``quote``s: what
    would end it escaped), or None: unchanged."""
    text = html.unescape(raw.decode("utf-8", "surrogateescape")).encode("utf-8",
                                                                         "surrogateescape")
    css = _rewrite_css(text, base, convert)
    if css == text:
        return None
    entity = b"&quot;" if quote == b'"' else b"&#39;"
    return css.replace(b"&", b"&amp;").replace(quote, entity)


def rewrite_css(body: bytes, base: str, convert: Convert) -> bytes:
    """The stylesheet ``body`` (at ``base``) with each ``url()`` and ``@import`` URL replaced as
    ``convert`` says (written so that it needs no CSS escape); the rest of its bytes as they are.
    A URL written with an escape (``url(a\\29 .png)``) is left as it is."""
    return _rewrite_css(body, base, _once(convert))


def _rewrite_css(body: bytes, base: str, convert: Convert) -> bytes:
    """:func:`rewrite_css` with ``convert`` asked as it is (each URL, its fragment too)."""
    out: list[bytes] = []
    at = 0
    for m in _CSS.finditer(body):
        group = next((g for g in range(1, 6) if m[g] is not None), None)
        if group is None:  # a comment or a string
            continue
        raw = m[group]
        try:
            href = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            continue
        if not href or href[:5].lower() == "data:":
            continue
        new = convert(href, base)
        if new is None or new == href:
            continue
        new = _CSS_UNSAFE.sub(lambda c: f"%{ord(c[0]):02X}", new)
        out += [body[at:m.start(group)], new.encode("utf-8")]
        at = m.end(group)
    if not out:
        return body
    out.append(body[at:])
    return b"".join(out)


def css_urls_in_html(body: bytes, base: str) -> list[str]:
    """The URLs the CSS of an HTML page at ``base`` loads (its ``style`` attributes and
    elements: ``url()``, ``@import``), resolved, in order — requisites the page's walk does not
    list. (Its ``<base>`` is not read: the page's walk has its base as ``base``.)"""
    found: list[str] = []

    def collect(href: str, base: str) -> None:
        if (url := canonical(href, base)[0]) is not None:
            found.append(url)

    for m in _STYLE_ATTR.finditer(body):
        value = next(v for v in m.groups() if v is not None)
        if b"(" in value or b"@" in value:
            _rewrite_css(html.unescape(value.decode("utf-8", "replace")).encode(), base, collect)
    for m in _STYLE_ELEMENT.finditer(body):
        _rewrite_css(m[1], base, collect)
    return found
