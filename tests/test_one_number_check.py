"""Issue 45, one number check: every bound on a user's number goes through
``minicrawl.checks.check_number`` (or its rule, ``number_problem``, where a caller words its own
line), so the same wrong number is told the same way wherever it is given. The ``0 < p < 1``
rule of a false-positive rate was written in five places; it is one now."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from minicrawl.checks import check_number, number_problem
from minicrawl.cli.bloom import main as bloom_main
from minicrawl.core.visited import bits_for as core_bits_for
from minicrawl.options import Options
from minicrawl.visited import BloomFilter
from minicrawl.visited.scalable import ScalableBloomFilter
from minicrawl.visited.sizing import bits_for, capacity_for, check_np, optimal_bits

PACKAGE = Path(__file__).resolve().parent.parent / "minicrawl"
RANGE = "must be between 0 and 1 (exclusive), got 1.5"

# Each place a user gives a rate: the same words for the same wrong value.
RATES: dict[str, Callable[[float], object]] = {
    "--error-rate": lambda p: Options(error_rate=p),
    "the core's bits_for": lambda p: core_bits_for(1000, p),
    "bloom.sizing.check_np": lambda p: check_np(1000, p),
    "bloom.sizing.bits_for": lambda p: bits_for(1000, p, 8),
    "bloom.sizing.optimal_bits": lambda p: optimal_bits(1000, p),
    "bloom.sizing.capacity_for": lambda p: capacity_for(8000, p),
    "BloomFilter": lambda p: BloomFilter(1000, p),
    "ScalableBloomFilter": lambda p: ScalableBloomFilter(1000, p),
    "ScalableBloomFilter tightening": lambda p: ScalableBloomFilter(1000, 0.01, tightening=p),
}


@pytest.mark.parametrize("name", list(RATES))
@pytest.mark.parametrize("value, says", [(1.5, RANGE), (0.0, "between 0 and 1 (exclusive)"),
                                         (float("nan"), "must be a finite number")])
def test_a_rate_is_checked_by_one_rule(name: str, value: float, says: str) -> None:
    with pytest.raises(ValueError) as err:
        RATES[name](value)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_the_bloom_command_says_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    assert bloom_main(["size", "--n", "10", "--p", "1.5"]) == 2
    line = capsys.readouterr().err
    assert f"--p: {RANGE}" in line and line.count("\n") == 1


def test_the_rule() -> None:
    assert number_problem(0.5, above=0, below=1) is None
    assert number_problem(1, above=0, below=1) == "must be between 0 and 1 (exclusive)"
    assert number_problem(0, low=1) == "must be at least 1"
    assert number_problem(0.0, above=0) == "must be greater than 0"
    assert number_problem(2**31, high=2**30) == "must be at most 1073741824"
    assert number_problem(1.0, below=1) == "must be less than 1"
    assert number_problem(float("inf"), low=0) == "must be a finite number"
    assert number_problem(10**400, high=10) == "must be at most 10"
    with pytest.raises(ValueError, match=r"^--threads must be at least 1, got 0$"):
        check_number("--threads", 0, low=1)


def test_no_rate_rule_written_outside_the_check() -> None:
    """No ``0 < p < 1`` of its own anywhere but minicrawl/checks.py."""
    own = re.compile(r"\b0(?:\.0)? < \w+ < 1(?:\.0)?\b")
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in sorted(PACKAGE.rglob("*.py"))
             if path.name != "checks.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if own.search(line)]
    assert found == []
