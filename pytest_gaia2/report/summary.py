"""The end-of-run text block and summary.json, formatted from a ``stats.Summary``.

Formatting only: every number comes from ``stats`` (and the gate's lines from ``gate``), so
what the terminal shows and what summary.json holds cannot disagree. The block is shaped to be pasted into a results memo:
both denominators with intervals, the split table, errored ids by category.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.budget import STOPS, usd_text
from pytest_gaia2.report.gate import GateDecision
from pytest_gaia2.report.rates import Rate, counted, percent, percent_number
from pytest_gaia2.report.repeats import RepeatStats
from pytest_gaia2.report.sequential import Decision
from pytest_gaia2.report.stats import GroupStats, Summary, Timing
from pytest_gaia2.store import redact
from pytest_gaia2.store.folder import write_text

PROBE_ONLY = "--gaia2-probe-only"
"""Why a scenario a --gaia2-probe-only run left out did not start (its not-started reason begins so)."""
NO_NEW_START = "; no new scenario starts"
BEFORE_THEY_STARTED = " before they started"
"""Tails of stop reasons that read beside the keys not started, not in a verdict line."""

DEFAULT_WIDTH = 88
LISTED = 10
"""Not-run keys named in the summary's first line; the rest are counted."""
_INDENT = "  "


def first_n(items: Sequence[str], n: int) -> str:
    """The first ``n`` items, then how many more: ``a, b, c, ... (7 more)``.

    For lists that may run to hundreds of ids on a line a person reads.
    """
    shown = list(items[: max(n, 0)])
    more = len(items) - len(shown)
    return ", ".join(shown + ([f"... ({more} more)"] if more else []))


def _rate_cells(rate: Rate) -> list[str]:
    """``134/160``, ``=``, ``83.8%``, ``[77.3–88.7]``: separate cells so rows line up."""
    if rate.value is None:
        return [f"{rate.successes}/{rate.n}", "=", "n/a", ""]
    return [
        f"{rate.successes}/{rate.n}",
        "=",
        percent(rate.value),
        f"[{percent_number(rate.low)}–{percent_number(rate.high)}]",
    ]


def _table(rows: Sequence[Sequence[str]], align: str, gap: str = "  ") -> list[str]:
    """Columns padded to their widest cell; ``align`` has one ``l``/``r`` per column."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(align))]
    return [
        gap.join(
            cell.ljust(width) if side == "l" else cell.rjust(width)
            for cell, width, side in zip(row, widths, align, strict=False)
        ).rstrip()
        for row in rows
    ]


def _rate_table(labelled: Sequence[tuple[str, Rate]]) -> list[str]:
    return _table([[label, *_rate_cells(rate)] for label, rate in labelled], "lrlrl", gap=" ")


def _wrapped(prefix: str, items: Sequence[str], width: int) -> list[str]:
    """``prefix`` then the items comma-separated, continuation lines indented under the first.

    Items are never split (``s3 PEF`` stays whole); an item longer than the width gets a line
    of its own.
    """
    pieces = [f"{item}," for item in items[:-1]] + list(items[-1:])
    indent = " " * len(prefix)
    lines: list[str] = []
    current = ""
    for piece in pieces:
        head = indent if lines else prefix
        candidate = f"{current} {piece}" if current else piece
        if current and len(head) + len(candidate) > width:
            lines.append(head + current)
            current = piece
        else:
            current = candidate
    lines.append((indent if lines else prefix) + current)
    return lines


def _incomplete(summary: Summary) -> str:
    """The first line of an incomplete run's block, so nobody publishes it by mistake."""
    return (
        f"INCOMPLETE: {summary.done} of {summary.planned} planned {summary.planned_unit} done "
        f"({len(summary.not_run)} not run: {first_n(summary.not_run, LISTED)})"
    )


def _totals(summary: Summary) -> str:
    overall = summary.overall
    if summary.repeats:
        head = f"{overall.total} results ({summary.repeats.scenarios} scenarios x {summary.repeats.k} runs)"
    else:
        head = f"{overall.total} scenarios"
    line = f"{head}: {overall.passed} passed, {overall.failed} failed, {counted(overall.errors, 'error')}"
    return f"{line}, {overall.reused} reused" if overall.reused else line


def _short_rate(rate: Rate) -> str:
    return "n/a" if rate.value is None else percent(rate.value)


def _group_table(title: str, groups: Sequence[GroupStats], not_run: bool) -> list[str]:
    """One row per group; a ``not-run`` column when the run is incomplete."""
    header = [title, "n", "passed", "failed", "errors", *(["not-run"] if not_run else []), "strict", "judged"]
    rows = [
        [
            group.name,
            str(group.total),
            str(group.passed),
            str(group.failed),
            str(group.errors),
            *([str(group.not_run)] if not_run else []),
            _short_rate(group.strict),
            _short_rate(group.judged),
        ]
        for group in groups
    ]
    return _table([header, *rows], "l" + "r" * (len(header) - 1))


def _error_lines(summary: Summary, width: int) -> list[str]:
    if not summary.error_groups:
        return []
    name_width = max(len(group.category) for group in summary.error_groups)
    count_width = max(len(str(group.count)) for group in summary.error_groups)
    lines = ["errors by category:"]
    for group in summary.error_groups:
        prefix = f"{_INDENT}{group.category.ljust(name_width)}  {str(group.count).rjust(count_width)}  "
        lines += _wrapped(prefix, group.ids, width)
    return lines


def _timing_lines(timing: Timing) -> list[str]:
    lines = []
    if timing.wall_median_s is not None:
        lines.append(
            f"wall time: median {timing.wall_median_s:.1f} s, slowest {timing.slowest_id} ({timing.slowest_s:.1f} s)"
        )
    if timing.events_mean is not None and timing.events_median is not None:
        lines.append(f"agent events per scenario: mean {timing.events_mean:.1f}, median {timing.events_median:.1f}")
    return lines


def _repeat_lines(repeats: RepeatStats, width: int) -> list[str]:
    k = repeats.k
    lines = [
        f"pass@{k} ({repeats.scenarios} scenarios x {k} runs; avg@{k} is the mean of the per-run "
        "strict rates; its interval counts scenarios, not runs):"
    ]
    lines += _rate_table(
        [
            (f"{_INDENT}avg@{k}", repeats.avg_at_k),
            (f"{_INDENT}pass@{k}", repeats.pass_at_k),
            (f"{_INDENT}pass^{k}", repeats.pass_hat_k),
        ]
    )
    lines.append(
        f"{_INDENT}per run: "
        + ", ".join(f"run_{run} {_short_rate(rate)}" for run, rate in enumerate(repeats.per_run, start=1))
    )
    if repeats.flipped:
        lines += _wrapped(
            f"{_INDENT}flipped ({len(repeats.flipped)}): ",
            [f"{sid} {repeats.patterns[sid]}" for sid in repeats.flipped],
            width,
        )
    if repeats.errored_runs:
        lines += _wrapped(
            f"{_INDENT}errored runs ({len(repeats.errored_runs)}, not counted as flips): ",
            [f"{sid} run_{run}" for sid, run in repeats.errored_runs],
            width,
        )
    return lines


@dataclass(frozen=True)
class Stop:
    """Why a run ended before its plan was done, on record: the reason, the budget and the spend
    (all of it, and when the run decided to stop), and each planned key that never started with
    why. ``reason`` is None for a complete run."""

    reason: str | None
    halt: float | None = None
    cap: float | None = None
    spent: float | None = None
    spent_at_stop: float | None = None
    not_started: tuple[tuple[str, str], ...] = ()
    decided: Decision | None = None
    """With --gaia2-stop-when-decided, when the decision stopped the run: where and which way."""
    token_halt: int | None = None
    tokens: int | None = None
    """The run's tokens in its ledger (every session's), with a token halt set."""
    max_errors: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "stopped": self.reason is not None,
            "reason": self.reason,
            "halt_usd": self.halt,
            "cap_usd": self.cap,
            "spent_usd": self.spent,
            "spent_at_stop_usd": self.spent_at_stop,
            "token_halt": self.token_halt,
            "tokens_used": self.tokens,
            "max_errors": self.max_errors,
            "not_started": [{"key": key, "why": why} for key, why in self.not_started],
            "decided": self.decided.to_dict() if self.decided is not None else None,
        }

    @property
    def by_limit(self) -> bool:
        """Whether one of the run's own limits (money, tokens, errors) stopped it short of its plan."""
        return self.reason is not None and self.reason.startswith(STOPS)

    @property
    def brief(self) -> str | None:
        """The reason for a verdict line: without the tails that only read beside a list of keys."""
        if self.reason is None:
            return None
        return self.reason.removesuffix(NO_NEW_START).removesuffix(BEFORE_THEY_STARTED)

    def over_limit(self) -> str | None:
        """For a run that ran its whole plan and still spent past its halt or cap: why that is
        no contradiction (a halt stops only new starts; the cap stopped what was running)."""
        if self.reason is not None or self.spent is None:
            return None
        if self.cap is not None and self.spent > self.cap:
            return (
                f"the spend passed the {usd_text(self.cap)} cap: the scenarios running then were stopped "
                "before a verdict (their records say so)"
            )
        if self.halt is not None and self.spent > self.halt:
            return (
                f"the spend passed the {usd_text(self.halt)} halt only in scenarios already running: "
                "a halt stops new starts, and every planned scenario had started"
            )
        return None

    def status(self, complete: bool) -> str | None:
        """What the pages say after "stopped:": the reason; for a complete run "no", and why its
        spend may pass the halt; None when it is not known (the caller says why)."""
        if self.reason is not None:
            return self.reason
        if not complete:
            return None
        over = self.over_limit()
        return f"no: every planned scenario ran; {over}" if over else "no: every planned scenario ran"

    def lines(self) -> list[str]:
        """The terminal's account of the stop (nothing for a complete run without a budget)."""
        money = [
            f"{label} {usd_text(value)}"
            for label, value in (
                ("spent", self.spent),
                ("at stop", self.spent_at_stop if self.reason else None),
                ("halt", self.halt),
                ("cap", self.cap),
            )
            if value is not None
        ]
        over = self.over_limit()
        lines = (
            [f"gaia2: budget: {', '.join(money)}{f' ({over})' if over else ''}"]
            if self.halt is not None or self.cap is not None
            else []
        )
        if self.token_halt is not None:
            lines.append(f"gaia2: tokens: used {self.tokens or 0:,}, halt {self.token_halt:,}")
        if self.reason is None:
            return lines
        lines.append(f"gaia2: stopped: {self.reason}")
        lines += [f"gaia2: {len(keys)} not started ({why}): {first_n(keys, LISTED)}" for why, keys in self.by_why()]
        return lines

    def by_why(self) -> list[tuple[str, list[str]]]:
        """The keys not started, grouped by why, in the order the reasons first appear."""
        grouped: dict[str, list[str]] = {}
        for key, why in self.not_started:
            grouped.setdefault(why, []).append(key)
        return list(grouped.items())


def coverage(summary: Summary) -> dict[str, Any]:
    """Ran vs planned per split and universe, and the strata under-covered: a whole scenario or
    more short of their share of what ran (``planned x done / all planned``; the interleaved start
    order keeps every stratum less than one short), so a stopped run's rates can be read for what
    they rest on."""
    share = summary.done / summary.planned if summary.planned else 1.0

    def strata(groups: Sequence[GroupStats]) -> dict[str, dict[str, Any]]:
        return {
            group.name: {
                "planned": group.total + group.not_run,
                "ran": group.total,
                "expected": round((group.total + group.not_run) * share, 2),
            }
            for group in groups
        }

    splits, universes = strata(summary.splits), strata(summary.universes)
    under = [
        name
        for table in (splits, universes)
        for name, stratum in table.items()
        if stratum["ran"] * summary.planned <= (stratum["planned"] * summary.done) - summary.planned
    ]
    return {"splits": splits, "universes": universes, "under_covered": under}


def coverage_lines(summary: Summary) -> list[str]:
    """For an incomplete run: what ran per split against its plan, and the under-covered strata."""
    if summary.complete:
        return []
    found = coverage(summary)
    lines = [
        "coverage (ran/planned): " + ", ".join(f"{n} {s['ran']}/{s['planned']}" for n, s in found["splits"].items())
    ]
    table = {**found["universes"], **found["splits"]}
    if found["under_covered"]:
        lines.append(
            "under-covered (a scenario or more short of their share): "
            + ", ".join(
                f"{name} {table[name]['ran']} of {table[name]['expected']:g} expected"
                for name in found["under_covered"]
            )
        )
    return lines


def summary_lines(summary: Summary, gate: GateDecision | None, width: int = DEFAULT_WIDTH) -> list[str]:
    """The compact end-of-run block, like pytest's own short summary; gate lines come last.

    An incomplete run says so first, and its strict rate is over what was planned.
    """
    lines = [] if summary.complete else [_incomplete(summary)]
    lines.append(_totals(summary))
    strict, judged = _rate_table([("strict", summary.overall.strict), ("judged-only", summary.overall.judged)])
    lines += [strict if summary.complete else f"{strict} (not-run counted as not passed)", judged]
    if summary.splits:
        lines += _group_table("split", summary.splits, not summary.complete)
    if summary.universes:
        lines += _group_table("universe", summary.universes, not summary.complete)
    lines += coverage_lines(summary)
    lines += _error_lines(summary, width)
    lines += _timing_lines(summary.timing)
    if summary.repeats:
        lines += _repeat_lines(summary.repeats, width)
    if gate:
        lines += gate.lines
    return lines


def write_summary_json(
    path: Path, summary: Summary, gate: GateDecision | None, extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Write summary.json atomically, UTF-8 with ids kept readable; its content, masked as the
    file's bytes are, is returned (the terminal's hooks are handed it without reading it back).

    ``extra`` (run metadata such as image id, model, judge) goes first; it may not reuse a
    summary key, because silently dropping either value would misreport the run.
    """
    document: dict[str, Any] = dict(extra or {})
    body = {**summary.to_dict(), "gate": gate.to_dict() if gate else None}
    clash = sorted(document.keys() & body.keys())
    if clash:
        raise ValueError(f"summary.json: extra keys clash with summary keys: {', '.join(clash)}")
    document.update(body)
    text = json.dumps(document, ensure_ascii=False, indent=2) + "\n"
    write_text(path, text)
    masked: dict[str, Any] = redact.active().redact_obj(json.loads(text))  # JSON's own types, as in the file
    return masked
