"""The report's plots (:mod:`minicrawl.watch.report`): how the crawl went, drawn with matplotlib
(Agg, no display needed) and embedded as PNG ``data:`` URIs, so that the report is one file.
matplotlib is the optional extra ``minicrawl[plot]``, imported only here, only when a report is
drawn; the report asks :func:`minicrawl.watch.report.plotting` first.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from minicrawl.watch.progress import Progress

RATE_WINDOW = 0.5  # seconds of samples behind each pages/s point

Draw = Callable[["Axes"], None]  # draws one plot on the Axes it is given


def png_data_uri(draw: Draw) -> str:
    """The plot ``draw`` makes, as a PNG ``data:`` URI."""
    from matplotlib.figure import Figure  # lazily: only a report needs matplotlib

    fig = Figure(figsize=(6.4, 3.2), dpi=100, layout="constrained")
    draw(fig.subplots())
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def plots(samples: Sequence[Progress], depths: Mapping[int, int], statuses: Mapping[str, int],
          elapsed_ms: Iterable[float], target_rate: float | None,
          ) -> list[tuple[str, Draw]]:
    """(caption, function drawing on an Axes) for each plot of the report: of the gauges'
    ``samples``, the pages by depth and by status, their response times, and Visited's rate at
    capacity (``target_rate``: a Bloom filter's, or None)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter  # (only a report needs it)

    t = [s.elapsed for s in samples]

    def rate(ax: Axes) -> None:
        ax.plot(*_pages_per_s(samples), color="tab:blue")
        _labels(ax, "pages/s", "seconds since start", "pages per second")

    def todo(ax: Axes) -> None:
        ax.plot(t, [s.todo for s in samples], label="waiting in ToDo", color="tab:orange")
        ax.plot(t, [s.in_flight for s in samples], label="in flight", color="tab:green")
        ax.legend(loc="best")
        _labels(ax, "ToDo length", "seconds since start", "URLs")

    def depth(ax: Axes) -> None:
        found = sorted(depths)
        bars = ax.bar(found, [depths[d] for d in found], color="tab:purple")
        ax.bar_label(bars, fmt="{:,.0f}")  # a depth of one page is a bar too low to see
        ax.margins(y=0.15)  # (room for the tallest bar's label)
        ax.set_xticks(found)
        _labels(ax, "Pages by depth (hops from a seed)", "depth", "pages")

    def status(ax: Axes) -> None:
        codes = sorted(statuses, key=lambda c: (not c.isdigit(), c))
        colors = [{"2": "tab:green", "3": "tab:blue", "4": "tab:orange", "5": "tab:red"}.get(
            c[0], "tab:gray") for c in codes]
        bars = ax.bar(codes, [statuses[c] for c in codes], color=colors)
        # Log scale and counts: 4 broken pages beside 10,000 fine ones are a bar, and a number
        ax.set_yscale("log")
        ax.set_ylim(bottom=0.5, top=max(statuses.values(), default=1) * 3)
        ax.bar_label(bars, fmt="{:,.0f}")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else ""))
        ax.yaxis.set_minor_formatter(NullFormatter())
        if len(codes) > 4:
            ax.tick_params(axis="x", labelrotation=20)
        _labels(ax, "Status codes (log scale, each bar labelled with its count)", "status",
                "pages")

    def response(ax: Axes) -> None:
        times = [ms for ms in elapsed_ms if ms > 0]
        if times:
            ax.hist(times, bins=min(50, max(10, len(times) // 10)), color="tab:cyan")
        _labels(ax, "Response times", "milliseconds", "pages")

    def visited(ax: Axes) -> None:
        fill = [s.fill_ratio for s in samples]
        if any(f is None for f in fill):
            ax.plot(t, [s.visited for s in samples], color="tab:brown")
            _labels(ax, "Visited size (exact set: no false positives)", "seconds since start",
                    "URLs in Visited")
            return
        ax.plot(t, fill, color="tab:brown", label="fill ratio")
        ax.set_ylabel("fraction of bits set")
        # An empty filter has a false-positive rate of exactly 0, which a log axis cannot show.
        fp = [(x, f) for x, f in zip(t, (s.fp_rate for s in samples), strict=True) if f]
        if fp:
            right = ax.twinx()
            right.plot(*zip(*fp, strict=True), color="tab:red", linestyle="--",
                       label="est. false-positive rate")
            if target_rate:
                right.axhline(target_rate, color="tab:gray", linestyle=":",
                              label=f"rate at capacity ({target_rate:.2g})")
            right.set_yscale("log")
            right.set_ylabel("false-positive rate")
            right.legend(loc="lower right")
        ax.legend(loc="upper left")
        ax.set_title("Visited: fill ratio and estimated false-positive rate")
        ax.set_xlabel("seconds since start")

    return [
        (f"Pages per second over time (each point: the last {RATE_WINDOW:g} s).", rate),
        ("ToDo length over time: it grows while pages have more new links than the workers "
         "can fetch, and the crawl ends when it is empty and no page is in flight.", todo),
        ("Depth histogram: how many hops from a seed each fetched page was (ToDo is FIFO, so "
         "the crawl is breadth-first).", depth),
        ("Status codes of the pages, on a log scale so that a few broken pages show; a page "
         "without one names why (robots.txt disallows, a network error…).", status),
        ("Response time distribution (time to the full body).", response),
        ("Visited over time: the fraction of the Bloom filter's bits set, and the estimated "
         "false-positive rate fill^k — the chance a new URL is wrongly taken for seen.",
         visited),
    ]


def _labels(ax: Axes, title: str, x: str, y: str) -> None:
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel(y)


def _pages_per_s(samples: list[Progress]) -> tuple[list[float], list[float]]:
    """Pages per second at each sample, over the last ``RATE_WINDOW`` seconds of samples."""
    times, rates = [], []
    start = 0
    for s in samples[1:]:
        while samples[start].elapsed < s.elapsed - RATE_WINDOW:
            start += 1
        first = samples[start] if samples[start] is not s else samples[max(start - 1, 0)]
        if s.elapsed > first.elapsed:
            times.append(s.elapsed)
            rates.append((s.pages - first.pages) / (s.elapsed - first.elapsed))
    return times, rates
