"""A run as Meta's Gaia2 leaderboard takes it, and a validator that checks such an export.

The leaderboard takes what the legacy ``are-benchmark gaia2-run --hf_upload`` path uploads: one
row per scenario run (the fields in :data:`ROW_FIELDS`, ``None`` values left out), one config per
split, and a JSON report with ``metadata`` and ``statistics.per_capability`` / ``statistics.global``.
Field meanings follow upstream's ``hf_upload_utils.py`` and ``report_stats.py``: ``score`` is 1.0
for success, 0.0 for failure, absent for an exception; ``status`` is ``success``, ``failed`` or
``exception``; success rates are percentages (0..100) over runs with a verdict only (judged-only:
an exception is left out, as upstream's are), with the standard deviation and error across runs.

Every run of pytest-gaia2 is upstream's "standard" phase: no agent-to-agent apps, no noise.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_gaia2.store.record import AttemptRecord

PHASE = "standard"
PHASES = ("standard", "agent2agent", "noise")
STATUSES = ("success", "failed", "exception", "no_validation")
REPORT_FILE = "report.json"
ROW_FIELDS: dict[str, tuple[type, ...]] = {
    "scenario_id": (str,),
    "run_number": (int,),
    "task_id": (str,),
    "score": (float,),
    "status": (str,),
    "data": (str,),
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
"""Each row field with its type; ``score``, ``data`` and the exception and rationale fields may be absent."""
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
    "run_config",
    "has_exception",
)
RATES_NOTE = (
    "success rates are judged-only: percentages over runs with a verdict; exceptions (infrastructure "
    "errors) are left out, as upstream's report_stats.py leaves out runs without a validated score"
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
        "rationale": ("; ".join(record.failure_reasons) or None) if status == "failed" else None,
    }
    return {key: value for key, value in values.items() if value is not None}


def _rate_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Success rate (percent) over rows with a score, and its std / sem across run numbers."""
    scored = [r for r in rows if "score" in r]
    if not scored:
        return {"success_rate": 0.0, "success_rate_std": 0.0, "success_rate_sem": 0.0}
    per_run = [
        100 * statistics.fmean(r["score"] for r in scored if r["run_number"] == run)
        for run in sorted({r["run_number"] for r in scored})
    ]
    std = statistics.stdev(per_run) if len(per_run) > 1 else 0.0
    return {
        "success_rate": 100 * statistics.fmean(r["score"] for r in scored),
        "success_rate_std": std,
        "success_rate_sem": std / math.sqrt(len(per_run)) if len(per_run) > 1 else 0.0,
    }


def _counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    return {
        "total_runs": len(rows),
        "validated_runs": sum("score" in r for r in rows),
        "success_runs": sum(r["status"] == "success" for r in rows),
        "failed_runs": sum(r["status"] == "failed" for r in rows),
        "exception_runs": sum(r["status"] == "exception" for r in rows),
        "no_validation_runs": sum(r["status"] == "no_validation" for r in rows),
    }


def _pass_k(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """pass@k (a scenario passed at least once) and pass^k (every scored run passed), over scenarios."""
    scenarios = {(r["scenario_id"], r["phase_name"]) for r in rows}
    scores: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        if "score" in r:
            scores.setdefault((r["scenario_id"], r["phase_name"]), []).append(r["score"])
    at_k = sum(any(s > 0 for s in values) for values in scores.values())
    all_k = sum(all(s == 1.0 for s in values) for values in scores.values())
    total = len(scenarios)
    return {
        "pass_at_k": at_k,
        "pass_at_k_percent": 100 * at_k / total if total else 0.0,
        "pass_k": all_k,
        "pass_k_percent": 100 * all_k / total if total else 0.0,
        "total_scenarios": total,
    }


def statistics_of(rows_by_config: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """``per_capability`` (one entry per config) and ``global`` (macro: mean of the capabilities'
    rates; micro: weighted by their scored runs), as upstream's report computes them."""
    per = {
        name: {"capability": name, **_counts(rows), **_rate_stats(rows), **_pass_k(rows)}
        for name, rows in sorted(rows_by_config.items())
    }
    every = [r for rows in rows_by_config.values() for r in rows]
    rates = [entry["success_rate"] for entry in per.values() if entry["validated_runs"]]
    weights = [entry["validated_runs"] for entry in per.values() if entry["validated_runs"]]
    runs = sorted({r["run_number"] for r in every if "score" in r})

    def per_run(run: int, macro: bool) -> float | None:
        parts = [
            (100 * statistics.fmean(r["score"] for r in scored), len(scored))
            for rows in rows_by_config.values()
            if (scored := [r for r in rows if "score" in r and r["run_number"] == run])
        ]
        if not parts:
            return None
        if macro:
            return statistics.fmean(rate for rate, _ in parts)
        return sum(rate * n for rate, n in parts) / sum(n for _, n in parts)

    global_stats: dict[str, Any] = {**_counts(every), **_pass_k(every)}
    for kind, value in (
        ("macro", statistics.fmean(rates) if rates else 0.0),
        ("micro", sum(r * w for r, w in zip(rates, weights, strict=True)) / sum(weights) if weights else 0.0),
    ):
        spread = [v for run in runs if (v := per_run(run, kind == "macro")) is not None]
        std = statistics.stdev(spread) if len(spread) > 1 else 0.0
        global_stats[f"{kind}_success_rate"] = value
        global_stats[f"{kind}_success_rate_std"] = std
        global_stats[f"{kind}_success_rate_sem"] = std / math.sqrt(len(spread)) if len(spread) > 1 else 0.0
    return {"per_capability": per, "global": global_stats}


# -- the validator ------------------------------------------------------------------------------


def check_row(where: str, values: Any, config: str) -> list[str]:
    """Each way one row breaks the format, naming the field."""
    if not isinstance(values, dict):
        return [f"{where}: not a JSON object"]
    problems = [f"{where}: unknown field {name!r}" for name in values if name not in ROW_FIELDS]
    problems += [f"{where}: field {name!r} is missing" for name in REQUIRED if name not in values]
    for name, kinds in ROW_FIELDS.items():
        value = values.get(name)
        if name in values and (type(value) not in kinds or (isinstance(value, float) and not math.isfinite(value))):
            problems.append(f"{where}: field {name!r} must be {kinds[0].__name__}, got {value!r:.60}")
    if problems:
        return problems
    status = values["status"]
    expected_score = {"success": 1.0, "failed": 0.0}.get(status)
    if status not in STATUSES:
        problems.append(f"{where}: field 'status' must be one of {', '.join(STATUSES)}, got {status!r:.60}")
    elif values.get("score") != expected_score:
        problems.append(f"{where}: field 'score' must be {expected_score} for status {status!r}")
    if values["has_exception"] != (status == "exception"):
        problems.append(f"{where}: field 'has_exception' must be {status == 'exception'} for status {status!r}")
    if values["config"] != config:
        problems.append(f"{where}: field 'config' is {values['config']!r:.60} in the files of config {config!r}")
    if values["phase_name"] not in PHASES:
        problems.append(f"{where}: field 'phase_name' must be one of {', '.join(PHASES)}")
    if not 0 <= values["a2a_app_prop"] <= 1:
        problems.append(f"{where}: field 'a2a_app_prop' must be from 0 to 1")
    if values["run_number"] < 1:
        problems.append(f"{where}: field 'run_number' must be 1 or more")
    try:
        json.loads(values["run_config"])
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json parses
        problems.append(f"{where}: field 'run_config' is not JSON")
    return problems


def check_report(report: Any, rows_by_config: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """The report's ``metadata`` and ``statistics`` present, and every statistic equal to the one
    computed again from the rows (an edited rate or count is named)."""
    if not isinstance(report, dict):
        return [f"{REPORT_FILE}: not a JSON object"]
    problems = [
        f"{REPORT_FILE}: field {name!r} is missing" for name in ("metadata", "statistics") if name not in report
    ]
    if problems:
        return problems
    expected = statistics_of(rows_by_config)
    found = report["statistics"]
    if not isinstance(found, dict):
        return [f"{REPORT_FILE}: field 'statistics' must be an object"]
    for section in ("per_capability", "global"):
        problems += _compare(f"statistics.{section}", found.get(section), expected[section])
    return problems


def _compare(where: str, found: Any, expected: Any) -> list[str]:
    if isinstance(expected, dict):
        if not isinstance(found, dict):
            return [f"{REPORT_FILE}: field {where!r} must be an object"]
        problems = [f"{REPORT_FILE}: field '{where}.{k}' is not in the rows" for k in found if k not in expected]
        for key, value in expected.items():
            problems += _compare(f"{where}.{key}", found.get(key), value)
        return problems
    same = _close(found, expected) if isinstance(expected, (int, float)) else found == expected
    return [] if same else [f"{REPORT_FILE}: field {where!r} is {found!r:.60}, the rows say {expected!r:.60}"]


def _close(found: Any, expected: float) -> bool:
    """Whether a number of the file equals the computed one; an integer past any double (JSON
    allows 4300 digits) is no statistic, not an OverflowError."""
    if not isinstance(found, (int, float)) or isinstance(found, bool):
        return False
    try:
        return math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-9)
    except OverflowError:
        return False
