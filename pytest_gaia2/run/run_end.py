"""The end of a run: its workers wound down, the records that never reached the controller
recovered, results.jsonl, summary.json and the pages written, the gate's exit status, and what is
left of the session's containers removed.

Apart from the run's context because the end must hold whatever raised before it: it works on
what the run holds when it ends, writes the files before it sweeps, holds them against a further
signal, and never raises out of the sweep, so every selected scenario ends with one record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.run_plan import RunPlan
from pytest_gaia2.run.scenario_runs import scenario_dir
from pytest_gaia2.run.terms import ExitStatus
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.version import PLUGIN_VERSION

if TYPE_CHECKING:
    from pytest_gaia2.report.book import ResultBook

WORKER_WIND_DOWN = 30.0
"""Seconds an interrupted run waits for its xdist workers to write their records."""
WIND_DOWN_MISSED = "workers still ran attempts"
"""The start of the line an interrupted run prints when its workers outlived WORKER_WIND_DOWN."""


@dataclass(frozen=True)
class RunEnd:
    """What the run holds when it ends, and the work of its end."""

    book_of: Callable[[], ResultBook]
    """The run's book, asked for only by a run that writes its files (an xdist worker never does)."""
    plan: RunPlan
    engines: EnginePool
    folder: store.RunFolder | None
    run_options: RunOptions
    write: Callable[[str], None]
    alluredir: Path | None
    run_id: str
    session_id: str
    worker: str
    is_worker: bool
    prepared: bool

    @property
    def book(self) -> ResultBook:
        return self.book_of()

    def finish(self, exitstatus: int, signum: int | None = None, *, workers: bool = False) -> ExitStatus | None:
        """Write results.jsonl, summary.json and the run's pages, remove what is left of the
        session, and let the gate decide the exit status.

        The files come first and are held against a further signal, and the sweep never raises
        out: a double Ctrl-C or an engine failure in the sweep still leaves the run's summary.
        An interrupted run first lets its xdist workers finish the records of the attempts they
        were running (``workers``: xdist's), so every scenario in flight gets its line; ``signum``,
        the signal that interrupted it, is forwarded to them first (a signal to the controller
        alone reaches none). None: the status the run already has stands."""
        if self.is_worker or not self.prepared:
            self._sweep()
            return None
        if exitstatus == ExitStatus.INTERRUPTED:
            self.book.end_reason = "interrupted (Ctrl-C, SIGTERM or a collection error) before they started"
        try:
            if exitstatus == ExitStatus.INTERRUPTED and workers:
                if signum is not None:
                    self._forward(signum)
                self._wait_for_workers()
            return self._write_run_files(exitstatus)
        finally:
            self._sweep()

    def _write_run_files(self, exitstatus: int) -> ExitStatus | None:
        from pytest_gaia2.run import interrupts

        with interrupts.held():
            self._recover()
            self.book.decided = self.plan.decision(self.folder)
            if not self.book.anything_to_write:
                return None
            extra = {
                "run_id": self.run_id,
                "session_id": self.session_id,
                "plugin_version": PLUGIN_VERSION,
            }
            try:
                decision = self.book.write(extra)
            except store.StoreError as exc:
                self.write(f"gaia2: {exc}; the records already written are kept")
                return ExitStatus.INTERNAL_ERROR
            if self.folder is not None:
                from pytest_gaia2.report.pages import write_run_pages

                write_run_pages(
                    self.folder.path,
                    report=self.run_options.values.report,
                    write=self.write,
                    alluredir=self.alluredir,
                )
        if exitstatus in (ExitStatus.INTERRUPTED, ExitStatus.INTERNAL_ERROR, ExitStatus.USAGE_ERROR):
            return None
        if decision is None:  # no gate: the run's status, but a budget halt is no pass
            return ExitStatus.TESTS_FAILED if self.book.halted_short() else None
        return ExitStatus.OK if decision.met else ExitStatus.TESTS_FAILED

    def _forward(self, signum: int) -> None:
        """The controller's signal to the workers with an attempt in flight, as a terminal's Ctrl-C
        would have signalled them: they end those attempts now instead of at WORKER_WIND_DOWN."""
        from pytest_gaia2.run import interrupts
        from pytest_gaia2.store.phases import busy_pids

        if self.folder is not None:
            interrupts.forward(signum, busy_pids(self.folder.path))

    def _wait_for_workers(self) -> None:
        """Until no attempt of any worker is in flight (an attempt leaves the progress board once
        its result.json is written), at most WORKER_WIND_DOWN seconds (a killed worker's entry stays)."""
        from pytest_gaia2.store.phases import running

        deadline = time.monotonic() + WORKER_WIND_DOWN
        while self.folder is not None and running(self.folder.path) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self.folder is not None and running(self.folder.path):
            self.write(
                f"gaia2: {WIND_DOWN_MISSED} {WORKER_WIND_DOWN:g} s after the interrupt; "
                "their records are recovered from the attempt folders where written, their containers removed"
            )

    def _recover(self) -> None:
        """Records this session wrote that never reached the controller (Ctrl-C mid-item, a killed worker)."""
        index = {item.key: item for item in self.plan.items()}
        for key in self.book.planned:
            item = index.get(key)
            if key in self.book.records or item is None or item.scenario is None or self.folder is None:
                continue
            record = self.folder.last_record(scenario_dir(self.folder, item))
            if record is not None and record.session_id == self.session_id:
                self.book.add(record)

    def _sweep(self) -> None:
        """Remove what is left of the session; a failure is one warning line, never raised."""
        try:
            if self.engines.connected or (self.prepared and not self.is_worker):
                self.engines.remove_run(worker=self.worker if self.is_worker else None)
        except Exception as exc:  # noqa: BLE001 - the run's files are written; the reaper of the next run removes the rest
            self.write(
                self.run_options.redactor.redact(
                    f"gaia2: warning: the session's containers could not all be removed ({type(exc).__name__}: "
                    f"{str(exc)[:200]}); the next run removes them once they are {self.run_options.values.reap_grace:g} s old"
                )
            )
