"""``minicrawl bloom``: size, table, plot, measure."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from minicrawl.cli.bloom import main, measure_fp, synthetic_urls, table_rows
from minicrawl.core import visited as core
from minicrawl.visited.sizing import bits_for, optimal_bits


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_size(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "size", "--n", "100000000", "--p", "0.001")
    assert code == 0
    # First what the crawler allocates (the core's m for k = 8) and its rate at n: p itself.
    crawler = f"bits m, k=8             {core.bits_for(100_000_000, 0.001):,}  = 174.1 MiB"
    assert out.splitlines()[2].startswith(crawler)
    assert "expected f, k=8         0.00100" in out
    # Then the lesson: the optimal k needs fewer bits, and 8 hashes at that m miss p by 10 %.
    assert "9.97 -> 10" in out
    assert f"{optimal_bits(100_000_000, 0.001):,}  = 171.4 MiB" in out and "0.00110" in out
    assert "bits for f <= p at k=" not in out
    code, out = run(capsys, "size", "--n", "100000000", "--p", "0.001", "--k", "10")
    assert f"bits for f <= p at k=10 {bits_for(100_000_000, 0.001, 10):,}" in out


def test_size_accepts_scientific_notation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "size", "--n", "1e6", "--p", "0.01")
    assert code == 0 and f"{core.bits_for(1_000_000, 0.01):,}" in out


@pytest.mark.parametrize("argv", [
    ["size", "--n", "0", "--p", "0.1"], ["size", "--n", "10", "--p", "1.5"],
    ["size", "--n", "ten", "--p", "0.1"], ["measure", "--hash", "md5"], [], ["nope"],
    ["measure", "--hash", "default"], ["measure", "--k", "7"],
])
def test_usage_errors_return_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(argv) == 2
    assert "minicrawl bloom" in capsys.readouterr().err


def test_help_returns_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "usage: minicrawl bloom" in capsys.readouterr().out


def parse_table(out: str) -> dict[tuple[int, int], str]:
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["m/n"])
    cells = {}
    for line in lines[header + 1:]:
        parts = line.split()
        for k, value in enumerate(parts[3:], start=1):
            cells[int(parts[0]), k] = value
    return cells


def test_table_matches_published_values(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "table")
    assert code == 0
    cells = parse_table(out)
    assert set(cells) == {(r, k) for r in range(2, 33) for k in range(1, 9)}
    # Values of the classic table (Fan, Cao, Almeida & Broder, 2000), three significant digits.
    assert cells[10, 8] == "0.00846"
    assert cells[20, 8] == "0.000140"
    assert cells[4, 3] == "0.147"
    assert cells[2, 1] == "0.393"
    assert cells[8, 3] == "0.0306"
    for (r, k), text in cells.items():
        assert float(text) == pytest.approx((1 - math.exp(-k / r)) ** k, rel=5e-3)


def test_table_optimal_k_per_row() -> None:
    rows = {r: (k_real, k_best, fs) for r, k_real, k_best, fs in table_rows()}
    assert rows[10][0] == pytest.approx(6.93, abs=0.01) and rows[10][1] == 7
    assert rows[2][1] == 1 and rows[5][1] == 3
    for _k_real, k_best, fs in rows.values():
        if k_best <= 8:  # f is unimodal in k: the best integer k has the row's minimum
            assert fs[k_best - 1] == min(fs)


def test_plot_writes_a_real_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import matplotlib.image

    path = tmp_path / "curves.png"
    code, out = run(capsys, "plot", str(path))
    assert code == 0 and str(path) in out
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000
    img = matplotlib.image.imread(path)
    assert img.shape[0] > 400 and img.shape[1] > 600
    # Non-trivial: many distinct colours (eight curves, text, grid), not a blank canvas.
    colours = {tuple(px) for px in (img.reshape(-1, img.shape[2])[::37] * 255).astype(int)}
    assert len(colours) > 50


def test_plot_without_matplotlib_says_so(tmp_path: Path) -> None:
    # A child interpreter in which importing matplotlib fails, as when it is not installed.
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from minicrawl.cli.bloom import main\n"
            f"sys.exit(main(['plot', {str(tmp_path / 'x.png')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], timeout=60)
    assert done.returncode == 2
    assert "matplotlib is not installed" in done.stderr
    assert "minicrawl[plot]" in done.stderr
    assert not (tmp_path / "x.png").exists()


def test_synthetic_corpus_is_realistic_distinct_and_reproducible() -> None:
    urls = synthetic_urls(20_000, seed=7)
    assert urls == synthetic_urls(20_000, seed=7)
    assert urls != synthetic_urls(20_000, seed=8)
    assert len(set(urls)) == len(urls)
    hosts = {u.split("/")[2] for u in urls}
    assert len(hosts) > 150
    assert any("%C3%BC" in u for u in urls)  # percent-encoded non-ASCII
    assert any(len(u) > 150 for u in urls)  # long queries
    assert all(u.isascii() for u in urls)
    near = [u for u in urls if "/article/" in u]
    assert len(near) > 1000


def test_measure_crawlers_family_within_10_percent_of_theory() -> None:
    # The acceptance test from the issue: n = 1,000,000, m/n = 10, k = 8, fixed corpus seed.
    r = measure_fp("blake2b", n=1_000_000, ratio=10, k=8, seed=1)
    assert r.m == 10_000_000 and r.k == 8 and r.probes == 1_000_000
    assert r.theoretical == pytest.approx(0.00846, rel=1e-3)
    assert 0.9 <= r.ratio <= 1.1
    assert r.fill_ratio == pytest.approx(r.fill_theory, rel=0.01)


def test_measure_teaching_families_are_visibly_worse() -> None:
    # Smaller run: enough to see the damage without slowing the suite.
    good = measure_fp("blake2b", n=50_000, ratio=16, seed=3)
    assert good.m == 800_000  # as asked: the crawler's family takes any m
    for family in ("java", "scrapy-redis"):
        bad = measure_fp(family, n=50_000, ratio=16, seed=3)
        assert bad.m == 1 << 20  # 800,000 bits rounded up to a power of two
        assert bad.ratio > 2 * max(good.ratio, 1.0)
        assert bad.fill_ratio < 0.9 * bad.fill_theory  # their hashes pile URLs on few bits
        # Any k for a teaching family: fewer hashes, other numbers.
        assert measure_fp(family, n=5_000, ratio=16, k=3, seed=3).k == 3


def test_measure_command_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "measure", "--n", "20000", "--ratio", "10", "--seed", "2")
    assert code == 0
    for label in ("measured f", "theoretical f", "ratio", "m/n = 10.00", "k = 8", "blake2b"):
        assert label in out
