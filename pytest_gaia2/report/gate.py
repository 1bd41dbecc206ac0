"""The CI gate: the bars a run must clear (pass rate, error rate, completeness), held
against its :class:`~pytest_gaia2.report.stats.Summary`, with one human line per bar.

The pass rate's lower bound is the summary's interval: Wilson's, or with ``--gaia2-repeat`` the
scenario-clustered Wilson interval (:func:`~pytest_gaia2.report.rates.clustered_wilson`), so a
scenario's repeats never count as independent evidence: 3 scenarios x 3 repeats all passed have
the lower bound of 3 scenarios, not of 9 results (a bootstrap over them said 100%)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pytest_gaia2.config.options import Options
from pytest_gaia2.report.rates import Rate, counted, percent, percent_number, t_quantile
from pytest_gaia2.report.stats import Summary

RateName = Literal["strict", "judged"]
GateOn = Literal["point", "lower-bound"]
_RATE_LABEL = {"strict": "strict", "judged": "judged-only"}


@dataclass(frozen=True)
class GateDecision:
    """Whether the run clears its bars, one human line per bar, and each missed bar in a few
    words (``unmet``) for the one verdict line that ends the run's output."""

    met: bool
    lines: list[str]
    unmet: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"met": self.met, "lines": list(self.lines), "unmet": list(self.unmet)}

    def verdict(self, stopped: str | None = None) -> str:
        """The last line of the run: PASS or FAIL, each missed bar, and why the run stopped early
        (``stopped``), so a CI log's last line alone says whether and why the gate failed."""
        head = (
            f"gate: PASS: {counted(len(self.lines), 'condition')} met"
            if self.met
            else f"gate: FAIL: {counted(len(self.unmet), 'condition')} missed: {'; '.join(self.unmet)}"
        )
        return f"{head}; stopped early: {stopped}" if stopped else head


@dataclass(frozen=True)
class Gate:
    """The CI bars a run must clear; rates are fractions 0..1 as on the command line."""

    min_pass_rate: float | None = None
    rate: RateName = "strict"
    gate_on: GateOn = "point"
    max_error_rate: float | None = None
    max_errors: int | None = None
    """--gaia2-smoke: the most errors (a count; failures do not count) the run may have."""

    def __post_init__(self) -> None:
        if self.rate not in _RATE_LABEL:
            raise ValueError(f"gate rate must be strict or judged, got {self.rate!r}")
        if self.gate_on not in ("point", "lower-bound"):
            raise ValueError(f"gate_on must be point or lower-bound, got {self.gate_on!r}")
        for name in ("min_pass_rate", "max_error_rate"):
            bar = getattr(self, name)
            if bar is not None and not 0.0 <= bar <= 1.0:
                raise ValueError(f"{name} must be a fraction from 0 to 1, got {bar!r}")

    @classmethod
    def from_options(cls, values: Options) -> Gate:
        """From the run's option values: the gate's own and --gaia2-smoke's error count."""
        return cls(
            min_pass_rate=values.min_pass_rate,
            rate=values.rate,
            gate_on=values.gate_on,
            max_error_rate=values.max_error_rate,
            max_errors=values.smoke_max_errors if values.smoke else None,
        )

    @property
    def active(self) -> bool:
        return self.min_pass_rate is not None or self.max_error_rate is not None or self.max_errors is not None

    def decide(self, summary: Summary, *, allow_incomplete: bool = False) -> GateDecision:
        """Hold the summary against every bar; an inactive gate is met and says nothing.

        A run that left planned scenarios unrun fails the gate unless ``allow_incomplete``
        (``--gaia2-allow-incomplete``); either way it gets a line saying how many.
        """
        if not self.active:
            return GateDecision(True, [])
        if summary.overall.total == 0:
            return GateDecision(
                False,
                ["gate: not met: no scenario results to measure (0 scenarios ran)"],
                ("no scenario results to measure",),
            )
        checks: list[_Check] = []
        if not summary.complete:
            checks.append(_completeness(summary, allow_incomplete))
        if self.min_pass_rate is not None:
            checks.append(self._pass_rate(summary, self.min_pass_rate))
        if self.max_error_rate is not None:
            checks.append(self._error_rate(summary, self.max_error_rate))
        if self.max_errors is not None:
            checks.append(self._errors(summary, self.max_errors))
        unmet = tuple(check.unmet for check in checks if not check.met)
        return GateDecision(not unmet, [check.line for check in checks], unmet)

    def _pass_rate(self, summary: Summary, required: float) -> _Check:
        rate: Rate = getattr(summary.overall, self.rate)
        name = f"{_RATE_LABEL[self.rate]} pass rate"
        label = f"gate: {name}"
        if rate.value is None:
            return _Check(
                False,
                f"{label} n/a (no judged scenarios), {percent(required)} required: missed, nothing to measure",
                f"{name} n/a (no judged scenarios), {percent(required)} required",
            )
        if self.gate_on == "point":
            measured = rate.value
            shown = f"{label} {percent(rate.value)} (95% CI lower bound {percent(rate.low)})"
            what = f"{name} {percent(rate.value)}"
        else:
            measured = rate.low
            shown = f"{label} {percent(rate.value)}, 95% CI lower bound {percent(rate.low)}"
            what = f"{name}'s 95% CI lower bound {percent(rate.low)}"
        met = measured >= required
        bar = f">= {percent(required)} required" if met else f"is below the {percent(required)} required"
        return _Check(met, _margin(met, f"{shown} {bar}", measured - required), f"{what} below {percent(required)}")

    @staticmethod
    def _error_rate(summary: Summary, allowed: float) -> _Check:
        measured = summary.error_rate or 0.0
        met = measured <= allowed
        bar = f"<= {percent(allowed)} allowed" if met else f"is above the {percent(allowed)} allowed"
        shown = f"gate: error rate {percent(measured)} ({summary.overall.errors}/{summary.overall.total}) {bar}"
        return _Check(
            met, _margin(met, shown, allowed - measured), f"error rate {percent(measured)} above {percent(allowed)}"
        )

    @staticmethod
    def _errors(summary: Summary, allowed: int) -> _Check:
        errors, total = summary.overall.errors, summary.overall.total
        met = errors <= allowed
        return _Check(
            met,
            f"smoke: {errors} error(s) in {total} scenario runs, at most {allowed} allowed "
            f"(--gaia2-smoke-max-errors; failures do not count): {'passed' if met else 'FAILED'}",
            f"smoke: {counted(errors, 'error')}, at most {allowed} allowed",
        )


@dataclass(frozen=True)
class _Check:
    """One bar: whether it is met, its line, and in a few words how it was missed."""

    met: bool
    line: str
    unmet: str


def best_lower_bound(scenarios: int, repeats: int = 1) -> float:
    """The 95% lower bound the gate would see if every run of ``scenarios`` x ``repeats`` passed."""
    if repeats <= 1:
        return Rate.of(scenarios, scenarios).low
    if scenarios < 2:
        return 0.0
    # clustered_wilson of all passed, in closed form: the design effect is the repeats, so the
    # effective n is the scenarios, and Wilson's N of N bound is N / (N + t^2)
    t = t_quantile(0.975, scenarios - 1)
    return scenarios / (scenarios + t * t)


def smallest_passing(required: float, repeats: int = 1, most: int = 1_000_000) -> int | None:
    """The fewest scenarios (each run ``repeats`` times) whose all-passed lower bound reaches
    ``required``; None when not even ``most`` would (the bound grows with the scenarios)."""
    if required >= 1 or best_lower_bound(most, repeats) < required:
        return None
    low, high = 1, most
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if best_lower_bound(middle, repeats) >= required else (middle + 1, high)
    return low


def _completeness(summary: Summary, allowed: bool) -> _Check:
    missing = f"{len(summary.not_run)} of {summary.planned} planned {summary.planned_unit} did not run"
    return _Check(
        allowed,
        f"gate: incomplete: {missing}: {'allowed (--gaia2-allow-incomplete)' if allowed else 'not met'}",
        f"incomplete: {missing}",
    )


def _margin(met: bool, shown: str, margin: float) -> str:
    return f"{shown}: {'met' if met else 'missed'} by {percent_number(abs(margin))} points"
