"""Wrong seed input (issue 39), as a table, the harness of tests/test_wrong_inputs.py: each case
runs ``python run.py …`` in a directory holding the files it names and checks the exit status,
stderr (at most two lines, no traceback, what it should say said once), and that every file
there is left as it was.

A compressed seed file is read through its decompressor (gzip, bzip2, xz: what a user hands
over); a UTF-16 or UTF-32 file with a byte-order mark is decoded; binary data is refused in one
line, not printed as thousands of "URLs"; a line that is not UTF-8 or holds a lone surrogate is
one bad seed (file:line), never fetched as a code point that cannot be in a URL.
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import hashlib
import lzma
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_wrong_inputs import PASSWORD, SEED, run_all

from minicrawl import Crawler
from minicrawl.seeds import NoValidSeeds

SEED2 = "http://127.0.0.1:9/two"
TEXT = f"{SEED}\n# a comment\n{SEED2}\n"


@dataclass
class Case:
    args: list[str]
    code: int
    says: str | None  # appears exactly once in stderr; None: stderr is empty


def seeds(name: str, code: int = 0, says: str | None = None) -> Case:
    return Case([name, "--quiet"], code, says)


# name → file content, written by prepare()
FILES: dict[str, bytes] = {
    "seeds.txt.gz": gzip.compress(TEXT.encode()),
    "seeds.bz2": bz2.compress(TEXT.encode()),
    "seeds.xz": lzma.compress(TEXT.encode()),
    "bad.gz": gzip.compress(b"not a url\n"),
    "empty.gz": gzip.compress(b""),
    "cut.gz": gzip.compress(TEXT.encode() * 2000)[:300],
    "garbage.gz": b"\x1f\x8b" + b"\x00" * 40,
    "seeds.zip": b"PK\x03\x04" + b"\x00" * 60,
    "seeds.zst": b"\x28\xb5\x2f\xfd" + b"\x00" * 60,
    "utf16le.txt": codecs.BOM_UTF16_LE + TEXT.encode("utf-16-le"),
    "utf16be.txt": codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"),
    "utf32.txt": TEXT.encode("utf-32"),
    "utf16-gz.txt.gz": gzip.compress(TEXT.encode("utf-16")),
    "nobom16.txt": TEXT.encode("utf-16-le"),
    "binary.bin": bytes(range(256)) * 8,
    "ff-only.txt": b"http://127.0.0.1:9/\xff\n",
    "ff-among.txt": f"{SEED}\n".encode() + b"http://127.0.0.1:9/\xff\n" + f"{SEED2}\n".encode(),
    "surrogate8.txt": b"http://127.0.0.1:9/\xed\xa0\x80\n",
    "surrogate16.txt": codecs.BOM_UTF16_LE + "http://127.0.0.1:9/".encode("utf-16-le")
    + b"\x00\xd8" + "\n".encode("utf-16-le"),
    "latin1-comment.txt": b"# caf\xe9 list\n" + f"{SEED}\n".encode(),
    "cut16.txt": codecs.BOM_UTF16_LE + f"{SEED}\n".encode("utf-16-le") + b"h",
}

CASES: dict[str, Case] = {
    "gzip seed file is read": seeds("seeds.txt.gz"),
    "bzip2 seed file is read": seeds("seeds.bz2"),
    "xz seed file is read": seeds("seeds.xz"),
    "gzip of bad lines": seeds("bad.gz", 2, "bad.gz:1: 'not a url' is not a valid http(s) URL"),
    "empty gzip": seeds("empty.gz", 2, "empty.gz: no seed URL in this file"),
    "truncated gzip": seeds("cut.gz", 0, "cut.gz: cannot read seed file: Compressed file ended"),
    "gzip magic, garbage after": seeds("garbage.gz", 2, "garbage.gz: a gzip file that cannot"),
    "zip archive": seeds("seeds.zip", 2, "seeds.zip: is a zip archive, not a text file of URLs"),
    "zstd file": seeds("seeds.zst", 2, "seeds.zst: is zstd-compressed, not a text file of URLs"),
    "UTF-16 LE with BOM": seeds("utf16le.txt"),
    "UTF-16 BE with BOM": seeds("utf16be.txt"),
    "UTF-32 with BOM": seeds("utf32.txt"),
    "UTF-16 inside gzip": seeds("utf16-gz.txt.gz"),
    "UTF-16 without BOM": seeds("nobom16.txt", 2, "nobom16.txt: looks like UTF-16 without a"),
    "binary file": seeds("binary.bin", 2, "binary.bin: holds binary data (a NUL byte)"),
    "byte ff the only seed": seeds("ff-only.txt", 2,
                                   "ff-only.txt:1: not UTF-8 text (byte \\xff at column 20)"),
    "byte ff among good seeds": seeds("ff-among.txt", 0, "ff-among.txt:2: not UTF-8 text"),
    "UTF-8 of a surrogate": seeds("surrogate8.txt", 2, "surrogate8.txt:1: not UTF-8 text "
                                  "(byte \\xed at column 20)"),
    "lone surrogate in UTF-16": seeds("surrogate16.txt", 2, "(a lone surrogate \\ud800)"),
    "comment not in UTF-8": seeds("latin1-comment.txt"),
    "UTF-16 cut mid-character": seeds("cut16.txt", 0, "cut16.txt: cannot read seed file"),
    "byte ff in an argument": Case(["http://127.0.0.1:9/\udcff", "--quiet"], 2,
                                   "(byte \\xff is not UTF-8)"),
}


def prepare(directory: Path) -> dict[str, str]:
    """Write FILES into ``directory``; their digests, to find any change after."""
    for name, content in FILES.items():
        (directory / name).write_bytes(content)
    return digests(directory)


def digests(directory: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in directory.iterdir()}


def check(case: Case, done: subprocess.CompletedProcess) -> None:
    err = done.stderr
    assert done.returncode == case.code, err
    assert "Traceback" not in err and PASSWORD not in err + done.stdout
    assert err.count("\n") <= 2, f"more than two lines: {err!r}"
    if case.says is None:
        assert err == "", err
    else:
        assert err.count(case.says) == 1, err
    if case.code == 2:
        assert done.stdout == ""


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    directory = tmp_path_factory.mktemp("wrong-seeds")
    before = prepare(directory)
    done = run_all(CASES, directory)  # type: ignore[arg-type]  (its Case has .args: enough)
    assert digests(directory) == before, "a case changed or left a file"
    return done


@pytest.mark.parametrize("name", list(CASES))
def test_wrong_seed_input_is_one_clear_line(name, results):
    check(CASES[name], results[name])


def test_seed_table_covers_each_kind():
    assert len(CASES) >= 20


def test_a_bad_byte_seed_is_never_fetched(server, tmp_path):
    """The good seeds of a file are crawled; the line with byte \\xff is told and not fetched
    (it went out as /%EF%BF%BD: a U+FFFD that was never in the file)."""
    server.pages.update({"/a": b"", "/b": b""})
    seeds_file = tmp_path / "s.txt"
    seeds_file.write_bytes(f"{server.url('/a')}\n{server.url('/x')}\xff\n{server.url('/b')}\n"
                           .encode("utf-8", "surrogateescape").replace(b"\xc3\xbf", b"\xff"))
    done = subprocess.run(["python", str(Path(__file__).parent.parent / "run.py"),
                           str(seeds_file), "--quiet", "--ignore-robots", "--delay", "0"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"{seeds_file}:2: not UTF-8 text (byte \\xff" in done.stderr
    assert set(server.fetch_counts()) == {"/a", "/b"}


@pytest.mark.parametrize("seed, says", [
    ("http://example.org/\ud800", "a lone surrogate \\ud800"),
    ("http://example.org/\udcff", "byte \\xff is not UTF-8"),
])
def test_the_library_refuses_a_surrogate_seed(seed, says):
    with pytest.raises(NoValidSeeds, match=says.replace("\\", "\\\\")):
        Crawler([seed])
