"""Decoders and the query encoder against the WHATWG Encoding Standard's indexes, and the cost
of decoding a large page (issue 48).

    python /path/to/bench/bench_encodings.py [--skip-counts] [--skip-time]

Run it from a checkout's root: it imports that checkout's ``minicrawl`` (its
``minicrawl.html.encoding.decode`` and ``query_encoded``), and holds them to the standard's
algorithms as tests/whatwg_encoding.py writes them, over the index files vendored beside this
script (tests/data/encoding/). So a checkout without them (the baseline) is measured with the
change's oracle:

    cd /work/main && python /work/wt-enc/bench/bench_encodings.py

Counts, per encoding:

* ``pointers``: the index's pointers (each as its bytes, from the standard's lead/trail formulas)
  that decode to another code point than the index's; for single-byte encodings each byte;
* ``pairs``: of the 32,768 two-byte sequences whose first byte is 80–FF, those whose decoding
  differs from the standard's decoder (invalid sequences too: how many U+FFFD, which byte is
  kept), with an ASCII byte after each;
* ``encoder``: of the BMP's non-ASCII code points and the astral ones any index holds, those whose
  query encoding (as a link's query: ``?`` then the character) is not the standard's.

Time: the best of 7 decodes of a ~1 MB page of Japanese (EUC-JP, Shift_JIS, ISO-2022-JP),
Chinese (Big5, GBK, gb18030), Korean (EUC-KR), German (windows-1252) and Russian (windows-1251)
text with HTML markup around it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path.cwd()))
sys.path.insert(1, str(HERE / "tests"))

import whatwg_encoding as standard  # noqa: E402

from minicrawl.html.encoding import decode, query_encoded  # noqa: E402

UTF_8_QUERIES = ("utf-8", "utf-16be", "utf-16le", "replacement")
MULTI = ["gbk", "gb18030", "big5", "euc-jp", "iso-2022-jp", "shift_jis", "euc-kr"]


def pointer_bytes(name: str) -> dict[bytes, int | tuple[int, int]]:
    """Every pointer of ``name``'s index as the bytes its decoder reads it from → its code point."""
    out: dict[bytes, int | tuple[int, int]] = {}
    if name in ("gbk", "gb18030"):
        for pointer, code_point in standard.index("gb18030").items():
            trailing = pointer % 190
            out[bytes([pointer // 190 + 0x81, trailing + (0x40 if trailing < 0x3F else 0x41)])] \
                = code_point
        for pointer in [*range(39420), *range(189000, 1237576)]:
            rest, byte4 = divmod(pointer, 10)
            rest, byte3 = divmod(rest, 126)
            byte1, byte2 = divmod(rest, 10)
            code_point = standard.ranges_code_point(pointer)
            assert code_point is not None
            out[bytes([byte1 + 0x81, byte2 + 0x30, byte3 + 0x81, byte4 + 0x30])] = code_point
    elif name == "big5":
        for pointer, code_point in standard.index("big5").items():
            trailing = pointer % 157
            out[bytes([pointer // 157 + 0x81, trailing + (0x40 if trailing < 0x3F else 0x62)])] \
                = code_point
    elif name in ("euc-jp", "iso-2022-jp"):
        for pointer, code_point in standard.index("jis0208").items():
            if pointer >= 94 * 94:  # (Shift_JIS's IBM rows: no EUC-JP bytes reach them)
                continue
            lead, trail = divmod(pointer, 94)
            out[bytes([lead + 0xA1, trail + 0xA1]) if name == "euc-jp" else
                b"\x1b$B" + bytes([lead + 0x21, trail + 0x21])] = code_point
        if name == "euc-jp":
            for pointer, code_point in standard.index("jis0212").items():
                lead, trail = divmod(pointer, 94)
                out[bytes([0x8F, lead + 0xA1, trail + 0xA1])] = code_point
    elif name == "shift_jis":
        for pointer in [*standard.index("jis0208"), *range(8836, 10716)]:
            lead, trail = divmod(pointer, 188)
            data = bytes([lead + (0x81 if lead < 0x1F else 0xC1),
                          trail + (0x40 if trail < 0x3F else 0x41)])
            out[data] = standard.index("jis0208").get(pointer, 0xE000 - 8836 + pointer)
    elif name == "euc-kr":
        for pointer, code_point in standard.index("euc-kr").items():
            out[bytes([pointer // 190 + 0x81, pointer % 190 + 0x41])] = code_point
    return out


def count_pointers(name: str) -> tuple[int, int]:
    """(wrong, all) over the pointers of ``name``'s index (single-byte: every byte)."""
    if name not in MULTI:
        cases = {bytes([b]): standard.decode(bytes([b]), name) for b in range(256)}
        return sum(decode(data, name) != text for data, text in cases.items()), len(cases)
    wrong = total = 0
    for data, code_point in pointer_bytes(name).items():
        total += 1
        expected = "".join(map(chr, code_point)) if isinstance(code_point, tuple) \
            else chr(code_point)
        wrong += decode(data, name) != expected
    return wrong, total


def count_pairs(name: str) -> tuple[int, int]:
    wrong = total = 0
    for first in range(0x80, 0x100):
        for second in range(0x100):
            data = bytes([first, second]) + b"A"
            total += 1
            wrong += decode(data, name) != standard.decode(data, name)
    return wrong, total


def encoder_code_points() -> list[int]:
    astral = {c for name in ("big5", "gb18030") for c in standard.index(name).values()
              if c > 0xFFFF}
    return [c for c in range(0x80, 0x10000) if not 0xD800 <= c <= 0xDFFF] + sorted(astral)


def count_encoder(name: str, code_points: list[int]) -> tuple[int, int, list[str]]:
    wrong = 0
    examples = []
    for code_point in code_points:
        expected = "?" + standard.query_percent_encoded(chr(code_point), name)
        if name in UTF_8_QUERIES:  # left to the URL parser, which writes UTF-8
            expected = "?" + chr(code_point)
        got = query_encoded("?" + chr(code_point), name)
        if got != expected:
            wrong += 1
            if len(examples) < 3:
                examples.append(f"U+{code_point:04X} {got} (standard: {expected})")
    return wrong, len(code_points), examples


JAPANESE = "東京は日本の首都であり、世界有数の大都市です。春には桜が咲きます。"
SAMPLES = {  # encoding → (Python codec that writes the page, text)
    "euc-jp": ("euc_jp", JAPANESE),
    "shift_jis": ("cp932", JAPANESE),
    "iso-2022-jp": ("iso2022_jp", JAPANESE),
    "big5": ("big5", "臺北是中華民國的首都，也是臺灣的政治、經濟與文化中心。"),
    "gbk": ("gbk", "北京是中华人民共和国的首都，也是全国的政治、文化中心。"),
    "gb18030": ("gb18030", "北京是中华人民共和国的首都，也是全国的政治、文化中心。"),
    "euc-kr": ("euc_kr", "서울은 대한민국의 수도이며 정치, 경제, 문화의 중심지이다."),
    "windows-1252": ("cp1252", "Unsere Bäckerei wurde 1952 in München gegründet – „frisch“."),
    "windows-1251": ("cp1251", "Учёные из Новосибирского университета сообщили о создании."),
}


def page(name: str) -> bytes:
    codec, text = SAMPLES[name]
    paragraph = f'<p class="text">{text} <a href="/wiki/{len(text)}">{text[:4]}</a></p>\n'
    body = paragraph * (1_000_000 // len(paragraph.encode(codec)) + 1)
    return f"<!DOCTYPE html><html><head><title>{text[:6]}</title></head><body>\n{body}" \
           f"</body></html>\n".encode(codec)


def time_decode(name: str) -> tuple[float, int]:
    body = page(name)
    decode(body, name)  # (loads what it loads once)
    best = float("inf")
    for _ in range(7):
        start = time.perf_counter()
        decode(body, name)
        best = min(best, time.perf_counter() - start)
    return best * 1000, len(body)


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-counts", action="store_true")
    parser.add_argument("--skip-time", action="store_true")
    parser.add_argument("--encodings", default="", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = args.encodings.split(",") if args.encodings else list(standard.names_and_labels())
    if not args.skip_counts:
        code_points = encoder_code_points()
        print(f"{'encoding':16} {'pointers wrong':>18} {'pairs wrong':>16} {'encoder wrong':>18}")
        for name in names:
            pointers = count_pointers(name) if name not in ("utf-8", "replacement") else (0, 0)
            pairs = count_pairs(name) if name not in ("iso-2022-jp",) else (0, 0)
            encoder = count_encoder(name, code_points)
            print(f"{name:16} {pointers[0]:>8} / {pointers[1]:<8} {pairs[0]:>6} / {pairs[1]:<8}"
                  f" {encoder[0]:>7} / {encoder[1]:<8}", flush=True)
            for example in encoder[2]:
                print(f"{'':18}{example}")
    if not args.skip_time:
        for name in SAMPLES:
            if name in names:
                ms, size = time_decode(name)
                print(f"decode {name:12} {size / 1e6:.2f} MB: {ms:7.2f} ms", flush=True)


if __name__ == "__main__":
    main()
