"""One run of pytest-gaia2, without pytest: the coordinator of its parts.

The plugin's :class:`~pytest_gaia2.plugin.controller.Controller` hands the run an ``Invocation``
and its option values, and turns what the run returns (an ``ExitStatus``, a ``RunStopped`` or
``RunExit``: :mod:`~pytest_gaia2.run.terms`) into pytest's terms. The context holds the run's
identity and the state its stages move (the run folder, the records, whether pre-flight passed),
and calls its parts in order, each a module of its own: ``run_options``, ``run_plan``,
``run_gateway``, ``preflight``, ``folder_opening``, ``item_runs`` and ``run_end``.
The controller process (or the only one) owns the run folder, the lock, pre-flight and the
records; xdist workers get the session, the run and the folder handed over from it.
"""

from __future__ import annotations

import datetime as _dt
import functools
import os
import uuid
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.config import options
from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.plan import selection
from pytest_gaia2.run import folder_opening, hooked_env, provenance
from pytest_gaia2.run import gateway as gateway_mod
from pytest_gaia2.run.item_runs import ItemRuns
from pytest_gaia2.run.run_gateway import RunGateway
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.run_plan import RunPlan
from pytest_gaia2.run.scenario_runs import ScenarioRunner
from pytest_gaia2.run.terms import ExitStatus, Invocation, RunExit, RunStopped
from pytest_gaia2.store import folder as store
from pytest_gaia2.store import redact
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import printable

if TYPE_CHECKING:
    from pytest_gaia2.engine.client import Engine
    from pytest_gaia2.report.book import ResultBook


class RunContext:
    """Run-wide state and the order of the once-per-run work, without pytest: the plugin's
    controller (:mod:`pytest_gaia2.plugin.controller`) calls it and writes, hooks and exits for it."""

    def __init__(self, invocation: Invocation, read: Callable[[Mapping[str, Any]], options.Options]) -> None:
        """``read``: the run's option values from the parsed TOML config's (the plugin merges its
        command line and ini file in)."""
        self.invocation = invocation
        worker_input = self.handed_over = invocation.worker_input
        self.is_worker = bool(worker_input)
        self.worker = worker_input.get("workerid", "main")
        self.session_id: str = worker_input.get("gaia2_session_id") or uuid.uuid4().hex
        self.run_id: str = worker_input.get("gaia2_run_id") or self.session_id
        self.owner_pid = int(worker_input.get("gaia2_owner_pid") or os.getpid())
        started = worker_input.get("gaia2_started_at")
        self.started = _dt.datetime.fromisoformat(started) if started else _dt.datetime.now(_dt.timezone.utc)
        # Not PYTEST_XDIST_WORKER_COUNT: a run started from inside an xdist worker inherits the outer count.
        self.workers = int(worker_input.get("workercount") or invocation.processes or 1)
        self.notes: list[str] = []
        self.run_options = RunOptions(invocation, read, self.notes)
        self.values = self.run_options.values
        self.active = self.run_options.active
        self.output = self.run_options.output
        self.plan = RunPlan(
            self.values,
            active=self.active,
            base=invocation.base,
            path=self.run_options.path,
            handed_over=self.handed_over,
            settings=lambda: self.settings,
            notes=self.notes,
        )
        folder = worker_input.get("gaia2_folder")
        self.folder: store.RunFolder | None = store.RunFolder(Path(folder)) if folder else None
        self.prepared = False
        self.stopped: RunStopped | None = None
        """Why pre-flight ended the run before any scenario (the run then has no folder)."""
        self.engines = EnginePool.of_process(
            self.values.engine,
            worker_input,
            workers=self.workers,
            run_id=self.session_id,
            worker=self.worker,
            distributed=bool(invocation.processes),
            owner_pid=self.owner_pid,
        )
        self._image_id: str | None = None
        self.gateway = RunGateway(worker_input.get("gaia2_gateway"))
        self.runs = ItemRuns(self._runner, self.values.in_flight)
        """This process's runner and items in flight (made on first use, after pre-flight)."""
        if self.active:
            self.notes.extend([*self.settings.warnings, *self.engines.notes()])
            if not self.values.preflight_only:
                settings_mod.validate(self.settings)
                self.notes.extend(self.gateway.plan(self.settings, self.values))
                self.run_options.check_urls()
                _ = self.run_options.prices  # as does a price file that cannot be read
                self.plan.items()  # discovery and selection problems surface at start-up
                _ = self.plan.baseline  # as does a baseline that cannot be read

    @cached_property
    def book(self) -> ResultBook:
        """The run's records, summary and gate, made when first used: an xdist worker never uses them."""
        from pytest_gaia2.report.book import ResultBook
        from pytest_gaia2.report.gate import Gate

        return ResultBook(
            Gate.from_options(self.values),
            allow_incomplete=self.values.allow_incomplete,
            budget=self.run_options.budget,
            on_record=lambda record, folder: self.call_hook("pytest_gaia2_record", record=record, folder=folder),
        )

    @property
    def settings(self) -> settings_mod.RunSettings:
        return self.run_options.settings

    @property
    def redactor(self) -> hooked_env.LearningRedactor:
        return self.run_options.redactor

    def header_lines(self) -> list[str]:
        if not self.active:
            return []
        found = sum(1 for item in self.plan.items() if item.scenario and item.repeat == 1)
        broken = sum(1 for item in self.plan.items() if item.error)
        lines = [
            f"gaia2: session {self.session_id[:8]}, image {self.settings.image}, {found} scenarios found"
            f"{f' ({broken} files cannot run)' if broken else ''}, network {self.settings.network}, "
            f"output {self.output}"
        ]
        notes = [*self.notes, *([selection.FIRST_N_WARNING] if self.values.first_n else [])]
        return [printable(self.redactor.redact(line)) for line in lines + [f"gaia2: {note}" for note in notes]]

    # -- once per run, on the controller -----------------------------------------------------

    def begin(self) -> None:
        """Masked logs everywhere; the run folder's place decided (created only once items exist)."""
        if not self.active:
            return
        redact.install(self.redactor)  # every file the store writes is masked with it (close uninstalls)
        if self.is_worker or self.values.preflight_only or self.invocation.collect_only:
            return
        self.folder, self.run_id = folder_opening.locate(
            self.run_options,
            run_id=self.run_id,
            session_id=self.session_id,
            started=self.started,
            notes=self.notes,
        )
        self.book.folder = self.folder
        self._start_gateway()

    def _start_gateway(self) -> None:
        """The run's model gateway (:mod:`~pytest_gaia2.run.run_gateway`), before any worker starts
        (they are handed its address and admin secret); one that cannot listen refuses the run."""
        if self.folder is None:
            return
        try:
            note = self.gateway.start(
                self.folder.path,
                self.values,
                self.settings,
                engines=self.engines,
                path=self.run_options.path,
                workers=self.workers,
                redact=self.redactor.redact,
            )
        except gateway_mod.GatewayError as exc:  # this host's trouble, not the command's: refused as pre-flight is
            self.stopped = self._stop(f"pytest-gaia2: {exc}; {gateway_mod.OFF_FIX}")
            return
        if note is not None:
            self.notes.append(note)

    def engine(self) -> Engine:
        return self.engines.engine()

    def prepare(self, planned: list[str], collect_only: bool = False) -> None:
        """Pre-flight, the run folder and its lock: once, before any container, on the controller.

        A failure ends the run with one message instead of one error per test: an
        :class:`OptionError` for a usage error, :class:`RunStopped` (kept in ``stopped``) for a
        refusal; either way no run folder is created and ``latest`` does not move.
        """
        if planned and not collect_only and not self.plan.order:
            self.plan.order = list(planned)
        if self.prepared or self.stopped or self.is_worker or collect_only:
            return
        if not (planned or self.values.preflight_only):
            return
        try:
            self._prepare(planned)
        except RunStopped as stop:
            self.prepared, self.stopped = False, stop
            raise

    def _prepare(self, planned: list[str]) -> None:
        self.plan.check_baseline(self.folder, planned)
        self.prepared = True
        self.book.planned = planned
        self.book.scenario_files = self.plan.scenario_files(planned)
        if self.values.probe:
            chosen = set(planned)
            self.plan.choose_probe([item for item in self.plan.items() if item.key in chosen])
        from pytest_gaia2.engine.errors import EngineError
        from pytest_gaia2.report.run_facts import Isolation
        from pytest_gaia2.run import preflight
        from pytest_gaia2.store.user_cache import cache_dir

        try:
            outcome = preflight.check(
                self.engines,
                self.settings,
                preflight_only=self.values.preflight_only,
                cache_dir=cache_dir(),
                endpoint_check=not self.values.skip_endpoint_check,
                gateway_port=self.gateway.port,
                scenario=self.plan.first_scenario(planned),
                require_isolation=self.values.require_isolation,
            )
        except preflight.IsolationRequired as exc:
            raise RunExit(printable(self.redactor.redact(f"pytest-gaia2: {exc}")), ExitStatus.USAGE_ERROR) from None
        except (EngineError, preflight.PreflightError) as exc:
            raise self._stop(f"pytest-gaia2: {exc}") from None
        self._image_id = outcome.image_id
        self.book.isolation = Isolation.from_json(outcome.facts.get("judge_isolation"))
        write = self.write
        if self.values.preflight_only:
            for line in outcome.lines:
                write(printable(self.redactor.redact(line)))
            verdict = "ready to run" if outcome.ok else "not ready (see each [FAIL] above)"
            raise RunStopped([f"pytest-gaia2: pre-flight only: {verdict}"], code=0 if outcome.ok else 1)
        opening = self._opening()
        try:
            if not self.values.resume:
                self.folder = self.book.folder = opening.create()
            assert self.folder is not None
            opening.open(self.folder, outcome.facts, planned)
        except store.StoreError as exc:
            raise self._stop(f"pytest-gaia2: {exc}") from None
        for line in [*(f"warning: {w}" for w in outcome.warnings), *outcome.notes]:
            write(self.redactor.redact(f"gaia2: {line}"))
        for warning in self.book.gate_warnings(planned):
            write(warning)
        shard = f" (shard {self.values.shard})" if self.values.shard else ""
        write(f"gaia2: {len(planned)} planned{shard}, run folder {self.folder.path if self.folder else '-'}")

    def _stop(self, text: str) -> RunStopped:
        """A refusal: its lines masked and printable, with EXIT_REFUSED."""
        return RunStopped([printable(self.redactor.redact(line)) for line in text.splitlines()])

    def write(self, line: str) -> None:
        """A line of its own for the user (the plugin writes it on pytest's terminal)."""
        print(line)

    def hook(self, name: str) -> Callable[..., Any]:
        """A ``pytest_gaia2_*`` hook users implement; without pytest there is none."""
        return lambda **kwargs: None

    def provenance(self) -> dict[str, Any]:
        return provenance.of_session(
            self.settings,
            run_id=self.run_id,
            session_id=self.session_id,
            image_id=self.image_id(),
            shard=str(self.values.shard) if self.values.shard else None,
        )

    def _opening(self) -> folder_opening.FolderOpening:
        return folder_opening.FolderOpening(
            self.run_options,
            self.invocation,
            self.plan,
            self.write,
            self.provenance,
            run_id=self.run_id,
            session_id=self.session_id,
            started=self.started,
            workers=self.workers,
            gateway=self.gateway.fact(),
        )

    # -- the items' runs ---------------------------------------------------------------------

    def image_id(self) -> str | None:
        if self._image_id is None:
            self._image_id = self.engine().image_id(self.settings.image)
        return self._image_id

    def _runner(self) -> ScenarioRunner:
        return ScenarioRunner(
            self.engine,
            self.settings,
            self.redactor,
            self.folder,
            self.provenance,
            retries=self.values.retries,
            session_id=self.session_id,
            worker=self.worker,
            workers=self.workers,
            budget=self.run_options.budget,
            only=self.plan.probe_keys if self.values.probe_only else None,
            prices=self.run_options.prices,
            container_env=functools.partial(hooked_env.adjust, self.hook("pytest_gaia2_container_env"), self.redactor),
            max_starts_per_minute=self.values.max_starts_per_minute,
            decided=self._decided,
            adaptive_pacing=self.values.pacing == "adaptive",
            gateway=self.gateway.client(),
            scenario_cap=self.values.scenario_cap,
            token_cap=self.values.scenario_token_cap,
            in_flight=self.values.in_flight,
        )

    def _land_in_flight(self, exitstatus: int) -> None:
        """The items' work in flight landed (:meth:`~pytest_gaia2.run.item_runs.ItemRuns.land`),
        within the longest hard timeout of any item."""

        def wait() -> float:
            longest = max((item.hard_timeout or 0.0 for item in self.plan.items()), default=0.0)
            return longest or self.settings.limits.timeout

        self.runs.land(exitstatus == ExitStatus.INTERRUPTED, wait)

    def _decided(self) -> str | None:
        decision = self.plan.decision(self.folder)
        return decision.reason if decision is not None else None

    # -- the end of the run ------------------------------------------------------------------

    def take_report(self, not_started: Mapping[str, Any] | None, record: dict[str, Any] | None) -> None:
        """On the controller: an item that did not start is noted, and a final report's record
        becomes one results.jsonl line."""
        if self.is_worker:
            return
        if not_started is not None:
            self.book.note_not_started(str(not_started.get("key")), str(not_started.get("why")))
        if record is None:
            return
        try:
            notices = self.book.add(
                AttemptRecord.from_json(record),
                probe_keys=self.plan.probe_keys,
                workers=self.workers,
                in_flight=self.values.in_flight,
            )
        except store.StoreError as exc:
            notices = [f"gaia2: {exc}"]
        for notice in notices:
            self.write(self.redactor.redact(notice))

    def call_hook(self, name: str, **kwargs: Any) -> None:
        """A ``pytest_gaia2_*`` hook users implement (:mod:`pytest_gaia2.plugin.newhooks`): its
        failure is one warning line, never the end of a run that is spending money."""
        try:
            self.hook(name)(**kwargs)
        except Exception as exc:  # noqa: BLE001 - a user's hook: any failure is reported, not raised
            text = f"gaia2: warning: {name} failed: {type(exc).__name__}: {str(exc)[:200]}"
            self.write(printable(self.redactor.redact(text)))

    def summary_lines(self) -> list[str]:
        if self.is_worker or not self.active or self.invocation.collect_only or self.stopped:
            return []
        replaced = [
            printable(f"gaia2: {entry['key']} = {entry['configured']!r} was replaced: the run used {entry['used']}")
            for entry in (self.run_options.upstream_config or {}).get("replaced", ())
        ]
        if not self.book.anything_to_write:
            return [*replaced, "gaia2: no scenario ran"]
        return [self.redactor.redact(line) for line in [*replaced, *self.book.lines()]]

    def finish_run(self, exitstatus: int, signum: int | None = None, *, workers: bool = False) -> ExitStatus | None:
        """The items in flight landed, then the run's end (:meth:`~pytest_gaia2.run.run_end.RunEnd.finish`):
        its files, the gate's exit status and the sweep. None: the status the run already has stands."""
        from pytest_gaia2.run.run_end import RunEnd

        self._land_in_flight(exitstatus)
        return RunEnd(
            lambda: self.book,
            self.plan,
            self.engines,
            self.folder,
            self.run_options,
            self.write,
            alluredir=self.invocation.alluredir,
            run_id=self.run_id,
            session_id=self.session_id,
            worker=self.worker,
            is_worker=self.is_worker,
            prepared=self.prepared,
        ).finish(exitstatus, signum, workers=workers)

    def remove_worker_containers(self, worker: str | None) -> None:
        """A worker that died (even by SIGKILL) leaves no container behind, on any engine; None: the whole run's."""
        self.engines.remove_run(worker=worker)

    def close(self) -> None:
        self._land_in_flight(ExitStatus.INTERRUPTED)  # a session that never finished
        self.gateway.stop()
        if self.folder is not None and not self.is_worker:
            self.folder.unlock()
        self.engines.close()
        if "redactor" in self.run_options.__dict__:
            redact.uninstall(self.redactor)
