"""The WHATWG Encoding Standard's decoders and encoders, made of Python's codecs and the few
places where those differ from the standard's indexes (issue 48).

Python's C codecs decode nearly every byte sequence as the standard does, and fast; where they
do not, this module mends their answer, and only there (tests/test_encoding_standard.py holds
every pointer of every index, every two-byte sequence and every code point's query bytes to the
standard's algorithms, over its vendored index files):

* a single-byte encoding is Python's codec's table with the bytes it lacks or reads otherwise
  (windows-1252's 81 is U+0081, koi8-u's AE is ў), decoded and encoded by ``codecs.charmap_*``;
* a multi-byte encoding (gb18030 and GBK, Big5, EUC-JP, Shift_JIS, EUC-KR) is decoded by its
  codec with an error handler that reads what the codec refused as the standard's decoder
  does: its lead/trail rules (how many bytes one U+FFFD takes, which byte starts again) and the
  index's code points the codec lacks (EUC-JP's NEC row 13, ``①``; Big5's HKSCS-2008; gb18030's
  € as byte 80). A character the codec decodes from other bytes than the standard
  (GB18030-2005's PUA where the 2022 index has ︐, EUC-JP's 〜 where Windows has ～) is then
  replaced: found with one ``in`` per such character, replaced only on a page that has it;
* ISO-2022-JP is read escape by escape as the standard's state machine says; its JIS X 0208
  runs go through the EUC-JP decoder (each byte + 0x80: the same index);
* the encoders (a link's query, :func:`percent_encoded`) are the standard's algorithms over the
  index as the fixed decoders read it (built the first time a page in that encoding has a query
  with a character beyond ASCII).

What differs is in ``whatwg.json`` beside this file (13 kB, written by
tests/make_whatwg_tables.py from the standard's index files), read the first time a page in one
of those encodings is decoded.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata
from collections.abc import Callable
from functools import cache
from pathlib import Path

FFFD = "\ufffd"
_UNDEFINED = "\ufffe"  # a charmap table's "no character for this byte"


# One encoding's entry of whatwg.json: "codec" and "single_byte" / "decode" / "fix" / "careful".
_Entry = dict[str, dict[str, str] | dict[str, list[str]] | str]


@cache
def _tables() -> dict[str, _Entry]:
    tables: dict[str, _Entry] = json.loads(
        Path(__file__).with_name("whatwg.json").read_text("utf-8"))
    return tables


def _entry(name: str) -> _Entry:
    return _tables().get("gb18030" if name == "gbk" else name, {})


def _strings(name: str, key: str) -> dict[str, str]:
    found = _entry(name).get(key, {})
    return {k: v for k, v in found.items() if isinstance(v, str)} \
        if isinstance(found, dict) else {}


# -- single-byte encodings --------------------------------------------------------------------

@cache
def _single_byte_table(name: str, codec: str) -> str:
    """The 256 characters of a single-byte encoding's bytes, as the standard's index has them
    (U+FFFE where it has none): Python's codec's, mended where ``whatwg.json`` says."""
    own = _strings(name, "single_byte")
    chars = []
    for byte in range(256):
        if f"{byte:02x}" in own:
            chars.append(own[f"{byte:02x}"] or _UNDEFINED)
            continue
        try:
            chars.append(bytes([byte]).decode(codec))
        except UnicodeDecodeError:
            chars.append(_UNDEFINED)
    return "".join(chars)


@cache
def _single_byte_map(name: str, codec: str) -> object:
    return codecs.charmap_build(_single_byte_table(name, codec))


# -- multi-byte decoders: the standard's rules where the codec refused ------------------------

@cache
def _pointers(name: str) -> dict[bytes, str]:
    """A pointer's bytes → the index's text ("" for none), where the codec reads otherwise."""
    return {bytes.fromhex(data): text for data, text in _strings(name, "decode").items()}


def _looker(name: str, codec: str) -> Callable[[bytes], str]:
    """The index's text for the bytes of one pointer, or "" where it has none."""
    own = _pointers(name)

    def look(data: bytes) -> str:
        if data in own:
            return own[data]
        try:
            return data.decode(codec)
        except UnicodeDecodeError:
            return ""
    return look


Unit = Callable[[bytes, int, Callable[[bytes], str]], tuple[str, int]]


def _gb18030_unit(data: bytes, at: int, look: Callable[[bytes], str]) -> tuple[str, int]:
    """The standard's gb18030 decoder from ``at``: (its text, where the next unit starts)."""
    end = len(data)
    lead = data[at]
    if lead < 0x80:
        return chr(lead), at + 1
    if lead == 0x80:
        return "\u20ac", at + 1
    if lead == 0xFF:
        return FFFD, at + 1
    if at + 1 >= end:
        return FFFD, end
    second = data[at + 1]
    if 0x30 <= second <= 0x39:  # four bytes
        if at + 2 >= end:
            return FFFD, end
        if not 0x81 <= data[at + 2] <= 0xFE:
            return FFFD, at + 1  # the second and third bytes are read again
        if at + 3 >= end:
            return FFFD, end
        if not 0x30 <= data[at + 3] <= 0x39:
            return FFFD, at + 1
        return look(data[at:at + 4]) or FFFD, at + 4
    if 0x40 <= second <= 0x7E or 0x80 <= second <= 0xFE:
        if text := look(data[at:at + 2]):
            return text, at + 2
    return FFFD, at + 1 if second < 0x80 else at + 2  # an ASCII byte is read again


def _two_byte_unit(leads: Callable[[int], bool], trails: Callable[[int], bool]) -> Unit:
    """Big5's and EUC-KR's decoder: a lead, then a trail the index may have a pointer for."""
    def unit(data: bytes, at: int, look: Callable[[bytes], str]) -> tuple[str, int]:
        lead = data[at]
        if lead < 0x80:
            return chr(lead), at + 1
        if not leads(lead):
            return FFFD, at + 1
        if at + 1 >= len(data):
            return FFFD, len(data)
        trail = data[at + 1]
        if trails(trail) and (text := look(data[at:at + 2])):
            return text, at + 2
        return FFFD, at + 1 if trail < 0x80 else at + 2
    return unit


def _shift_jis_unit(data: bytes, at: int, look: Callable[[bytes], str]) -> tuple[str, int]:
    lead = data[at]
    if lead <= 0x80:
        return chr(lead), at + 1
    if 0xA1 <= lead <= 0xDF:
        return chr(0xFF61 - 0xA1 + lead), at + 1
    if not (0x81 <= lead <= 0x9F or 0xE0 <= lead <= 0xFC):
        return FFFD, at + 1
    if at + 1 >= len(data):
        return FFFD, len(data)
    trail = data[at + 1]
    if (0x40 <= trail <= 0x7E or 0x80 <= trail <= 0xFC) and (text := look(data[at:at + 2])):
        return text, at + 2  # (the EUDC pointers: the codec's PUA, as the standard's)
    return FFFD, at + 1 if trail < 0x80 else at + 2


def _euc_jp_unit(data: bytes, at: int, look: Callable[[bytes], str]) -> tuple[str, int]:
    end = len(data)
    lead = data[at]
    if lead < 0x80:
        return chr(lead), at + 1
    if not (lead in (0x8E, 0x8F) or 0xA1 <= lead <= 0xFE):
        return FFFD, at + 1
    if at + 1 >= end:
        return FFFD, end
    byte = data[at + 1]
    if lead == 0x8E and 0xA1 <= byte <= 0xDF:
        return chr(0xFF61 - 0xA1 + byte), at + 2
    if lead == 0x8F and 0xA1 <= byte <= 0xFE:  # JIS X 0212: one more byte
        if at + 2 >= end:
            return FFFD, end
        third = data[at + 2]
        if 0xA1 <= third <= 0xFE and (text := look(data[at:at + 3])):
            return text, at + 3
        return FFFD, at + 2 if third < 0x80 else at + 3
    if 0xA1 <= lead <= 0xFE and 0xA1 <= byte <= 0xFE and (text := look(data[at:at + 2])):
        return text, at + 2
    return FFFD, at + 1 if byte < 0x80 else at + 2


_UNITS: dict[str, Unit] = {
    "gbk": _gb18030_unit, "gb18030": _gb18030_unit, "shift_jis": _shift_jis_unit,
    "euc-jp": _euc_jp_unit,
    "big5": _two_byte_unit(lambda b: 0x81 <= b <= 0xFE,
                           lambda b: 0x40 <= b <= 0x7E or 0xA1 <= b <= 0xFE),
    "euc-kr": _two_byte_unit(lambda b: 0x81 <= b <= 0xFE, lambda b: 0x41 <= b <= 0xFE),
}


@cache
def _handler_name(name: str, codec: str) -> str:
    """Register (once) the error handler that reads what ``codec`` refused as ``name``'s
    decoder in the standard does; its name."""
    unit, look = _UNITS[name], _looker(name, codec)

    def handler(error: UnicodeError) -> tuple[str, int]:
        assert isinstance(error, UnicodeDecodeError)
        return unit(bytes(error.object), error.start, look)
    codecs.register_error(f"minicrawl-whatwg-{name}", handler)
    return f"minicrawl-whatwg-{name}"


@cache
def _fixes(name: str) -> tuple[dict[str, str], str, tuple[bytes, ...]]:
    """(a character the codec decodes wrongly → the standard's text, the characters the codec
    also decodes rightly elsewhere, the bytes it decodes them wrongly from)."""
    careful = _entry(name).get("careful", {})
    lists = {c: datas for c, datas in careful.items() if isinstance(datas, list)} \
        if isinstance(careful, dict) else {}
    return (_strings(name, "fix"), "".join(lists),
            tuple(bytes.fromhex(data) for datas in lists.values() for data in datas))


def _fast(body: bytes, name: str, codec: str) -> str:
    """The codec's decoding, its refusals read as the standard does, its wrong characters
    replaced (each looked for with one ``in``: most pages have none)."""
    text = body.decode(codec, _handler_name(name, codec))
    fix = _fixes(name)[0]
    wrong = [c for c in fix if c in text]
    if wrong:
        text = text.translate({ord(c): fix[c] for c in wrong})
    return text


# Bytes that are no trail byte: a unit never spans one, and a lead left before one is an error
# either way, so a page cut before one decodes as its two halves do. (None for gb18030: a
# digit after "81 30" is read again, which a cut would lose; none of its characters needs this.)
_BOUNDARIES = {"big5": re.compile(rb"[\x00-\x3f]"), "euc-jp": re.compile(rb"[\x00-\x7f]"),
               "shift_jis": re.compile(rb"[\x00-\x3f]"), "euc-kr": re.compile(rb"[\x00-\x40]")}
_PIECE = 512


def _careful(body: bytes, name: str, codec: str) -> str:
    """A page that holds bytes the codec decodes to a character it also decodes rightly from
    others: halves decoded apart (cut before a byte that ends any unit, so the halves decode
    as the whole does), down to pieces that hold such a character, decoded unit by unit."""
    text = _fast(body, name, codec)
    if not any(c in text for c in _fixes(name)[1]):
        return text
    boundary = _BOUNDARIES.get(name)
    cut = boundary.search(body, len(body) // 2) if boundary and len(body) > _PIECE else None
    if cut is None or cut.start() == 0:
        return _exact(body, name, codec)
    return _careful(body[:cut.start()], name, codec) + \
        _careful(body[cut.start():], name, codec)


def _exact(body: bytes, name: str, codec: str) -> str:
    """The standard's decoder, unit by unit (slow: for small pieces only)."""
    unit, look = _UNITS[name], _looker(name, codec)
    out = []
    at = 0
    while at < len(body):
        text, at = unit(body, at, look)
        out.append(text)
    return "".join(out)


def decode(body: bytes, name: str, codec: str) -> str:
    """``body`` as the standard's decoder for the encoding ``name`` (not UTF-8, UTF-16,
    replacement or x-user-defined) reads it, each error one U+FFFD; ``codec``: the Python codec
    the fast path uses."""
    if name == "iso-2022-jp":
        return _iso_2022_jp(body)
    if name not in _UNITS:
        return codecs.charmap_decode(body, "replace", _single_byte_table(name, codec))[0]
    text = _fast(body, name, codec)
    _, chars, datas = _fixes(name)
    if any(c in text for c in chars) and any(data in body for data in datas):
        return _careful(body, name, codec)  # (Big5's A2 41, EUC-JP's 8F A2 B7: rare)
    return text


# -- ISO-2022-JP: the standard's state machine, a run between escapes at a time ------------------

# A page as ISO-2022-JP is written: ASCII (no SO, SI), and JIS X 0208 runs of pairs of bytes
# 21–7E, with something between two escapes. There Python's codec reads as the standard does
# (checked on random pages of such pieces) but for the JIS X 0208 pairs it lacks (NEC row 13...)
# and EUC-JP's wrong characters: it is the fast path. A page with any of these is read run by
# run: another escape (JIS X 0201 Roman or katakana, or none the standard knows), two escapes in
# a row, SO, SI or a byte 80–FF, a byte in a JIS X 0208 run that is no pair's.
# (ESC first: the search skips to each one; "*+": a run is not scanned again backwards.)
_NOT_PLAIN = re.compile(rb"\x1b(?:(?!\(B|\$[@B])|(?:\(B|\$[@B])\x1b"
                        rb"|\$[@B][\x21-\x7e]*+[^\x21-\x7e\x1b])")
_JIS_TO_EUC = bytes(b + 0x80 if 0x21 <= b <= 0x7E else 0x80 for b in range(256))  # 80: an error
_ASCII = {0x0E: FFFD, 0x0F: FFFD, **{b: FFFD for b in range(0x80, 0x100)}}
_ROMAN = {**_ASCII, 0x5C: "\u00a5", 0x7E: "\u203e"}
_KATAKANA = {b: (chr(0xFF61 - 0x21 + b) if 0x21 <= b <= 0x5F else FFFD) for b in range(256)}
_ESCAPES = {b"(B": "ascii", b"(J": "roman", b"(I": "katakana", b"$@": "jis0208",
            b"$B": "jis0208"}


class _NotPlain(Exception):
    """Python's ISO-2022-JP codec refused what the fast path cannot mend."""


@cache
def _iso_2022_jp_handler() -> str:
    """Register the fast path's error handler: a JIS X 0208 pair the codec lacks is read from
    the index (as EUC-JP's pair, each byte + 0x80); anything else sends the page the slow way."""
    look = _looker("euc-jp", "euc_jp")

    def handler(error: UnicodeError) -> tuple[str, int]:
        assert isinstance(error, UnicodeDecodeError)
        pair = error.object[error.start:error.start + 2]
        if len(pair) == 2 and all(0x21 <= b <= 0x7E for b in pair):
            return look(pair.translate(_JIS_TO_EUC)) or FFFD, error.start + 2
        raise _NotPlain
    codecs.register_error("minicrawl-whatwg-iso-2022-jp", handler)
    return "minicrawl-whatwg-iso-2022-jp"


def _iso_2022_jp(body: bytes) -> str:
    fix = _fixes("euc-jp")[0]  # JIS X 0208's wrong characters are EUC-JP's
    text = None
    if body.isascii() and b"\x0e" not in body and b"\x0f" not in body \
            and not _NOT_PLAIN.search(body):
        try:
            text = body.decode("iso2022_jp", _iso_2022_jp_handler())
        except _NotPlain:
            pass
    if text is None:
        text = _iso_2022_jp_runs(body)
    wrong = [c for c in fix if c in text]
    return text.translate({ord(c): fix[c] for c in wrong}) if wrong else text


def _iso_2022_jp_runs(body: bytes) -> str:
    """The standard's ISO-2022-JP decoder: each run between escapes read in the state the last
    valid escape set; an escape that is not one of its five is one U+FFFD (its bytes after ESC
    read again), and so is a valid escape right after another (nothing output between)."""
    out: list[str] = []
    state, at, output = "ascii", 0, False
    handler = _handler_name("euc-jp", "euc_jp")
    while True:
        escape = body.find(b"\x1b", at)
        run = body[at:] if escape < 0 else body[at:escape]
        if run:
            if state == "jis0208":  # as EUC-JP (a lead alone at the end: one U+FFFD, as here)
                out.append(run.translate(_JIS_TO_EUC).decode("euc_jp", handler))
            else:
                out.append(run.decode("latin-1").translate(
                    _KATAKANA if state == "katakana" else _ROMAN if state == "roman" else _ASCII))
            output = False
        if escape < 0:
            return "".join(out)
        new = _ESCAPES.get(body[escape + 1:escape + 3])
        if new is None:
            out.append(FFFD)
            output, at = False, escape + 1
            continue
        if output:
            out.append(FFFD)
        state, output, at = new, True, escape + 3


# -- encoders: a link's query (the URL Standard's "percent-encode after encoding") -------------

# gb18030's encoder's own table (the standard keeps GB18030-2005's bytes for these PUA points).
_GB18030_PUA = {"\ue78d": b"\xa6\xd9", "\ue78e": b"\xa6\xda", "\ue78f": b"\xa6\xdb",
                "\ue790": b"\xa6\xdc", "\ue791": b"\xa6\xdd", "\ue792": b"\xa6\xde",
                "\ue793": b"\xa6\xdf", "\ue794": b"\xa6\xec", "\ue795": b"\xa6\xed",
                "\ue796": b"\xa6\xf3", "\ue81e": b"\xfe\x59", "\ue826": b"\xfe\x61",
                "\ue82b": b"\xfe\x66", "\ue82c": b"\xfe\x67", "\ue832": b"\xfe\x6d",
                "\ue843": b"\xfe\x7e", "\ue854": b"\xfe\x90", "\ue864": b"\xfe\xa0"}
_BIG5_LAST = frozenset("\u2550\u255e\u2561\u256a\u5341\u5345")  # the last pointer, not the first


@cache
def _reverse(name: str, codec: str) -> dict[str, bytes]:
    """The standard's "index pointer" for ``name``'s encoder as bytes: each code point's first
    pointer in the index (as the fixed decoder reads it), without the pointers the standard's
    encoder skips (Big5's HKSCS below A1, Shift_JIS's NEC duplicates 8272–8835 and its EUDC)."""
    look = _looker(name, codec)
    out: dict[str, bytes] = {}
    if name in ("gbk", "gb18030"):
        pairs = [bytes([lead, trail]) for lead in range(0x81, 0xFF)
                 for trail in [*range(0x40, 0x7F), *range(0x80, 0xFF)]]
    elif name == "big5":
        pairs = [bytes([lead, trail]) for lead in range(0xA1, 0xFF)
                 for trail in [*range(0x40, 0x7F), *range(0xA1, 0xFF)]]
    elif name in ("euc-jp", "iso-2022-jp"):
        look = _looker("euc-jp", "euc_jp")
        pairs = [bytes([lead, trail]) for lead in range(0xA1, 0xFF) for trail in range(0xA1, 0xFF)]
    else:  # shift_jis: pointers by their bytes, in pointer order
        pairs = []
        for pointer in [*range(8272), *range(10716, 11280)]:
            lead, trail = divmod(pointer, 188)
            pairs.append(bytes([lead + (0x81 if lead < 0x1F else 0xC1),
                                trail + (0x40 if trail < 0x3F else 0x41)]))
    for data in pairs:
        text = look(data)
        if len(text) == 1 and (text not in out or (name == "big5" and text in _BIG5_LAST)):
            out[text] = data
    return out


def _encode_one(c: str, name: str, codec: str) -> bytes | None:
    """``c`` (not ASCII) through the standard's encoder for ``name`` (not ISO-2022-JP), or None
    for its error."""
    if name == "x-user-defined":
        return bytes([ord(c) - 0xF780 + 0x80]) if "\uf780" <= c <= "\uf7ff" else None
    if name not in _UNITS:
        try:
            return codecs.charmap_encode(c, "strict", _single_byte_map(name, codec))[0]
        except UnicodeEncodeError:
            return None
    if name == "euc-kr":  # cp949's encoder is the standard's
        try:
            return c.encode(codec)
        except UnicodeEncodeError:
            return None
    if name in ("gbk", "gb18030"):
        if c == "\ue5e5":
            return None
        if c == "\u20ac" and name == "gbk":
            return b"\x80"
        if c in _GB18030_PUA:
            return _GB18030_PUA[c]
        if (data := _reverse(name, codec).get(c)) is not None:
            return data
        if name == "gbk":
            return None
        if c == "\ue7c7":  # the standard's one exception in its four-byte ranges
            return b"\x81\x35\xf4\x37"
        data = c.encode("gb18030")  # its four bytes: the same ranges as the standard's
        return data if len(data) == 4 else None
    if c in ("\u00a5", "\u203e") and name in ("euc-jp", "shift_jis"):
        return b"\\" if c == "\u00a5" else b"~"
    if "\uff61" <= c <= "\uff9f" and name in ("euc-jp", "shift_jis"):
        byte = ord(c) - 0xFF61 + 0xA1
        return bytes([0x8E, byte]) if name == "euc-jp" else bytes([byte])
    if c == "\u0080" and name == "shift_jis":
        return b"\x80"
    if c == "\u2212" and name in ("euc-jp", "shift_jis"):
        c = "\uff0d"
    return _reverse(name, codec).get(c)


def _katakana(c: str) -> str:
    """The index ISO-2022-JP katakana: halfwidth katakana as NFKC has them, but ﾞ and ﾟ as ゛ ゜."""
    return {"\uff9e": "\u309b", "\uff9f": "\u309c"}.get(c) or unicodedata.normalize("NFKC", c)


def _iso_2022_jp_encoded(text: str) -> list[bytes | int]:
    """The standard's ISO-2022-JP encoder over ``text`` and its end: bytes, and an int (the code
    point) for each error; the encoder goes on after one in the state it was in."""
    out: list[bytes | int] = []
    state = "ascii"
    jis = _reverse("iso-2022-jp", "euc_jp")
    queue = list(reversed(text))
    while queue:
        c = queue.pop()
        if state != "jis0208" and c in "\x0e\x0f\x1b":
            out.append(0xFFFD)  # (not the character itself, against attacks)
        elif state == "ascii" and c < "\x80":
            out.append(c.encode("ascii"))
        elif state == "roman" and ((c < "\x80" and c not in "\\~") or c in "\u00a5\u203e"):
            out.append({"\u00a5": b"\\", "\u203e": b"~"}.get(c) or c.encode("ascii"))
        elif c < "\x80" or c in "\u00a5\u203e":
            queue.append(c)
            state = "ascii" if c < "\x80" else "roman"
            out.append(b"\x1b(B" if c < "\x80" else b"\x1b(J")
        else:
            code = "\uff0d" if c == "\u2212" else _katakana(c) if "\uff61" <= c <= "\uff9f" else c
            data = jis.get(code)
            if data is None:
                if state == "jis0208":
                    queue.append(c)
                    state = "ascii"
                    out.append(b"\x1b(B")
                else:
                    out.append(ord(c))
            elif state != "jis0208":
                queue.append(c)
                state = "jis0208"
                out.append(b"\x1b$B")
            else:
                out.append(bytes(b - 0x80 for b in data))
    if state != "ascii":
        out.append(b"\x1b(B")
    return out


def percent_encoded(query: str, name: str, codec: str) -> str:
    """A special URL's ``query`` as the URL Standard's "percent-encode after encoding" writes it
    in the page's encoding ``name`` (not one whose output encoding is UTF-8): each byte of the
    query percent-encode set escaped, each character the encoder refuses as "&#N;" escaped.
    ASCII characters stay as they are (the URL parser escapes them after: it strips tabs and
    newlines first, which ISO-2022-JP's encoder must not see, so they go here)."""
    def escaped(data: bytes) -> str:
        return "".join(chr(b) if 0x20 < b < 0x7F and b not in b"\"#<>'" else f"%{b:02X}"
                       for b in data)
    if name == "iso-2022-jp":
        items = _iso_2022_jp_encoded(query.replace("\t", "").replace("\n", "").replace("\r", ""))
        return "".join(f"%26%23{item}%3B" if isinstance(item, int) else
                       item.decode("ascii") if len(item) == 1 and item != b"\x1b" else
                       escaped(item) for item in items)
    out = []
    for c in query:
        if c < "\x80":
            out.append(c)
        elif (data := _encode_one(c, name, codec)) is None:
            out.append(f"%26%23{ord(c)}%3B")
        else:
            out.append(escaped(data))
    return "".join(out)
