"""Every encoding of the WHATWG Encoding Standard as the standard says (issue 48), against its own
files (tests/data/encoding/: encodings.json and the index-*.txt files, vendored) through the
standard's algorithms as tests/whatwg_encoding.py writes them: every label names its encoding;
each legacy decoder reads every pointer of its index as the index says (the bytes computed from
the pointer as the decoder's lead/trail formulas do; single-byte: every byte), and every
two-byte sequence (invalid ones too: how many U+FFFD, which byte is read again) as the
standard's decoder; a link's query is encoded as the standard's encoder and the URL Standard's
"encode or fail" say (a character the encoder refuses: "&#N;", escaped)."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import whatwg_encoding as standard

from minicrawl.core.urls import resolve
from minicrawl.html.encoding import LABELS, decode, lookup, query_encoded

ROOT = Path(__file__).resolve().parents[1]
NAMES = list(standard.names_and_labels())
SINGLE_BYTE = standard.single_byte_names()
MULTI_BYTE = ["gbk", "gb18030", "big5", "euc-jp", "shift_jis", "euc-kr"]
UTF_8_QUERIES = ("utf-8", "utf-16be", "utf-16le", "replacement")  # "get an output encoding"


def text_of(code_point: int | tuple[int, ...]) -> str:
    return "".join(map(chr, code_point)) if isinstance(code_point, tuple) else chr(code_point)


# -- labels ------------------------------------------------------------------------------------

def test_the_table_holds_every_label_of_the_standard_once() -> None:
    labels = [label for name in NAMES for label in standard.names_and_labels()[name]]
    assert len(labels) == len(set(labels)) == len(LABELS) == 228
    assert len(NAMES) == 40


@pytest.mark.parametrize("name", NAMES)
def test_every_label_names_its_encoding(name: str) -> None:
    """ASCII case ignored, ASCII blanks (tab, LF, FF, CR, space) around it trimmed."""
    for label in standard.names_and_labels()[name]:
        assert lookup(label) == name, label
        assert lookup(label.upper()) == name, label
        assert lookup(f"\t\n\x0c\r {label.title()} \r\n\x0c\t") == name, label


def test_what_is_no_label() -> None:
    assert lookup("utf-8\x0b") is None  # a vertical tab is no ASCII blank
    assert lookup("\u212aoi8-r") is None  # KELVIN SIGN: not ASCII, though lower() makes it "k"
    assert lookup("utf\u00a08") is None and lookup("utf-32") is None and lookup("") is None
    assert lookup("latin-1") is None and lookup("x-gbk ") == "gbk"


# -- decoders: every pointer of every index ----------------------------------------------------

@pytest.mark.parametrize("name", SINGLE_BYTE)
def test_a_single_byte_decoder_reads_every_byte_as_its_index(name: str) -> None:
    table = standard.index(name)
    for byte in range(256):
        expected = chr(byte) if byte < 0x80 else \
            chr(table[byte - 0x80]) if byte - 0x80 in table else "\ufffd"
        assert decode(bytes([byte]), name) == expected, f"{byte:02X}"
    assert decode(bytes(range(256)) * 3, name) == "".join(
        decode(bytes([b]), name) for b in range(256)) * 3


def pointer_bytes(name: str) -> dict[bytes, int | tuple[int, ...]]:
    """Every pointer of ``name``'s index as the bytes its decoder reads it from (the standard's
    lead/trail formulas run backwards) → the index's code point(s)."""
    out: dict[bytes, int | tuple[int, ...]] = {}
    if name in ("gbk", "gb18030"):
        for pointer, code_point in standard.index("gb18030").items():
            lead, trail = divmod(pointer, 190)
            out[bytes([lead + 0x81, trail + (0x40 if trail < 0x3F else 0x41)])] = code_point
    elif name == "big5":
        for pointer, code_point in standard.index("big5").items():
            lead, trail = divmod(pointer, 157)
            out[bytes([lead + 0x81, trail + (0x40 if trail < 0x3F else 0x62)])] = code_point
        out.update({b"\x88\x62": (0xCA, 0x304), b"\x88\x64": (0xCA, 0x30C),
                    b"\x88\xa3": (0xEA, 0x304), b"\x88\xa5": (0xEA, 0x30C)})
    elif name == "euc-jp":
        for pointer, code_point in standard.index("jis0208").items():
            if pointer < 94 * 94:  # (Shift_JIS's IBM rows: no EUC-JP bytes reach them)
                out[bytes([pointer // 94 + 0xA1, pointer % 94 + 0xA1])] = code_point
        for pointer, code_point in standard.index("jis0212").items():
            out[bytes([0x8F, pointer // 94 + 0xA1, pointer % 94 + 0xA1])] = code_point
        out.update({bytes([0x8E, b]): 0xFF61 - 0xA1 + b for b in range(0xA1, 0xE0)})
    elif name == "shift_jis":
        for pointer in [*standard.index("jis0208"), *range(8836, 10716)]:  # and the EUDC
            lead, trail = divmod(pointer, 188)
            out[bytes([lead + (0x81 if lead < 0x1F else 0xC1),
                       trail + (0x40 if trail < 0x3F else 0x41)])] = \
                standard.index("jis0208").get(pointer, 0xE000 - 8836 + pointer)
        out.update({bytes([b]): 0xFF61 - 0xA1 + b for b in range(0xA1, 0xE0)})
    elif name == "euc-kr":
        for pointer, code_point in standard.index("euc-kr").items():
            out[bytes([pointer // 190 + 0x81, pointer % 190 + 0x41])] = code_point
    return out


def assert_each_decodes(cases: dict[bytes, int | tuple[int, ...]], name: str) -> None:
    """Each sequence alone, and all in one page (the fast path over many at once)."""
    wrong = {data.hex(): (decode(data, name), text_of(code_point))
             for data, code_point in cases.items() if decode(data, name) != text_of(code_point)}
    assert not wrong, list(wrong.items())[:10]
    assert decode(b"".join(cases), name) == "".join(map(text_of, cases.values()))


@pytest.mark.parametrize("name", MULTI_BYTE)
def test_a_multi_byte_decoder_reads_every_pointer_as_its_index(name: str) -> None:
    cases = pointer_bytes(name)
    assert len(cases) > 9000
    assert_each_decodes(cases, name)


@pytest.mark.parametrize("name", ["gbk", "gb18030"])
def test_gb18030s_four_bytes_are_its_ranges(name: str) -> None:
    """Every four-byte pointer the ranges give a code point (39,420 in the BMP, 1,048,576
    beyond): its code point; one in the gap or beyond, one U+FFFD for its four bytes."""
    def four(pointer: int) -> bytes:
        rest, byte4 = divmod(pointer, 10)
        rest, byte3 = divmod(rest, 126)
        byte1, byte2 = divmod(rest, 10)
        return bytes([byte1 + 0x81, byte2 + 0x30, byte3 + 0x81, byte4 + 0x30])
    pointers = [*range(39420), *range(189000, 1237576)]
    data = b"".join(four(p) for p in pointers)
    expected = "".join(chr(standard.ranges_code_point(p)) for p in pointers)  # type: ignore[arg-type]
    assert decode(data, name) == expected
    assert decode(four(7457), name) == "\ue7c7"  # the standard's one exception
    assert decode(four(39420) + four(188999) + four(1237576) + b"A", name) == "\ufffd" * 3 + "A"


@pytest.mark.parametrize("name", [*MULTI_BYTE, "utf-16be", "utf-16le", "x-user-defined"])
def test_every_two_byte_sequence_decodes_as_the_standards_decoder(name: str) -> None:
    """Every first byte 80–FF with every second byte, an ASCII byte after: invalid sequences
    too (how many U+FFFD, which byte is read again)."""
    wrong = []
    for first in range(0x80, 0x100):
        for second in range(0x100):
            data = bytes([first, second, 0x41])
            if decode(data, name) != standard.decode(data, name):
                wrong.append((data.hex(), decode(data, name), standard.decode(data, name)))
    assert not wrong, wrong[:10]


# Bytes pages are made of: ASCII, markup, leads, trails, the bytes the fast path mends.
PIECES = {
    "gbk": [b"A", b"<", b"0", b"\x80", b"\x81", b"\xfe", b"\xff", b"\x81\x30", b"\x81\x30\x81",
            b"\x81\x35\xf4\x37", b"\xa3\xa0", b"\xa6\xd9", b"\xa8\xbc", b"\xe1\xbf", b"\x7f"],
    "big5": [b"A", b"<", b"\x80", b"\x81", b"\xa2", b"\xa2\x41", b"\xa1\xfe", b"\xa2\x40",
             b"\xa4\x40", b"\x87\x40", b"\x88\x62", b"\xfe", b"\xff", b"B"],
    "euc-jp": [b"A", b"~", b"<", b"\x8e", b"\x8f", b"\x8f\xa2\xb7", b"\xa1\xc1", b"\xad\xa1",
               b"\xa4\xa2", b"\xa1", b"\xfe", b"\xff", b"\x80", b"\x8e\xa1"],
    "shift_jis": [b"A", b"<", b"\x80", b"\x81", b"\x81\x40", b"\xa0", b"\xa1", b"\xe0", b"\xf0",
                  b"\xf0\x40", b"\xfa\x40", b"\xfd", b"\x87\x40", b"\x7f"],
    "euc-kr": [b"A", b"<", b"\x80", b"\x81", b"\x81\x41", b"\xb0\xa1", b"\xc9\xa1", b"\xfe",
               b"\xff", b"\xa1"],
}
PIECES["gb18030"] = PIECES["gbk"]


@pytest.mark.parametrize("name", MULTI_BYTE)
def test_pages_of_such_bytes_decode_as_the_standards_decoder(name: str) -> None:
    """Random pages of those pieces, short and long (a long one holding Big5's A2 41 or
    EUC-JP's 8F A2 B7 is decoded piece by piece: its halves as the whole)."""
    rng = random.Random(48)
    for size in [*[rng.randint(1, 12) for _ in range(3000)], *[2000] * 40]:
        data = b"".join(rng.choice(PIECES[name]) for _ in range(size))
        assert decode(data, name) == standard.decode(data, name), data.hex()


def test_the_two_misses_the_issue_names() -> None:
    assert decode("①②③".encode("cp932"), "shift_jis") == "①②③"
    assert decode(b"\xad\xa1\xad\xa2\xad\xa3", "euc-jp") == "①②③"  # NEC row 13
    assert query_encoded("?q=\u0e01", "gb2312") == "?q=%26%233585%3B"  # GBK: no four bytes
    assert query_encoded("?q=\u0e01", "gb18030") == "?q=%812%CE9"
    assert resolve("http://h.test/", "?q=\u0e01", "gb2312") == "http://h.test/?q=%26%233585%3B"


# -- ISO-2022-JP, UTF-16, replacement, x-user-defined ----------------------------------------

def test_iso_2022_jp_reads_every_jis0208_pointer_and_katakana() -> None:
    for escape in (b"\x1b$B", b"\x1b$@"):
        cases = {escape + bytes([p // 94 + 0x21, p % 94 + 0x21]): c
                 for p, c in standard.index("jis0208").items() if p < 94 * 94}
        assert_each_decodes(cases, "iso-2022-jp")
    assert decode(b"\x1b(I" + bytes(range(0x21, 0x60)), "iso-2022-jp") == \
        "".join(chr(c) for c in range(0xFF61, 0xFFA0))
    assert decode(b"\x1b(J\\~a", "iso-2022-jp") == "\u00a5\u203ea"


ISO_2022_JP_PIECES = [b"\x1b(B", b"\x1b$B", b"\x1b$@", b"\x1b(J", b"\x1b(I", b"\x1b$A", b"\x1b",
                      b"\x1b$", b"\n", b"A", b"\\", b"~", b"F|", b"-!", b"!A", b"!", b" ", b"\x0e",
                      b"\x80", b"\x7f", b"\x00"]


def test_iso_2022_jp_pages_decode_as_the_standards_decoder() -> None:
    """Random pages of escapes (valid, unknown, cut short, two in a row), pairs (NEC row 13,
    a wrong character of Python's), ASCII, SO, bytes 80–FF: the fast path's and the slow one's."""
    rng = random.Random(48)
    for size in [*[rng.randint(1, 10) for _ in range(20000)], *[3000] * 10]:
        data = b"".join(rng.choice(ISO_2022_JP_PIECES) for _ in range(size))
        assert decode(data, "iso-2022-jp") == standard.decode(data, "iso-2022-jp"), data
    plain = "東京①〜～ ¥".encode("iso2022_jp", "replace")
    assert decode(b"<p>" + plain * 1000, "iso-2022-jp") == \
        standard.decode(b"<p>" + plain * 1000, "iso-2022-jp")


@pytest.mark.parametrize("name", ["utf-16be", "utf-16le"])
def test_utf_16_decodes_as_the_standards_decoder(name: str) -> None:
    """Every code unit; lone and paired surrogates; an odd byte at the end."""
    big = name == "utf-16be"
    units = bytes(b for unit in range(0x10000) for b in
                  (divmod(unit, 256) if big else divmod(unit, 256)[::-1]))
    assert decode(units, name) == standard.decode(units, name)

    def unit(value: int) -> bytes:
        return value.to_bytes(2, "big" if big else "little")
    rng = random.Random(48)
    pieces = [unit(0xD800), unit(0xDBFF), unit(0xDC00), unit(0xDFFF), unit(0x41), unit(0xFFFE),
              unit(0xFEFF), b"\x00"]
    for _ in range(3000):
        data = b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 8)))
        assert decode(data, name) == standard.decode(data, name), data.hex()


def test_replacement_and_x_user_defined() -> None:
    assert decode(b"", "replacement") == "" and decode(b"<p>hi", "replacement") == "\ufffd"
    assert decode(bytes(range(256)), "x-user-defined") == \
        "".join(map(chr, range(0x80))) + "".join(chr(c) for c in range(0xF780, 0xF800))
    assert query_encoded("?q=\uf780\uf7ff\u00e9", "x-user-defined") == "?q=%80%FF%26%23233%3B"


# -- encoders: a link's query -------------------------------------------------------------------

def code_points(name: str) -> list[int]:
    """Every non-ASCII BMP code point (single-byte: every one up to U+07FF, those of the index
    and one in 13 beyond) and every astral one an index holds."""
    if name in SINGLE_BYTE:
        return sorted({*range(0x80, 0x800), *standard.index(name).values(),
                       *range(0x800, 0x10000, 13)} - set(range(0xD800, 0xE000)))
    astral = {c for index in ("big5", "gb18030") for c in standard.index(index).values()
              if c > 0xFFFF}
    return [c for c in range(0x80, 0x10000) if not 0xD800 <= c <= 0xDFFF] + sorted(astral) + \
        [0x10000, 0x1F600, 0x10FFFF]


@pytest.mark.parametrize("name", NAMES)
def test_a_query_is_encoded_as_the_standards_encoder(name: str) -> None:
    """Each character alone, as a link's query: its bytes percent-encoded, or "&#N;" escaped
    where the encoder refuses it (GBK: no four bytes; Big5: no HKSCS; Shift_JIS: not the NEC
    duplicates...); a UTF-16 or replacement page's query is the URL parser's UTF-8."""
    wrong = []
    for code_point in code_points(name):
        expected = "?" + (chr(code_point) if name in UTF_8_QUERIES else
                          standard.query_percent_encoded(chr(code_point), name))
        if (got := query_encoded("?" + chr(code_point), name)) != expected:
            wrong.append(f"U+{code_point:04X}: {got} (the standard's: {expected})")
    assert not wrong, wrong[:10]


def test_iso_2022_jp_encodes_a_query_with_one_encoder() -> None:
    """The encoder's state spans the query: ASCII after ¥ stays in JIS X 0201 Roman, a refused
    character is "&#N;" in the state the encoder is in, the query ends back in ASCII."""
    assert query_encoded("?q=¥a日b\u0e01c", "iso-2022-jp") == \
        "?q=%1B(J\\a%1B$BF|%1B(Bb%26%233585%3Bc"
    rng = random.Random(48)
    alphabet = ["a", "\\", "~", "¥", "‾", "日", "①", "ｱ", "ﾞ", "−", "\u0e01", "\x0e", "é", " "]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 8)))
        if not any(c >= "\x80" or c == "\x0e" for c in text):
            continue
        assert query_encoded("?" + text, "iso-2022-jp") == \
            "?" + unescaped_ascii(standard.query_percent_encoded(text, "iso-2022-jp"), text)


def unescaped_ascii(encoded: str, text: str) -> str:
    """The standard's query as query_encoded leaves it: a space the query held stays a space
    (the URL parser escapes it after)."""
    return encoded.replace("%20", " ") if " " in text else encoded


def test_index_data_is_read_only_for_a_page_that_needs_it() -> None:
    """Start-up and UTF-8 pages do not read minicrawl/html/whatwg.json; an EUC-JP page does."""
    script = ("from minicrawl.html import encoding, whatwg\n"
              "encoding.decode('é'.encode('utf-8'), 'utf-8')\n"
              "print(whatwg._tables.cache_info().currsize)\n"
              "encoding.decode(b'\\xad\\xa1', 'euc-jp')\n"
              "print(whatwg._tables.cache_info().currsize)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.stdout.split() == ["0", "1"], done.stderr
