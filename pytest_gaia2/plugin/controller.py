"""The run as a pytest plugin: the pytest half of :class:`~pytest_gaia2.run.context.RunContext`.

Created in ``pytest_configure`` and registered as a plugin (pytest-xdist's ``DSession`` is the
model). It reads what pytest was asked into an :class:`~pytest_gaia2.run.terms.Invocation`,
takes each report's record, masks pytest's log handlers, writes the run's lines on pytest's
terminal, calls the hooks users implement, hands xdist workers the run, and turns the run's
exits and statuses into pytest's.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from pytest_gaia2.plugin import private_api, pytest_options
from pytest_gaia2.run import provenance
from pytest_gaia2.run.context import RunContext
from pytest_gaia2.run.terms import ExitStatus, Invocation, RunExit
from pytest_gaia2.store.redact import RedactingFilter

LOG_HANDLERS = ("caplog_handler", "report_handler", "log_file_handler", "log_cli_handler")
"""The logging plugin's handlers a secret could reach through."""


def invocation(config: pytest.Config) -> Invocation:
    """What the run needs of this pytest process, as plain values."""
    allure = getattr(config.option, "allure_report_dir", None)
    return Invocation(
        base=pytest_options.base_dir(config),
        worker_input=getattr(config, "workerinput", None) or {},
        processes=getattr(config.option, "numprocesses", None),
        explicit_test_paths=pytest_options.explicit_test_paths(config),
        config_file=pytest_options.config_file(config),
        command=provenance.command(config.invocation_params.args),
        collect_only=bool(config.option.collectonly),
        markexpr=config.option.markexpr or None,
        keyword=config.option.keyword or None,
        alluredir=config.invocation_params.dir / allure if allure else None,
    )


class Controller(RunContext):
    """One pytest run: the run context with pytest's hooks, terminal, exits and xdist wiring."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        super().__init__(invocation(config), lambda toml: pytest_options.read(config, toml))

    def write(self, line: str) -> None:
        """A line of its own on the terminal: under xdist the progress dots leave
        ``write_line``'s own newline check blind (no file path is printed), so a line written
        mid-run would land after the dots."""
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            print(line)
            return
        if private_api.mid_line(reporter):
            reporter.write("\n")
        reporter.write_line(line)

    def hook(self, name: str) -> Any:
        return getattr(self.config.hook, name)

    def begin(self) -> None:
        """pytest's log handlers masked too, then the run begins."""
        if self.active:
            log_filter = RedactingFilter(self.redactor)
            logging_plugin = self.config.pluginmanager.get_plugin("logging-plugin")
            for name in LOG_HANDLERS:
                handler = getattr(logging_plugin, name, None)
                if isinstance(handler, logging.Handler):
                    handler.addFilter(log_filter)
        super().begin()

    def prepare(self, planned: list[str], collect_only: bool = False) -> None:
        """The run's pre-flight; a run that must end at once ends as ``pytest.exit`` ends one."""
        try:
            super().prepare(planned, collect_only)
        except RunExit as exc:
            pytest.exit(exc.message, returncode=exc.code)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """On the controller: each final report's record becomes one results.jsonl line."""
        skipped = getattr(report, "gaia2_not_started", None)
        data = getattr(report, "gaia2_record", None)
        self.take_report(
            skipped if isinstance(skipped, dict) else None,
            None if str(report.outcome) == "rerun" else data,  # rerunfailures' own outcome
        )

    def worker_input(self, worker: str) -> dict[str, Any]:
        """What an xdist worker is handed: the session, the run, its folder, its engine, the
        controller's discovery, baseline and gateway."""
        from pytest_gaia2.plan.scenarios import shipped

        return {
            "gaia2_session_id": self.session_id,
            "gaia2_run_id": self.run_id,
            "gaia2_owner_pid": self.owner_pid,
            "gaia2_started_at": self.started.isoformat(),
            "gaia2_folder": str(self.folder.path) if self.folder else "",
            **self.engines.handover(worker),
            "gaia2_discovered": shipped(*self.plan.discovered) if self.active else None,
            "gaia2_baseline": self.plan.baseline.shipped() if self.active and self.plan.baseline else None,
            "gaia2_gateway": self.gateway.access,
        }

    def finish(self, exitstatus: int, signum: int | None = None) -> pytest.ExitCode | None:
        """The run's files and sweep; the exit status the gate decides, as pytest's (None: pytest's stands)."""
        workers = self.config.pluginmanager.has_plugin("dsession")
        status = self.finish_run(exitstatus, signum, workers=workers)
        return None if status is None else exit_code(status)


def exit_code(status: ExitStatus) -> pytest.ExitCode:
    """The run's status as pytest's (the same number; the run ends with 6 only through RunStopped)."""
    return pytest.ExitCode(int(status))
