"""The runs of each planned item: a stored verdict, new attempts, retries, a last-resort record.

:class:`ScenarioRunner` is what the fixtures and the report hook reach through the run
context (``context.runs.runner``): it decides which folder an attempt writes into, whether a
verdict already stored there is final, and how often an infrastructure error is retried.
How one attempt is driven is :mod:`~pytest_gaia2.run.attempt`'s.
"""

from __future__ import annotations

import logging
import random
import tempfile
import threading
from collections.abc import Callable
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.config.settings import copy_in_problem
from pytest_gaia2.cost.budget import NOT_INFRASTRUCTURE, Budget, Ledger, LedgerRead, usd_text
from pytest_gaia2.cost.prices import PriceBook
from pytest_gaia2.plan.items import PlannedItem
from pytest_gaia2.run import ahead, chain, provider
from pytest_gaia2.run.attempt import AttemptSetup, ScenarioAttempt
from pytest_gaia2.run.evidence import Evidence, ScenarioResult
from pytest_gaia2.run.gateway import GatewayClient
from pytest_gaia2.run.pacer import Pacer
from pytest_gaia2.run.verdict import Gaia2InfraError, doubted_pass, recorded_judgment
from pytest_gaia2.store.folder import RunFolder, StoreError, inside
from pytest_gaia2.store.phases import PhaseBoard
from pytest_gaia2.store.record import AttemptRecord, is_judged
from pytest_gaia2.store.redact import Redactor

if TYPE_CHECKING:
    from pytest_gaia2.config.settings import RunSettings
    from pytest_gaia2.engine.archive import FileContent
    from pytest_gaia2.engine.client import Engine
    from pytest_gaia2.plan.scenarios import Scenario

log = logging.getLogger("pytest_gaia2")

NOT_RETRIED = frozenset({"scenario_cap"})
BACKOFF_BASE_S = 2.0
BACKOFF_MAX_S = 60.0


def scenario_dir(folder: RunFolder, item: PlannedItem) -> Path:
    """Where the item's attempts live in the run folder."""
    return folder.scenario_dir(item.split, item.name, item.repeat, item.repeats)


def retried(record: AttemptRecord, tried: int, retries: int) -> bool:
    """Whether another attempt follows the ``tried``-th of this session: an infrastructure error
    is tried ``retries`` more times, each in a folder of its own; a judgment never is, nor a
    scenario stopped by its own spending cap (it would spend as much again)."""
    return record.outcome == "error" and record.error_category not in NOT_RETRIED and tried <= retries


def backoff(tried: int, jitter: Callable[[], float] = random.random) -> float:
    """Seconds to wait after the ``tried``-th attempt ended in provider trouble: doubling from
    BACKOFF_BASE_S up to BACKOFF_MAX_S, each between half and all of it so workers part ways."""
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** (tried - 1)) * (0.5 + jitter() / 2)


def troubled(result: ScenarioResult) -> bool:
    """Whether an attempt tells the pacer of provider trouble: its verdict names the provider, the
    gateway saw the provider refuse or fail calls, or its agent did (even ones it recovered from,
    as the evidence its record was made from says)."""
    wire = result.record.wire or {}
    return (
        result.record.error_category in provider.CATEGORIES
        or bool(wire.get("rate_limited") or wire.get("server_errors"))
        or (result.evidence is not None and result.evidence.provider.failed_calls > 0)
    )


def counts_as_error(record: AttemptRecord) -> bool:
    """Whether a final record counts against --gaia2-max-errors: an infrastructure error of the
    setup (not a broken scenario file, the cap's stop or an interruption)."""
    return record.outcome == "error" and record.error_category not in NOT_INFRASTRUCTURE


def stored_result(folder: RunFolder, item: PlannedItem, session_id: str) -> ScenarioResult | None:
    """The item's stored verdict, if final (:func:`~pytest_gaia2.store.record.reusable`): reported again, never re-run (resume,
    --reruns, a rerun of the same item), marked reused when an earlier session judged it. Its
    folder is the one its record names, unless that leaves the scenario's (a hostile or damaged
    result.json): then the scenario's own."""
    if item.scenario is None:
        return None
    where = scenario_dir(folder, item)
    record = folder.final_record(where, item.scenario.sha256)
    if record is None:
        return None
    try:
        named = inside(folder.path, *record.folder.split("/")) if record.folder else where
    except StoreError:
        named = where
    evidence_folder = named if named.is_relative_to(where) else where
    doubt = edited_verdict(record, Evidence.read(evidence_folder))
    if doubt is not None:
        log.warning(
            "gaia2: %s: verdict_conflict: the stored verdict is not reused, the scenario runs again: %s",
            item.key,
            doubt,
        )
        return None
    if record.apps is None and record.scenario_sha256 and record.scenario_sha256 == item.scenario.sha256:
        record = replace(record, **item.described())  # a record of an earlier version, of this very file
    return ScenarioResult(record.reused_by(session_id), evidence_folder)


def edited_verdict(record: AttemptRecord, evidence: Evidence) -> str | None:
    """Why a stored verdict is not what the judge's files beside it say (an edited result.json or
    results.jsonl), or None. A pass needs the judge's recorded pass, the judgments file agreeing
    and nothing a judge does not write; a failure must not sit beside a recorded pass."""
    recorded = recorded_judgment(evidence.status_file)
    said = "absent" if recorded is None else ("pass" if recorded["success"] else "fail")
    if record.outcome == "passed":
        doubt = doubted_pass(evidence.status_file, evidence.agent_actions, evidence.problems)
        if recorded is None or not recorded["success"] or evidence.last_judgment is not True:
            return f"it says passed, daemon_status.json beside it says {said}"
        if doubt is not None:
            return doubt.message
    if record.outcome == "failed" and recorded is not None and recorded["success"]:
        return "it says failed, daemon_status.json beside it says pass"
    return None


class NotStarted(Exception):
    """The item is not started: not in the probe, or a limit stopped the run (the plugin reports
    it as skipped, the message its reason)."""


class ScenarioRunner:
    """The verdict of each item of one session: stored, or from attempts, retried on infrastructure errors."""

    def __init__(
        self,
        engine: Callable[[], Engine],
        settings: RunSettings,
        redactor: Redactor,
        folder: RunFolder | None,
        provenance: Callable[[], dict[str, Any]],
        *,
        retries: int,
        session_id: str,
        worker: str,
        workers: int,
        budget: Budget,
        prices: PriceBook,
        only: set[str] | None = None,
        container_env: Callable[[Scenario, dict[str, str]], None] = lambda scenario, env: None,
        max_starts_per_minute: float | None = None,
        decided: Callable[[], str | None] = lambda: None,
        adaptive_pacing: bool = True,
        gateway: GatewayClient | None = None,
        scenario_cap: float | None = None,
        token_cap: int | None = None,
        in_flight: int = 1,
    ) -> None:
        """``engine`` and ``provenance`` are asked for by the first item that needs them: a process
        whose every verdict is stored never connects to the engine."""
        self._engine = engine
        self.settings = settings
        self.redactor = redactor
        self.folder = folder
        self._session_provenance = provenance
        self.retries = retries
        self.session_id = session_id
        self.worker = worker
        self.workers = workers
        self.budget = budget
        self.only = only
        """With --gaia2-probe-only: the probe's keys; every other item is skipped."""
        self.container_env = container_env
        self.gateway = gateway
        self.scenario_cap = scenario_cap
        self.token_cap = token_cap
        self.decided = decided
        """Why no new scenario starts because the comparison with a baseline is decided, or None."""
        self.prices = prices
        self.ledger = Ledger(folder.path) if folder is not None else None
        self.pacer = (
            Pacer(
                folder.path,
                max_starts_per_minute,
                workers=workers * in_flight,
                adaptive=adaptive_pacing,
                sleep=ahead.pause,
            )
            if folder is not None
            else None
        )
        """The run's pace of starts, shared with every worker and session (:mod:`~pytest_gaia2.run.pacer`)."""
        self._setup_lock = threading.RLock()
        self.own_errors: dict[str, str] = {}
        """This worker's items that ended in an infrastructure error this session, by key: their category."""

    def _budget_reason(self, decide: Callable[[LedgerRead, float], str | None]) -> str | None:
        """The budget's decision on the run's spend and tokens so far (every worker and every
        earlier session included); with a budget set, a ledger that cannot be read stops the run
        rather than let it spend blind."""
        if not self.budget.limited or self.ledger is None:
            return None
        read = self.ledger.read()
        if not read.complete:
            return f"budget: {'; '.join(read.problems)}; with a budget set, the run stops here"
        spent = read.for_budget()
        if spent is None:
            return (
                f"budget: the cost of {len(read.unknown)} attempt(s) is unknown (usage out of range) and no "
                "priced attempt stands in for it; with a budget set, the run stops here"
            )
        why = decide(read, spent)
        if why and read.unknown:
            each = read.stand_in() or 0.0
            why += (
                f" (counting {len(read.unknown)} attempt(s) of unknown cost at {usd_text(each)} each, "
                "the mean of the priced ones)"
            )
        return why

    def _cap_reason(self) -> str | None:
        return (
            self._budget_reason(lambda read, spent: self.budget.capped(spent)) if self.budget.cap is not None else None
        )

    def _halt_reason(self) -> str | None:
        """Why no new scenario starts: the run's spend or tokens at a limit, this session's
        infrastructure errors at --gaia2-max-errors, or the comparison decided; None to go on."""
        return (
            self._budget_reason(lambda read, spent: self.budget.halted(spent, read.total_tokens))
            or self._errors_reason()
            or self.decided()
        )

    def _errors_reason(self) -> str | None:
        """This session's infrastructure errors against --gaia2-max-errors, every worker's: the
        records the controller has written to results.jsonl so far, and this worker's own (the
        controller may not have written its latest yet). Earlier sessions' do not count, so a
        resume after a fix starts afresh."""
        if self.budget.max_errors is None or self.folder is None:
            return None
        errors = {
            record.key: record.error_category or "unknown"
            for record in self.folder.records()
            if record.session_id == self.session_id and counts_as_error(record)
        }
        return self.budget.errors_reached(list({**errors, **self.own_errors}.values()))

    @property
    def provenance(self) -> dict[str, Any]:
        """What made this session's verdicts (the image id is the engine's), once whatever the threads."""
        with self._setup_lock:
            return self._provenance

    @cached_property
    def _provenance(self) -> dict[str, Any]:
        return self._session_provenance()

    @property
    def attempt_setup(self) -> AttemptSetup:
        """Read on the first attempt, once whatever the threads (``--gaia2-in-flight``)."""
        with self._setup_lock:
            return self._attempt_setup

    @cached_property
    def _attempt_setup(self) -> AttemptSetup:
        """The copy-in files, and this worker's share of host ports."""
        settings = self.settings
        files = []
        for src, dest in settings.files_to_copy():
            # Checked again here (the file may have changed since start-up); streamed at each launch.
            problem = copy_in_problem(src, settings.limits.max_file_size)
            if problem:
                raise Gaia2InfraError("container_start", f"--gaia2-copy-in {src} {problem}")
            files.append((dest, src, 0o644))
        leases = None
        if settings.network == "host":
            from pytest_gaia2.engine.ports import PortLeases, worker_slice

            low, high = settings.port_range
            index = int(self.worker[2:]) if self.worker.startswith("gw") else 0
            leases = PortLeases(
                Path(tempfile.gettempdir()) / "pytest-gaia2", worker_slice(low, high, index, self.workers)
            )
        assert self.folder is not None
        return AttemptSetup(
            self._engine(),
            settings,
            settings.limits,
            self.redactor,
            self.provenance,
            self.folder.path,
            leases,
            tuple(files),
            prices=self.prices,
            stop_reason=self._cap_reason,
            board=PhaseBoard(self.folder.path, self.worker),
            container_env=self.container_env,
            gateway=self.gateway,
            scenario_cap=self.scenario_cap,
            token_cap=self.token_cap,
        )

    def new_attempt(self, item: PlannedItem) -> ScenarioAttempt:
        assert item.scenario is not None and self.folder is not None
        where = scenario_dir(self.folder, item)
        number = self.folder.next_attempt(where)
        return ScenarioAttempt(
            self.attempt_setup,
            item.scenario,
            self.folder.attempt_dir(where, number),
            key=item.key,
            repeat=item.repeat,
            repeats=item.repeats,
            attempt=number,
            universe_position=item.position,
            carried=self._carried_in(item),
        )

    def _carried_in(self, item: PlannedItem) -> tuple[tuple[str, FileContent, int], ...]:
        """A chained item's start: the chain's latest checkpoint before it, as files to put in."""
        if item.chain is None or item.position is None or self.folder is None:
            return ()
        found = chain.latest(self.folder.path, item.chain, item.position)
        if found is None:
            return ()
        limits = self.settings.limits
        return tuple(chain.carried_files(found, limits.max_file_size, limits.max_collect_size))

    def _chain_unbroken(self, item: PlannedItem) -> bool:
        """A chained item's stored verdict stands only while its chain's checkpoints up to it do."""
        if item.chain is None or item.position is None or self.folder is None:
            return True
        return chain.intact(self.folder.path, item.chain, item.position)

    def _forget_later_checkpoints(self, item: PlannedItem) -> None:
        if item.chain is not None and item.position is not None and self.folder is not None:
            chain.forget_after(self.folder.path, item.chain, item.position)

    def _checkpoint(self, item: PlannedItem, attempt: ScenarioAttempt, result: ScenarioResult) -> None:
        """After a judged chained scenario, its home and app state become the chain's checkpoint."""
        if item.chain is None or item.position is None or self.folder is None or attempt.container is None:
            return
        if not is_judged(result.record):
            return
        try:
            problems = chain.checkpoint(
                attempt.container, self.folder.path, item.chain, item.position, self.settings.limits, self.redactor
            )
        except OSError as exc:  # the verdict stands; the chain goes on from the checkpoint before
            problems = [f"not written ({exc.strerror or type(exc).__name__})"]
        for problem in problems[:5]:
            log.warning("gaia2: %s: checkpoint of chain %s: %s", item.key, item.chain, problem)

    def result_for(self, item: PlannedItem, on_attempt: Callable[[ScenarioAttempt], None]) -> ScenarioResult:
        """The item's verdict: stored, or from attempts; an infrastructure error is retried up to
        ``--gaia2-retries`` times, each attempt in a folder of its own; a judgment never is. Each
        start waits for the pacer; provider trouble is told to it and retried after a backoff."""
        if self.only is not None and item.key not in self.only:
            raise NotStarted("--gaia2-probe-only: not in the probe")
        stored = stored_result(self.folder, item, self.session_id) if self.folder is not None else None
        if stored is not None and self._chain_unbroken(item):
            return stored
        self._forget_later_checkpoints(item)
        for tried in range(1, self.retries + 2):
            halted = self._halt_reason()
            if halted:
                raise NotStarted(halted)
            if self.pacer is not None:
                self.pacer.wait_turn()
            ahead.starting()
            attempt = self.new_attempt(item)
            on_attempt(attempt)
            try:
                attempt.start()
                result = attempt.drive()
                self._checkpoint(item, attempt, result)
            except Gaia2InfraError:
                if attempt.result is None:
                    raise
                result = attempt.result
            finally:
                attempt.remove()
            if self.pacer is not None:
                self.pacer.ended(troubled(result))
            if not retried(result.record, tried, self.retries):
                if counts_as_error(result.record):
                    self.own_errors[item.key] = result.record.error_category or "unknown"
                return result
            log.warning(
                "gaia2: %s: %s; attempt %d of %d",
                item.key,
                result.record.error_category,
                attempt.attempt,
                self.retries + 1,
            )
            if result.record.error_category in provider.CATEGORIES:
                ahead.pause(backoff(tried))
        raise AssertionError("unreachable: the last attempt returns")

    def error_record(self, item: PlannedItem, category: str, message: str) -> AttemptRecord:
        """The last resort: a record for an item that raised before any attempt wrote one."""
        record = item.error_record(self.provenance)
        record = replace(
            record,
            task=self.redactor.redact(record.task) if record.task else record.task,
            error=self.redactor.redact(message),
            error_category=category,
            repeat=item.repeat,
            repeats=item.repeats,
        )
        if self.folder is not None:
            where = scenario_dir(self.folder, item)
            folder = self.folder.attempt_dir(where, self.folder.next_attempt(where))
            record = replace(record, folder=folder.relative_to(self.folder.path).as_posix())
            self.folder.write_record(folder, record)
            from pytest_gaia2.report.trace_page import write_trace

            write_trace(folder)
        return record
