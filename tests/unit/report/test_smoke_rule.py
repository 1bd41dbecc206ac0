"""--gaia2-smoke: the midsmoke rung (a stratified 32, or all if fewer) judged on its error count
alone, one line saying so; failures, however many, do not fail it."""

from __future__ import annotations

from gaia2_records import record

from pytest_gaia2.config import options
from pytest_gaia2.plan.selection import SMOKE_SCENARIOS, smoke_sample
from pytest_gaia2.report.gate import Gate
from pytest_gaia2.report.stats import summarise


def _summary(passed: int, failed: int, errors: int):  # noqa: ANN202 - report.stats.Summary
    outcomes = ["passed"] * passed + ["failed"] * failed + ["error"] * errors
    return summarise([record(f"s{i:02d}", outcome) for i, outcome in enumerate(outcomes)])


def test_the_rung_is_judged_on_errors_only() -> None:
    gate = Gate.from_options(options.resolve({"smoke": True, "smoke_max_errors": 1}, {}, {}))
    mostly_failed = gate.decide(_summary(2, 29, 1))
    assert mostly_failed.met
    assert mostly_failed.lines == [
        "smoke: 1 error(s) in 32 scenario runs, at most 1 allowed (--gaia2-smoke-max-errors; failures do not "
        "count): passed"
    ]
    broken = gate.decide(_summary(30, 0, 2))
    assert not broken.met and broken.lines[0].endswith("2 error(s) in 32 scenario runs, at most 1 allowed "
                                                       "(--gaia2-smoke-max-errors; failures do not count): FAILED")
    strict = Gate.from_options(options.resolve({"smoke": True, "smoke_max_errors": 0}, {}, {})).decide(_summary(31, 0, 1))
    assert not strict.met


def test_without_smoke_the_error_count_is_no_bar() -> None:
    gate = Gate.from_options(options.resolve({"smoke": False, "smoke_max_errors": 0}, {}, {}))
    assert gate.max_errors is None and not gate.active and gate.decide(_summary(0, 0, 5)).met


def test_the_rung_samples_32_or_runs_all() -> None:
    assert SMOKE_SCENARIOS == 32
    assert [smoke_sample(pool) for pool in (1, 32, 33, 800)] == [None, None, 32, 32]
