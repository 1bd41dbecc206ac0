"""``pytest-gaia2 compare A B [C ...]``: a paired comparison of runs of the same scenarios.

Scenarios are matched by (split, scenario id, repeat); each later run is compared with the
first (A) on two 2x2 tables, with the ids of the discordant cells, the difference with a paired
interval and the exact McNemar p-value (:mod:`paired`). With three or more runs, every key gets
its pattern string (``PPF``). A key missing from some run is listed, never silently dropped;
provenance that differs between runs (image, model, gateway, judge, plugin, scenario files) is
warned about, and every setting of run_config.json that differs is listed, because then more
than one variable changed. Each rate ends with one plain sentence: the gap, whether it could be
chance, and how many pairs would detect a gap that size (:mod:`power`). ``--fail-if-worse``
gates on the evidence: the paired interval's bound by default, the p-value or the point
estimate only when asked.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from pytest_gaia2.cli.main import CommandError, create_file
from pytest_gaia2.report import power, rejudged, run_facts, settings_diff, stats
from pytest_gaia2.report import summary as report
from pytest_gaia2.report.markdown import code_span, plain
from pytest_gaia2.report.paired import AnalysisExtraMissing, PairedTable, pattern, pattern_counts
from pytest_gaia2.report.rates import percent, percent_number
from pytest_gaia2.report.rows import NOT_RUN, natural_key, planned_keys
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

Key = tuple[str, str, int]
"""(split, scenario id, repeat): what a pair is matched by."""

COMPARED_FIELDS = (
    "image_id",
    "provider",
    "model",
    "base_url_host",
    "judge_provider",
    "judge_model",
    "judge_base_url_host",
    "plugin_version",
)
"""Record provenance that should be equal between arms of a controlled comparison."""
LISTED = 10

STRICT_RULE = (
    "strict: every matched pair counts; a run passed a pair only when its judge passed it "
    "(failed, error and not run are all 'not passed')"
)
JUDGED_RULE = (
    "judged-only: only pairs judged (passed or failed) in both runs count; a pair with an "
    "error or not run in either run is left out"
)
GATES = {
    "interval": "the upper end of the paired 95% interval of B - A (strict) is below -D: B is worse by more than D "
    "with 95% confidence",
    "p-value": "B - A (strict) is below -D and the exact McNemar p-value is below --alpha",
    "point": "the point estimate of B - A (strict) is below -D, whatever the noise",
}
"""--gate X: when ``--fail-if-worse D`` fails a later run B (exit 1)."""
POWER = 0.8


@dataclass(frozen=True)
class Arm:
    """One run folder: its records and planned-but-not-run keys, by matching key."""

    label: str
    path: Path
    run_id: str
    outcomes: dict[Key, str]
    spelled: dict[Key, str]
    records: dict[Key, AttemptRecord]
    summary: stats.Summary
    config: dict[str, Any]


def read_run_config(folder: store.RunFolder) -> tuple[dict[str, Any], list[str]]:
    """A run folder's run_config.json and its ``planned`` keys, checked: one error naming the file."""
    path = folder.file(store.RUN_CONFIG_FILE)
    config = store.read_json(path)
    planned = config.get("planned", []) if isinstance(config, dict) else None
    if not isinstance(config, dict) or not isinstance(planned, list) or not all(isinstance(k, str) for k in planned):
        raise CommandError(f"{path}: 'planned' must be a list of <split>/<scenario_id>[/run_<k>] strings")
    try:
        planned_keys(planned)
    except ValueError as exc:
        raise CommandError(f"{path}: {exc}") from None
    return config, planned


def latest_plan(folder: store.RunFolder, config: Mapping[str, Any], records: Sequence[AttemptRecord]) -> list[str]:
    """The keys the run planned as its pages count them (:meth:`run_facts.RunFacts.plan`): the
    latest session's, from summary.json, else run_config.json's plus every key with a record."""
    keys = run_facts.read(folder.path, config).plan(records).keys
    return list(keys) if keys is not None else []


def load_arm(label: str, path: str | Path, judge: str | None = None) -> Arm:
    """The run folder named on the command line (or the ``latest`` of an output folder); with
    ``judge``, every verdict its judge gave is replaced by that re-judge's (no verdict: error)."""
    folder = store.RunFolder.existing(path)
    config, _ = read_run_config(folder)
    stored = list(folder.records(strict=True))
    planned = latest_plan(folder, config, stored)
    records = {(record.split, record.scenario_id, record.repeat): record for record in stored}
    outcomes: dict[Key, str] = {key: record.outcome for key, record in records.items()}
    if judge is not None:
        found = rejudged.latest_verdicts(folder.path, judge)
        if found is None:
            raise CommandError(
                f"{folder.path}: no re-judge by a judge named {judge!r} (pytest-gaia2 rejudge --judge-name)"
            )
        verdicts = found[1]
        for key, record in records.items():
            if record.outcome in ("passed", "failed"):
                verdict = verdicts.get(record.key)
                outcomes[key] = "error" if verdict is None else ("passed" if verdict else "failed")
    spelled = {key: record.key for key, record in records.items()}
    for key, text in planned_keys(planned).items():
        outcomes.setdefault(key, NOT_RUN)
        spelled.setdefault(key, text)
    summary = stats.summarise(
        [{**record.to_json(), "outcome": outcomes[key]} for key, record in records.items()], planned=planned or None
    )
    return Arm(label, folder.path, str(config.get("run_id") or ""), outcomes, spelled, records, summary, config)


def provenance_warnings(arms: Sequence[tuple[str, Mapping[Any, AttemptRecord]]]) -> list[str]:
    """One line per provenance field whose values differ between the labelled record sets, and
    one for the keys present in two of them whose scenario file (sha256) differs."""
    warnings = []
    for name in COMPARED_FIELDS:
        values = [
            (label, sorted({str(getattr(r, name)) for r in records.values() if getattr(r, name)}))
            for label, records in arms
            if records
        ]
        if len({tuple(found) for _, found in values}) > 1:
            warnings.append(
                f"{name} differs: " + "; ".join(f"{label} {', '.join(found) or '-'}" for label, found in values)
            )
    (first, base), *others = arms
    for label, records in others:
        changed = sorted(
            (
                base[key].key
                for key in base.keys() & records.keys()
                if base[key].scenario_sha256
                and records[key].scenario_sha256
                and base[key].scenario_sha256 != records[key].scenario_sha256
            ),
            key=natural_key,
        )
        if changed:
            warnings.append(
                f"scenario files differ between {first} and {label} ({len(changed)}): "
                + report.first_n(changed, LISTED)
            )
    return warnings


@dataclass(frozen=True)
class Comparison:
    """Arm B against arm A on the matched keys."""

    a: str
    b: str
    strict: PairedTable
    judged: PairedTable
    left_out: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "strict": self.strict.to_dict(),
            "judged": self.judged.to_dict(),
            "judged_left_out": self.left_out,
        }


def worse(table: PairedTable, drop: float, gate: str, alpha: float) -> bool:
    """Whether B is worse than A by more than ``drop`` (a fraction) under the ``gate`` rule."""
    if table.delta is None:
        return False
    if gate == "interval":
        return table.interval()[1] < -drop - 1e-12
    below = table.delta < -drop - 1e-12
    return below and (gate == "point" or table.p_value() < alpha)


def _p_text(p: float) -> str:
    """A p-value to two significant digits, halves up as read by hand (0.125 -> 0.13)."""
    if p <= 0:
        return "0"
    digits = max(1, 1 - math.floor(math.log10(p)))
    return f"{Decimal(repr(p)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def sentence(a: str, b: str, table: PairedTable, alpha: float, rate: str) -> str:
    """What a non-statistician should take from one 2x2 table, in one or two sentences."""
    if table.n == 0:
        return f"No pairs count for the {rate} rate, so nothing can be said."
    discordant = len(table.only_a) + len(table.only_b)
    gap = table.delta or 0.0
    if gap == 0:
        disagree = f"{discordant} pairs disagree, as many each way" if discordant else "no pair disagrees"
        return f"{b} and {a} pass the same share of the {table.n} pairs on the {rate} rate ({disagree}): no gap."
    p = table.p_value()
    low, high = table.interval()
    size = percent_number(abs(gap))
    direction = "better" if gap > 0 else "worse"
    chance = (
        f"with {table.n} pairs this is unlikely to be chance (p = {_p_text(p)}, below {alpha:g})"
        if p < alpha
        else f"with {table.n} pairs this could be chance (p = {_p_text(p)}, not below {alpha:g})"
    )
    needed = power.observed_pairs_needed(len(table.only_a), len(table.only_b), table.n, POWER, alpha)
    detect = (
        f"About {needed} pairs would detect a {size}-point gap {POWER:.0%} of the time."
        if needed is not None
        else f"Not even {power.MAX_PAIRS} pairs would reliably detect a gap this small."
    )
    return (
        f"{b} is {direction} than {a} by {size} points on the {rate} rate; {chance}; the 95% interval runs "
        f"from {_points(low)} to {_points(high)} points. {detect}"
    )


def compare(a: Arm, b: Arm, matched: Sequence[Key]) -> Comparison:
    spell = {key: a.spelled[key] for key in matched}
    strict = PairedTable.of({spell[key]: (a.outcomes[key] == "passed", b.outcomes[key] == "passed") for key in matched})
    judged_keys = [key for key in matched if {a.outcomes[key], b.outcomes[key]} <= {"passed", "failed"}]
    judged = PairedTable.of(
        {spell[key]: (a.outcomes[key] == "passed", b.outcomes[key] == "passed") for key in judged_keys}
    )
    return Comparison(a.label, b.label, strict, judged, len(matched) - len(judged_keys))


@dataclass(frozen=True)
class ComparedRuns:
    """Everything the command says, in the order the Markdown says it."""

    arms: tuple[Arm, ...]
    warnings: tuple[str, ...]
    matched: tuple[Key, ...]
    missing: dict[str, tuple[str, ...]]
    comparisons: tuple[Comparison, ...]
    patterns: dict[str, str] | None
    worse: tuple[str, ...]
    points: float | None
    gate: str
    alpha: float
    settings: tuple[tuple[str, list[tuple[str, str]]], ...]

    @property
    def repeated(self) -> bool:
        return any(key[2] > 1 for key in self.matched)


def build(arms: Sequence[Arm], points: float | None, gate: str = "interval", alpha: float = 0.05) -> ComparedRuns:
    every = {key for arm in arms for key in arm.outcomes}
    matched = tuple(
        sorted(
            (key for key in every if all(key in arm.outcomes for arm in arms)),
            key=lambda key: (natural_key(key[0]), natural_key(key[1]), key[2]),
        )
    )
    spelled = {key: text for arm in reversed(arms) for key, text in arm.spelled.items()}
    missing = {
        arm.label: tuple(sorted((spelled[key] for key in every - arm.outcomes.keys()), key=natural_key)) for arm in arms
    }
    comparisons = tuple(compare(arms[0], arm, matched) for arm in arms[1:])
    patterns = (
        {spelled[key]: pattern([arm.outcomes.get(key) for arm in arms]) for key in every} if len(arms) > 2 else None
    )
    worsened = tuple(c.b for c in comparisons if points is not None and worse(c.strict, points / 100, gate, alpha))
    warnings = provenance_warnings([(arm.label, arm.records) for arm in arms])
    settings = settings_diff.differences([(arm.label, arm.config) for arm in arms])
    return ComparedRuns(
        tuple(arms),
        tuple(warnings),
        matched,
        missing,
        comparisons,
        patterns,
        worsened,
        points,
        gate,
        alpha,
        tuple(settings),
    )


# -- output --------------------------------------------------------------------------------------


def _points(value: float) -> str:
    return f"{'+' if value > 0 else ''}{percent_number(value)}"


def _table_lines(c: Comparison, table: PairedTable, title: str, rule: str, alpha: float) -> list[str]:
    lines = [
        f"### {title}",
        "",
        f"{rule[0].upper()}{rule[1:]}.",
        "",
        f"| {c.a} \\ {c.b} | {c.b} passed | {c.b} not passed |",
        "|---|---:|---:|",
        f"| **{c.a} passed** | {len(table.both)} | {len(table.only_a)} |",
        f"| **{c.a} not passed** | {len(table.only_b)} | {len(table.neither)} |",
        "",
    ]
    rate = title.split(" (")[0].lower()
    if table.n == 0:
        return lines + ["No pairs.", "", f"**In words:** {sentence(c.a, c.b, table, alpha, rate)}", ""]
    lines += [
        f"- passed in {c.a} only ({len(table.only_a)}): {_keys(table.only_a)}",
        f"- passed in {c.b} only ({len(table.only_b)}): {_keys(table.only_b)}",
        "",
    ]
    low, high = table.interval()
    rate_a, rate_b = table.rate_a, table.rate_b
    lines.append(
        f"{c.a} {rate_a.successes}/{table.n} = {percent(rate_a.value or 0.0)}, {c.b} {rate_b.successes}/"
        f"{table.n} = {percent(rate_b.value or 0.0)}; **Δ ({c.b} − {c.a}) {_points(table.delta or 0.0)} "
        f"points**, 95% CI [{_points(low)}, {_points(high)}] (Newcombe, paired); exact McNemar "
        f"p = {table.p_value():.3g} ({len(table.only_a) + len(table.only_b)} discordant pairs)"
    )
    return lines + ["", f"**In words:** {sentence(c.a, c.b, table, alpha, rate)}", ""]


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(map(plain, keys)) or "-"


def _arm_row(arm: Arm) -> str:
    overall = arm.summary.overall
    rates = [
        f"{percent(rate.value)} [{percent_number(rate.low)}–{percent_number(rate.high)}]"
        if rate.value is not None
        else "n/a"
        for rate in (overall.strict, overall.judged)
    ]
    return (
        f"| {arm.label} | {code_span(arm.path)} | {arm.summary.planned} | {overall.passed} | {overall.failed} | "
        f"{overall.errors} | {overall.not_run} | {rates[0]} | {rates[1]} |"
    )


def markdown(result: ComparedRuns) -> str:
    lines = [
        "# pytest-gaia2 compare",
        "",
        "| run | folder | planned | passed | failed | errors | not run | strict | judged-only |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        *(_arm_row(arm) for arm in result.arms),
        "",
    ]
    lines += [f"> **Warning:** {plain(warning)}" for warning in result.warnings] + ([""] if result.warnings else [])
    if result.settings:
        names = [arm.label for arm in result.arms]
        lines += [
            f"## Settings that differ ({len(result.settings)})",
            "",
            "More than the agent changed between these runs: each line below is another explanation of a gap.",
            "",
            "| setting | " + " | ".join(names) + " |",
            "|---|" + "---|" * len(names),
            *(
                f"| {plain(name)} | " + " | ".join(code_span(value) for _, value in values) + " |"
                for name, values in result.settings
            ),
            "",
        ]
    else:
        lines += ["Settings: every setting of run_config.json is the same in every run.", ""]
    lines.append(f"Matched by (split, scenario id, repeat): {len(result.matched)} keys present in every run.")
    lines += [
        f"- missing from {label} ({len(keys)}, not compared): {_keys(keys)}"
        for label, keys in result.missing.items()
        if keys
    ]
    if result.repeated:
        lines.append(
            "- pairs are (scenario, run): a scenario's repeats are not independent, so the intervals "
            "and p-values below are optimistic"
        )
    lines.append("")
    for c in result.comparisons:
        lines += [f"## {c.b} vs {c.a}", ""]
        lines += _table_lines(c, c.strict, "Strict", STRICT_RULE, result.alpha)
        lines += _table_lines(c, c.judged, f"Judged-only ({c.left_out} pairs left out)", JUDGED_RULE, result.alpha)
    if result.patterns is not None:
        labels = "".join(arm.label for arm in result.arms)
        lines += [
            f"## Patterns ({labels}: P passed, F failed, E error, . no result)",
            "",
            "| pattern | count | keys |",
            "|---|---:|---|",
        ]
        lines += [f"| `{shape}` | {count} | {_keys(keys)} |" for shape, count, keys in pattern_counts(result.patterns)]
        lines.append("")
    if result.points is not None:
        verdict = f"FAIL: worse than {result.arms[0].label}: {_keys(result.worse)}" if result.worse else "ok"
        lines += [
            f"--fail-if-worse D = {result.points / 100:g} ({result.points:g} points), --gate {result.gate}: fails "
            f"when {GATES[result.gate]}: {verdict}",
            "",
        ]
    return "\n".join(lines)


def to_json(result: ComparedRuns) -> dict[str, Any]:
    return {
        "definitions": {
            "strict": STRICT_RULE,
            "judged": JUDGED_RULE,
            "delta": "B - A, fractions 0..1",
            "fail_if_worse": GATES,
        },
        "runs": [
            {
                "label": arm.label,
                "path": str(arm.path),
                "run_id": arm.run_id,
                "summary": arm.summary.overall.to_dict(),
                "planned": arm.summary.planned,
            }
            for arm in result.arms
        ],
        "warnings": list(result.warnings),
        "settings_differ": {name: dict(values) for name, values in result.settings},
        "sentences": [
            {
                "b": c.b,
                "strict": sentence(c.a, c.b, c.strict, result.alpha, "strict"),
                "judged": sentence(c.a, c.b, c.judged, result.alpha, "judged-only"),
            }
            for c in result.comparisons
        ],
        "matched": len(result.matched),
        "missing": {label: list(keys) for label, keys in result.missing.items()},
        "comparisons": [c.to_dict() for c in result.comparisons],
        "patterns": result.patterns,
        "pattern_counts": None
        if result.patterns is None
        else [
            {"pattern": shape, "count": count, "keys": list(keys)}
            for shape, count, keys in pattern_counts(result.patterns)
        ],
        "fail_if_worse": None
        if result.points is None
        else {"points": result.points, "gate": result.gate, "alpha": result.alpha, "worse": list(result.worse)},
    }


# -- the command ---------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "runs",
        nargs="+",
        metavar="RUN",
        help="run folders (or --gaia2-output folders: their latest run); the first is the baseline A",
    )
    parser.add_argument("--format", choices=("markdown", "json"), default="markdown", help="output format")
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="write the comparison to FILE instead of stdout: a new file outside every run "
        "folder (an existing file or a place in a run folder is refused)",
    )
    parser.add_argument(
        "--fail-if-worse",
        metavar="D",
        type=float,
        dest="drop",
        help="exit 1 when a later run's paired strict rate is more than D below the first "
        "run's by the --gate rule; a fraction from 0 to 1, like every rate (0.05 is 5 points)",
    )
    parser.add_argument(
        "--gate",
        choices=tuple(GATES),
        default="interval",
        help="what --fail-if-worse holds against -D: "
        + "; ".join(f"{name}: {rule}" for name, rule in GATES.items()).replace("%", "%%"),  # argparse formats help
    )
    parser.add_argument(
        "--judge",
        metavar="NAME",
        help="compare under a re-judge's verdicts: each run's newest re-judge with a judge of this name "
        "replaces the verdicts of its own judge (a scenario it gave no verdict counts as an error)",
    )
    parser.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="significance level of the sentences, the p-value gate and the pairs-needed figure (default 0.05)",
    )


def run(args: argparse.Namespace) -> int:
    if len(args.runs) < 2:
        raise CommandError("compare needs at least two run folders")
    if args.drop is not None and not (math.isfinite(args.drop) and 0 <= args.drop <= 1):
        raise CommandError(f"--fail-if-worse: expected a fraction from 0 to 1 (0.05 is 5 points), got {args.drop!r}")
    if not (math.isfinite(args.alpha) and 0 < args.alpha < 1):
        raise CommandError(f"--alpha: expected a level between 0 and 1 (0.05), got {args.alpha!r}")
    labels = [chr(ord("A") + index) if index < 26 else f"R{index + 1}" for index in range(len(args.runs))]
    arms = [load_arm(label, path, args.judge) for label, path in zip(labels, args.runs, strict=False)]
    try:
        result = build(arms, None if args.drop is None else args.drop * 100, args.gate, args.alpha)
        text = (
            markdown(result)
            if args.format == "markdown"
            else json.dumps(to_json(result), indent=2, ensure_ascii=False) + "\n"
        )
    except AnalysisExtraMissing as exc:
        raise CommandError(str(exc)) from None
    if args.output:
        create_file("--output", Path(args.output), text.encode("utf-8"), [arm.path.resolve() for arm in arms])
    else:
        print(text, end="")
    return 1 if result.worse else 0
