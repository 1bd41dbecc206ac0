"""From the facts of one ended attempt to its :class:`AttemptRecord`: pure, no I/O.

:class:`~pytest_gaia2.run.attempt.ScenarioAttempt` gathers what it saw (the last /status, a
fault, the deadline) and what the container left (:class:`~pytest_gaia2.run.evidence.Evidence`);
:func:`build_record` reconciles the judgment's sources, decides the verdict and masks what
the container wrote, so the rules can be tested without a container.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.run.verdict import Fault, decide, doubted_pass, reconcile, sources_of
from pytest_gaia2.store.record import AttemptRecord, kept_task
from pytest_gaia2.store.redact import Redactor


@dataclass(frozen=True)
class AttemptFacts:
    """What the harness knows of one attempt when it ends: which, where, when, and what it saw."""

    scenario: Scenario
    repeat: int
    repeats: int
    attempt: int
    folder: Path
    run_root: Path
    timeout: float
    started_at: str
    ended_at: str
    wall_time_s: float
    container: str | None
    host_port: int | None
    adapter_port: int
    worker: str | None
    engine: str | None
    provenance: Mapping[str, Any]
    skipped_files: list[dict[str, Any]]
    endpoint_status: dict[str, Any] | None
    """The last answer of /status: a hint of when to look, never a source of the verdict alone."""
    timed_out: bool
    fault: Fault | None
    stop: Fault | None = None
    """The exception that ended the attempt early (pytest reports it as the test's outcome)."""
    stuck_loop_min_calls: int = 0
    """Model calls of one turn that make a daemon error the agent's loop (0: never)."""
    observed_status: dict[str, Any] | None = None
    """The first terminal status with a judgment the harness read while polling: a rejection there is final."""


def build_record(facts: AttemptFacts, evidence: Evidence, redact: Redactor) -> AttemptRecord:
    """The attempt's record: the verdict from the judge's own record, checked against every
    other source of the judgment (:func:`~pytest_gaia2.run.verdict.reconcile`), masked."""
    endpoint, on_file = facts.endpoint_status, evidence.status_file
    conflict = reconcile(endpoint, on_file, evidence.last_judgment) or doubted_pass(
        on_file, evidence.agent_actions, evidence.problems
    )
    # Only the file's judgment may decide; the endpoint's answer stands in (without any
    # judgment) for what the record shows when the container left no file.
    status = (
        on_file
        if on_file is not None
        else ({key: value for key, value in endpoint.items() if key != "judgment"} if endpoint is not None else None)
    )
    if status is not None:  # the endpoint's copy was never written to disk, so never redacted
        status = redact.redact_obj(status)
    scenario = facts.scenario
    verdict = decide(
        status,
        timed_out=facts.timed_out,
        timeout_seconds=facts.timeout,
        duration=scenario.duration,
        fault=facts.fault,
        conflict=conflict,
        stop=facts.stop,
        loop_calls=evidence.loop_calls,
        stuck_loop_min_calls=facts.stuck_loop_min_calls,
        provider=Fault(trouble.last, trouble.message) if (trouble := evidence.provider).last else None,
        rejected=evidence.last_judgment is False,
        observed=facts.observed_status,
    )
    message = redact.redact(verdict.message)
    if verdict.outcome == "error" and verdict.category != "container_start":
        message = f"{message} (files: {facts.folder})"
    response = str((status or {}).get("last_response") or evidence.last_response)
    return AttemptRecord(
        scenario_id=scenario.scenario_id,
        success=verdict.success,
        reward={True: 1.0, False: 0.0, None: None}[verdict.success],
        num_agent_events=evidence.num_agent_events,
        agent_response=redact.redact(response),
        judged_in_container=verdict.success is not None,
        timed_out=facts.timed_out,
        timeout_seconds=facts.timeout,
        daemon_status=status,
        scenario_file=str(scenario.path),
        failure_reasons=[redact.redact(verdict.failure_reason)] if verdict.failure_reason else [],
        error=message if verdict.outcome == "error" else None,
        split=scenario.split,
        universe=scenario.universe,
        repeat=facts.repeat,
        repeats=facts.repeats,
        attempt=facts.attempt,
        outcome=verdict.outcome,
        error_category=verdict.category,
        folder=facts.folder.relative_to(facts.run_root).as_posix(),
        scenario_sha256=scenario.sha256,
        apps=list(dict.fromkeys(scenario.apps)),
        task=kept_task(redact.redact(scenario.task)),
        started_at=facts.started_at,
        ended_at=facts.ended_at,
        wall_time_s=facts.wall_time_s,
        container=facts.container,
        worker=facts.worker,
        engine=facts.engine,
        adapter_port=facts.adapter_port,
        host_port=facts.host_port,
        verdict_sources=(
            redact.redact_obj(sources_of(endpoint, on_file, evidence.last_judgment)) if conflict else None
        ),
        skipped_files=facts.skipped_files,
        **facts.provenance,
    )
