"""Which encoding a page is in, decided as a browser decides it.

The core keeps one idea of it: a link's query is percent-encoded in its page's encoding, as
browsers send it (:func:`query_encoded`, which :mod:`minicrawl.core.urls` asks).
:mod:`minicrawl.core.links` asks :func:`sniff`; :mod:`minicrawl.html.walk` decodes with
:func:`decode` and reads a ``<meta>``'s charset with :func:`declared`.

The order is the HTML standard's (13.2.3 "Determining the character encoding"):

1. a byte order mark (UTF-8, UTF-16LE, UTF-16BE) — it beats everything;
2. the ``charset`` of the Content-Type header;
3. the *prescan* of the first 1024 bytes for a ``<meta charset>`` or ``<meta http-equiv=
   Content-Type content="…; charset=…">`` (comments and other tags skipped as the algorithm
   says), and, as Chromium also does, an XML declaration's ``encoding`` at the very start;
4. the standard's optional *autodetect* step, as Chromium runs one on a page that declares
   nothing (:func:`guess`: beautifulsoup4's detector, for bytes that are not all ASCII). Its
   answer is taken only when it is no Latin-script single-byte encoding — a detector does not
   tell windows-1252 from windows-1250 on a page's text, where Chromium, told the user's
   language, keeps windows-1252 — and not UTF-8: Chromium never takes valid UTF-8 for UTF-8
   (tests/data/linkcases: encoding-none-utf8-bytes, encoding-undeclared-utf-8), so a crawler
   that did would request URLs no browser requests;
5. else the fallback: windows-1252, the standard's default for most locales and what Chromium
   with ``--lang=en-US`` uses.

Labels are the Encoding Standard's, not Python's: ``iso-8859-1``, ``latin1`` and ``us-ascii``
mean windows-1252, ``gb2312`` means GBK, ``x-sjis`` is Shift_JIS, ``iso-2022-kr`` is the
*replacement* encoding (the whole page decodes to one U+FFFD), and a ``<meta>`` naming UTF-16 in
bytes it could read means UTF-8. Each encoding's name is the standard's (``shift_jis``,
``windows-1252``): what a URL's query is then encoded in. Its decoders and encoders are the
standard's too (:mod:`minicrawl.html.whatwg`: Python's codecs where they agree with its indexes,
mended where they do not; tests/test_encoding_standard.py checks them against those indexes).
"""

from __future__ import annotations

import codecs
import re

from minicrawl.html import whatwg

# The Encoding Standard's encodings (https://encoding.spec.whatwg.org/#names-and-labels, as of
# May 2026): name (lower-cased), the Python codec that decodes it, its labels (the name is one).
_ENCODINGS = """
utf-8           utf-8        unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf8 x-unicode20utf8
ibm866          cp866        866 cp866 csibm866
iso-8859-2      iso8859_2    csisolatin2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 iso_8859-2:1987 l2
                             latin2
iso-8859-3      iso8859_3    csisolatin3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 iso_8859-3:1988 l3
                             latin3
iso-8859-4      iso8859_4    csisolatin4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 iso_8859-4:1988 l4
                             latin4
iso-8859-5      iso8859_5    csisolatincyrillic cyrillic iso-ir-144 iso8859-5 iso88595 iso_8859-5
                             iso_8859-5:1988
iso-8859-6      iso8859_6    arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114
                             iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6
                             iso_8859-6:1987
iso-8859-7      iso8859_7    csisolatingreek ecma-118 elot_928 greek greek8 iso-ir-126 iso8859-7
                             iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek
iso-8859-8      iso8859_8    csiso88598e csisolatinhebrew hebrew iso-8859-8-e iso-ir-138 iso8859-8
                             iso88598 iso_8859-8 iso_8859-8:1988 visual
iso-8859-8-i    iso8859_8    csiso88598i logical
iso-8859-10     iso8859_10   csisolatin6 iso-ir-157 iso8859-10 iso885910 l6 latin6
iso-8859-13     iso8859_13   iso8859-13 iso885913
iso-8859-14     iso8859_14   iso8859-14 iso885914
iso-8859-15     iso8859_15   csisolatin9 iso8859-15 iso885915 iso_8859-15 l9
iso-8859-16     iso8859_16
koi8-r          koi8_r       cskoi8r koi koi8 koi8_r
koi8-u          koi8_u       koi8-ru
macintosh       mac_roman    csmacintosh mac x-mac-roman
windows-874     cp874        dos-874 iso-8859-11 iso8859-11 iso885911 tis-620
windows-1250    cp1250       cp1250 x-cp1250
windows-1251    cp1251       cp1251 x-cp1251
windows-1252    cp1252       ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1
                             iso-ir-100 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1
                             us-ascii x-cp1252
windows-1253    cp1253       cp1253 x-cp1253
windows-1254    cp1254       cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9
                             iso_8859-9:1989 l5 latin5 x-cp1254
windows-1255    cp1255       cp1255 x-cp1255
windows-1256    cp1256       cp1256 x-cp1256
windows-1257    cp1257       cp1257 x-cp1257
windows-1258    cp1258       cp1258 x-cp1258
x-mac-cyrillic  mac_cyrillic x-mac-ukrainian
gbk             gb18030      chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 iso-ir-58
                             x-gbk
gb18030         gb18030
big5            big5hkscs    big5-hkscs cn-big5 csbig5 x-x-big5
euc-jp          euc_jp       cseucpkdfmtjapanese x-euc-jp
iso-2022-jp     iso2022_jp   csiso2022jp
shift_jis       cp932        csshiftjis ms932 ms_kanji shift-jis sjis windows-31j x-sjis
euc-kr          cp949        cseuckr csksc56011987 iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989
                             ksc5601 ksc_5601 windows-949
replacement     -            csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr
utf-16be        utf-16-be    unicodefffe
utf-16le        utf-16-le    csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16
x-user-defined  -
"""
# (GBK is decoded as gb18030, its superset, as the standard's GBK decoder does; Big5 with the
# HKSCS extension, Shift_JIS as Microsoft's cp932 and EUC-KR as cp949, which the standard's are.
# Each codec is only the fast path: minicrawl/html/whatwg.py mends where it is not the standard's
# index — a lone 80 in gb18030 is €, EUC-JP's AD A1 is ①, windows-1252's 81 is U+0081.)
CODECS: dict[str, str] = {}
LABELS: dict[str, str] = {}  # label → encoding name
_name = ""
for _line in _ENCODINGS.strip("\n").splitlines():
    if _line.startswith(" "):  # more labels of the encoding above
        LABELS.update(dict.fromkeys(_line.split(), _name))
        continue
    _name, _codec, *_labels = _line.split()
    CODECS[_name] = _codec
    LABELS.update(dict.fromkeys([_name, *_labels], _name))

FALLBACK = "windows-1252"
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16be"),
         (codecs.BOM_UTF16_LE, "utf-16le"))
_ASCII_BLANKS = "\t\n\x0c\r "


def lookup(label: str | None) -> str | None:
    """The encoding a label names (the Encoding Standard's "get an encoding": ASCII blanks
    trimmed, ASCII case ignored), or None."""
    if not label or not label.isascii():  # (str.lower would make the Kelvin sign a "k")
        return None
    return LABELS.get(label.strip(_ASCII_BLANKS).lower())


def bom(body: bytes) -> str | None:
    """The encoding the page's byte order mark names, or None."""
    return next((name for mark, name in _BOMS if body.startswith(mark)), None)


def sniff(body: bytes, content_type: str | None = None) -> tuple[str, bool]:
    """(the page's encoding, whether that is certain): a byte order mark or the Content-Type's
    charset are; a ``<meta>`` the prescan found, or the fallback, are tentative — a ``<meta>``
    further on may change them (:func:`declared`)."""
    if name := bom(body):
        return name, True
    if content_type and (name := lookup(charset_param(content_type))):
        return name, True
    return prescan(body[:1024]) or guess(body) or FALLBACK, False


def charset_param(content_type: str) -> str | None:
    """The ``charset`` parameter of a Content-Type header value, unquoted, or None."""
    for parameter in content_type.split(";")[1:]:
        key, _, value = parameter.partition("=")
        if key.strip(_ASCII_BLANKS).lower() == "charset":
            return value.strip(_ASCII_BLANKS).strip("\"'")
    return None


def decode(body: bytes, name: str) -> str:
    """``body`` as text in the encoding ``name`` (its byte order mark dropped), as a browser
    decodes it: each invalid byte sequence becomes U+FFFD, never an error. Every legacy
    encoding is the Encoding Standard's decoder (:mod:`minicrawl.html.whatwg`: Python's codec,
    mended where it differs from the standard's index)."""
    if (mark := bom(body)) is not None and mark == name:
        body = body[len(next(m for m, n in _BOMS if n == mark)):]
    if name == "replacement":
        return "\ufffd" if body else ""
    if name == "x-user-defined":  # bytes 80–FF are U+F780–U+F7FF
        return body.decode("latin-1").translate(_USER_DEFINED)
    if name in ("utf-8", "utf-16be", "utf-16le"):  # Python's are the standard's
        return body.decode(CODECS[name], errors="replace")
    return whatwg.decode(body, name, CODECS[name])


_USER_DEFINED = {byte: 0xF780 + byte - 0x80 for byte in range(0x80, 0x100)}


def declared(charset: str | None, http_equiv: str | None, content: str | None) -> str | None:
    """The encoding a ``<meta>`` element with these attributes declares, or None (as the tree
    builder reads one: a page whose prescan missed it is decoded again with it)."""
    if charset is not None:
        return _for_html(lookup(charset))
    if http_equiv is not None and http_equiv.strip(_ASCII_BLANKS).lower() == "content-type" \
            and content is not None:
        return _for_html(lookup(charset_in_content(content)))
    return None


def _for_html(name: str | None) -> str | None:
    """A ``<meta>`` can only be read in an ASCII-compatible encoding: UTF-16 means UTF-8, and
    x-user-defined means windows-1252 (the standard's rule)."""
    if name in ("utf-16be", "utf-16le"):
        return "utf-8"
    return FALLBACK if name == "x-user-defined" else name


_CHARSET_WORD = re.compile("charset", re.IGNORECASE)


def charset_in_content(content: str) -> str | None:
    """The label in a ``<meta content>`` like ``text/html; charset=utf-8`` (the standard's
    "extracting a character encoding from a meta element"), or None."""
    at = 0
    while match := _CHARSET_WORD.search(content, at):
        at = match.end()
        while content[at:at + 1] in ("\t", "\n", "\x0c", "\r", " ") and at < len(content):
            at += 1
        if content[at:at + 1] != "=":
            continue  # "charset" not followed by "=": look for the next one
        rest = content[at + 1:].lstrip(_ASCII_BLANKS)
        if rest[:1] in ("'", '"'):
            end = rest.find(rest[0], 1)
            return rest[1:end] if end > 0 else None
        value = re.match(r"[^\t\n\x0c\r ;]*", rest)[0]  # type: ignore[index]
        return value or None
    return None


# -- the prescan (HTML standard 13.2.3.2, "prescan a byte stream to determine its encoding") --

_BLANK = b"\t\n\x0c\r "
_XML_ENCODING = re.compile(rb"""<\?xml[^>]*?encoding\s*=\s*["']([^"'>]*)["']""")


def prescan(head: bytes) -> str | None:
    """The encoding a ``<meta>`` in ``head`` (the first 1024 bytes) declares, or an XML
    declaration at its very start (Chromium reads one in HTML too), or None."""
    if head.startswith(b"<?xml") and (match := _XML_ENCODING.match(head)):
        return _for_html(lookup(match[1].decode("ascii", "replace")))
    lower = head.lower()
    if b"<meta" not in lower:
        return None  # (most pages: no need to walk the bytes)
    at, end = 0, len(head)
    while (at := lower.find(b"<", at)) >= 0:
        if lower.startswith(b"<!--", at):
            at = lower.find(b"-->", at + 2)
            if at < 0:
                return None
            at += 3
            continue
        if lower.startswith(b"<meta", at) and lower[at + 5:at + 6] in (b"\t", b"\n", b"\x0c",
                                                                      b"\r", b" ", b"/"):
            at, name = _meta(lower, at + 5)
            if name:
                return name
            continue
        if lower[at:at + 1] == b"<" and (lower[at + 1:at + 2].isalpha() or (
                lower[at + 1:at + 2] == b"/" and lower[at + 2:at + 3].isalpha())):
            at += 2
            while at < end and lower[at] not in b"\t\n\x0c\r >":
                at += 1
            while (attribute := _attribute(lower, at)) is not None:
                at = attribute[0]
            continue
        if lower.startswith((b"<!", b"</", b"<?"), at):
            at = lower.find(b">", at)
            if at < 0:
                return None
        at += 1
    return None


def _meta(lower: bytes, at: int) -> tuple[int, str | None]:
    """Read one ``<meta>``'s attributes from ``at``: (where it ends, the encoding it declares)."""
    seen: set[bytes] = set()
    got_pragma, need_pragma, charset = False, None, None
    while (attribute := _attribute(lower, at)) is not None:
        at, name, value = attribute
        if name in seen:
            continue
        seen.add(name)
        if name == b"http-equiv" and value == b"content-type":
            got_pragma = True
        elif name == b"content" and charset is None:
            if (found := charset_in_content(value.decode("latin-1"))) is not None:
                charset, need_pragma = found, True
        elif name == b"charset":
            charset, need_pragma = value.decode("latin-1"), False
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return at, None
    return at, _for_html(lookup(charset))


def _attribute(s: bytes, at: int) -> tuple[int, bytes, bytes] | None:
    """The standard's "get an attribute" on lower-cased bytes: (where it ends, name, value), or
    None at a ``>`` or the end of the bytes."""
    end = len(s)
    while at < end and s[at] in b"\t\n\x0c\r /":
        at += 1
    if at >= end or s[at] == 0x3E:  # ">"
        return None
    start = at
    while at < end and (s[at] not in b"\t\n\x0c\r />=" or (s[at] == 0x3D and at == start)):
        at += 1  # a name; an "=" first is part of it
    name = s[start:at]
    while at < end and s[at] in _BLANK:
        at += 1
    if at >= end or s[at] != 0x3D:  # no "=": no value
        return at, name, b""
    at += 1
    while at < end and s[at] in _BLANK:
        at += 1
    if at < end and s[at] in b"\"'":
        close = s.find(s[at:at + 1], at + 1)
        if close < 0:
            return end, name, s[at + 1:]
        return close + 1, name, s[at + 1:close]
    start = at
    while at < end and s[at] not in b"\t\n\x0c\r >":
        at += 1
    return at, name, s[start:at]


# -- the autodetect step (HTML standard 13.2.3.2: "may attempt to autodetect", tentative) ---

# A detector names Python codecs: the table's (gb18030 decodes GBK, the first of its encodings:
# a detector says GB18030 of a GBK page), or these, which decode the same pages.
_PYTHON_VARIANTS = {"shift_jis": "cp932", "shift_jis_2004": "cp932", "shift_jisx0213": "cp932",
                    "euc_jis_2004": "euc_jp", "euc_jisx0213": "euc_jp", "euc_kr": "cp949",
                    "gb2312": "gb18030", "gbk": "gb18030", "big5": "big5hkscs",
                    "cp950": "big5hkscs", "iso8859_11": "cp874"}
_BY_CODEC: dict[str, str] = {}  # Python's name of a codec → the table's encoding it decodes
for _name, _codec in CODECS.items():
    if _codec != "-":
        _BY_CODEC.setdefault(codecs.lookup(_codec).name, _name)
for _variant, _codec in _PYTHON_VARIANTS.items():
    _BY_CODEC[codecs.lookup(_variant).name] = _BY_CODEC[codecs.lookup(_codec).name]
# Latin-script single-byte encodings, whose guesses keep the fallback: charset_normalizer
# takes German and Portuguese windows-1252 for windows-1250 (tests/data/linkcases:
# encoding-undeclared-windows-1252-*), where Chromium keeps windows-1252.
_LATIN = frozenset({"windows-1250", "windows-1252", "windows-1254", "windows-1257",
                    "windows-1258", "macintosh", "iso-8859-2", "iso-8859-3", "iso-8859-4",
                    "iso-8859-10", "iso-8859-13", "iso-8859-14", "iso-8859-15", "iso-8859-16"})

_NOT_ALONE = bytes(range(0x40, 0x100))
_COMMENT = re.compile(rb"<!--.*?(?:-->|\Z)", re.DOTALL)


def guess(body: bytes) -> str | None:
    """The encoding beautifulsoup4's detector reads in the bytes of a page that declares none
    (it asks cchardet, chardet or charset_normalizer, whichever is installed), or None: for
    ASCII bytes, or an answer that is no encoding of the table, UTF-8 or Latin-script (see
    the module's docstring)."""
    # The first 64 KiB (the detector's time grows with the bytes: 1-4 ms for these), up to
    # their last byte below 0x40 ("<", ">", a digit, a blank...: a character of its own, never
    # the second byte of a Shift_JIS, GBK, Big5 or EUC one): no character cut in two, for which
    # the detector would rule out the page's multi-byte encoding.
    sample = body[:65536]
    sample = sample.rstrip(_NOT_ALONE) or sample
    if sample.isascii():
        return None  # no text to tell (ISO-2022-JP's bytes too: Chromium keeps the fallback)
    from bs4.dammit import EncodingDetector  # here: a page that declares one never loads it

    # Comments out: a <meta> in one declares nothing (the prescan skips it), but the detector
    # would follow it.
    detector = EncodingDetector(_COMMENT.sub(b"", sample), is_html=True)
    for _ in detector.encodings:  # its BOM and <meta> steps (ours were the standard's), then
        pass                      # the detector's guess: chardet_encoding
    try:
        name = _for_html(_BY_CODEC.get(codecs.lookup(detector.chardet_encoding or "").name))
    except LookupError:  # no guess, or a name Python does not know
        return None
    return None if name in _LATIN or name in ("utf-8", "replacement", None) else name


# -- a link's query in its page's encoding (minicrawl/core/urls.py asks) ------------------

_NON_ASCII = re.compile(r"[^\x00-\x7f]")
_SHIFTS = re.compile("[\x0e\x0f\x1b]")
_OUTPUT_IS_UTF8 = frozenset({"utf-8", "utf-16be", "utf-16le", "replacement"})


def query_encoded(href: str, encoding: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in the page's
    ``encoding``, as a browser sends them (the URL Standard's "encoding" of a special URL's
    query, with the Encoding Standard's encoder: a character it lacks is "&#N;", escaped; bytes
    its query set holds escaped, the others as they are: ``{`` stays, and
    :func:`minicrawl.core.urls.canonical` escapes it after the parser); the URL parser does the
    rest. A URL is never UTF-16: such a page's queries go as UTF-8 (the standard's "get an
    output encoding"), as a page in an unknown encoding's do."""
    name = lookup(encoding)
    if name is None or name in _OUTPUT_IS_UTF8:
        return href
    start, end = href.find("?"), href.find("#")
    if start < 0 or 0 <= end < start:
        return href  # no query
    end = len(href) if end < 0 else end
    query = href[start:end]
    if not _NON_ASCII.search(query) and not (name == "iso-2022-jp" and _SHIFTS.search(query)):
        return href  # ASCII: the URL parser's (as in UTF-8; ISO-2022-JP refuses SO, SI, ESC)
    return href[:start] + whatwg.percent_encoded(query, name, CODECS[name]) + href[end:]
