"""A run as Meta's Gaia2 leaderboard takes it, and a validator that checks such an export.

The leaderboard takes what the legacy ``are-benchmark gaia2-run --hf_upload`` path uploads
(PyPI ``meta-agents-research-environments``, ``are/simulation/benchmark/``): one row per scenario
run (the fields of upstream's ``create_hf_schema()``, :data:`ROW_FIELDS`, ``None`` values left
out), one dataset config per capability, a dataset card (``README.md`` whose YAML front matter
lists the configs and their features) and ``computed_stats.json`` as upstream's
``generate_json_stats_report`` builds it: ``metadata`` (``report_version`` 3.0),
``statistics.per_capability`` / ``statistics.global`` and ``run_configurations``.

Field meanings follow upstream: ``score`` is 1.0 for success, 0.0 for failure, absent for an
exception; ``status`` is ``success``, ``failed``, ``exception`` or ``no_validation``; success
rates are percentages (0..100) over runs with a score only (judged-only: an exception is left
out, as upstream's are), with the standard deviation and error across run numbers; the macro
rate averages every capability's rate, a capability without a scored run counting as 0.0.

Every run of pytest-gaia2 is upstream's "standard" phase: no agent-to-agent apps, no noise. A
complete submission also needs the agent2agent and noise phases, which gaia2-cli images do not
run (:data:`PHASES_NOTE`).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.store.names import problem as name_problem
from pytest_gaia2.store.record import AttemptRecord

PHASE = "standard"
PHASES = ("standard", "agent2agent", "noise")
STATUSES = ("success", "failed", "exception", "no_validation")
STATS_FILE = "computed_stats.json"
CARD_FILE = "README.md"
REPORT_VERSION = "3.0"
ROW_FIELDS: dict[str, tuple[type, ...]] = {
    "scenario_id": (str,),
    "run_number": (int,),
    "task_id": (str,),
    "score": (float,),
    "status": (str,),
    "data": (str,),
    "run_type": (str,),
    "config": (str,),
    "phase_name": (str,),
    "a2a_app_prop": (float,),
    "has_app_noise": (bool,),
    "has_env_noise": (bool,),
    "run_config": (str,),
    "has_exception": (bool,),
    "exception_type": (str,),
    "exception_message": (str,),
    "rationale": (str,),
}
"""Upstream's ``create_hf_schema()`` in its order, each field with its Python type; every field
but :data:`REQUIRED` may be absent (upstream drops ``None`` values)."""
DTYPES = {str: "string", int: "int64", float: "float64", bool: "bool"}
"""The dataset card's dtype of each Python type (as upstream maps its Arrow types)."""
REQUIRED = (
    "scenario_id",
    "run_number",
    "task_id",
    "status",
    "config",
    "phase_name",
    "a2a_app_prop",
    "has_app_noise",
    "has_env_noise",
    "has_exception",
)
DURATION_KEYS = ("avg_run_duration", "avg_run_duration_std", "job_duration")
"""Statistics that come from the run's timings, not from the rows: ``--check`` can only check they are numbers."""
RATES_NOTE = (
    "success rates are judged-only: percentages over runs with a verdict; exceptions (infrastructure "
    "errors) are left out, as upstream's report_stats.py leaves out runs without a validated score"
)
PHASES_NOTE = (
    "this export holds the standard phase only: a complete Gaia2 leaderboard submission also needs "
    "the agent2agent and noise phases, which gaia2-cli images do not run"
)
STATUS_OF = {"passed": "success", "failed": "failed", "error": "exception"}


def config_name(split: str) -> str:
    """The dataset config a split's rows go to (upstream: the capability, for the standard phase)."""
    return split


def row(record: AttemptRecord, run_config: str, data: str | None) -> dict[str, Any]:
    """One scenario run as a leaderboard row, ``None`` values left out as upstream leaves them out."""
    status = STATUS_OF[record.outcome]
    values: dict[str, Any] = {
        "scenario_id": record.scenario_id,
        "run_number": record.repeat,
        "task_id": record.scenario_id,
        "score": {"success": 1.0, "failed": 0.0}.get(status),
        "status": status,
        "data": data,
        "config": config_name(record.split),
        "phase_name": PHASE,
        "a2a_app_prop": 0.0,
        "has_app_noise": False,
        "has_env_noise": False,
        "run_config": run_config,
        "has_exception": status == "exception",
        "exception_type": record.error_category if status == "exception" else None,
        "exception_message": record.error if status == "exception" else None,
        "rationale": "; ".join(record.failure_reasons) or None,
    }
    return {key: value for key, value in values.items() if value is not None}


@dataclass(frozen=True)
class Scored:
    """What the statistics need of one row (a checked export keeps only this, not the row's trace)."""

    config: str
    phase: str
    scenario_id: str
    run_number: int
    status: str
    score: float | None
    a2a_app_prop: float = 0.0
    has_app_noise: bool = False
    has_env_noise: bool = False
    run_duration: float | None = None

    @classmethod
    def of(cls, values: Mapping[str, Any], run_duration: float | None = None) -> Scored:
        return cls(
            config=values["config"],
            phase=values["phase_name"],
            scenario_id=values["scenario_id"],
            run_number=values["run_number"],
            status=values["status"],
            score=values.get("score"),
            a2a_app_prop=values["a2a_app_prop"],
            has_app_noise=values["has_app_noise"],
            has_env_noise=values["has_env_noise"],
            run_duration=run_duration,
        )


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _stdev(values: Sequence[float]) -> float:
    """The sample standard deviation (ddof 1, as numpy's and polars' in upstream's report); 0 below two values."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def _counts(runs: Sequence[Scored]) -> dict[str, int]:
    return {
        "total_runs": len(runs),
        "validated_runs": sum(r.score is not None for r in runs),
        "success_runs": sum(r.status == "success" for r in runs),
        "failed_runs": sum(r.status == "failed" for r in runs),
        "exception_runs": sum(r.status == "exception" for r in runs),
        "no_validation_runs": sum(r.status == "no_validation" for r in runs),
    }


def _rate_stats(runs: Sequence[Scored]) -> dict[str, float]:
    """Success rate (percent) over scored runs, and its std / sem across the run numbers' rates."""
    scored = [r for r in runs if r.score is not None]
    per_run = [
        100 * _mean([r.score for r in scored if r.run_number == number and r.score is not None])
        for number in sorted({r.run_number for r in scored})
    ]
    std = _stdev(per_run)
    return {
        "success_rate": 100 * _mean([r.score for r in scored if r.score is not None]),
        "success_rate_std": std,
        "success_rate_sem": std / math.sqrt(len(per_run)) if len(per_run) > 1 else 0.0,
    }


def _pass_k(runs: Sequence[Scored]) -> dict[str, Any]:
    """pass@k (a scenario passed at least once) and pass^k (every scored run passed), over every scenario."""
    total = len({(r.scenario_id, r.phase) for r in runs})
    scores: dict[tuple[str, str], list[float]] = {}
    for r in runs:
        if r.score is not None:
            scores.setdefault((r.scenario_id, r.phase), []).append(r.score)
    at_k = sum(_mean(values) > 0 for values in scores.values())
    all_k = sum(_mean(values) == 1.0 for values in scores.values())
    return {
        "pass_at_k": at_k,
        "pass_at_k_percent": 100 * at_k / total if total else 0.0,
        "pass_k": all_k,
        "pass_k_percent": 100 * all_k / total if total else 0.0,
        "total_scenarios": total,
    }


def _durations(runs: Sequence[Scored]) -> dict[str, float]:
    timed = [r.run_duration for r in runs if r.run_duration is not None]
    return {"avg_run_duration": _mean(timed), "avg_run_duration_std": _stdev(timed)}


def _capability_key(config: str, phase: str) -> str:
    """Upstream keys a capability by its config, and the ``mini`` config by config and phase."""
    return f"{config}_{phase}" if config == "mini" else config


def _cross_run(runs: Sequence[Scored], per: Mapping[str, Mapping[str, Any]], macro: bool) -> dict[str, float]:
    """The macro (capabilities weighted equally) or micro (by scored runs) rate, with its spread across run numbers."""
    kind = "macro" if macro else "micro"
    scored = [r for r in runs if r.score is not None]
    if not scored:
        return {f"{kind}_success_rate": 0.0, f"{kind}_success_rate_std": 0.0, f"{kind}_success_rate_sem": 0.0}
    rates = [entry["success_rate"] for entry in per.values()]
    if macro:
        overall = _mean(rates)
    else:
        weights = [entry["validated_runs"] for entry in per.values()]
        overall = sum(r * w for r, w in zip(rates, weights, strict=True)) / sum(weights) if sum(weights) else 0.0
    groups = sorted({(r.config, r.phase) for r in scored})
    spread: list[float] = []
    for number in sorted({r.run_number for r in scored}):
        parts = [
            (100 * _mean([r.score for r in chosen if r.score is not None]), len(chosen))
            for group in groups
            if (chosen := [r for r in scored if r.run_number == number and (r.config, r.phase) == group])
        ]
        if parts:
            spread.append(
                _mean([rate for rate, _ in parts])
                if macro
                else sum(rate * n for rate, n in parts) / sum(n for _, n in parts)
            )
    std = _stdev(spread)
    return {
        f"{kind}_success_rate": overall,
        f"{kind}_success_rate_std": std,
        f"{kind}_success_rate_sem": std / math.sqrt(len(spread)) if len(spread) > 1 else 0.0,
    }


def statistics_of(runs: Sequence[Scored], job_duration: float | None = None) -> dict[str, Any]:
    """``per_capability`` and ``global`` as upstream's ``calculate_statistics`` computes them."""
    groups: dict[tuple[str, str], list[Scored]] = {}
    for r in runs:
        groups.setdefault((r.config, r.phase), []).append(r)
    per = {
        _capability_key(config, phase): {
            "capability": f"{config} ({phase})" if config == "mini" else config,
            **_counts(chosen),
            **_rate_stats(chosen),
            **_pass_k(chosen),
            **_durations(chosen),
        }
        for (config, phase), chosen in sorted(groups.items())
    }
    global_stats: dict[str, Any] = {
        **_counts(runs),
        **_pass_k(runs),
        **_cross_run(runs, per, macro=True),
        **_cross_run(runs, per, macro=False),
        **_durations(runs),
        "job_duration": job_duration if job_duration is not None else 0.0,
    }
    return {"per_capability": per, "global": global_stats}


def run_configurations(runs: Iterable[Scored]) -> list[dict[str, Any]]:
    """Upstream's ``run_configurations``: counts per (phase, config, a2a share, noise flags), the
    grouping values as the strings upstream's frame holds."""
    groups: dict[tuple[str, str, str, str, str], list[Scored]] = {}
    for r in runs:
        key = (r.phase, r.config, str(r.a2a_app_prop), str(r.has_app_noise), str(r.has_env_noise))
        groups.setdefault(key, []).append(r)
    return [
        {
            "phase_name": phase,
            "config": config,
            "a2a_app_prop": a2a,
            "has_tool_augmentation": tools,
            "has_env_events": env,
            **_counts(chosen),
        }
        for (phase, config, a2a, tools, env), chosen in sorted(groups.items())
    ]


def stats_report(
    runs: Sequence[Scored], metadata: Mapping[str, Any], job_duration: float | None = None
) -> dict[str, Any]:
    """computed_stats.json: upstream's three sections, ``metadata`` first with its ``report_version``."""
    return {
        "metadata": {**metadata, "report_version": REPORT_VERSION},
        "statistics": statistics_of(runs, job_duration),
        "run_configurations": run_configurations(runs),
    }


def dataset_card(configs: Sequence[str], split: str, metadata: Mapping[str, Any], stats: Mapping[str, Any]) -> str:
    """README.md with the YAML front matter upstream's ``generate_gaia2_dataset_readme`` writes: each
    config's data files and features. Scalars are JSON strings, which YAML reads as they are."""

    def text(value: object) -> str:
        return json.dumps(str(value), ensure_ascii=False)

    lines = ["---", "configs:"]
    for config in configs:
        lines += [f"- config_name: {text(config)}", "  data_files:", f"  - split: {text(split)}"]
        lines.append(f"    path: {text(f'{config}/{split}-*')}")
    lines.append("dataset_info:")
    for config in configs:
        lines += [f"- config_name: {text(config)}", "  features:"]
        for name, kinds in ROW_FIELDS.items():
            lines += [f"  - name: {text(name)}", f"    dtype: {text(DTYPES[kinds[0]])}"]
        lines += ["  splits:", f"  - name: {text(split)}"]
    lines += ["---", "", "# GAIA2 Leaderboard Submission", ""]
    lines += [f"**Model:** {metadata.get('model')}", f"**Provider:** {metadata.get('model_provider')}"]
    lines += [f"**Split:** {split}", "", f"Made by {metadata.get('exporter')}: {PHASES_NOTE}.", ""]
    lines += ["## Results Summary", "", "| capability | runs | scored | success rate |", "|---|---|---|---|"]
    for key, entry in stats["per_capability"].items():
        lines.append(f"| {key} | {entry['total_runs']} | {entry['validated_runs']} | {entry['success_rate']:.1f}% |")
    lines += ["", RATES_NOTE[0].upper() + RATES_NOTE[1:] + ".", ""]
    return "\n".join(lines)


# -- the validator ------------------------------------------------------------------------------


def check_row(where: str, values: object, config: str) -> list[str]:
    """Each way one row breaks upstream's format, naming the field."""
    if not isinstance(values, dict):
        return [f"{where}: not a JSON object"]
    problems = [f"{where}: unknown field {name!r:.60}" for name in values if name not in ROW_FIELDS]
    problems += [f"{where}: field {name!r} is missing" for name in REQUIRED if values.get(name) is None]
    for name, kinds in ROW_FIELDS.items():
        value = values.get(name)
        if value is not None and (type(value) not in kinds or (isinstance(value, float) and not math.isfinite(value))):
            problems.append(f"{where}: field {name!r} must be {kinds[0].__name__}, got {value!r:.60}")
    if problems:
        return problems
    for name in ("scenario_id", "task_id"):
        if (why := name_problem(values[name])) is not None:
            problems.append(f"{where}: field {name!r} cannot name a scenario: {why}")
    status = values["status"]
    expected_score = {"success": 1.0, "failed": 0.0}.get(status)
    if status not in STATUSES:
        problems.append(f"{where}: field 'status' must be one of {', '.join(STATUSES)}, got {status!r:.60}")
    elif values.get("score") != expected_score:
        problems.append(f"{where}: field 'score' must be {expected_score} for status {status!r}")
    if status == "exception" and not values["has_exception"]:
        problems.append(f"{where}: field 'has_exception' must be true for status 'exception'")
    if _capability_key(values["config"], values["phase_name"]) != config and values["config"] != config:
        problems.append(f"{where}: field 'config' is {values['config']!r:.60} in the files of config {config!r}")
    if values["phase_name"] not in PHASES:
        problems.append(f"{where}: field 'phase_name' must be one of {', '.join(PHASES)}")
    if not 0 <= values["a2a_app_prop"] <= 1:
        problems.append(f"{where}: field 'a2a_app_prop' must be from 0 to 1")
    if values["run_number"] < 1:
        problems.append(f"{where}: field 'run_number' must be 1 or more")
    if values.get("run_config") is not None:
        try:
            json.loads(values["run_config"])
        except (ValueError, RecursionError):  # RecursionError: nested deeper than json parses
            problems.append(f"{where}: field 'run_config' is not JSON")
    return problems


def check_report(report: object, runs: Sequence[Scored]) -> list[str]:
    """computed_stats.json's sections present, and every statistic equal to the one computed again
    from the rows (an edited rate or count is named); the timings only checked to be numbers."""
    if not isinstance(report, dict):
        return [f"{STATS_FILE}: not a JSON object"]
    problems = [
        f"{STATS_FILE}: field {name!r} is missing"
        for name in ("metadata", "statistics", "run_configurations")
        if name not in report
    ]
    if problems:
        return problems
    found = report["statistics"]
    if not isinstance(found, dict):
        return [f"{STATS_FILE}: field 'statistics' must be an object"]
    metadata = report["metadata"]
    if not isinstance(metadata, dict) or metadata.get("report_version") != REPORT_VERSION:
        problems.append(f"{STATS_FILE}: field 'metadata.report_version' must be {REPORT_VERSION!r}")
    expected = statistics_of(runs)
    for section in ("per_capability", "global"):
        problems += _compare(f"statistics.{section}", found.get(section), expected[section])
    problems += _compare("run_configurations", report["run_configurations"], run_configurations(runs))
    return problems


def _compare(where: str, found: Any, expected: Any) -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(found, dict):
            return [f"{STATS_FILE}: field {where!r} must be an object"]
        problems = [f"{STATS_FILE}: field '{where}.{k!s:.60}' is not in the rows" for k in found if k not in expected]
        for key, value in expected.items():
            problems += _compare(f"{where}.{key}", found.get(key), value)
        return problems
    if isinstance(expected, list):
        if not isinstance(found, list) or len(found) != len(expected):
            return [f"{STATS_FILE}: field {where!r} must list {len(expected)} entries, as the rows do"]
        ordered = sorted(found, key=lambda entry: json.dumps(entry, sort_keys=True, default=str))
        wanted = sorted(expected, key=lambda entry: json.dumps(entry, sort_keys=True, default=str))
        return [
            p for i, (f, e) in enumerate(zip(ordered, wanted, strict=True)) for p in _compare(f"{where}[{i}]", f, e)
        ]
    if where.rsplit(".", 1)[-1] in DURATION_KEYS:
        return [] if _number(found) and found >= 0 else [f"{STATS_FILE}: field {where!r} must be a number of seconds"]
    same = _close(found, expected) if isinstance(expected, (int, float)) else found == expected
    return [] if same else [f"{STATS_FILE}: field {where!r} is {found!r:.60}, the rows say {expected!r:.60}"]


def _number(value: object) -> bool:
    """A finite JSON number that fits a double (an integer of 4300 digits is none)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _close(found: object, expected: float) -> bool:
    """Whether a number of the file equals the computed one; an integer past any double (JSON
    allows 4300 digits) is no statistic, not an OverflowError."""
    if not isinstance(found, (int, float)) or isinstance(found, bool):
        return False
    try:
        return math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-9)
    except OverflowError:
        return False
