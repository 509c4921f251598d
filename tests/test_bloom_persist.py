"""save/load round trip and every broken-file case; union and intersection."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from minicrawl.bloom import BloomFileError, BloomFilter

HEADER = struct.Struct("<8sHHIQQQd16s")  # the documented layout, spelled out independently


def filled(n: int = 2000, **kw: object) -> BloomFilter:
    bf = BloomFilter(capacity=5000, error_rate=0.01, **kw)  # type: ignore[arg-type]
    bf.add_many(f"https://example.org/{i}" for i in range(n))
    return bf


@pytest.mark.parametrize("family", ["default", "java", "scrapy-redis"])
def test_round_trip(tmp_path: Path, family: str) -> None:
    bf = filled(hash=family)
    path = tmp_path / "v.bloom"
    bf.save(path)
    back = BloomFilter.load(path)
    assert (back.bits, back.hashes, back.hash_family, back.count, back.capacity,
            back.error_rate) == (bf.bits, bf.hashes, family, bf.count, bf.capacity, bf.error_rate)
    assert back._bits == bf._bits
    assert all(f"https://example.org/{i}" in back for i in range(2000))
    # The loaded filter keeps working, batch path included.
    assert back.add("https://example.org/0") is False
    assert back.add_many(["https://new.example/"]) == [True]
    assert path.stat().st_size == HEADER.size + 4 + bf.nbytes + 4


def test_odd_bit_count_round_trip(tmp_path: Path) -> None:
    bf = BloomFilter(bits=1003, hashes=3)
    bf.add_many(str(i) for i in range(100))
    bf.save(tmp_path / "odd")
    assert BloomFilter.load(tmp_path / "odd")._bits == bf._bits


def test_save_is_atomic_and_leaves_no_temp(tmp_path: Path) -> None:
    path = tmp_path / "v.bloom"
    filled(10).save(path)
    filled(20).save(path)  # replaces, never appends
    assert BloomFilter.load(path).count == 20
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v.bloom"]


def test_failed_save_removes_its_temp_file(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "keep").write_text("x")  # os.replace cannot put a file over a non-empty dir
    with pytest.raises(OSError):
        filled(10).save(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    assert (target / "keep").read_text() == "x"


# --------------------------------------------------------------------------- broken files


@pytest.fixture()
def saved(tmp_path: Path) -> tuple[Path, bytes]:
    path = tmp_path / "v.bloom"
    filled().save(path)
    return path, path.read_bytes()


def rewrite_header(blob: bytes, **changes: object) -> bytes:
    """The file with some header fields changed and the header checksum made valid again."""
    names = ["magic", "version", "k", "flags", "m", "count", "capacity", "error_rate", "family"]
    fields = dict(zip(names, HEADER.unpack_from(blob), strict=True))
    fields.update(changes)
    header = HEADER.pack(*(fields[n] for n in names))
    return header + struct.pack("<I", zlib.crc32(header)) + blob[HEADER.size + 4:]


def load_bytes(path: Path, blob: bytes) -> BloomFilter:
    path.write_bytes(blob)
    return BloomFilter.load(path)


@pytest.mark.parametrize("cut", [0, 3, 20, HEADER.size + 2, HEADER.size + 100, -1])
def test_truncated(saved: tuple[Path, bytes], cut: int) -> None:
    path, blob = saved
    with pytest.raises(BloomFileError, match="truncated"):
        load_bytes(path, blob[:cut])


def test_trailing_data(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    with pytest.raises(BloomFileError, match="trailing"):
        load_bytes(path, blob + b"x")


def test_wrong_magic(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    with pytest.raises(BloomFileError, match="magic"):
        load_bytes(path, b"PNG\0\0\0\0\0" + blob[8:])


def test_wrong_version(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    with pytest.raises(BloomFileError, match="version 2"):
        load_bytes(path, rewrite_header(blob, version=2))


def test_corrupt_bits(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    i = HEADER.size + 4 + 100
    with pytest.raises(BloomFileError, match="corrupt bits"):
        load_bytes(path, blob[:i] + bytes([blob[i] ^ 0x10]) + blob[i + 1:])


def test_corrupt_header(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    i = 30  # inside the count field
    with pytest.raises(BloomFileError, match="corrupt header"):
        load_bytes(path, blob[:i] + bytes([blob[i] ^ 1]) + blob[i + 1:])


@pytest.mark.parametrize("changes,words", [
    ({"k": 0}, "k=0"),
    ({"k": 99}, "k=99"),
    ({"m": 0}, "m=0"),
    ({"family": b"md5"}, "unknown hash family"),
    ({"family": b"java"}, "power of two"),
    ({"flags": 4}, "flags"),
    ({"capacity": 0}, "capacity"),
    ({"error_rate": 1.5}, "error rate"),
    ({"count": 1 << 40}, "count"),
])
def test_bad_parameters(saved: tuple[Path, bytes], changes: dict, words: str) -> None:
    path, blob = saved
    with pytest.raises(BloomFileError, match="bad parameter") as err:
        load_bytes(path, rewrite_header(blob, **changes))
    assert words in str(err.value)


def test_m_mismatch_is_reported_as_size_problem(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    m = HEADER.unpack_from(blob)[4]
    with pytest.raises(BloomFileError, match="truncated"):
        load_bytes(path, rewrite_header(blob, m=m * 2))


def test_padding_bits_set(tmp_path: Path) -> None:
    bf = BloomFilter(bits=1003, hashes=3)
    path = tmp_path / "odd"
    bf.save(path)
    blob = bytearray(path.read_bytes())
    last = HEADER.size + 4 + bf.nbytes - 1
    blob[last] |= 0x80
    payload = bytes(blob[HEADER.size + 4:HEADER.size + 4 + bf.nbytes])
    blob[-4:] = struct.pack("<I", zlib.crc32(payload))
    with pytest.raises(BloomFileError, match="padding"):
        load_bytes(path, bytes(blob))


def test_error_is_a_value_error_naming_the_file(saved: tuple[Path, bytes]) -> None:
    path, blob = saved
    with pytest.raises(ValueError, match=str(path.name)):
        load_bytes(path, blob[:10])


# --------------------------------------------------------------------------- set operations


def test_union_and_intersection() -> None:
    a = BloomFilter(capacity=10_000, error_rate=0.001)
    b = BloomFilter(capacity=10_000, error_rate=0.001)
    a.add_many(f"a{i}" for i in range(3000))
    b.add_many(f"b{i}" for i in range(3000))
    common = [f"c{i}" for i in range(1000)]
    a.add_many(common)
    b.add_many(common)
    u = a | b
    assert u._bits == (a._bits | b._bits)
    assert all(x in u for x in [f"a{i}" for i in range(3000)] + [f"b{i}" for i in range(3000)])
    assert u.count == pytest.approx(7000, rel=0.02)
    i = a & b
    assert i._bits == (a._bits & b._bits)
    assert all(x in i for x in common)
    assert sum(f"a{j}" in i for j in range(3000)) < 30
    assert a.union(b)._bits == u._bits and a.intersection(b)._bits == i._bits
    # The operands are unchanged and the results are independent filters.
    u.add("only-in-union")
    assert "only-in-union" not in a


@pytest.mark.parametrize("other", [
    BloomFilter(bits=1000, hashes=8),
    BloomFilter(bits=1024, hashes=7),
    BloomFilter(bits=1024, hashes=8, hash="java"),
])
def test_set_operations_need_same_parameters(other: BloomFilter) -> None:
    a = BloomFilter(bits=1024, hashes=8)
    with pytest.raises(ValueError, match="different parameters"):
        a | other
    with pytest.raises(ValueError, match="different parameters"):
        a & other


def test_set_operations_with_other_types() -> None:
    with pytest.raises(TypeError):
        BloomFilter(bits=64, hashes=2) | {"x"}  # type: ignore[operator]
