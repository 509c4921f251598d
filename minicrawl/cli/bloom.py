"""``minicrawl bloom``: size a filter, print the classic table, plot the curves, measure real rates.

    minicrawl bloom size --n 100000000 --p 0.001
    minicrawl bloom table
    minicrawl bloom plot curves.png
    minicrawl bloom measure --hash java --n 1000000 --ratio 10

``measure`` compares the crawler's hash family (the core's positions, what every Visited of
run.py uses) with two teaching families; those live here and in :mod:`minicrawl.visited.hashes`
only, never in the crawl.

The top-level CLI passes everything after ``bloom`` to :func:`main`.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar
from urllib.parse import quote

from minicrawl.checks import check_number, number_problem, shown
from minicrawl.cli.outpaths import OutputPathError, cannot_write, check_output_file
from minicrawl.core.visited import HASHES
from minicrawl.core.visited import bits_for as crawler_bits
from minicrawl.errors import OneLineParser
from minicrawl.visited.batch import FAMILY, _byte_and_mask
from minicrawl.visited.bloom import BloomFilter
from minicrawl.visited.hashes import FAMILIES, family_bits, get_family
from minicrawl.visited.sizing import bits_for, false_positive_rate, optimal_bits, optimal_hashes

if TYPE_CHECKING:
    import numpy as np

__all__ = ["Measurement", "main", "measure_fp", "synthetic_urls", "table_rows"]

PROG = "minicrawl bloom"


# --------------------------------------------------------------------------- synthetic URLs

_WORDS = ("news", "shop", "data", "blue", "river", "cloud", "pixel", "north", "green", "metro",
          "alpha", "delta", "urban", "solar", "crypto", "garden", "travel", "health", "sport",
          "music", "photo", "world", "daily", "smart", "tech", "food", "home", "city", "open",
          "free")
_TLDS = ("com", "org", "net", "de", "fr", "co.uk", "io", "info", "jp", "com.br", "ru", "it")
# Real words in many scripts, percent-encoded as they appear in links.
_TERMS = tuple(quote(w) for w in (
    "Zürich", "São_Paulo", "Kraków", "Москва", "東京", "서울", "Ελλάδα", "İstanbul", "Čeština",
    "naïve_café", "Ñandú", "Łódź", "München", "Αθήνα", "北京市", "القاهرة", "עברית", "ภาษาไทย",
    "Việt_Nam", "Þingvellir", "crème_brûlée", "smörgåsbord", "Ärzte", "año_nuevo"))
_SLUGS = ("how-to-choose-a-bike", "the-best-pizza-in-town", "quarterly-results",
          "weather-warning-issued", "new-release-notes", "top-10-hiking-trails",
          "interview-with-the-mayor", "recipe-lentil-soup")


def _hosts(rng: np.random.Generator, count: int) -> list[str]:
    a = rng.integers(0, len(_WORDS), count)
    b = rng.integers(0, len(_WORDS), count)
    t = rng.integers(0, len(_TLDS), count)
    sub = rng.integers(0, 4, count)
    prefix = ("", "www.", "m.", "blog.")
    return [f"{prefix[s]}{_WORDS[x]}{_WORDS[y]}{i}.{_TLDS[z]}"
            for i, (x, y, z, s) in enumerate(zip(a.tolist(), b.tolist(), t.tolist(),
                                                 sub.tolist(), strict=True))]


def synthetic_urls(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct, realistic-looking URLs, the same for the same (n, seed).

    Like a crawl frontier: ~n/50 hosts (at least 100) in many TLDs; runs of near-identical URLs
    that differ only in a number (``/article/123``); long tracking queries; percent-encoded
    non-ASCII words; ports, fragments, dates. URL j carries the serial number j, so any two
    disjoint ranges of the list are disjoint sets of URLs.
    """
    import numpy as np  # here: a usage error of "minicrawl bloom" answers without NumPy

    rng = np.random.default_rng(seed)
    hosts = _hosts(rng, max(100, n // 50))
    # Zipf-like host popularity: a few big sites, a long tail.
    host = [hosts[h] for h in ((rng.zipf(1.3, n) - 1) % len(hosts)).tolist()]
    template = rng.choice(8, size=n, p=[0.25, 0.15, 0.12, 0.12, 0.1, 0.1, 0.08, 0.08])
    a = rng.integers(0, 1000, n).tolist()
    w1 = rng.integers(0, len(_TERMS), n).tolist()
    w2 = rng.integers(0, len(_TERMS), n).tolist()
    session = rng.integers(0, 1 << 62, n).tolist()
    terms, slugs = _TERMS, _SLUGS
    makers = (
        lambda j: f"https://{host[j]}/article/{j}",
        lambda j: (f"https://{host[j]}/p/{j}?utm_source=newsletter&utm_medium=email"
                   f"&utm_campaign=spring_sale_{a[j]}&ref=homepage_carousel"
                   f"&session={session[j]:016x}"),
        lambda j: f"https://{host[j]}/wiki/{terms[w1[j]]}_{j}",
        lambda j: (f"https://{host[j]}/search?q={terms[w1[j]]}+{terms[w2[j]]}&page={j}"
                   f"&sort=relevance&lang=de&filter=price_asc"),
        lambda j: (f"https://{host[j]}/{2000 + a[j] % 25}/{1 + a[j] % 12:02d}/"
                   f"{1 + a[j] % 28:02d}/{slugs[w1[j] % len(slugs)]}-{j}.html"),
        lambda j: f"http://{host[j]}:8080/catalog/item.php?id={j}&cat={a[j]}&color=blue&size=XL",
        lambda j: f"https://cdn.{host[j]}/images/{a[j]}/{j}.jpg",
        lambda j: f"https://{host[j]}/user/{j}/posts?tab=recent#comments",
    )
    return [makers[t](j) for j, t in enumerate(template.tolist())]


# --------------------------------------------------------------------------- measure


@dataclass(frozen=True)
class Measurement:
    """The outcome of :func:`measure_fp`."""

    family: str
    n: int
    m: int
    k: int
    probes: int
    false_positives: int
    fill_ratio: float
    seconds: float

    @property
    def measured(self) -> float:
        """Fraction of the probes (never inserted) reported present."""
        return self.false_positives / self.probes

    @property
    def theoretical(self) -> float:
        """f = (1 − e^(−kn/m))^k for this m, n, k."""
        return false_positive_rate(self.m, self.n, self.k)

    @property
    def fill_theory(self) -> float:
        """Expected fill ratio 1 − e^(−kn/m)."""
        return 1.0 - math.exp(-self.k * self.n / self.m)

    @property
    def ratio(self) -> float:
        """measured / theoretical (1.0 = the hash family behaves like the math assumes)."""
        return self.measured / self.theoretical


def measure_fp(family: str = FAMILY, n: int = 1_000_000, ratio: float = 10.0, k: int = HASHES,
               seed: int = 1, batch: int = 10_000) -> Measurement:
    """Insert ``n`` synthetic URLs into a filter of ``round(n·ratio)`` bits (rounded up to a
    power of two for the teaching families), probe ``n`` others, and count false positives.

    The crawler's family fills the crawler's :class:`BloomFilter` (k = 8 only); a teaching
    family fills a plain bit array at its k indices.
    """
    check_number("n", n, low=1)
    check_number("ratio", ratio, above=0)
    fam = get_family(family)
    if fam.fixed_k is not None and k != fam.fixed_k:
        raise ValueError(f"the {family} family has k = {fam.fixed_k}, not {k}")
    started = time.perf_counter()
    urls = synthetic_urls(2 * n, seed)
    m = family_bits(family, max(1, round(n * ratio)))
    if family == FAMILY:
        bf = BloomFilter(bits=m)
        for i in range(0, n, batch):
            bf.add_many(urls[i:min(i + batch, n)])
        hits = sum(sum(bf.contains_many(urls[i:min(i + batch, 2 * n)]))
                   for i in range(n, 2 * n, batch))
        fill = bf.fill_ratio
    else:
        hits, fill = _measure_plain(fam.indices_many, urls, n, m, k, batch)
    return Measurement(family, n, m, k, n, hits, fill, time.perf_counter() - started)


def _measure_plain(indices_many: Callable[[Sequence[str], int, int], np.ndarray],
                   urls: list[str], n: int, m: int, k: int, batch: int) -> tuple[int, float]:
    """(false positives among ``urls[n:]``, fill ratio) of a plain bit array of m bits holding
    ``urls[:n]`` at a teaching family's indices."""
    import numpy as np

    view = np.zeros((m + 7) // 8, dtype=np.uint8)  # bit i: byte i >> 3, bit i & 7
    for i in range(0, n, batch):
        byte, mask = _byte_and_mask(indices_many(urls[i:min(i + batch, n)], m, k).ravel())
        np.bitwise_or.at(view, byte, mask)  # .at: two indices in one byte both count
    hits = 0
    for i in range(n, 2 * n, batch):
        part = urls[i:min(i + batch, 2 * n)]
        byte, mask = _byte_and_mask(indices_many(part, m, k).ravel())
        hits += int(((view[byte] & mask) != 0).reshape(len(part), k).all(axis=1).sum())
    return hits, int(np.unpackbits(view).sum()) / m


# --------------------------------------------------------------------------- table


def table_rows(ratios: Sequence[int] = range(2, 33), ks: Sequence[int] = range(1, 9)
               ) -> list[tuple[int, float, int, list[float]]]:
    """(m/n, optimal real k, best integer k, [f for each k]) for each m/n: the classic table."""
    rows = []
    for r in ratios:
        fs = [false_positive_rate(r, 1, k) for k in ks]
        k_real = optimal_hashes(r, 1)
        k_best = min((math.floor(k_real), math.ceil(k_real)),
                     key=lambda k: false_positive_rate(r, 1, max(1, k)))
        rows.append((r, k_real, max(1, k_best), fs))
    return rows


def _fmt(f: float) -> str:
    # Three significant digits, trailing zeros kept (0.000140), as in the published tables.
    return f"{f:#.3g}"


# --------------------------------------------------------------------------- commands


def _cmd_size(args: argparse.Namespace, out: TextIO) -> int:
    n, p, k = args.n, args.p, args.k
    m = crawler_bits(n, p)
    classic = optimal_bits(n, p)
    k_real = optimal_hashes(classic, n)
    k_int = max(1, round(k_real))
    print(f"items n                 {n:,}", file=out)
    print(f"target rate p           {p:g}", file=out)
    print(f"bits m, k={HASHES}             {m:,}  = {_human(m / 8)}  ({m / n:.2f} bits per item; "
          f"what BloomFilter(capacity={n}, error_rate={p:g}) and run.py allocate)", file=out)
    print(f"expected f, k={HASHES:<2}        {_fmt(false_positive_rate(m, n, HASHES))}", file=out)
    print(f"optimal k               {k_real:.2f} -> {k_int}  (the k that needs fewest bits for "
          f"p)", file=out)
    print(f"bits m, optimal k       {classic:,}  = {_human(classic / 8)}  (m = -n ln p / "
          f"(ln 2)^2; {HASHES} hashes at that m: f = "
          f"{_fmt(false_positive_rate(classic, n, HASHES))})", file=out)
    if k != HASHES:
        m_k = bits_for(n, p, k)
        print(f"bits for f <= p at k={k:<2} {m_k:,}  = {_human(m_k / 8)}", file=out)
    return 0


def _human(nbytes: float) -> str:
    units = ("B", "KiB", "MiB", "GiB", "TiB")
    i = 0
    while nbytes >= 1024 and i < len(units) - 1:
        nbytes /= 1024
        i += 1
    return f"{nbytes:,.0f} B" if i == 0 else f"{nbytes:,.1f} {units[i]}"


def _cmd_table(args: argparse.Namespace, out: TextIO) -> int:
    ks = list(range(1, 9))
    print("False-positive rate f = (1 - e^(-k n/m))^k", file=out)
    head = f"{'m/n':>4} {'k_opt':>6} {'best':>4} " + " ".join(f"{'k=' + str(k):>9}" for k in ks)
    print(head, file=out)
    for r, k_real, k_best, fs in table_rows(range(2, 33), ks):
        cells = " ".join(f"{_fmt(f):>9}" for f in fs)
        print(f"{r:>4} {k_real:>6.2f} {k_best:>4} {cells}", file=out)
    return 0


def _cmd_plot(args: argparse.Namespace, out: TextIO) -> int:
    try:
        import matplotlib
    except ImportError:
        print(f"{PROG} plot: matplotlib is not installed; install it with "
              "pip install 'minicrawl[plot]'", file=sys.stderr)
        return 2
    try:  # before drawing: a path that cannot be written is a usage error
        check_output_file("file", args.file, "png")  # nor overwriting a file that is no PNG
    except OutputPathError as e:
        print(f"{PROG} plot: error: {str(e).removeprefix('file ')}", file=sys.stderr)
        return 2
    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    import numpy as np

    ratios = np.linspace(1, 32, 400)
    fig, ax = plt.subplots(figsize=(8, 5.5), dpi=110)
    for k in range(1, 9):
        ax.plot(ratios, (1 - np.exp(-k / ratios)) ** k, label=f"k = {k}", linewidth=1.4)
    best = 0.6185 ** ratios  # f at the optimal (real) k
    ax.plot(ratios, best, "k--", linewidth=1.2, label="optimal k = (m/n) ln 2")
    ax.set_yscale("log")
    ax.set_ylim(1e-7, 1)
    ax.set_xlim(1, 32)
    ax.set_xlabel("bits per item  m/n")
    ax.set_ylabel("false-positive rate  f = (1 - e^(-kn/m))^k")
    ax.set_title("Bloom filter false-positive rate")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(ncol=3, fontsize=8)
    fig.tight_layout()
    path = Path(args.file)
    try:
        fig.savefig(path, format="png")
    except OSError as e:  # the disk filled up while writing
        print(f"{PROG} plot: error: {cannot_write('file', str(path), e).removeprefix('file ')}",
              file=sys.stderr)
        return 1
    finally:
        plt.close(fig)
    print(f"wrote {path}", file=out)
    return 0


def _cmd_measure(args: argparse.Namespace, out: TextIO) -> int:
    fixed = FAMILIES[args.hash].fixed_k
    if fixed is not None and args.k != fixed:
        print(f"{PROG} measure: error: --k: the {args.hash} family has k = {fixed}",
              file=sys.stderr)
        return 2
    r = measure_fp(args.hash, args.n, args.ratio, args.k, args.seed)
    print(f"hash family       {r.family}: {FAMILIES[r.family].description}", file=out)
    print(f"inserted          {r.n:,} synthetic URLs (seed {args.seed})", file=out)
    print(f"probed            {r.probes:,} other URLs (never inserted)", file=out)
    print(f"m, k              {r.m:,} bits (m/n = {r.m / r.n:.2f}), k = {r.k}", file=out)
    print(f"fill ratio        {r.fill_ratio:.4f} (theory {r.fill_theory:.4f})", file=out)
    print(f"false positives   {r.false_positives:,}", file=out)
    print(f"measured f        {r.measured:.6f}", file=out)
    print(f"theoretical f     {r.theoretical:.6f}", file=out)
    print(f"ratio             {r.ratio:.3f}  (measured / theoretical)", file=out)
    print(f"time              {r.seconds:.1f} s", file=out)
    return 0


def _parser() -> argparse.ArgumentParser:
    # No prefix taken for an option (--ha for --hash), in each sub-command's parser too, as in
    # minicrawl's (minicrawl.cli.main.build_parser)
    p = OneLineParser(prog=PROG, description="Bloom filter sizing and experiments.",
                      allow_abbrev=False)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    s = sub.add_parser("size", help="bits, hashes and bytes for n items at rate p",
                       allow_abbrev=False)
    s.add_argument("--n", type=_integer(1, MAX_ITEMS), required=True,
                   help=f"number of items (1 to {MAX_ITEMS:.0e})")
    s.add_argument("--p", type=_rate, required=True, help="false-positive rate, e.g. 0.001")
    s.add_argument("--k", type=_integer(1, MAX_HASHES), default=HASHES,
                   help=f"also show the bits another k needs for p (1 to {MAX_HASHES})")
    s.set_defaults(func=_cmd_size)

    t = sub.add_parser("table", help="classic table of f for m/n = 2..32 and k = 1..8",
                       allow_abbrev=False)
    t.set_defaults(func=_cmd_table)

    g = sub.add_parser("plot", help="plot f against m/n for k = 1..8 (needs matplotlib)",
                       allow_abbrev=False)
    g.add_argument("file", help="PNG file to write")
    g.set_defaults(func=_cmd_plot)

    m = sub.add_parser("measure", help="measured vs theoretical f on synthetic URLs",
                       allow_abbrev=False)
    m.add_argument("--hash", choices=sorted(FAMILIES), default=FAMILY,
                   help=f"hash family (default: {FAMILY}, the crawler's)")
    m.add_argument("--n", type=_integer(1, MAX_MEASURED), default=1_000_000,
                   help=f"URLs to insert (1 to {MAX_MEASURED:,}: twice as many are held in "
                        "memory)")
    m.add_argument("--ratio", type=_real(0, MAX_RATIO), default=10.0,
                   help=f"bits per item m/n (default 10; over 0, at most {MAX_RATIO})")
    m.add_argument("--k", type=_integer(1, MAX_HASHES), default=HASHES,
                   help=f"hashes (default {HASHES}; 1 to {MAX_HASHES} for a teaching family, "
                        f"{HASHES} for the crawler's)")
    m.add_argument("--seed", type=_integer(0, 2**63 - 1), default=1,
                   help="corpus seed (default 1; at least 0)")
    m.set_defaults(func=_cmd_measure)
    return p


# Bounds of the numbers (the help says them); beyond them a command fails or exhausts memory.
MAX_ITEMS = 10**15  # size: more items than any filter can index at a useful rate
MAX_HASHES = 64  # what the teaching families take
MAX_MEASURED = 5_000_000  # measure keeps 2n synthetic URLs (~150 bytes each) in memory
MAX_RATIO = 1000.0  # bits per item: f is 0.0000 long before


N = TypeVar("N", int, float)


def _integer(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer (``1_000_000`` or ``1e6``) from ``low`` to ``high``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                as_float = float(text)  # 1e8
            except ValueError:
                raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
            if not as_float.is_integer():  # also NaN and inf
                raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
            value = int(as_float)
        return _within(value, low=low, high=high)
    return parse


def _real(above: float, high: float) -> Callable[[str], float]:
    """An argparse type: a finite number over ``above``, at most ``high``."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        return _within(value, above=above, high=high)
    return parse


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    return _within(value, above=0, below=1)


def _within(value: N, **bounds: float) -> N:
    """``value``, if within ``bounds`` (check_number's rule); else argparse's error, in its
    words: "must be at least 1, got 0"."""
    if problem := number_problem(value, **bounds):
        raise argparse.ArgumentTypeError(f"{problem}, got {shown(value)}")
    return value


def main(argv: list[str] | None = None) -> int:
    """Run ``minicrawl bloom`` with ``argv`` (default: ``sys.argv[1:]``); the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help or a usage error: argparse already printed why
        return int(exc.code or 0)
    return int(args.func(args, sys.stdout))


if __name__ == "__main__":
    sys.exit(main())
