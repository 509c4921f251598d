"""save/load round trip and every broken-file case, the file of an older minicrawl refused (and
rebuilt from the database when it is a crawl's checkpoint); union and intersection."""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from minicrawl.visited import BloomFileError, BloomFilter
from minicrawl.visited.bloom import OutdatedBloomFile
from minicrawl.visited.sizing import optimal_bits

ROOT = Path(__file__).resolve().parent.parent

HEADER = struct.Struct("<8sHHIQQQd16s")  # the documented layout, spelled out independently


def filled(n: int = 2000) -> BloomFilter:
    bf = BloomFilter(capacity=5000, error_rate=0.01)
    bf.add_many(f"https://example.org/{i}" for i in range(n))
    return bf


def test_round_trip(tmp_path: Path) -> None:
    bf = filled()
    path = tmp_path / "v.bloom"
    bf.save(path)
    back = BloomFilter.load(path)
    assert (back.bits, back.hashes, back.hash_family, back.count, back.capacity,
            back.error_rate) == (bf.bits, 8, "blake2b", bf.count, bf.capacity, bf.error_rate)
    # The file records the core's family and k, in format 2.
    magic, version, k, _, m, _, _, _, family = HEADER.unpack_from(path.read_bytes())
    assert (magic, version, k, m, family.rstrip(b"\0")) == (b"MCBLOOM\0", 2, 8, bf.bits,
                                                             b"blake2b")
    assert back._bits == bf._bits
    assert all(f"https://example.org/{i}" in back for i in range(2000))
    # The loaded filter keeps working, batch path included.
    assert back.add("https://example.org/0") is False
    assert back.add_many(["https://new.example/"]) == [True]
    assert path.stat().st_size == HEADER.size + 4 + bf.nbytes + 4


def test_odd_bit_count_round_trip(tmp_path: Path) -> None:
    bf = BloomFilter(bits=1003)
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
    with pytest.raises(BloomFileError, match="version 3"):
        load_bytes(path, rewrite_header(blob, version=3))


def old_format(path: Path) -> bytes:
    """A file as minicrawl wrote it before the core's positions (format 1, family "default",
    MurmurHash3 double hashing, m sized for the optimal k): valid in every other respect."""
    bf = BloomFilter(bits=71_888)  # what optimal_bits(5000, 0.001) gave
    bf.add_many(f"https://example.org/{i}" for i in range(2000))
    bf.save(path)
    return rewrite_header(path.read_bytes(), version=1, family=b"default")


def test_a_file_of_the_old_family_is_refused_in_one_line(tmp_path: Path) -> None:
    """Its bits are at MurmurHash3 positions: read as the core's they would answer nonsense
    (new pages taken for seen, seen ones fetched again), so it is never loaded."""
    path = tmp_path / "v.bloom"
    with pytest.raises(OutdatedBloomFile) as err:
        load_bytes(path, old_format(path))
    message = str(err.value)
    assert "\n" not in message and str(path) in message and "older minicrawl" in message
    assert isinstance(err.value, BloomFileError)  # a broken file to whoever does not care why


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
    ({"k": 7}, "k=7, not the core's 8"),
    ({"m": 0}, "m must be at least 1, got 0"),
    ({"family": b"md5"}, "unknown hash family"),
    ({"family": b"default"}, "unknown hash family"),
    ({"family": b"java"}, "unknown hash family"),
    ({"flags": 4}, "flags"),
    ({"capacity": 0}, "capacity must be at least 1, got 0"),
    ({"error_rate": 1.5}, "error_rate must be between 0 and 1 (exclusive), got 1.5"),
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
    bf = BloomFilter(bits=1003)
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


@pytest.mark.parametrize("other", [BloomFilter(bits=1000), BloomFilter(bits=1025)])
def test_set_operations_need_same_parameters(other: BloomFilter) -> None:
    a = BloomFilter(bits=1024)
    with pytest.raises(ValueError, match="different parameters"):
        a | other
    with pytest.raises(ValueError, match="different parameters"):
        a & other


def test_set_operations_with_other_types() -> None:
    with pytest.raises(TypeError):
        BloomFilter(bits=64) | {"x"}  # type: ignore[operator]


# --------------------------------------------------------------------------- a crawl's state


def run_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "run.py"), *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120)


def test_a_state_whose_checkpoint_an_older_minicrawl_wrote_is_rebuilt_in_one_line(
        make_site, tmp_path: Path) -> None:
    """run.py resuming a --state dir whose visited.bloom is of format 1 (MurmurHash3 positions,
    sized for the optimal k) says so in one line and rebuilds Visited from crawl.db, which
    holds every URL the filter held: the crawl goes on, no page is fetched twice, none lost.
    The old file is made with every bit set: read as this minicrawl's filter, every link would
    look seen and the resume would fetch nothing."""
    server, site = make_site(pages=60)
    state = tmp_path / "state"
    fast = ["--delay", "0", "--threads", "4", "--per-host", "4", "--quiet", "--state",
            str(state), "--visited", "bloom", "--error-rate", "0.001"]  # a checkpointed filter
    first = run_py(server.url("/"), *fast, "--max-pages", "15")
    assert first.returncode == 0, first.stderr
    path = state / "visited.bloom"
    m = optimal_bits(1_000_000, 0.001)  # the run's --expected-urls and --error-rate, then
    ones = b"\xff" * (m // 8) + bytes([(1 << (m % 8)) - 1] if m % 8 else [])
    header = HEADER.pack(b"MCBLOOM\0", 1, 8, 0, m, 5000, 1_000_000, 0.001, b"default")
    path.write_bytes(header + struct.pack("<I", zlib.crc32(header)) + ones
                     + struct.pack("<I", zlib.crc32(ones)))

    second = run_py(server.url("/"), *fast)
    assert second.returncode == 0, second.stderr
    assert "Traceback" not in second.stderr
    said = [line for line in second.stderr.splitlines() if "older minicrawl" in line]
    assert len(said) == 1 and "rebuilding Visited from crawl.db" in said[0], second.stderr
    counts = server.fetch_counts()
    assert set(counts) == set(site.reachable()) and max(counts.values()) == 1
    assert HEADER.unpack_from(path.read_bytes())[1] == 2  # checkpointed anew, format 2

    third = run_py(server.url("/"), *fast)  # complete: nothing to do, nothing to say about it
    assert third.returncode == 0 and "older minicrawl" not in third.stderr
