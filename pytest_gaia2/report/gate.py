"""The CI gate: the bars a run must clear (pass rate, error rate, completeness), held
against its :class:`~pytest_gaia2.report.stats.Summary`, with one human line per bar."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pytest_gaia2.report.rates import Rate, percent, percent_number
from pytest_gaia2.report.stats import Summary

RateName = Literal["strict", "judged"]
GateOn = Literal["point", "lower-bound"]
_RATE_LABEL = {"strict": "strict", "judged": "judged-only"}


@dataclass(frozen=True)
class GateDecision:
    """Whether the run clears its bars, and one human line per bar."""

    met: bool
    lines: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"met": self.met, "lines": list(self.lines)}


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
    def from_options(cls, values: Mapping[str, Any]) -> Gate:
        """From ``options.resolve`` output (keys min_pass_rate, rate, gate_on, max_error_rate)."""
        return cls(
            min_pass_rate=values.get("min_pass_rate"),
            rate=values.get("rate") or "strict",
            gate_on=values.get("gate_on") or "point",
            max_error_rate=values.get("max_error_rate"),
            max_errors=values.get("smoke_max_errors") if values.get("smoke") else None,
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
            return GateDecision(False, ["gate: not met: no scenario results to measure (0 scenarios ran)"])
        checks = []
        if not summary.complete:
            checks.append(_completeness(summary, allow_incomplete))
        if self.min_pass_rate is not None:
            checks.append(self._pass_rate(summary, self.min_pass_rate))
        if self.max_error_rate is not None:
            checks.append(self._error_rate(summary, self.max_error_rate))
        if self.max_errors is not None:
            checks.append(self._errors(summary, self.max_errors))
        return GateDecision(all(met for met, _ in checks), [line for _, line in checks])

    def _pass_rate(self, summary: Summary, required: float) -> tuple[bool, str]:
        rate: Rate = getattr(summary.overall, self.rate)
        label = f"gate: {_RATE_LABEL[self.rate]} pass rate"
        if rate.value is None:
            return False, (
                f"{label} n/a (no judged scenarios) >= {percent(required)} required: missed, nothing to measure"
            )
        if self.gate_on == "point":
            measured = rate.value
            shown = f"{label} {percent(rate.value)} (95% CI lower bound {percent(rate.low)})"
        else:
            measured = rate.low
            shown = f"{label} {percent(rate.value)}, 95% CI lower bound {percent(rate.low)}"
        return _verdict(measured >= required, f"{shown} >= {percent(required)} required", measured - required)

    @staticmethod
    def _error_rate(summary: Summary, allowed: float) -> tuple[bool, str]:
        measured = summary.error_rate or 0.0
        shown = (
            f"gate: error rate {percent(measured)} "
            f"({summary.overall.errors}/{summary.overall.total}) <= {percent(allowed)} allowed"
        )
        return _verdict(measured <= allowed, shown, allowed - measured)

    @staticmethod
    def _errors(summary: Summary, allowed: int) -> tuple[bool, str]:
        errors, total = summary.overall.errors, summary.overall.total
        met = errors <= allowed
        return met, (
            f"smoke: {errors} error(s) in {total} scenario runs, at most {allowed} allowed "
            f"(--gaia2-smoke-max-errors; failures do not count): {'passed' if met else 'FAILED'}"
        )


def _completeness(summary: Summary, allowed: bool) -> tuple[bool, str]:
    line = f"gate: incomplete: {len(summary.not_run)} of {summary.planned} planned {summary.planned_unit} did not run"
    return allowed, f"{line}: {'allowed (--gaia2-allow-incomplete)' if allowed else 'not met'}"


def _verdict(met: bool, shown: str, margin: float) -> tuple[bool, str]:
    return met, f"{shown}: {'met' if met else 'missed'} by {percent_number(abs(margin))} points"
