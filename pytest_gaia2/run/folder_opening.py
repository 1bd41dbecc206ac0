"""The run folder's opening, on the controller (or the only process): where it goes (a new folder,
or the one --gaia2-resume continues), its creation and lock, the refusal of a resume made with
other settings, and what the run ran with (run_config.json, a sessions.jsonl line, the manifest).

Apart from the run's context because it is where a run claims a folder: everything it creates,
locks or writes is inside the current run's folder, and a resume made with other settings is
refused here, after pre-flight and before any scenario starts or the folder gains a session.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.config import options
from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost.budget import Ledger
from pytest_gaia2.plan import selection
from pytest_gaia2.run import hooked_env, provenance
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.run_plan import RunPlan
from pytest_gaia2.run.terms import Invocation, RunStopped
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.redact import printable


def locate(
    run_options: RunOptions,
    *,
    run_id: str,
    session_id: str,
    started: _dt.datetime,
    notes: list[str],
) -> tuple[store.RunFolder, str]:
    """The run folder's place (created only once items exist) and the run's id: a resumed run
    keeps the one it was made with. A folder that cannot be used is a usage error."""
    output, resume = run_options.output, run_options.values.resume
    try:
        if not resume:
            return store.RunFolder(output / store.run_folder_name(run_id, started)), run_id
        folder = store.RunFolder.find(output, None if resume is True else run_options.path(resume))
        if folder.skipped:
            notes.append(
                f"--gaia2-resume: continuing {folder.path.name}, the latest run with a verdict; "
                f"newer without one: {', '.join(skipped.name for skipped in folder.skipped)}"
            )
        stored = store.read_json(folder.file(store.RUN_CONFIG_FILE)) or {}
        return folder, str(stored.get("run_id") or session_id)
    except store.StoreError as exc:  # it names a folder from anywhere: no escape reaches the terminal
        raise OptionError(str(exc)) from None


@dataclass(frozen=True)
class FolderOpening:
    """What opening the run folder needs of the run once pre-flight passed."""

    run_options: RunOptions
    invocation: Invocation
    plan: RunPlan
    write: Callable[[str], None]
    provenance: Callable[[], dict[str, Any]]
    """The session's provenance (:func:`pytest_gaia2.run.provenance.of_session`)."""
    run_id: str
    session_id: str
    started: _dt.datetime
    workers: int
    gateway: dict[str, Any]
    """run_config.json's ``gateway`` (:func:`pytest_gaia2.run.gateway.run_fact`)."""

    @property
    def values(self) -> options.Options:
        return self.run_options.values

    @property
    def redactor(self) -> hooked_env.LearningRedactor:
        return self.run_options.redactor

    def create(self) -> store.RunFolder:
        """A new run folder under the output folder (not resuming)."""
        return store.RunFolder.create(self.run_options.output, self.run_id, self.started)

    def open(self, folder: store.RunFolder, facts: dict[str, Any], planned: list[str]) -> None:
        """Lock ``folder``, refuse it when resumed with other settings, and write what the run ran with."""
        holder = {"session_id": self.session_id, "started_at": self.started.isoformat(timespec="seconds")}
        folder.lock(holder)
        if self.values.resume:
            self.check_resume(folder)
            for problem in Ledger(folder.path).read().problems:  # once, on the controller
                self.write(self.redactor.redact(f"gaia2: warning: spend ledger: {problem}"))
        else:
            store.write_json(folder.file(store.RUN_CONFIG_FILE), self.run_config(facts, planned))
        store.append_jsonl(
            folder.file(store.SESSIONS_FILE),
            self.redactor.redact_obj(
                {
                    **holder,
                    "command": self.invocation.command,
                    "planned": len(planned),
                    "provenance": self.provenance(),
                }
            ),
        )
        chosen = [item.scenario for item in self.plan.items() if item.scenario and item.key in set(planned)]
        if chosen:
            selection.write_manifest(folder.file(store.MANIFEST_FILE), [(s.split, s.scenario_id) for s in chosen])

    def check_resume(self, folder: store.RunFolder) -> None:
        """Refuse (or warn about) continuing a run made with other provenance or changed files:
        each difference in words, and the one command that continues the run as it was made."""
        stored = store.read_json(folder.file(store.RUN_CONFIG_FILE)) or {}
        now = {"provenance": self.provenance(), "settings": settings_mod.public_dict(self.run_options.settings)}
        differences = provenance.differences(stored, now, folder.records(), self.plan.hashes())
        if not differences:
            return
        head = f"--gaia2-resume: {folder.path} was run with other settings:"
        if self.values.resume_mismatch == "warn":
            self.write(printable(self.redactor.redact(f"gaia2: warning: {head} {'; '.join(differences)}")))
            return
        sessions = store.read_jsonl(folder.file(store.SESSIONS_FILE))
        earlier = next((str(s["command"]) for s in reversed(sessions) if s.get("command")), stored.get("command"))
        lines = [f"pytest-gaia2: {head}", *(f"  {difference}" for difference in differences)]
        if isinstance(earlier, str) and earlier:
            lines += [
                "to continue it with the settings it was run with (its saved verdicts are reused, none is paid again):",
                f"  {provenance.resume_command(earlier, folder.path)}",
            ]
        lines.append("to run these settings instead, start a new run: leave out --gaia2-resume")
        raise RunStopped([printable(self.redactor.redact(line)) for line in lines])

    def run_config(self, facts: dict[str, Any], planned: list[str]) -> dict[str, Any]:
        """run_config.json: the settings, the plan and the session's provenance, masked."""
        roots = self.plan.roots()
        data = provenance.run_config(
            self.run_options.settings,
            self.values,
            command=self.invocation.command,
            started=self.started,
            workers=self.workers,
            planned=planned,
            session=self.provenance(),
            dataset=self.values.dataset or (str(roots[0]) if len(roots) == 1 else None),
            markexpr=self.invocation.markexpr,
            keyword=self.invocation.keyword,
        )
        upstream_config = self.run_options.upstream_config
        upstream = {"upstream_config": upstream_config} if upstream_config else {}
        return self.redactor.redact_obj({**data, **upstream, "gateway": self.gateway, **facts})
