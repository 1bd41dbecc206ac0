"""pass@k, pass^k and avg@k for a run with ``--gaia2-repeat K``, and which scenarios flipped.

Over the rows of :mod:`result_rows`: each scenario's K results side by side, the per-run
strict rates and their mean, with the scenario-clustered interval of :mod:`rates`.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.report.rates import Rate
from pytest_gaia2.report.rows import ResultRow, natural_key, split_order

LETTER = {"passed": "P", "failed": "F", "error": "E"}
MISSING_RUN = "."


@dataclass(frozen=True)
class RepeatStats:
    """pass@k figures for a run with ``--gaia2-repeat K`` (k > 1).

    ``avg_at_k`` is the mean of the per-run strict rates (each with its Wilson interval in
    ``per_run``), its own interval scenario-clustered
    (:func:`~pytest_gaia2.report.rates.clustered_wilson`, one stratum per run): a Wilson interval
    over the k x n results would treat a scenario's repeats as independent and come out too
    narrow. ``pass_at_k`` (at least one
    pass) and ``pass_hat_k`` (all k runs passed; an errored run is left out, as the export counts
    it; a missing or not-run run is not a pass) are over scenarios, one result each, with Wilson
    intervals. ``patterns`` holds one
    letter per run for each scenario, e.g. ``PFP`` (P passed, F failed, E error, ``.`` no
    result), the form teams quote flaky scenarios in.
    """

    k: int
    scenarios: int
    avg_at_k: Rate
    pass_at_k: Rate
    pass_hat_k: Rate
    per_run: tuple[Rate, ...]
    flipped: tuple[str, ...]
    errored_runs: tuple[tuple[str, int], ...]
    patterns: Mapping[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "scenarios": self.scenarios,
            "avg_at_k": self.avg_at_k.to_dict(),
            "pass_at_k": self.pass_at_k.to_dict(),
            "pass_hat_k": self.pass_hat_k.to_dict(),
            "per_run": [rate.to_dict() for rate in self.per_run],
            "flipped": {scenario_id: self.patterns[scenario_id] for scenario_id in self.flipped},
            "errored_runs": [{"scenario_id": scenario_id, "run": run} for scenario_id, run in self.errored_runs],
            "patterns": dict(self.patterns),
        }


def _strict_rate(rows: Sequence[ResultRow]) -> Rate:
    """Passes over every result of one run, with its Wilson interval."""
    return Rate.of(sum(row.outcome == "passed" for row in rows), len(rows))


def _passed_every_run(outcomes: Mapping[int, str], runs: range) -> bool:
    """pass^k of one scenario: every run judged passed, an errored run left out (neither a pass
    nor a failure, as the export's and upstream's pass^k count it); a run without a result is
    no pass, nor is a scenario with no judged run at all."""
    judged = [outcomes.get(run) for run in runs if outcomes.get(run) != "error"]
    return bool(judged) and all(outcome == "passed" for outcome in judged)


def repeat_stats(rows: Sequence[ResultRow]) -> RepeatStats | None:
    """The pass@k view of the rows; None when every scenario ran once."""
    k = max((row.run for row in rows), default=1)
    if k <= 1:
        return None
    by_scenario: dict[tuple[str, str], dict[int, str]] = {}
    for row in rows:
        by_scenario.setdefault((row.split, row.scenario_id), {})[row.run] = row.outcome
    runs = range(1, k + 1)
    per_run = tuple(_strict_rate([row for row in rows if row.run == run]) for run in runs)
    order = sorted(by_scenario, key=lambda key: (natural_key(key[1]), split_order(key[0])))
    scenarios = [(key[1], by_scenario[key]) for key in order]
    cells = [[(outcomes.get(run) == "passed", run in outcomes) for run in runs] for _, outcomes in scenarios]
    avg = statistics.fmean(rate.value for rate in per_run if rate.value is not None)
    return RepeatStats(
        k=k,
        scenarios=len(scenarios),
        avg_at_k=Rate.clustered(sum(row.outcome == "passed" for row in rows), len(rows), cells, value=avg),
        pass_at_k=Rate.of(sum("passed" in outcomes.values() for _, outcomes in scenarios), len(scenarios)),
        pass_hat_k=Rate.of(sum(_passed_every_run(outcomes, runs) for _, outcomes in scenarios), len(scenarios)),
        per_run=per_run,
        flipped=tuple(
            scenario_id for scenario_id, outcomes in scenarios if {"passed", "failed"} <= set(outcomes.values())
        ),
        errored_runs=tuple(
            (scenario_id, run)
            for scenario_id, outcomes in scenarios
            for run in sorted(outcomes)
            if outcomes[run] == "error"
        ),
        patterns={
            scenario_id: "".join(LETTER.get(outcomes.get(run, ""), MISSING_RUN) for run in runs)
            for scenario_id, outcomes in scenarios
        },
    )
