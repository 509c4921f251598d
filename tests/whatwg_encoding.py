"""The WHATWG Encoding Standard's decoders and encoders, written from its text (the algorithms of
https://encoding.spec.whatwg.org/, step by step, slow and plain) over its own index files
(tests/data/encoding/, vendored): the oracle tests/test_encoding_standard.py holds minicrawl's
fast decoders and query encoder to. Nothing here is minicrawl's code: if the two were written
from one reading, a misreading would pass."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable
from functools import cache
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "encoding"
ERROR = -1  # a handler's "error" (the decoder emits U+FFFD for it)
FFFD = 0xFFFD


@cache
def names_and_labels() -> dict[str, list[str]]:
    """Each encoding's name (lower-cased, as minicrawl names it) → its labels (encodings.json)."""
    return {encoding["name"].lower(): encoding["labels"]
            for group in json.loads((DATA / "encodings.json").read_text("utf-8"))
            for encoding in group["encodings"]}


@cache
def single_byte_names() -> list[str]:
    return [encoding["name"].lower()
            for group in json.loads((DATA / "encodings.json").read_text("utf-8"))
            if group["heading"] == "Legacy single-byte encodings"
            for encoding in group["encodings"]]


@cache
def index(name: str) -> dict[int, int]:
    """The index ``index-NAME.txt``: pointer → code point (ISO-8859-8-I's is ISO-8859-8's)."""
    name = "iso-8859-8" if name == "iso-8859-8-i" else name
    table = {}
    for line in (DATA / f"index-{name}.txt").read_text("utf-8").split("\n"):  # (not
        # splitlines: the third column holds the character itself, U+0085 or U+2028 too)
        if line.strip() and not line.startswith("#"):
            pointer, code_point = line.split("\t")[:2]
            table[int(pointer)] = int(code_point, 16)
    return table


@cache
def index_pointers(name: str) -> dict[int, int]:
    """The standard's "index pointer": code point → the first pointer for it in the index."""
    first: dict[int, int] = {}
    for pointer, code_point in sorted(index(name).items()):
        first.setdefault(code_point, pointer)
    return first


@cache
def _ranges() -> tuple[list[int], list[int]]:
    """index gb18030 ranges as two sorted lists: pointers, code points (both ascend)."""
    pairs = sorted(index("gb18030-ranges").items())
    return [p for p, _ in pairs], [c for _, c in pairs]


def ranges_code_point(pointer: int) -> int | None:
    """The standard's "index gb18030 ranges code point"."""
    if 39419 < pointer < 189000 or pointer > 1237575:
        return None
    if pointer == 7457:
        return 0xE7C7
    pointers, code_points = _ranges()
    at = bisect_right(pointers, pointer) - 1  # the last pointer <= pointer
    return code_points[at] + pointer - pointers[at]


def ranges_pointer(code_point: int) -> int:
    """The standard's "index gb18030 ranges pointer"."""
    if code_point == 0xE7C7:
        return 7457
    pointers, code_points = _ranges()
    at = bisect_right(code_points, code_point) - 1  # the last code point <= code_point
    return pointers[at] + code_point - code_points[at]


@cache
def shift_jis_pointers() -> dict[int, int]:
    """The standard's "index Shift_JIS pointer": jis0208 without pointers 8272–8835."""
    first: dict[int, int] = {}
    for pointer, code_point in sorted(index("jis0208").items()):
        if not 8272 <= pointer <= 8835:
            first.setdefault(code_point, pointer)
    return first


@cache
def big5_pointers() -> dict[int, int]:
    """The standard's "index Big5 pointer": no HKSCS pointers below (0xA1 - 0x81) × 157; the
    last pointer for six code points, the first for the others."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for pointer, code_point in sorted(index("big5").items()):
        if pointer >= (0xA1 - 0x81) * 157:
            first.setdefault(code_point, pointer)
            last[code_point] = pointer
    for code_point in (0x2550, 0x255E, 0x2561, 0x256A, 0x5341, 0x5345):
        first[code_point] = last[code_point]
    return first


# -- decoders: each reads the whole of ``data`` as the standard's "decode" (no BOM sniffing) ---

def decode(data: bytes, name: str) -> str:
    """``data`` through the standard's decoder for ``name`` in "replacement" error mode, a byte
    order mark of that encoding skipped (the standard's "decode" skips any, and takes its
    encoding: HTML's sniffing has done that before a page is decoded)."""
    for mark, encoding in ((b"\xef\xbb\xbf", "utf-8"), (b"\xfe\xff", "utf-16be"),
                           (b"\xff\xfe", "utf-16le")):
        if name == encoding and data.startswith(mark):
            data = data[len(mark):]
    if name == "replacement":
        return "\ufffd" if data else ""
    if name == "utf-8":
        return data.decode("utf-8", "replace")  # CPython's: the standard's "maximal subparts"
    handler = _DECODERS[name]() if name in _DECODERS else _single_byte(name)
    out: list[int] = []
    queue = list(data)
    queue.reverse()  # popped from the end; "restore" pushes back
    while True:  # the standard's "process a queue"
        byte = queue.pop() if queue else None  # None: end-of-queue
        result = handler(byte, queue)
        if result == "finished":
            break
        if isinstance(result, tuple):  # two code points (Big5)
            out.extend(result)
        elif result == ERROR:
            out.append(FFFD)
        elif result is not None:  # None: "continue"
            out.append(result)
    return "".join(map(chr, out))


Handler = Callable[[int | None, list[int]], object]


def _restore(queue: list[int], *data: int) -> None:
    queue.extend(reversed(data))


def _single_byte(name: str) -> Handler:
    table = index(name)

    def handler(byte: int | None, _: list[int]) -> object:
        if byte is None:
            return "finished"
        if byte < 0x80:
            return byte
        return table.get(byte - 0x80, ERROR)
    return handler


def _x_user_defined() -> Handler:
    def handler(byte: int | None, _: list[int]) -> object:
        if byte is None:
            return "finished"
        return byte if byte < 0x80 else 0xF780 + byte - 0x80
    return handler


def _gb18030() -> Handler:
    state = {"first": 0, "second": 0, "third": 0}
    table = index("gb18030")

    def handler(byte: int | None, queue: list[int]) -> object:
        first, second, third = state["first"], state["second"], state["third"]
        if byte is None:
            if first == second == third == 0:
                return "finished"
            state.update(first=0, second=0, third=0)
            return ERROR
        if third:
            if not 0x30 <= byte <= 0x39:
                _restore(queue, second, third, byte)
                state.update(first=0, second=0, third=0)
                return ERROR
            code_point = ranges_code_point((first - 0x81) * 12600 + (second - 0x30) * 1260
                                           + (third - 0x81) * 10 + byte - 0x30)
            state.update(first=0, second=0, third=0)
            return ERROR if code_point is None else code_point
        if second:
            if 0x81 <= byte <= 0xFE:
                state["third"] = byte
                return None
            _restore(queue, second, byte)
            state.update(first=0, second=0)
            return ERROR
        if first:
            if 0x30 <= byte <= 0x39:
                state["second"] = byte
                return None
            state["first"] = 0
            offset = 0x40 if byte < 0x7F else 0x41
            pointer = (first - 0x81) * 190 + byte - offset \
                if 0x40 <= byte <= 0x7E or 0x80 <= byte <= 0xFE else None
            code_point = None if pointer is None else table.get(pointer)
            if code_point is not None:
                return code_point
            if byte < 0x80:
                _restore(queue, byte)
            return ERROR
        if byte < 0x80:
            return byte
        if byte == 0x80:
            return 0x20AC
        if 0x81 <= byte <= 0xFE:
            state["first"] = byte
            return None
        return ERROR
    return handler


_BIG5_PAIRS = {1133: (0x00CA, 0x0304), 1135: (0x00CA, 0x030C), 1164: (0x00EA, 0x0304),
               1166: (0x00EA, 0x030C)}


def _big5() -> Handler:
    state = {"leading": 0}
    table = index("big5")

    def handler(byte: int | None, queue: list[int]) -> object:
        leading = state["leading"]
        if byte is None:
            state["leading"] = 0
            return ERROR if leading else "finished"
        if leading:
            state["leading"] = 0
            offset = 0x40 if byte < 0x7F else 0x62
            pointer = (leading - 0x81) * 157 + byte - offset \
                if 0x40 <= byte <= 0x7E or 0xA1 <= byte <= 0xFE else None
            if pointer in _BIG5_PAIRS:
                return _BIG5_PAIRS[pointer]
            code_point = None if pointer is None else table.get(pointer)
            if code_point is not None:
                return code_point
            if byte < 0x80:
                _restore(queue, byte)
            return ERROR
        if byte < 0x80:
            return byte
        if 0x81 <= byte <= 0xFE:
            state["leading"] = byte
            return None
        return ERROR
    return handler


def _euc_jp() -> Handler:
    state = {"leading": 0, "jis0212": False}

    def handler(byte: int | None, queue: list[int]) -> object:
        leading = state["leading"]
        if byte is None:
            state["leading"] = 0
            return ERROR if leading else "finished"
        if leading == 0x8E and 0xA1 <= byte <= 0xDF:
            state["leading"] = 0
            return 0xFF61 - 0xA1 + byte
        if leading == 0x8F and 0xA1 <= byte <= 0xFE:
            state.update(jis0212=True, leading=byte)
            return None
        if leading:
            state["leading"] = 0
            code_point = None
            if 0xA1 <= leading <= 0xFE and 0xA1 <= byte <= 0xFE:
                code_point = index("jis0212" if state["jis0212"] else "jis0208").get(
                    (leading - 0xA1) * 94 + byte - 0xA1)
            state["jis0212"] = False
            if code_point is not None:
                return code_point
            if byte < 0x80:
                _restore(queue, byte)
            return ERROR
        if byte < 0x80:
            return byte
        if byte in (0x8E, 0x8F) or 0xA1 <= byte <= 0xFE:
            state["leading"] = byte
            return None
        return ERROR
    return handler


def _iso_2022_jp() -> Handler:
    s = {"state": "ascii", "output_state": "ascii", "leading": 0, "output": False}
    jis0208 = index("jis0208")

    def handler(byte: int | None, queue: list[int]) -> object:
        state = s["state"]
        if state in ("ascii", "roman", "katakana", "leading"):
            if byte == 0x1B:
                s["state"] = "escape start"
                return None
            if byte is None:
                return "finished"
            s["output"] = False
            if state == "ascii" and byte <= 0x7F and byte not in (0x0E, 0x0F):
                return byte
            if state == "roman" and byte <= 0x7F and byte not in (0x0E, 0x0F):
                return {0x5C: 0xA5, 0x7E: 0x203E}.get(byte, byte)
            if state == "katakana" and 0x21 <= byte <= 0x5F:
                return 0xFF61 - 0x21 + byte
            if state == "leading" and 0x21 <= byte <= 0x7E:
                s.update(leading=byte, state="trailing")
                return None
            return ERROR
        if state == "trailing":
            if byte == 0x1B:
                s["state"] = "escape start"
                return ERROR
            s["state"] = "leading"
            if byte is not None and 0x21 <= byte <= 0x7E:
                return jis0208.get((s["leading"] - 0x21) * 94 + byte - 0x21, ERROR)
            return ERROR
        if state == "escape start":
            if byte in (0x24, 0x28):
                s.update(leading=byte, state="escape")
                return None
            if byte is not None:
                _restore(queue, byte)
            s.update(output=False, state=s["output_state"])
            return ERROR
        # escape
        leading = s["leading"]
        s["leading"] = 0
        new = {(0x28, 0x42): "ascii", (0x28, 0x4A): "roman", (0x28, 0x49): "katakana",
               (0x24, 0x40): "leading", (0x24, 0x42): "leading"}.get((leading, byte))
        if new is not None:
            s.update(state=new, output_state=new)
            output = s["output"]
            s["output"] = True
            return None if not output else ERROR
        if byte is None:
            _restore(queue, leading)
        else:
            _restore(queue, leading, byte)
        s.update(output=False, state=s["output_state"])
        return ERROR
    return handler


def _shift_jis() -> Handler:
    state = {"leading": 0}
    table = index("jis0208")

    def handler(byte: int | None, queue: list[int]) -> object:
        leading = state["leading"]
        if byte is None:
            state["leading"] = 0
            return ERROR if leading else "finished"
        if leading:
            state["leading"] = 0
            offset = 0x40 if byte < 0x7F else 0x41
            leading_offset = 0x81 if leading < 0xA0 else 0xC1
            pointer = (leading - leading_offset) * 188 + byte - offset \
                if 0x40 <= byte <= 0x7E or 0x80 <= byte <= 0xFC else None
            if pointer is not None and 8836 <= pointer <= 10715:
                return 0xE000 - 8836 + pointer
            code_point = None if pointer is None else table.get(pointer)
            if code_point is not None:
                return code_point
            if byte < 0x80:
                _restore(queue, byte)
            return ERROR
        if byte <= 0x80:
            return byte
        if 0xA1 <= byte <= 0xDF:
            return 0xFF61 - 0xA1 + byte
        if 0x81 <= byte <= 0x9F or 0xE0 <= byte <= 0xFC:
            state["leading"] = byte
            return None
        return ERROR
    return handler


def _euc_kr() -> Handler:
    state = {"leading": 0}
    table = index("euc-kr")

    def handler(byte: int | None, queue: list[int]) -> object:
        leading = state["leading"]
        if byte is None:
            state["leading"] = 0
            return ERROR if leading else "finished"
        if leading:
            state["leading"] = 0
            pointer = (leading - 0x81) * 190 + byte - 0x41 if 0x41 <= byte <= 0xFE else None
            code_point = None if pointer is None else table.get(pointer)
            if code_point is not None:
                return code_point
            if byte < 0x80:
                _restore(queue, byte)
            return ERROR
        if byte < 0x80:
            return byte
        if 0x81 <= byte <= 0xFE:
            state["leading"] = byte
            return None
        return ERROR
    return handler


def _utf_16(big_endian: bool) -> Callable[[], Handler]:
    def make() -> Handler:
        state: dict[str, int | None] = {"byte": None, "surrogate": None}

        def handler(byte: int | None, queue: list[int]) -> object:
            if byte is None:
                if state["byte"] is not None or state["surrogate"] is not None:
                    state.update(byte=None, surrogate=None)
                    return ERROR
                return "finished"
            if state["byte"] is None:
                state["byte"] = byte
                return None
            lead = state["byte"]
            assert lead is not None
            unit = (lead << 8) + byte if big_endian else (byte << 8) + lead
            state["byte"] = None
            if (surrogate := state["surrogate"]) is not None:
                state["surrogate"] = None
                if 0xDC00 <= unit <= 0xDFFF:
                    return 0x10000 + ((surrogate - 0xD800) << 10) + (unit - 0xDC00)
                pair = (unit >> 8, unit & 0xFF) if big_endian else (unit & 0xFF, unit >> 8)
                _restore(queue, *pair)
                return ERROR
            if 0xD800 <= unit <= 0xDBFF:
                state["surrogate"] = unit
                return None
            return ERROR if 0xDC00 <= unit <= 0xDFFF else unit
        return handler
    return make


_DECODERS: dict[str, Callable[[], Handler]] = {
    "gbk": _gb18030, "gb18030": _gb18030, "big5": _big5, "euc-jp": _euc_jp,
    "iso-2022-jp": _iso_2022_jp, "shift_jis": _shift_jis, "euc-kr": _euc_kr,
    "utf-16be": _utf_16(True), "utf-16le": _utf_16(False), "x-user-defined": _x_user_defined,
}


# -- encoders: one code point → its bytes, or None for the standard's "error" ------------------

def encode_one(code_point: int, name: str) -> bytes | None:
    """The bytes the standard's encoder for ``name`` gives for the one code point (as the first
    of a text: ISO-2022-JP's escapes included, from and back to ASCII), or None for its error.
    For UTF-8 (and for what has none: UTF-16, replacement, "get an output encoding"): UTF-8."""
    if code_point < 0x80 and name != "iso-2022-jp":
        return bytes([code_point])
    if name in ("utf-8", "utf-16be", "utf-16le", "replacement"):
        return chr(code_point).encode("utf-8", "surrogatepass")
    if name == "x-user-defined":
        return bytes([code_point - 0xF780 + 0x80]) if 0xF780 <= code_point <= 0xF7FF else None
    if name in ("gbk", "gb18030"):
        return _gb18030_encode(code_point, name == "gbk")
    if name == "big5":
        pointer = big5_pointers().get(code_point)
        if pointer is None:
            return None
        trailing = pointer % 157
        return bytes([pointer // 157 + 0x81, trailing + (0x40 if trailing < 0x3F else 0x62)])
    if name == "euc-jp":
        if code_point == 0xA5:
            return b"\x5c"
        if code_point == 0x203E:
            return b"\x7e"
        if 0xFF61 <= code_point <= 0xFF9F:
            return bytes([0x8E, code_point - 0xFF61 + 0xA1])
        code_point = 0xFF0D if code_point == 0x2212 else code_point
        pointer = index_pointers("jis0208").get(code_point)
        return None if pointer is None else bytes([pointer // 94 + 0xA1, pointer % 94 + 0xA1])
    if name == "iso-2022-jp":
        out = encode(chr(code_point), name)
        return None if any(isinstance(item, int) for item in out) else b"".join(out)  # type: ignore[arg-type]
    if name == "shift_jis":
        if code_point == 0x80:
            return b"\x80"
        if code_point == 0xA5:
            return b"\x5c"
        if code_point == 0x203E:
            return b"\x7e"
        if 0xFF61 <= code_point <= 0xFF9F:
            return bytes([code_point - 0xFF61 + 0xA1])
        code_point = 0xFF0D if code_point == 0x2212 else code_point
        pointer = shift_jis_pointers().get(code_point)
        if pointer is None:
            return None
        leading, trailing = divmod(pointer, 188)
        return bytes([leading + (0x81 if leading < 0x1F else 0xC1),
                      trailing + (0x40 if trailing < 0x3F else 0x41)])
    if name == "euc-kr":
        pointer = index_pointers("euc-kr").get(code_point)
        return None if pointer is None else bytes([pointer // 190 + 0x81, pointer % 190 + 0x41])
    pointer = index_pointers(name).get(code_point)  # single-byte
    return None if pointer is None else bytes([pointer + 0x80])


_GB18030_SIDE = {0xE78D: b"\xa6\xd9", 0xE78E: b"\xa6\xda", 0xE78F: b"\xa6\xdb",
                 0xE790: b"\xa6\xdc", 0xE791: b"\xa6\xdd", 0xE792: b"\xa6\xde",
                 0xE793: b"\xa6\xdf", 0xE794: b"\xa6\xec", 0xE795: b"\xa6\xed",
                 0xE796: b"\xa6\xf3", 0xE81E: b"\xfe\x59", 0xE826: b"\xfe\x61",
                 0xE82B: b"\xfe\x66", 0xE82C: b"\xfe\x67", 0xE832: b"\xfe\x6d",
                 0xE843: b"\xfe\x7e", 0xE854: b"\xfe\x90", 0xE864: b"\xfe\xa0"}


def _gb18030_encode(code_point: int, is_gbk: bool) -> bytes | None:
    if code_point == 0xE5E5:
        return None
    if is_gbk and code_point == 0x20AC:
        return b"\x80"
    if code_point in _GB18030_SIDE:
        return _GB18030_SIDE[code_point]
    pointer = index_pointers("gb18030").get(code_point)
    if pointer is not None:
        trailing = pointer % 190
        return bytes([pointer // 190 + 0x81, trailing + (0x40 if trailing < 0x3F else 0x41)])
    if is_gbk:
        return None
    pointer = ranges_pointer(code_point)
    byte1, pointer = divmod(pointer, 12600)
    byte2, pointer = divmod(pointer, 1260)
    byte3, byte4 = divmod(pointer, 10)
    return bytes([byte1 + 0x81, byte2 + 0x30, byte3 + 0x81, byte4 + 0x30])


class Iso2022JpEncoder:
    """The standard's ISO-2022-JP encoder: its state spans code points (and errors)."""

    def __init__(self) -> None:
        self.state = "ascii"

    def handle(self, code_point: int | None, queue: list[int]) -> bytes | int | None:
        """Bytes, an error's code point (an int), or None for "finished"."""
        state = self.state
        if code_point is None:
            self.state = "ascii"
            return b"\x1b(B" if state != "ascii" else None
        if state in ("ascii", "roman") and code_point in (0x0E, 0x0F, 0x1B):
            return FFFD
        if state == "ascii" and code_point < 0x80:
            return bytes([code_point])
        if state == "roman" and ((code_point < 0x80 and code_point not in (0x5C, 0x7E))
                                 or code_point in (0xA5, 0x203E)):
            return bytes([{0xA5: 0x5C, 0x203E: 0x7E}.get(code_point, code_point)])
        if code_point < 0x80:
            queue.append(code_point)
            self.state = "ascii"
            return b"\x1b(B"
        if code_point in (0xA5, 0x203E):
            queue.append(code_point)
            self.state = "roman"
            return b"\x1b(J"
        code_point = 0xFF0D if code_point == 0x2212 else code_point
        if 0xFF61 <= code_point <= 0xFF9F:
            code_point = index("iso-2022-jp-katakana")[code_point - 0xFF61]
        pointer = index_pointers("jis0208").get(code_point)
        if pointer is None:
            if state == "jis0208":
                queue.append(code_point)
                self.state = "ascii"
                return b"\x1b(B"
            return code_point
        if state != "jis0208":
            queue.append(code_point)
            self.state = "jis0208"
            return b"\x1b$B"
        return bytes([pointer // 94 + 0x21, pointer % 94 + 0x21])


def encode(text: str, name: str) -> list[bytes | int]:
    """``text`` through the standard's encoder for ``name`` (an output encoding) to the end:
    bytes, and for each error its code point (the URL Standard's loop over "encode or fail"
    with one encoder: it goes on after an error in the state it was in)."""
    out: list[bytes | int] = []
    if name != "iso-2022-jp":
        for c in text:
            data = encode_one(ord(c), name)
            out.append(ord(c) if data is None else data)
        return out
    encoder = Iso2022JpEncoder()
    queue = [ord(c) for c in reversed(text)]
    while True:
        result = encoder.handle(queue.pop() if queue else None, queue)
        if result is None:
            return out
        out.append(result)


def query_percent_encoded(text: str, name: str) -> str:
    """``text`` (a special URL's query) as the URL Standard's "percent-encode after encoding"
    gives it with the special-query percent-encode set: each error "&#N;", escaped. ``name``:
    the page's encoding; its output encoding is UTF-8 for UTF-16 and replacement."""
    name = "utf-8" if name in ("utf-16be", "utf-16le", "replacement") else name
    return "".join(
        f"%26%23{item}%3B" if isinstance(item, int) else
        "".join(chr(b) if 0x20 < b < 0x7F and b not in b"\"#<>'" else f"%{b:02X}"
                for b in item)
        for item in encode(text, name))
