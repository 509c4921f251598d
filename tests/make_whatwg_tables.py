"""Write minicrawl/html/whatwg.json: where Python's codecs differ from the WHATWG Encoding
Standard's indexes (tests/data/encoding/), which is all minicrawl/html/whatwg.py needs besides
Python's codecs to decode and encode as the standard says.

    python tests/make_whatwg_tables.py        # from the repository's root; rewrites the file

The file holds, per encoding (the codec minicrawl/html/encoding.py's table names for it):

* ``single_byte``: the bytes 80–FF whose character is not the codec's: byte (hex) → character,
  "" where the standard has none;
* ``decode``: of every byte sequence the standard's decoder reads as one pointer (its lead/trail
  formulas: two bytes, EUC-JP's three, gb18030's four), those the codec decodes otherwise (or not
  at all): bytes (hex) → the index's code point, "" where the index has none;
* ``fix``: a character the codec decodes where the standard decodes something else from the same
  bytes, and only from them → the standard's text (replaced after a fast decode);
* ``careful``: a character the codec decodes from such bytes and from others too (Big5's U+FF0F
  from A2 41 and from A1 FE): the byte sequences that mean something else, for which a page is
  decoded piece by piece.

Run it again when Python's codecs change (a new CPython) or the standard's indexes do:
tests/test_encoding_standard.py then fails where the file no longer mends the codecs. It takes
about 40 s (gb18030's 1.6 million four-byte sequences).
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(ROOT / "tests"))

import whatwg_encoding as standard  # noqa: E402

from minicrawl.html.encoding import CODECS  # noqa: E402

OUT = ROOT / "minicrawl" / "html" / "whatwg.json"
MULTI_BYTE = ("gb18030", "big5", "euc-jp", "shift_jis", "euc-kr")  # gbk: gb18030's decoder


def strict(data: bytes, codec: str) -> str | None:
    try:
        return data.decode(codec)
    except UnicodeDecodeError:
        return None


def pointer_sequences(name: str) -> dict[bytes, str]:
    """Every byte sequence the standard's decoder reads as one pointer → the index's text
    ("" where it has none)."""
    out: dict[bytes, str] = {}

    def text(code_point: int | None) -> str:
        return "" if code_point is None else chr(code_point)
    if name == "gb18030":
        table = standard.index("gb18030")
        for lead in range(0x81, 0xFF):
            for trail in [*range(0x40, 0x7F), *range(0x80, 0xFF)]:
                pointer = (lead - 0x81) * 190 + trail - (0x40 if trail < 0x7F else 0x41)
                out[bytes([lead, trail])] = text(table.get(pointer))
        for b1 in range(0x81, 0xFF):
            for b2 in range(0x30, 0x3A):
                for b3 in range(0x81, 0xFF):
                    for b4 in range(0x30, 0x3A):
                        pointer = (b1 - 0x81) * 12600 + (b2 - 0x30) * 1260 + (b3 - 0x81) * 10 \
                            + b4 - 0x30
                        out[bytes([b1, b2, b3, b4])] = text(standard.ranges_code_point(pointer))
    elif name == "big5":
        table = standard.index("big5")
        for lead in range(0x81, 0xFF):
            for trail in [*range(0x40, 0x7F), *range(0xA1, 0xFF)]:
                pointer = (lead - 0x81) * 157 + trail - (0x40 if trail < 0x7F else 0x62)
                out[bytes([lead, trail])] = standard.decode(bytes([lead, trail]), "big5") \
                    if pointer in (1133, 1135, 1164, 1166) else text(table.get(pointer))
    elif name == "euc-jp":
        for lead in range(0xA1, 0xFF):
            for trail in range(0xA1, 0xFF):
                pointer = (lead - 0xA1) * 94 + trail - 0xA1
                out[bytes([lead, trail])] = text(standard.index("jis0208").get(pointer))
                out[bytes([0x8F, lead, trail])] = text(standard.index("jis0212").get(pointer))
    elif name == "shift_jis":
        for lead in [*range(0x81, 0xA0), *range(0xE0, 0xFD)]:
            for trail in [*range(0x40, 0x7F), *range(0x80, 0xFD)]:
                pointer = (lead - (0x81 if lead < 0xA0 else 0xC1)) * 188 + trail \
                    - (0x40 if trail < 0x7F else 0x41)
                out[bytes([lead, trail])] = chr(0xE000 - 8836 + pointer) \
                    if 8836 <= pointer <= 10715 else text(standard.index("jis0208").get(pointer))
    elif name == "euc-kr":
        table = standard.index("euc-kr")
        for lead in range(0x81, 0xFF):
            for trail in range(0x41, 0xFF):
                out[bytes([lead, trail])] = text(table.get((lead - 0x81) * 190 + trail - 0x41))
    return out


def multi_byte(name: str) -> dict[str, object]:
    codec = CODECS[name]
    sequences = pointer_sequences(name)
    decode = {data: text for data, text in sequences.items()
              if (strict(data, codec) or "") != text}  # (None: the codec fails)
    # Units the codec decodes to one character: what it produces from which bytes.
    producers: dict[str, set[bytes]] = defaultdict(set)
    units = [bytes([b]) for b in range(256)] + [data for data in sequences
                                                if strict(data[:1], codec) is None]
    units += [bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)
              if strict(bytes([a]), codec) is None and bytes([a, b]) not in sequences]
    wrong: dict[bytes, tuple[str, str]] = {}
    for data in units:
        got = strict(data, codec)
        if got is None or len(got) != 1:
            continue
        producers[got].add(data)
        expected = sequences.get(data) if data in sequences else None
        if expected is None or expected == "":
            expected = standard.decode(data, name)
        if got != expected:
            wrong[data] = (got, expected)
    fix: dict[str, str] = {}
    careful: dict[str, list[str]] = {}
    by_char: dict[str, set[str]] = defaultdict(set)
    for got, expected in wrong.values():
        by_char[got].add(expected)
    for got, expecteds in sorted(by_char.items()):
        right_elsewhere = any(data not in wrong for data in producers[got])
        if len(expecteds) == 1 and not right_elsewhere:
            fix[got] = expecteds.pop()
        else:
            careful[got] = sorted(data.hex() for data, (g, _) in wrong.items() if g == got)
    return {"codec": codec, "decode": {data.hex(): text for data, text in sorted(decode.items())},
            "fix": fix, "careful": careful}


def single_byte(name: str) -> dict[str, object]:
    codec = CODECS[name]
    table = standard.index(name)
    out = {}
    for byte in range(0x80, 0x100):
        text = "" if (byte - 0x80) not in table else chr(table[byte - 0x80])
        if (strict(bytes([byte]), codec) or "") != text:
            out[f"{byte:02x}"] = text
    return {"codec": codec, "single_byte": out}


def tables() -> dict[str, object]:
    out: dict[str, object] = {
        "about": "Where Python's codecs differ from the WHATWG Encoding Standard's indexes "
                 "(https://encoding.spec.whatwg.org/, CC BY 4.0): written by "
                 "tests/make_whatwg_tables.py from tests/data/encoding/, read by "
                 "minicrawl/html/whatwg.py.",
        "python": f"{sys.version_info.major}.{sys.version_info.minor}"}
    for name in standard.single_byte_names():
        entry = single_byte(name)
        if entry["single_byte"]:
            out[name] = entry
    for name in MULTI_BYTE:
        out[name] = multi_byte(name)
    return out


def main() -> None:
    OUT.write_text(json.dumps(tables(), ensure_ascii=False, indent=0, sort_keys=True) + "\n",
                   "utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
