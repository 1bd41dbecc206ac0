"""The run's records on the controller: results.jsonl as verdicts arrive, then the summary,
summary.json and the gate, all from the same :class:`AttemptRecord` objects."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_gaia2.cost import projection as probe
from pytest_gaia2.cost import spend
from pytest_gaia2.cost.budget import STOPS, Budget, Ledger, usd_text
from pytest_gaia2.cost.usage import shown_names
from pytest_gaia2.report import stats, wire_figures
from pytest_gaia2.report import summary as report
from pytest_gaia2.report.gate import Gate, GateDecision, best_lower_bound, smallest_passing
from pytest_gaia2.report.rates import percent
from pytest_gaia2.report.run_facts import Isolation
from pytest_gaia2.report.sequential import DECIDED, Decision
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

GATE_N_MAX = 1_000_000
"""Past this many results a lower-bound gate is called unreachable."""
REUSED_LISTED = 10
"""Reused verdicts named in the summary; the rest are counted."""
"""How the skip of a scenario left out of the probe begins (run.scenario_runs)."""
PERSISTENT_SESSIONS = 2
"""An error in this many sessions of one run folder (resumed runs) is persistent: re-running
will not fix it, someone must look."""


def persistent_errors(folder: store.RunFolder, records: Iterable[AttemptRecord]) -> list[dict[str, Any]]:
    """Scenarios still in error that errored in PERSISTENT_SESSIONS or more sessions of the folder."""
    found = []
    for record in records:
        if record.outcome != "error":
            continue
        where = folder.scenario_dir(record.split, record.scenario_id, record.repeat, record.repeats)
        errored = [r for r in folder.attempt_records(where) if r.outcome == "error"]
        sessions = list(dict.fromkeys(r.session_id for r in errored))
        if len(sessions) >= PERSISTENT_SESSIONS:
            found.append(
                {
                    "key": record.key,
                    "sessions": len(sessions),
                    "attempts": len(errored),
                    "categories": sorted({r.error_category or "unknown" for r in errored}),
                    "last_error": record.error,
                }
            )
    return sorted(found, key=lambda item: item["key"])


class ResultBook:
    """Every record of one run, keyed by scenario (and repeat): one line each, whatever happened."""

    def __init__(
        self,
        gate: Gate,
        *,
        allow_incomplete: bool,
        budget: Budget | None = None,
        on_record: Callable[[AttemptRecord, Path], None] = lambda record, folder: None,
    ) -> None:
        self.gate = gate
        self.on_record = on_record
        """Told of each record once its line is in results.jsonl (the ``pytest_gaia2_record`` hook)."""
        self.allow_incomplete = allow_incomplete
        self.folder: store.RunFolder | None = None
        self.planned: list[str] = []
        self.records: dict[str, AttemptRecord] = {}
        self.budget = budget or Budget()
        self._summary: stats.Summary | None = None
        self._persistent: list[dict[str, Any]] | None = None
        self.unpriced_models: set[str] = set()
        self.projection: probe.Projection | None = None
        self.probe_keys: frozenset[str] = frozenset()
        self.workers = 1
        self.in_flight = 1
        self.not_started: dict[str, str] = {}
        """Planned keys that were skipped before any attempt, and why (budget, probe only)."""
        self.spent_at_stop: float | None = None
        self.scenario_files: dict[str, tuple[str, str | None, tuple[str, ...]]] = {}
        """Each planned key's scenario file, its hash and its apps: summary.json names those of
        the keys that did not run, so the pages can give their apps (they have no record)."""
        self.end_reason: str | None = None
        """What ended the run early when it was not the items' own doing (Ctrl-C)."""
        self.decided: Decision | None = None
        """With --gaia2-stop-when-decided: the sequential test's decision, once made."""
        self.isolation: Isolation | None = None
        """Pre-flight's answer: whether the image keeps its judge from its agent (None: not asked)."""
        self.summary_document: dict[str, Any] | None = None
        """What summary.json holds, once this session wrote it (masked as the file is)."""

    def note_not_started(self, key: str, why: str) -> None:
        """A planned key skipped before it started; the first skip by a limit fixes the spend at stop."""
        self.not_started.setdefault(key, why)
        if why.startswith(STOPS) and self.spent_at_stop is None:
            self.spent_at_stop = self.spent()

    @property
    def anything_to_write(self) -> bool:
        """Whether this session has something for the run's files: a record, or a planned key it
        did not start (a resumed session its budget halts before any start still says why)."""
        return bool(self.records or self.not_started)

    def spent(self) -> float | None:
        """The run's spend in its ledger (every session's), None without a run folder."""
        return Ledger(self.folder.path).total() if self.folder is not None else None

    def tokens(self) -> int | None:
        """The run's tokens in its ledger (every session's), None without a run folder."""
        return Ledger(self.folder.path).read().total_tokens if self.folder is not None else None

    def stop(self) -> report.Stop:
        """Why the run stopped short of its plan (None when complete), with the budget and spend."""
        summary = self.summary()
        fallback = self.end_reason or "the run ended before they started (pytest stopped, or a worker was lost)"
        not_started = tuple((key, self.not_started.get(key, fallback)) for key in summary.not_run)
        reasons = [why for _, why in not_started]
        reason = (
            None
            if summary.complete
            else self.end_reason or next((why for why in reasons if why.startswith(STOPS)), None) or reasons[0]
        )
        return report.Stop(
            reason,
            self.budget.halt,
            self.budget.cap,
            self.spent() if self.budget.limited or reason else None,
            self.spent_at_stop if reason else None,
            not_started,
            self.decided if reason is not None and reason.startswith(DECIDED) else None,
            self.budget.token_halt,
            self.tokens() if self.budget.token_halt is not None else None,
            self.budget.max_errors,
        )

    def _cost(self) -> dict[str, Any] | None:
        """The run's spend; the gateway's figures count the attempts a retry replaced too."""
        records = list(self.records.values())
        earlier = wire_figures.earlier_attempts(self.folder.path, records) if self.folder is not None else []
        return spend.summary(records, earlier)

    def add(
        self,
        record: AttemptRecord,
        *,
        probe_keys: set[str] | frozenset[str] = frozenset(),
        workers: int = 1,
        in_flight: int = 1,
    ) -> list[str]:
        """Keep the record and append its line at once, so a crash keeps what finished; what to
        tell the user now: one warning per model without a price, and the probe's projection
        once its last scenario is in."""
        self.records[record.key] = record
        self.probe_keys, self.workers, self.in_flight = frozenset(probe_keys), workers, in_flight
        self._summary = self._persistent = None
        if self.folder is not None:
            self.folder.append_result(record)
            self.on_record(record, self.folder.path)
        notices = []
        unpriced = (
            set((record.usage or {}).get("models") or []) - self.unpriced_models
            if record.usage and record.cost_usd is None and not spend.is_refused(record)
            else set()
        )
        if unpriced:  # never a guessed price
            self.unpriced_models |= unpriced
            notices.append(
                f"gaia2: warning: no price for {shown_names(sorted(unpriced))}: its cost is unknown "
                "(--gaia2-price-file gives one)"
            )
        notices += spend.refusal_notice(record)
        if probe_keys and self.projection is None and probe_keys <= self.records.keys():
            notices.append(self._project().line())
        return notices

    def _project(self) -> probe.Projection:
        """The probe's projection from the probe's records there are (all of them, unless the run
        stopped first)."""
        self.projection = probe.project(
            [record for key, record in self.records.items() if key in self.probe_keys],
            len(self.planned),
            self.workers,
            halt=self.budget.halt,
            cap=self.budget.cap,
            chosen=len(self.probe_keys),
            in_flight=self.in_flight,
        )
        return self.projection

    def settle_probe(self) -> None:
        """A probe the run stopped before its last scenario still projects, from what it measured."""
        if self.projection is None and self.probe_keys & self.records.keys():
            self._project()

    def summary(self) -> stats.Summary:
        """Computed once per change (800 x 3 results take a fraction of a second)."""
        if self._summary is None:
            rows = [record.to_json() for record in self.records.values()]
            self._summary = stats.summarise(rows, planned=self.planned or None)
        return self._summary

    def gate_warnings(self, planned: Sequence[str]) -> list[str]:
        """Before the run: a lower-bound gate that the ``planned`` keys cannot clear even all
        passed, and the smallest number that could (Wilson's lower bound at N of N is N/(N+z²);
        with repeats the scenarios are the unit, as the gate's own bound)."""
        required = self.gate.min_pass_rate
        if required is None or self.gate.gate_on != "lower-bound" or not planned:
            return []
        scenarios = len({key.split("/run_")[0] for key in planned})
        repeats = len(planned) // scenarios
        best = best_lower_bound(scenarios, repeats)
        if best >= required:
            return []
        smallest = smallest_passing(required, repeats, GATE_N_MAX)
        size = f"N={len(planned)}" if repeats == 1 else f"{scenarios} scenarios x {repeats} repeats"
        unit = "N" if repeats == 1 else "number of scenarios"
        could = f"the smallest {unit} that could pass is {smallest}" if smallest else f"no {unit} can pass it"
        return [
            f"gaia2: warning: the gate cannot pass at {size}: the 95% lower bound of {len(planned)}/{len(planned)} "
            f"is {percent(best)}, below the {percent(required)} required; {could}"
        ]

    def decision(self, summary: stats.Summary) -> GateDecision | None:
        return self.gate.decide(summary, allow_incomplete=self.allow_incomplete) if self.gate.active else None

    def lines(self) -> list[str]:
        """The terminal summary: counts, rates with intervals, errors, the gate, reused verdicts."""
        summary = self.summary()
        self.settle_probe()
        lines = ["", "=" * 20 + " gaia2 summary " + "=" * 20]
        body = report.summary_lines(summary, None)  # the gate's verdict is printed last: verdict_lines
        if self.probe_only(summary):  # a probe's end is its projection, not an incomplete run
            body[0] = (
                f"PROBE ONLY: {summary.done} of {summary.planned} planned {summary.planned_unit} ran as the probe "
                "(--gaia2-probe-only); its result is the projection below, its rates are the probe's"
            )
        lines += body
        if self.isolation is not None:
            lines.append(f"gaia2: {self.isolation.line()}")
        lines += spend.summary_lines(self._cost(), self._budget_text())
        lines += self.stop().lines()
        reused = sorted(record.key for record in self.records.values() if record.reused)
        if reused:
            lines.append(
                f"gaia2: {len(reused)} verdicts reused from earlier sessions (no container): "
                f"{report.first_n(reused, REUSED_LISTED)}"
            )
        if self.projection is not None:
            lines.append(self.projection.line())
        for item in self.persistent():
            lines.append(
                f"gaia2: persistent error: {item['key']} errored in {item['sessions']} sessions "
                f"({', '.join(item['categories'])}); re-running will not fix it"
            )
        if self.folder is not None:
            lines.append(f"gaia2: results in {self.folder.path}")
        return lines

    def probe_only(self, summary: stats.Summary) -> bool:
        """Whether every planned key that did not run was left out by --gaia2-probe-only."""
        return (
            self.projection is not None
            and not summary.complete
            and all(self.not_started.get(key, "").startswith(report.PROBE_ONLY) for key in summary.not_run)
        )

    def verdict_lines(self) -> list[str]:
        """The very end of the output (after pytest's own summary): the gate's bars, then one
        verdict line: the gate's PASS or FAIL with each missed bar, or, without a gate, a run
        that stopped short of its plan; either says why the run stopped early."""
        if not self.anything_to_write:
            return []
        summary = self.summary()
        stop = self.stop()
        decision = self.decision(summary)
        if decision is not None:
            return [*decision.lines, decision.verdict(stop.brief)]
        if stop.brief is None or self.probe_only(summary):
            return []
        line = (
            f"gaia2: INCOMPLETE: {len(summary.not_run)} of {summary.planned} planned {summary.planned_unit} "
            f"did not run; stopped early: {stop.brief}"
        )
        if stop.by_limit:
            line += (
                "; accepted (--gaia2-allow-incomplete)"
                if self.allow_incomplete
                else "; exit status 1 (--gaia2-allow-incomplete accepts it)"
            )
        return [line]

    def halted_short(self) -> bool:
        """Whether one of the run's limits (a budget, a token halt, --gaia2-max-errors) stopped it
        short of its plan and --gaia2-allow-incomplete does not accept that: without a gate such
        a run exits 1, as a gate fails an incomplete run."""
        return not self.allow_incomplete and self.anything_to_write and self.stop().by_limit

    def _budget_text(self) -> str | None:
        """The run's spend against its budget (the ledger holds every session's), when one is set."""
        if self.folder is None or (self.budget.halt is None and self.budget.cap is None):
            return None
        limits = ", ".join(
            f"{name} {usd_text(value)}"
            for name, value in (("halt", self.budget.halt), ("cap", self.budget.cap))
            if value is not None
        )
        return f"run spend {usd_text(Ledger(self.folder.path).total())} ({limits})"

    def write(self, extra: dict[str, Any]) -> GateDecision | None:
        """results.jsonl rewritten one line per key, and summary.json; the gate's decision."""
        summary = self.summary()
        decision = self.decision(summary)
        self.settle_probe()
        if self.folder is not None:
            self.folder.rewrite_results(self.records.values())
            extra = {
                **extra,
                "probe": self.projection.to_json() if self.projection else None,
                "cost": self._cost(),
                "persistent_errors": self.persistent(),
                "stop": self.stop().to_dict(),
                "not_run_files": {
                    key: dict(zip(("scenario_file", "scenario_sha256", "apps"), self.scenario_files[key], strict=True))
                    for key in summary.not_run
                    if key in self.scenario_files
                },
                "coverage": report.coverage(summary),
                "judge_isolation": None if self.isolation is None else self.isolation.to_json(),
            }
            self.summary_document = report.write_summary_json(
                self.folder.file(store.SUMMARY_FILE), summary, decision, extra=extra
            )
        return decision

    def persistent(self) -> list[dict[str, Any]]:
        """Read from the attempt folders once per change (the summary lines and summary.json both show it)."""
        if self._persistent is None:
            self._persistent = persistent_errors(self.folder, self.records.values()) if self.folder is not None else []
        return self._persistent

    def junit_properties(self) -> list[tuple[str, str]]:
        """Run-level JUnit properties: planned, done, not run, complete; both rates with their
        intervals (fractions), the gate's decision, the cost and why the run stopped."""
        summary = self.summary()
        decision = self.decision(summary)
        stop = self.stop()
        cost = spend.summary(self.records.values())
        rates = [
            (f"gaia2_{name}{part}", "" if value is None else f"{value:.6f}")
            for name, rate in (("strict", summary.overall.strict), ("judged", summary.overall.judged))
            for part, value in (("", rate.value), ("_low", rate.low), ("_high", rate.high))
        ]
        return [
            ("gaia2_planned", str(summary.planned)),
            ("gaia2_done", str(summary.done)),
            ("gaia2_not_run", ",".join(summary.not_run)),
            ("gaia2_complete", str(summary.complete).lower()),
            *rates,
            ("gaia2_gate", "" if decision is None else ("met" if decision.met else "not met")),
            ("gaia2_gate_reasons", "" if decision is None else "; ".join(decision.lines)),
            ("gaia2_run_cost_usd", f"{cost['usd']:.6f}" if cost else ""),
            ("gaia2_spent_usd", "" if stop.spent is None else f"{stop.spent:.6f}"),
            ("gaia2_stop_reason", stop.reason or ""),
        ]
