"""One pytest-gaia2 run: its settings, its scenarios, its engine, its output folder.

The plugin's hooks delegate here. The controller (or the only process) owns the run's
files and the once-per-run work; xdist workers get the run id through ``workerinput``.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import shutil
import signal
import tempfile
import uuid
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

from . import __version__, artifacts, options, report, settings as settings_mod, stats
from .engine import Engine, EngineError, connect
from .ports import PortLeases, worker_slice
from .redact import RedactingFilter, Redactor
from .run import ADAPTER_PORT, Gaia2InfraError, Launch, Limits, RunResult, ScenarioRun
from .scenarios import SPLITS, Scenario, ScenarioError, discover
from .verdict import Verdict

log = logging.getLogger("pytest_gaia2")

EXIT_SETUP_FAILED = 3
HARD_TIMEOUT_SLACK = 60.0  # collecting files, copying out, and engine latency
# pytest-timeout's signal method raises in the test, so teardown removes the container; its thread
# method (a user's timeout_method ini) would end the process at once and leave it running.
HARD_TIMEOUT_METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
REUSED_LISTED = 10  # reused verdicts named in the summary; the rest are counted
HOST_PORT_TRIES = 3  # host-network mode: a leased port another program grabbed first is replaced
PORT_TAKEN_SIGNS = ("address already in use", "eaddrinuse")


@dataclass(frozen=True)
class ItemPlan:
    """One test item: a scenario (or a file that could not be read) and its repeat index."""

    split: str
    name: str
    run: int
    repeat: int
    scenario: Scenario | None = None
    error: ScenarioError | None = None
    hard_timeout: float | None = None  # pytest-timeout's bound: run timeout plus set-up allowances

    @property
    def test_id(self) -> str:
        base = f"{self.split}/{self.name}"
        return f"{base}/run_{self.run}" if self.repeat > 1 else base

    def __repr__(self) -> str:
        """Short and stable across runs: Allure hashes the parameter's repr into its history id."""
        return f"ItemPlan({self.test_id!r})"

    @property
    def marker(self) -> str:
        return Scenario(self.name, self.split, Path(".")).marker

    def marks(self) -> list[Any]:
        """Split marker, ``gaia2``, and Allure labels (parent suite, suite, sub-suite, title)."""
        marks: list[Any] = [pytest.mark.gaia2, getattr(pytest.mark, self.marker)]
        if self.hard_timeout:
            marks.append(pytest.mark.timeout(self.hard_timeout, method=HARD_TIMEOUT_METHOD))
        universe = self.scenario.universe if self.scenario else None
        marks += [
            pytest.mark.allure_label("Gaia2", label_type="parentSuite"),
            pytest.mark.allure_label(self.split, label_type="suite"),
            pytest.mark.allure_label(universe or "no universe", label_type="subSuite"),
        ]
        if self.scenario:
            marks += [pytest.mark.allure_label(tag, label_type="tag") for tag in self.scenario.tags]
        return marks

    def error_record(self) -> dict[str, Any]:
        """result.json content for a scenario file that could not be run at all."""
        return {
            "scenario_id": self.name, "split": self.split, "universe": None, "run": self.run,
            "attempt": 1, "success": None, "outcome": "error", "reused": False,
            "error": str(self.error), "error_category": "invalid_scenario", "failure_reasons": [],
            "reward": None, "num_agent_events": 0, "judged_in_container": False, "timed_out": False,
            "timeout_seconds": 0.0, "daemon_status": None, "agent_response": "",
            "scenario_file": str(self.error.path if self.error else ""),
            "wall_time_s": None,  # it never ran: no time for the wall-time median
            "image": None, "image_id": None,
        }


class Gaia2Session:
    """Run-wide state, created in ``pytest_configure`` and registered as a plugin."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.rootdir = Path(config.rootpath)
        worker_input = getattr(config, "workerinput", None)
        self.is_worker = worker_input is not None
        self.worker = worker_input["workerid"] if worker_input else "main"
        self.run_id: str = (worker_input or {}).get("gaia2_run_id") or uuid.uuid4().hex
        self.owner_pid: int = int((worker_input or {}).get("gaia2_owner_pid") or os.getpid())
        self.started_at: str = (worker_input or {}).get("gaia2_started_at") or (
            _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        )
        # Not PYTEST_XDIST_WORKER_COUNT: a run started from inside an xdist worker inherits the outer count.
        self.workers = int((worker_input or {}).get("workercount")
                           or getattr(config.option, "numprocesses", None) or 1)  # xdist's -n, resolved
        self.notes: list[str] = []
        self.config_secrets: dict[str, str] = {}
        self.values = self._read_values()
        self.output = self._path(self.values["output"])
        self.active = self._is_active()
        self.collects_scenarios = self.active
        self.retries: int = self.values["retries"]
        self.repeat: int = self.values["repeat"]
        self.records: list[dict[str, Any]] = []
        self._plans: list[ItemPlan] | None = None
        self._engine: Engine | None = None
        self._leases: PortLeases | None = None
        self._image_id: str | None = None
        self.prepared = False
        self.gate = stats.Gate(
            min_pass_rate=self.values["min_pass_rate"], rate=self.values["rate"],
            gate_on=self.values["gate_on"], max_error_rate=self.values["max_error_rate"],
        )
        if self.active:
            self.notes.extend(self.settings.warnings)
        if self.active and not self.values["preflight_only"]:
            settings_mod.validate(self.settings)
            self.plans()  # discovery errors and selection problems surface at start-up

    @cached_property
    def settings(self) -> settings_mod.RunSettings:
        """Resolved on first use: a run that collects no scenario (``pytest tests/unit``) never reads .env."""
        return settings_mod.RunSettings.from_options(
            self.values, rootdir=self.rootdir, environ={**os.environ, **self.config_secrets},
            reference_image=_reference_image_name(),
        )

    @cached_property
    def redactor(self) -> Redactor:
        return Redactor(self.settings.secret_values())

    @classmethod
    def from_config(cls, config: pytest.Config) -> Gaia2Session:
        session = cls(config)
        config.pluginmanager.register(session, "gaia2-session")
        return session

    # -- configuration ---------------------------------------------------------------------

    def _path(self, raw: str | Path) -> Path:
        path = Path(os.path.expanduser(str(raw)))
        return path if path.is_absolute() else (self.rootdir / path)

    def _read_values(self) -> dict[str, Any]:
        config_file = self.config.getoption("gaia2_config") or self.config.getini("gaia2_config")
        toml: dict[str, Any] = {}
        if config_file:
            from . import upstream_config

            loaded = upstream_config.load(self._path(config_file), os.environ)
            toml = dict(loaded.options)
            self.notes.extend(loaded.notes)
            self.config_secrets = loaded.secret_environ()
        return options.read(self.config, toml)

    def _is_active(self) -> bool:
        """Scenarios are collected when asked for, or by default when no test paths were given."""
        if self.values["scenarios"] or self.values["dataset"]:
            return True
        explicit_paths = self.config.args_source == pytest.Config.ArgsSource.ARGS
        return not explicit_paths and (self.rootdir / "scenarios").is_dir()

    def _roots(self) -> list[Path]:
        if self.values["dataset"]:
            from . import dataset

            return dataset.materialise(self.values["dataset"], dataset.split_names(self.values["splits"]))
        return [self._path(raw) for raw in self.values["scenarios"]] or [self.rootdir / "scenarios"]

    def plans(self) -> list[ItemPlan]:
        """Every item to collect, identical on every worker: the same files, order and sample."""
        if self._plans is not None:
            return self._plans
        if not self.active:
            self._plans = []
            return self._plans
        from . import selection

        scenarios, errors = discover(self._roots())
        chosen = selection.select(
            scenarios,
            splits=self.values["splits"] if not self.values["dataset"] else None,
            subset=self._path(self.values["subset"]) if self.values["subset"] else None,
            ids_file=self._path(self.values["ids_file"]) if self.values["ids_file"] else None,
            sample=self.values["sample"], seed=self.values["seed"], first_n=self.values["first_n"],
        )
        self.notes.extend(chosen.notes)
        self.selection = chosen
        plans = [
            ItemPlan(s.split, s.scenario_id, run, self.repeat, scenario=s, hard_timeout=self.hard_timeout(s))
            for s in chosen.scenarios for run in range(1, self.repeat + 1)
        ]
        taken = {(plan.split, plan.name) for plan in plans}
        for error in errors:
            split, stem = _error_split(error), error.path.stem
            name, n = stem, 1
            # Two broken files may share a stem (dup_a/search/x.json, dup_b/search/x.json): each
            # needs its own name, or results.jsonl would keep only one of their records.
            while (split, name) in taken:
                n += 1
                name = f"{stem}-{n}"
            taken.add((split, name))
            plans.append(ItemPlan(split, name, 1, 1, error=error))
        self._plans = plans
        return plans

    def hard_timeout(self, scenario: Scenario) -> float:
        """A bound pytest-timeout enforces even if the run itself hangs: every phase's limit, plus slack."""
        limits = self.limits()
        return round(limits.effective_timeout(scenario.duration) + limits.health_timeout
                     + limits.judge_grace + limits.stop_timeout + HARD_TIMEOUT_SLACK, 1)

    def limits(self) -> Limits:
        settings = self.settings
        return Limits(timeout=settings.timeout, health_timeout=settings.health_timeout,
                      judge_grace=settings.judge_grace, stop_timeout=settings.stop_timeout)

    def extra_markers(self) -> list[str]:
        known = {f"{split}_split" for split in SPLITS}
        return sorted({plan.marker for plan in self.plans()} - known)

    def header_lines(self) -> list[str]:
        if not self.active:
            return []
        scenarios = sum(1 for plan in self.plans() if plan.scenario and plan.run == 1)
        lines = [
            f"gaia2: run {self.run_id[:12]}, image {self.settings.image}, {scenarios} scenarios"
            f"{f' x {self.repeat} runs' if self.repeat > 1 else ''}, network {self.settings.network}, "
            f"output {self.output}"
        ]
        lines += [f"gaia2: {note}" for note in self.notes]
        return [self.redactor.redact(line) for line in lines]

    def worker_input(self) -> dict[str, Any]:
        return {
            "gaia2_run_id": self.run_id,
            "gaia2_owner_pid": self.owner_pid,
            "gaia2_started_at": self.started_at,
        }

    # -- once per run ---------------------------------------------------------------------------

    def start(self) -> None:
        if self.active:
            self._redact_logs()
        if self.active and not self.is_worker:
            self.output.mkdir(parents=True, exist_ok=True)
            if self.values["sample"] or self.values["first_n"]:
                from . import selection

                selection.write_manifest(self.output / "manifest.json", self.selection.scenarios)

    def _redact_logs(self) -> None:
        """Every log record pytest shows or keeps (live log, captured log, log file) is masked."""
        logging_plugin = self.config.pluginmanager.get_plugin("logging-plugin")
        log_filter = RedactingFilter(self.redactor)
        for name in ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler"):
            handler = getattr(logging_plugin, name, None)
            if isinstance(handler, logging.Handler):
                handler.addFilter(log_filter)

    def engine(self) -> Engine:
        if self._engine is None:
            self._engine = Engine(connect(), run_id=self.run_id, worker=self.worker, owner_pid=self.owner_pid)
        return self._engine

    def prepare_if_needed(self, has_items: bool, collect_only: bool = False) -> None:
        """Engine, orphans, image and pre-flight: once, on the controller, before any container.

        A failure ends the run with one message instead of one error per test.
        """
        if self.prepared or self.is_worker or collect_only or not (has_items or self.values["preflight_only"]):
            return
        self.prepared = True
        from . import preflight

        try:
            outcome = preflight.run(self)
        except (EngineError, preflight.PreflightError) as exc:
            pytest.exit(self.redactor.redact(f"pytest-gaia2: {exc}"), returncode=EXIT_SETUP_FAILED)
        self._image_id = outcome.image_id
        self.write_run_config(outcome.facts)
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        write = reporter.write_line if reporter else print
        if self.values["preflight_only"]:
            for line in outcome.lines:
                write(self.redactor.redact(line))
            pytest.exit("pytest-gaia2: pre-flight only", returncode=0 if outcome.ok else 1)
        for warning in outcome.warnings:  # e.g. an unreachable model endpoint: worth a look, not a stop
            write(self.redactor.redact(f"gaia2: warning: {warning}"))
        for note in outcome.notes:  # e.g. orphans of earlier runs removed
            write(self.redactor.redact(f"gaia2: {note}"))

    def write_run_config(self, facts: dict[str, Any]) -> None:
        data = {
            "plugin_version": __version__,
            "run_id": self.run_id,
            "started_at": self.started_at,
            "workers": self.workers,
            "settings": settings_mod.public_dict(self.settings),
            "selection": {
                key: self.values[key]
                for key in ("scenarios", "dataset", "splits", "subset", "ids_file", "sample", "seed",
                            "first_n", "repeat", "resume", "retries")
            },
            "scenario_ids": sorted({p.name for p in self.plans() if p.scenario}),
            "markexpr": self.config.option.markexpr or None,
            "keyword": self.config.option.keyword or None,
            **facts,
        }
        artifacts.write_json(self.output / "run_config.json", self.redactor.redact_obj(data))

    # -- one item ----------------------------------------------------------------------------

    def image_id(self) -> str | None:
        if self._image_id is None:
            try:
                self._image_id = str(self.engine().client.images.get(self.settings.image).id)
            except Exception:  # noqa: BLE001 - the id is a nice-to-have in the record
                self._image_id = None
        return self._image_id

    def folder(self, plan: ItemPlan) -> Path:
        return artifacts.scenario_dir(self.output, plan.split, plan.name, plan.run, plan.repeat)

    def new_run(self, plan: ItemPlan, attempt: int) -> LiveRun:
        assert plan.scenario is not None
        folder = self.folder(plan)
        if attempt > 1:
            artifacts.set_aside_previous_attempt(folder, attempt - 1)
        elif folder.exists() and self.values["resume"]:
            # What an errored or interrupted earlier session left is replaced: resuming promises
            # a folder shaped like that of one uninterrupted run.
            shutil.rmtree(folder)
        elif folder.exists():
            artifacts.set_aside_previous_attempt(folder, 0)  # an earlier run's files; keep them
        return LiveRun(self, plan, folder, attempt)

    def host_ports(self) -> PortLeases:
        if self._leases is None:
            low, high = self.settings.port_range
            index = int(self.worker[2:]) if self.worker.startswith("gw") else 0
            self._leases = PortLeases(Path(tempfile.gettempdir()) / "pytest-gaia2",
                                      worker_slice(low, high, index, self.workers))
        return self._leases

    def reused_result(self, plan: ItemPlan) -> RunResult | None:
        """With --gaia2-resume, a stored pass or fail is reported again without a container."""
        if not self.values["resume"] or plan.scenario is None:
            return None
        folder = self.folder(plan)
        record = artifacts.read_json(folder / artifacts.RESULT_FILE)
        if not isinstance(record, dict) or record.get("success") not in (True, False):
            return None
        record = {**record, "reused": True}
        outcome = "passed" if record["success"] else "failed"
        reason = "; ".join(record.get("failure_reasons") or []) or "judge: success"
        verdict = Verdict(outcome, reason, failure_reason=reason if outcome == "failed" else None)
        return RunResult(plan.scenario, verdict, record, folder)

    def annotate(self, item: pytest.Item, report: pytest.TestReport, record: dict[str, Any]) -> None:
        """Ship the record to the controller with the report; a few fields become JUnit properties.

        On the item too: JUnit reads the properties from the teardown report, which copies the
        item's list (a retried attempt's properties are replaced, not repeated).
        """
        record = self.redactor.redact_obj(record)
        report.gaia2_result = record  # type: ignore[attr-defined]
        report._gaia2_sent = True  # type: ignore[attr-defined]
        properties = [
            ("gaia2_scenario_id", record.get("scenario_id")),
            ("gaia2_verdict", record.get("outcome")),
            ("gaia2_error_category", record.get("error_category") or ""),
            ("gaia2_reused", str(bool(record.get("reused"))).lower()),
        ]
        report.user_properties.extend(properties)
        names = {name for name, _ in properties}
        item.user_properties[:] = [prop for prop in item.user_properties if prop[0] not in names] + properties

    # -- hooks on the controller ---------------------------------------------------------------

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, "gaia2_result", None)
        if record is None or report.outcome == "rerun" or self.is_worker:
            return
        self.records.append(record)
        artifacts.append_jsonl(self.output / artifacts.RESULTS_FILE, record)

    def summary(self) -> stats.Summary:
        return stats.summarise(self.records)

    def summary_lines(self) -> list[str]:
        if self.is_worker or not self.records:
            if self.active and not self.is_worker and not self.config.option.collectonly:
                return ["gaia2: no scenario ran"]
            return []
        summary = self.summary()
        decision = self.gate.decide(summary) if self.gate.active else None
        lines = ["", "=" * 20 + " gaia2 summary " + "=" * 20]
        lines += report.summary_lines(summary, decision)
        reused = [f"{r['split']}/{r['scenario_id']}" + (f"/run_{r['run']}" if self.repeat > 1 else "")
                  for r in self.records if r.get("reused")]
        if reused:
            shown = ", ".join(sorted(reused)[:REUSED_LISTED]) + (
                f", ... ({len(reused) - REUSED_LISTED} more)" if len(reused) > REUSED_LISTED else "")
            lines.append(f"gaia2: {len(reused)} verdicts reused from {self.output} (no container): {shown}")
        lines.append(f"gaia2: results in {self.output}")
        return lines

    def finish(self, exitstatus: int) -> int | None:
        """Remove what is left of the run, write summary.json, and let the gate decide the exit status."""
        if self.is_worker or not self.active:
            self._remove_leftovers()
            return None
        self._remove_leftovers()
        if not self.records:
            return None
        artifacts.rewrite_results(self.output / artifacts.RESULTS_FILE)
        summary = self.summary()
        decision = self.gate.decide(summary) if self.gate.active else None
        report.write_summary_json(self.output / "summary.json", summary, decision,
                                  extra={"run_id": self.run_id, "plugin_version": __version__})
        if decision is None or exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR,
                                              pytest.ExitCode.USAGE_ERROR):
            return None
        return pytest.ExitCode.OK if decision.met else pytest.ExitCode.TESTS_FAILED

    def _remove_leftovers(self) -> None:
        if self._engine is None and (self.is_worker or not self.prepared):
            return
        try:
            engine = self.engine()
            if self.is_worker:
                engine.remove_run(worker=self.worker)
            else:
                engine.remove_run()
        except EngineError:
            pass

    def remove_worker_containers(self, worker: str) -> None:
        try:
            self.engine().remove_run(worker=worker)
        except EngineError:
            pass

    def close(self) -> None:
        if self._engine is not None:
            self._engine.client.close()


def _error_split(error: ScenarioError) -> str:
    parent = error.path.parent.name if error.path.suffix else error.path.name
    return parent if parent in SPLITS else (parent or "scenarios")


def _reference_image_name() -> str:
    from .reference import build

    return build.image_name()


class LiveRun:
    """The container fixture's object: the attempt's ScenarioRun plus its port lease."""

    def __init__(self, session: Gaia2Session, plan: ItemPlan, folder: Path, attempt: int) -> None:
        self.session = session
        self.plan = plan
        self.folder = folder
        self.attempt = attempt
        self.ports: list[int] = []
        self.run = self._new_run()

    def _new_run(self) -> ScenarioRun:
        """A ScenarioRun; in host-network mode with two freshly leased ports (adapter, gateway)."""
        session, settings, scenario = self.session, self.session.settings, self.plan.scenario
        assert scenario is not None
        if settings.network == "host":
            self.ports = session.host_ports().acquire(2)
            adapter_port, gateway_port = self.ports
        else:
            adapter_port, gateway_port = ADAPTER_PORT, None
        env = settings_mod.container_env(settings, adapter_port=adapter_port, gateway_port=gateway_port,
                                         start_time=scenario.start_time)
        files = tuple((dest, Path(src).read_bytes(), 0o644) for src, dest in settings.files_to_copy())
        launch = Launch(
            image=settings.image, env=env, network=settings.network, adapter_port=adapter_port,
            files=files, extra_hosts=settings_mod.extra_hosts(),  # host network too: same base URL everywhere
            image_id=session.image_id(),
        )
        return ScenarioRun(scenario, session.engine(), launch, session.limits(), self.folder, run=self.plan.run,
                           attempt=self.attempt, redact=session.redactor.redact)

    @property
    def container(self) -> Any:
        """The engine container (``exec``, ``read_file``, ``logs``), alive until teardown."""
        return self.run.container

    @property
    def adapter_url(self) -> str:
        assert self.run.container is not None
        return self.run.container.adapter_url

    @property
    def last_result(self) -> RunResult | None:
        """The attempt's result once written, however it ended (error, Ctrl-C, pytest-timeout)."""
        return self.run.last_result

    def start(self) -> Any:
        """Start the container; in host-network mode, again on new ports if a leased one was taken
        by another program between the lease's check and the container binding it."""
        tries = HOST_PORT_TRIES
        while True:
            try:
                return self.run.start()
            except Gaia2InfraError as exc:
                tries -= 1
                if not (tries and self.ports and self._port_taken(exc)):
                    raise
            log.warning("gaia2: host port %s was taken; starting %s again on new ports",
                        self.ports, self.plan.test_id)
            self.close()
            self.run = self._new_run()

    def _port_taken(self, exc: Gaia2InfraError) -> bool:
        log_file = self.folder / "container.log"
        text = str(exc) + (log_file.read_text(encoding="utf-8", errors="replace") if log_file.is_file() else "")
        return any(sign in text.lower() for sign in PORT_TAKEN_SIGNS)

    def drive(self) -> RunResult:
        return self.run.drive()

    def close(self) -> None:
        try:
            self.run.remove()
        finally:
            if self.ports:
                self.session.host_ports().release(self.ports)
                self.ports = []
