"""A paired comparison of runs of the same scenarios, as ``pytest-gaia2 compare`` says it.

Scenarios are matched by (split, scenario id, repeat); each later run is compared with the
first (A) on two 2x2 tables, with the ids of the discordant cells, the difference with a paired
interval and a paired p-value (:mod:`paired`). A pair exists only where both runs have a
verdict: a scenario one run never ran (it stopped on a decision, its budget halted it, it was
interrupted, or it was not selected) is not "not passed", it is missing, and what is missing on
each side, and why, is counted and said in the verdict sentence. With repeats the scenario is
the unit. A run that stopped on a decision (``--gaia2-stop-when-decided``) is compared with the
sequential test's own always-valid answer, not a fixed-sample interval, which would exaggerate
the gap that made it stop (:func:`sequential.always_valid`).

With three or more runs, every key gets its pattern string (``PPF``) and the output notes that
several comparisons with one baseline multiply the chance of a false alarm. Provenance that
differs between runs (image, model, gateway, judge, plugin, scenario files) is warned about,
and every setting of run_config.json that differs is listed, because then more than one
variable changed. Each rate ends with one plain sentence: the gap with its interval, whether it
could be chance, and how many pairs would detect a gap that size (:mod:`power`).
``--fail-if-worse`` gates on the same answer the sentence gives: the interval's bound by
default, the p-value or the point estimate only when asked; it refuses to gate on a run that
stopped for another reason than a decision unless ``--allow-incomplete``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from pytest_gaia2.report import power, rejudged, run_facts, settings_diff, stats
from pytest_gaia2.report import summary as report
from pytest_gaia2.report.markdown import code_span, plain
from pytest_gaia2.report.paired import (
    Answer,
    PairedTable,
    Rule,
    answer,
    pattern,
    pattern_counts,
)
from pytest_gaia2.report.rates import percent, percent_number, wilson
from pytest_gaia2.report.rows import NOT_RUN, OUTCOMES, natural_key, planned_keys
from pytest_gaia2.report.runs import latest_plan, read_run_config
from pytest_gaia2.report.sequential import DECIDED, always_valid
from pytest_gaia2.report.summary import PROBE_ONLY
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError
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
    "strict: every pair with a verdict in both runs counts; a run passed a pair only when its judge passed it "
    "(failed and error are 'not passed'; a scenario a run never ran is no pair, it is missing)"
)
JUDGED_RULE = (
    "judged-only: only pairs judged (passed or failed) in both runs count; a pair with an "
    "error or not run in either run is left out"
)
GATES = {
    "interval": "the upper end of the paired interval of B - A (strict, at confidence 1 - --alpha) is below -D: "
    "B is worse by more than D with that confidence",
    "p-value": "B - A (strict) is below -D and the paired p-value is below --alpha",
    "point": "the point estimate of B - A (strict) is below -D, whatever the noise",
}
"""--gate X: when ``--fail-if-worse D`` fails a later run B (exit 1). A run that stopped on a
decision is held to the sequential test's always-valid interval and p-value instead."""
POWER = 0.8

MISSING_KINDS = {
    "decided": "stopped on a decision",
    "budget": "budget halt",
    "errors": "error limit",
    "probe": "probe only",
    "interrupted": "interrupted",
    "not selected": "not selected",
}
"""Why a run has no verdict for a scenario the other run planned or ran, in the order said."""
REFUSED = 2
"""Exit status of ``--fail-if-worse`` refusing a run that stopped short for another reason than a decision."""


def why_kind(why: str) -> str:
    """The kind of a not-started reason (summary.json's ``not_started`` ``why``)."""
    if why.startswith(DECIDED):
        return "decided"
    if why.startswith("budget"):
        return "budget"
    if why.startswith("errors"):
        return "errors"
    if why.startswith(PROBE_ONLY):
        return "probe"
    return "interrupted"


SINGULAR = {"pairs": "pair", "scenarios": "scenario"}


def plural(count: int, word: str) -> str:
    """``1 pair``, ``2 pairs``."""
    return f"{count} {word if count == 1 else word + 's'}"


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
    order: tuple[Key, ...] = ()
    """The run's start order: its first session's plan, then every other key."""
    why: dict[Key, str] = field(default_factory=dict)
    """Each planned key without a verdict: the kind of why (:data:`MISSING_KINDS`)."""
    stop: str | None = None
    """What stopped the run short of its plan (a kind of :data:`MISSING_KINDS`), None when complete."""
    stop_reason: str | None = None

    def verdict(self, key: Key) -> bool:
        return self.outcomes.get(key) in OUTCOMES


def load_arm(label: str, path: str | Path, judge: str | None = None) -> Arm:
    """The run folder named on the command line (or the ``latest`` of an output folder); with
    ``judge``, every verdict its judge gave is replaced by that re-judge's (no verdict: error)."""
    folder = store.RunFolder.existing(path)
    config, first = read_run_config(folder)
    stored = list(folder.records(strict=True))
    facts = run_facts.read(folder.path, config)
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
    started = list(planned_keys(first))
    order = tuple(dict.fromkeys([*started, *sorted(outcomes, key=_key_order)]))
    reasons = dict(facts.stop.not_started) if facts.stop is not None else {}
    why = {key: why_kind(reasons.get(spelled[key], "")) for key, outcome in outcomes.items() if outcome == NOT_RUN}
    stop = None
    if why:
        stop = (
            why_kind(facts.stop.reason)
            if facts.stop is not None and facts.stop.reason
            else "interrupted"  # no stop on record: killed, still running, or ended early
        )
    reason = facts.stop.reason if facts.stop is not None and facts.stop.reason else None
    if stop is not None and reason is None:
        reason = "no stop on record: the run was killed, is still running, or ended early"
    return Arm(
        label,
        folder.path,
        str(config.get("run_id") or ""),
        outcomes,
        spelled,
        records,
        summary,
        config,
        order,
        why,
        stop,
        reason,
    )


def _key_order(key: Key) -> tuple[Any, ...]:
    return natural_key(key[0]), natural_key(key[1]), key[2]


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
    """Arm B against arm A on the keys both have a verdict for, with one answer per table."""

    a: str
    b: str
    strict: PairedTable
    judged: PairedTable
    left_out: int
    missing: dict[str, dict[str, int]]
    """Per arm: how many keys the other arm planned or ran that this one has no verdict for, by why."""
    strict_answer: Answer
    judged_answer: Answer
    sequential: str | None = None
    """The label of the run that stopped on a decision (its answers are the sequential test's)."""
    keys: int = 0
    """The keys either run planned or ran: the pairs are those of them with a verdict in both."""

    def answer(self, table: PairedTable) -> Answer:
        return self.strict_answer if table is self.strict else self.judged_answer

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "strict": self.strict.to_dict(),
            "judged": self.judged.to_dict(),
            "judged_left_out": self.left_out,
            "missing": self.missing,
            "answers": {"strict": self.strict_answer.to_dict(), "judged": self.judged_answer.to_dict()},
            "sequential": self.sequential,
        }


def worse(found: Answer, drop: float, gate: str) -> bool:
    """Whether B is worse than A by more than ``drop`` (a fraction) under the ``gate`` rule."""
    if found.delta is None:
        return False
    below = found.delta < -drop - 1e-12
    if gate == "interval":  # a decided run's range is cut at 0 on its side: 0 itself is then left out
        return found.high < -drop - 1e-12 or (found.direction == "worse" and found.high <= -drop)
    return below and (gate == "point" or found.direction == "worse")


def _p_text(p: float) -> str:
    """A p-value to two significant digits, halves up as read by hand (0.125 -> 0.13)."""
    if p <= 0:
        return "0"
    digits = max(1, 1 - math.floor(math.log10(p)))
    return f"{Decimal(repr(p)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def _missing_text(c: Comparison) -> str:
    """What is left out on each side and why, one clause per side that lacks something."""
    parts = []
    for label in (c.b, c.a):
        kinds = c.missing.get(label, {})
        if kinds:
            why = ", ".join(f"{MISSING_KINDS[kind]}: {count}" for kind, count in kinds.items())
            parts.append(f"{label} has no verdict for {sum(kinds.values())} ({why})")
    return f" Not compared: {'; '.join(parts)}." if parts else ""


def _needed(table: PairedTable, alpha: float) -> str:
    """How many pairs (scenarios, with repeats) would detect the gap seen, over the discordance's
    95% interval: the discordance of a handful of pairs is itself uncertain."""
    only_a, only_b, n = len(table.only_a), len(table.only_b), table.n
    gap = (only_b - only_a) / n
    low, high = wilson(only_a + only_b, n)
    needed = [
        power.paired_pairs(gap, max(abs(gap), discordance), POWER, alpha).pairs
        for discordance in ((only_a + only_b) / n, low, high)
    ]
    size = percent_number(abs(gap))
    if needed[0] is None:
        return f"Not even {power.MAX_PAIRS} pairs would reliably detect a gap this small."
    unit = "pairs"
    if table.clustered:  # an effective pair is worth deff / (pairs per scenario) scenarios
        per = table.design_effect * table.scenarios / n
        needed = [None if value is None else math.ceil(value * per) for value in needed]
        unit = f"scenarios at {n / table.scenarios:g} runs each"
    spread = f"{needed[1]} to {needed[2]}" if needed[2] is not None else f"{needed[1]} to more than {power.MAX_PAIRS}"
    return (
        f"About {needed[0]} {unit} ({spread} over the discordance's 95% interval, {percent(low)} to "
        f"{percent(high)}) would detect a {size}-point gap {POWER:.0%} of the time."
    )


def sentence(c: Comparison, table: PairedTable, alpha: float, rate: str, rule: Rule = "interval") -> str:
    """What a non-statistician should take from one 2x2 table: the gap, its interval, whether it
    could be chance (by the same answer the gate holds), and what is missing on either side."""
    a, b = c.a, c.b
    missing = _missing_text(c)
    if table.n == 0:
        return f"No pairs count for the {rate} rate, so nothing can be said.{missing}"
    found = c.answer(table)
    level = f"{found.confidence:.0%}"
    over = (
        f"{plural(table.scenarios, 'scenario')} ({table.n} pairs; the scenario is the unit)"
        if table.clustered
        else plural(table.n, "pair")
    )
    if found.sequential:
        span = (
            f"the always-valid {level} range of the gap (a confidence sequence, as {c.sequential} stopped on a "
            f"decision) runs from {_points(found.low)} to {_points(found.high)} points"
        )
    else:
        span = f"the {level} interval runs from {_points(found.low)} to {_points(found.high)} points"
    gap = found.delta or 0.0
    discordant = len(table.only_a) + len(table.only_b)
    if found.sequential and found.decision is not None:
        d = found.decision
        return (
            f"{b} is {found.direction} than {a} on the {rate} rate over {over}: the sequential test decided it at "
            f"level {percent(1 - found.confidence)} ({d.better} better, {d.worse} worse of "
            f"{plural(d.pairs, 'judged ' + SINGULAR[d.unit])}, always-valid p = {_p_text(found.p)}); the gap is "
            f"{_points(gap)} points and {span}.{missing}"
        )
    if gap == 0:
        disagree = (
            f"{plural(discordant, 'pair')} {'disagrees' if discordant == 1 else 'disagree'}, as many each way"
            if discordant
            else "no pair disagrees"
        )
        return (
            f"{b} and {a} pass the same share of the {over} on the {rate} rate ({disagree}): no gap seen, but "
            f"{span}, so a gap of up to {percent_number(max(-found.low, found.high))} points either way is not "
            f"ruled out.{missing}"
        )
    size = percent_number(abs(gap))
    way = "better" if gap > 0 else "worse"
    if found.direction is not None:
        why = "the interval leaves out no gap" if rule == "interval" else f"p = {_p_text(found.p)}, below {alpha:g}"
        return (
            f"{b} is {way} than {a} by {size} points on the {rate} rate over {over}; this is unlikely to be "
            f"chance ({why}); {span}.{missing}"
        )
    hint = "" if found.sequential else " " + _needed(table, alpha)
    return (
        f"{b} is {way} than {a} by {size} points on the {rate} rate over {over}; this could be chance: {span}, "
        f"which includes no gap.{hint}{missing}"
    )


def _unit_of(key: Key) -> str:
    return f"{key[0]}/{key[1]}"


def _table(a: Arm, b: Arm, keys: Sequence[Key], spelled: Mapping[Key, str]) -> PairedTable:
    return PairedTable.of(
        {spelled[key]: (a.outcomes[key] == "passed", b.outcomes[key] == "passed") for key in keys},
        {spelled[key]: _unit_of(key) for key in keys},
    )


def _in_order(table: PairedTable, order: Sequence[Key], spelled: Mapping[Key, str]) -> list[float]:
    """The table's per-scenario differences in the order the stopped run finished its scenarios:
    each scenario at the place of its last key in the run's start order."""
    differences = dict(zip(table.scenario_names(), table.differences(), strict=True))
    last: dict[str, int] = {}
    for place, key in enumerate(order):
        name = table.scenario.get(spelled.get(key, ""))
        if name is not None:
            last[name] = place
    names = sorted(differences, key=lambda name: (last.get(name, len(order)), natural_key(name)))
    return [float(differences[name]) for name in names]


def compare(a: Arm, b: Arm, alpha: float = 0.05, rule: Rule = "interval") -> Comparison:
    """B against A over the keys both have a verdict for; what either lacks, by why."""
    union = sorted(a.outcomes.keys() | b.outcomes.keys(), key=_key_order)
    both = [key for key in union if a.verdict(key) and b.verdict(key)]
    missing: dict[str, dict[str, int]] = {}
    for arm in (a, b):
        kinds = [arm.why.get(key, "not selected") for key in union if not arm.verdict(key)]
        missing[arm.label] = {kind: kinds.count(kind) for kind in MISSING_KINDS if kind in kinds}
    spelled = {key: a.spelled.get(key) or b.spelled[key] for key in union}
    strict = _table(a, b, both, spelled)
    judged_keys = [key for key in both if {a.outcomes[key], b.outcomes[key]} <= {"passed", "failed"}]
    judged = _table(a, b, judged_keys, spelled)
    decided = next((arm for arm in (b, a) if arm.stop == "decided"), None)
    if decided is None:
        answers = [answer(table, alpha, rule) for table in (strict, judged)]
    else:
        answers = [
            always_valid(
                _in_order(table, decided.order, spelled),
                alpha,
                str(decided.path),
                "scenarios" if table.clustered else "pairs",
            )
            for table in (strict, judged)
        ]
    return Comparison(
        a.label,
        b.label,
        strict,
        judged,
        len(both) - len(judged_keys),
        missing,
        answers[0],
        answers[1],
        None if decided is None else decided.label,
        len(union),
    )


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
    refused: tuple[str, ...] = ()
    """Why ``--fail-if-worse`` refused to gate: one line per run that stopped short for another
    reason than a decision (empty with ``--allow-incomplete``)."""

    @property
    def repeated(self) -> bool:
        return any(key[2] > 1 for key in self.matched)

    @property
    def rule(self) -> Rule:
        return "p-value" if self.gate == "p-value" else "interval"


def refusals(arms: Sequence[Arm]) -> tuple[str, ...]:
    """One line per run that stopped short of its plan for another reason than a decision:
    gating on it would read a halt or a Ctrl-C as a regression (or hide one)."""
    return tuple(
        f"{arm.label} stopped before its plan was done ({MISSING_KINDS.get(arm.stop, arm.stop)}: "
        f"{plural(len(arm.why), 'planned key')} without a verdict; {arm.stop_reason})"
        for arm in arms
        if arm.stop is not None and arm.stop != "decided"
    )


def build(
    arms: Sequence[Arm],
    points: float | None,
    gate: str = "interval",
    alpha: float = 0.05,
    allow_incomplete: bool = False,
) -> ComparedRuns:
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
    rule: Rule = "p-value" if gate == "p-value" else "interval"
    comparisons = tuple(compare(arms[0], arm, alpha, rule) for arm in arms[1:])
    patterns = (
        {spelled[key]: pattern([arm.outcomes.get(key) for arm in arms]) for key in every} if len(arms) > 2 else None
    )
    refused = refusals(arms) if points is not None and not allow_incomplete else ()
    worsened = tuple(
        c.b for c in comparisons if points is not None and not refused and worse(c.strict_answer, points / 100, gate)
    )
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
        refused,
    )


# -- output --------------------------------------------------------------------------------------


def _points(value: float) -> str:
    return f"{'+' if value > 0 else ''}{percent_number(value)}"


def _table_lines(c: Comparison, table: PairedTable, title: str, rule: str, result: ComparedRuns) -> list[str]:
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
    words = f"**In words:** {sentence(c, table, result.alpha, rate, result.rule)}"
    if table.n == 0:
        return lines + ["No pairs.", "", words, ""]
    lines += [
        f"- passed in {c.a} only ({len(table.only_a)}): {_keys(table.only_a)}",
        f"- passed in {c.b} only ({len(table.only_b)}): {_keys(table.only_b)}",
        "",
    ]
    found = c.answer(table)
    rate_a, rate_b = table.rate_a, table.rate_b
    method = {
        "newcombe-paired": "Newcombe, paired",
        "newcombe-paired-scenario-clustered": f"Newcombe, paired, scenario-clustered: design effect "
        f"{table.design_effect:.2f}, t on {table.scenarios - 1} df",
        "confidence-sequence": "always-valid confidence sequence",
    }[found.method]
    test = {
        "mcnemar-exact": "exact McNemar",
        "sign-flip-scenarios": "exact sign-flip test over scenarios",
    }.get(found.test, "sequential test, always-valid")
    discordant = len(table.only_a) + len(table.only_b)
    lines.append(
        f"{c.a} {rate_a.successes}/{table.n} = {percent(rate_a.value or 0.0)}, {c.b} {rate_b.successes}/"
        f"{table.n} = {percent(rate_b.value or 0.0)}; **Δ ({c.b} − {c.a}) {_points(found.delta or 0.0)} "
        f"points**, {found.confidence:.0%} CI [{_points(found.low)}, {_points(found.high)}] ({method}); {test} "
        f"p = {found.p:.3g} ({plural(discordant, 'discordant pair')}"
        + (f" in {plural(table.scenarios, 'scenario')})" if table.clustered else ")")
    )
    return lines + ["", words, ""]


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
    lines.append(
        f"Matched by (split, scenario id, repeat): {len(result.matched)} keys planned or run in every run; "
        "a pair below needs a verdict in both runs."
    )
    lines += [
        f"- missing from {label} ({len(keys)}, not compared): {_keys(keys)}"
        for label, keys in result.missing.items()
        if keys
    ]
    if result.repeated:
        lines.append(
            "- pairs are (scenario, run), but a scenario's repeats are not independent: the scenario is the "
            "unit of every test and interval below (per-scenario pass fractions)"
        )
    if len(result.comparisons) > 1:
        lines.append(f"- {multiplicity(len(result.comparisons), result.alpha)}")
    lines.append("")
    for c in result.comparisons:
        lines += [f"## {c.b} vs {c.a}", ""]
        lines += _table_lines(c, c.strict, "Strict", STRICT_RULE, result)
        lines += _table_lines(c, c.judged, f"Judged-only ({plural(c.left_out, 'pair')} left out)", JUDGED_RULE, result)
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
        partial = [c for c in result.comparisons if c.strict.n < c.keys]
        if partial:
            verdict += (
                " (pairs with a verdict in both runs: "
                + ", ".join(f"{c.b} {c.strict.n} of {c.keys}" for c in partial)
                + ")"
            )
        if result.refused:
            verdict = (
                "REFUSED, not gated: "
                + "; ".join(result.refused)
                + ". --allow-incomplete gates on the pairs both runs have a verdict for"
            )
        lines += [
            f"--fail-if-worse D = {result.points / 100:g} ({result.points:g} points), --gate {result.gate}: fails "
            f"when {GATES[result.gate]}: {verdict}",
            "",
        ]
    return "\n".join(lines)


def multiplicity(comparisons: int, alpha: float) -> str:
    """The note for several runs compared with one baseline, each at ``alpha``."""
    family = 1 - (1 - alpha) ** comparisons
    return (
        f"{comparisons} runs are each compared with the first at level {alpha:g}: if none differed, the chance "
        f"that at least one comparison still shows a gap is up to {percent(family)}; for {alpha:g} over all of "
        f"them, use --alpha {alpha / comparisons:.3g} (Bonferroni)"
    )


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
                "strict": sentence(c, c.strict, result.alpha, "strict", result.rule),
                "judged": sentence(c, c.judged, result.alpha, "judged-only", result.rule),
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
        else {
            "points": result.points,
            "gate": result.gate,
            "alpha": result.alpha,
            "worse": list(result.worse),
            "refused": list(result.refused),
        },
        "multiplicity": multiplicity(len(result.comparisons), result.alpha) if len(result.comparisons) > 1 else None,
    }
