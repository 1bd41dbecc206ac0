"""The run report's plots as PNG bytes, drawn with matplotlib (the ``pytest-gaia2[analysis]`` extra).

matplotlib is imported only when a plot is drawn, so the plugin and the other subcommands work
without it; :func:`require` says which extra to install before anything is written. Figures
use matplotlib's object API on the Agg canvas (no pyplot, no global state, no display).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pytest_gaia2.report.rates import Rate
from pytest_gaia2.report.stats import ErrorGroup, GroupStats
from pytest_gaia2.store.redact import printable

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

MISSING = "the report's plots need matplotlib: pip install 'pytest-gaia2[analysis]'"
DPI = 100
LABEL_CHARS = 60
"""Names from a results folder are cut to this length on a plot (the report's tables hold them whole)."""
_STRICT, _JUDGED, _ERROR, _NEUTRAL = "#3a6ea5", "#7fb069", "#c0504d", "#8c8c8c"


class MissingLibrary(RuntimeError):
    """A library the report needs is not installed; the message names the extra that brings it."""


@dataclass(frozen=True)
class Plot:
    """One PNG of the report: ``name`` is its file stem under ``<run>/report/``."""

    name: str
    title: str
    png: bytes


def require() -> None:
    """Fail before anything is written when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingLibrary(MISSING) from None


def plain_label(text: str) -> str:
    """A category or split name as plain text on a plot: control characters escaped (matplotlib
    warns of a glyph it lacks with the character itself, raw on the terminal), cut to LABEL_CHARS,
    and every ``$`` escaped so matplotlib draws it instead of reading mathtext (``$\\frac{`` would raise)."""
    text = printable(text)
    short = text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"
    return short.replace("$", r"\$")


def _figure(width: float = 7.0, height: float = 3.6) -> Figure:
    require()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _whole_counts(axis: Axis) -> None:
    """Ticks of a count at whole numbers only: no tick at 2.5 errors."""
    from matplotlib.ticker import MaxNLocator

    locator = axis.get_major_locator()
    if isinstance(locator, MaxNLocator):  # the default AutoLocator is one
        locator.set_params(integer=True)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})  # no version stamp: same run, same bytes
    return buffer.getvalue()


def _bars(rates: Sequence[Rate]) -> tuple[list[float], list[list[float]]]:
    """Heights and asymmetric interval arms in percent; a rate over nothing is an empty bar."""
    heights = [100 * (rate.value or 0.0) for rate in rates]
    arms = [
        [
            max(0.0, height - 100 * rate.low) if rate.value is not None else 0.0
            for height, rate in zip(heights, rates, strict=False)
        ],
        [
            max(0.0, 100 * rate.high - height) if rate.value is not None else 0.0
            for height, rate in zip(heights, rates, strict=False)
        ],
    ]
    return heights, arms


def pass_rates(overall: GroupStats, splits: Sequence[GroupStats]) -> Plot:
    """Strict and judged-only rate per split and overall, each with its 95% interval."""
    groups = [*splits, overall] if len(splits) > 1 else list(splits) or [overall]
    figure = _figure(max(5.0, 1.2 * len(groups) + 2.5))
    axes = figure.add_subplot()
    width = 0.38
    positions = range(len(groups))
    for offset, label, colour, rates in (
        (-width / 2, "strict", _STRICT, [group.strict for group in groups]),
        (width / 2, "judged-only", _JUDGED, [group.judged for group in groups]),
    ):
        heights, arms = _bars(rates)
        axes.bar(
            [x + offset for x in positions],
            heights,
            width,
            yerr=arms,
            capsize=4,
            color=colour,
            label=label,
            error_kw={"elinewidth": 1.2},
        )
    axes.set_xticks(
        list(positions),
        [plain_label(group.name) if group.name != "all" else "all splits" for group in groups],
        rotation=20 if len(groups) > 5 else 0,
    )
    axes.set_ylim(0, 105)
    axes.set_ylabel("pass rate (%)")
    method = "scenario-clustered Wilson" if overall.strict.method == "clustered-wilson" else "Wilson"
    axes.set_title(f"Pass rate per split (bars: 95% {method} interval)")
    axes.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside: never over a bar
    axes.grid(axis="y", alpha=0.3)
    return Plot("pass_rates", "Pass rate per split", _png(figure))


def errors(groups: Sequence[ErrorGroup]) -> Plot:
    """Infrastructure errors per category, the most frequent on top."""
    figure = _figure(7.0, max(2.0, 0.45 * len(groups) + 1.2))
    axes = figure.add_subplot()
    ordered = list(reversed(groups))
    axes.barh(range(len(ordered)), [group.count for group in ordered], color=_ERROR)
    axes.set_yticks(range(len(ordered)), [plain_label(group.category) for group in ordered])
    axes.set_xlabel("errors")
    _whole_counts(axes.xaxis)
    axes.set_title("Errors by category")
    return Plot("errors", "Errors by category", _png(figure))


def _histogram(name: str, title: str, values: Sequence[float], unit: str, colour: str) -> Plot:
    figure = _figure()
    axes = figure.add_subplot()
    axes.hist(values, bins=min(30, max(5, len(values) // 2)), color=colour, edgecolor="white")
    axes.set_xlabel(unit)
    axes.set_ylabel("scenario runs")
    _whole_counts(axes.yaxis)
    axes.set_title(f"{title} ({len(values)} scenario runs)")
    return Plot(name, title, _png(figure))


def wall_times(seconds: Sequence[float]) -> Plot:
    return _histogram("wall_times", "Wall time per scenario", seconds, "seconds", _STRICT)


def costs(usd: Sequence[float]) -> Plot:
    return _histogram("costs", "Cost per scenario", usd, "USD", _NEUTRAL)


def report_plots(
    overall: GroupStats,
    splits: Sequence[GroupStats],
    error_groups: Sequence[ErrorGroup],
    seconds: Sequence[float],
    usd: Sequence[float],
) -> list[Plot]:
    """Every plot the data supports: no error plot without errors, no cost plot without costs."""
    plots = [pass_rates(overall, splits)]
    if error_groups:
        plots.append(errors(error_groups))
    if seconds:
        plots.append(wall_times(seconds))
    if usd:
        plots.append(costs(usd))
    return plots


def data_uri(plot: Plot) -> str:
    """The PNG inline, so report.html needs no other file and no network."""
    return "data:image/png;base64," + base64.b64encode(plot.png).decode("ascii")
