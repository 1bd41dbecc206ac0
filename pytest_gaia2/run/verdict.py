"""From what the judge recorded to passed / failed / error: the mapping rules, pure.

The agent under test runs in the container and may forge anything the host reads, so a
judgment counts only from the judge's own record: daemon_status.json terminal with a
judgment, and the last line of the judgments file agreeing (:func:`reconcile`). The
adapter's /status answer only tells the host when to look; a /status that claims another
verdict than the record is a ``verdict_conflict``. A judgment that counts is the verdict
whatever else went wrong, unless an exception pytest reports stopped the attempt; without
one, the harness (not the agent) is blamed, except when the scenario ran past its declared
duration, which upstream counts as the agent being too slow, or when the daemon gave up
while the agent was calling its model again and again without answering (``agent_loop``,
upstream's ``stuck_loop_min_tool_calls``): the model's failure, so errors stay infrastructure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_gaia2.store.folder import STATUS_FILE
from pytest_gaia2.store.record import Outcome

TERMINAL_STATUSES = frozenset({"complete", "stopped", "error"})


class Gaia2InfraError(Exception):
    """The harness, not the agent, failed: raised in setup so pytest reports an error (Allure: broken)."""

    def __init__(self, category: str, message: str) -> None:
        self.category = category
        self.detail = message
        super().__init__(f"[{category}] {message}")


@dataclass(frozen=True)
class Fault:
    """An infrastructure problem seen while driving the run (before the verdict is decided)."""

    category: str
    message: str


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    message: str
    category: str | None = None
    failure_reason: str | None = None

    @property
    def success(self) -> bool | None:
        """Upstream's ``success``: True, False, or None for an infrastructure error."""
        return {"passed": True, "failed": False, "error": None}[self.outcome]


ENDPOINT_SOURCE = "/status"
STATE_SOURCE = STATUS_FILE
LAST_JUDGMENT_SOURCE = "daemon_judgments.jsonl (last line)"


PROVIDER_MASKED = frozenset({"idle_timeout", "container_exited", "status_unreachable"})
"""Faults a provider's trouble explains (the agent stalled or died waiting on it); the others
(a budget cap, a scenario that cannot run, an engine that failed) stand."""


def state_of(status: Mapping[str, Any] | None) -> str:
    """The ``status`` field of a daemon status, whatever the container put there."""
    state = status.get("status") if isinstance(status, Mapping) else None
    return state if isinstance(state, str) else "unknown"


def judgment_of(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The judgment a daemon status claims, if it holds a usable one (terminal or not)."""
    if not isinstance(status, Mapping):
        return None
    judgment = status.get("judgment")
    if isinstance(judgment, Mapping) and isinstance(judgment.get("success"), bool):
        return judgment
    return None


def is_terminal(status: Mapping[str, Any] | None) -> bool:
    return state_of(status) in TERMINAL_STATUSES


def recorded_judgment(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The judgment of the judge's own record: only a terminal status carries one."""
    return judgment_of(status) if is_terminal(status) else None


def doubted_pass(status: Mapping[str, Any] | None, agent_actions: int, problems: Sequence[str]) -> Fault | None:
    """A ``verdict_conflict`` for a recorded pass no judge gives: the agent wrote no action at
    all (every scenario asks for at least an answer), or the judge's files hold what no judge
    writes (:func:`~pytest_gaia2.run.evidence.forged_signs`). None for anything else."""
    recorded = recorded_judgment(status)
    if recorded is None or recorded["success"] is not True:
        return None
    reasons = [*(["the agent wrote no action to events.jsonl"] if agent_actions == 0 else []), *problems]
    if not reasons:
        return None
    return Fault(
        "verdict_conflict",
        f"a recorded pass the judge cannot have given: {'; '.join(reasons)}; not counted as a verdict",
    )


def decide(
    status: Mapping[str, Any] | None,
    *,
    timed_out: bool,
    timeout_seconds: float,
    duration: float | None,
    fault: Fault | None = None,
    conflict: Fault | None = None,
    stop: Fault | None = None,
    loop_calls: int = 0,
    stuck_loop_min_calls: int = 0,
    provider: Fault | None = None,
    rejected: bool = False,
    observed: Mapping[str, Any] | None = None,
) -> Verdict:
    """The verdict for one attempt, from the judge's record (daemon_status.json) and the facts
    of the attempt. An exception that stopped the attempt outranks everything (pytest reports
    it, and the record must say the same); a conflict between the judgment's sources outranks
    any judgment. The judge's own judgment stands either way: the provider evidence comes from
    the agent's trace, which the agent could write to turn a judged failure into an error. So does
    a rejection the judge logged (``rejected``: the last line of daemon_judgments.jsonl says fail)
    when daemon_status.json records no judgment: the judge appends that line before it records,
    and a status rewritten to an unjudged end would otherwise make the failure a retried error
    (a forged rejection gains an agent nothing). Short of a judgment, an agent whose last model
    call failed at its provider (``provider``) is not looping or idle: the provider's trouble is
    the verdict. A rejection the harness saw first (``observed``: the first terminal status
    with a judgment it read while polling) is final: what the container shows afterwards (an
    error, an emptied judgments file, a killed daemon) cannot make it a retried error."""
    if stop is not None:
        return Verdict("error", stop.message, category=stop.category)
    seen = recorded_judgment(observed)
    if seen is not None and not seen["success"]:
        reason = seen.get("failure_reason")
        reason = reason if isinstance(reason, str) and reason else "judge rejected the run (no reason given)"
        return Verdict("failed", reason, failure_reason=reason)
    if conflict is not None:
        return Verdict("error", conflict.message, category=conflict.category)
    judgment = recorded_judgment(status)
    if judgment is not None and judgment["success"]:
        return Verdict("passed", "judge: success")
    if judgment is not None:  # the judge's record stands: a trace (the agent's own file) cannot undo it
        reason = judgment.get("failure_reason")
        reason = reason if isinstance(reason, str) and reason else "judge rejected the run (no reason given)"
        return Verdict("failed", reason, failure_reason=reason)
    if rejected:
        reason = (
            f"the judge rejected the run (the last line of daemon_judgments.jsonl says fail), though "
            f"daemon_status.json records no judgment (status: {state_of(status)})"
        )
        return Verdict("failed", reason, failure_reason=reason)
    if provider is not None and (fault is None or fault.category in PROVIDER_MASKED):
        return Verdict("error", provider.message, category=provider.category)
    if fault is not None:
        return Verdict("error", fault.message, category=fault.category)
    state = state_of(status)
    if timed_out:
        if duration:
            reason = (
                f"ran past the scenario's declared duration ({duration:g} s; timeout "
                f"{timeout_seconds:g} s) without a judgment (last daemon status: {state})"
            )
            return Verdict("failed", reason, failure_reason=reason)
        return Verdict(
            "error",
            f"no terminal daemon status within {timeout_seconds:g} s (last status: {state}); "
            "see eventd.log and events.jsonl",
            category="timeout",
        )
    if state == "error" and 0 < stuck_loop_min_calls <= loop_calls:
        reason = (
            f"the daemon ended with status 'error' after the agent made {loop_calls} model calls without "
            f"answering the user (--gaia2-stuck-loop-min-calls {stuck_loop_min_calls}): a runaway loop; "
            "see trace.jsonl and eventd.log"
        )
        return Verdict("failed", reason, category="agent_loop", failure_reason=reason)
    if state == "error":
        return Verdict(
            "error",
            "the in-container daemon ended with status 'error' and no judgment; see eventd.log",
            category="daemon_error",
        )
    return Verdict(
        "error",
        f"the daemon ended with status {state!r} and no judgment; see daemon_status.json and eventd.log",
        category="no_judgment",
    )


def _says(success: bool | None, absent: str) -> str:
    return absent if success is None else ("pass" if success else "fail")


def reconcile(
    endpoint: Mapping[str, Any] | None, state_file: Mapping[str, Any] | None, last_line: bool | None
) -> Fault | None:
    """A ``verdict_conflict`` when the judgment's sources disagree, else None.

    The judge's record is daemon_status.json (terminal, with a judgment). Every judgment the
    judge makes appends a judgments line first (the reference daemon and upstream's
    ``Judge._log_judgment`` alike), so a recorded pass needs the last line's success too; a
    recorded rejection needs no line (a forged rejection gains an agent nothing) but must not
    contradict one. /status is a hint: silent (no judgment, gone, malformed) it costs
    nothing, but a judgment it claims must be the record's. Without a recorded judgment the
    last line alone decides nothing (an earlier turn's pass while the run went on).
    """
    recorded = recorded_judgment(state_file)
    on_file = recorded["success"] if recorded is not None else None
    claimed = judgment_of(endpoint)
    problems = []
    if claimed is not None and claimed["success"] != on_file:
        problems.append(f"{ENDPOINT_SOURCE} claims a {_says(claimed['success'], '')}")
    if on_file is True and last_line is not True:
        problems.append("a pass needs the judgments file's last line to say success too")
    if on_file is False and last_line is True:
        problems.append("the judgments file's last line says success")
    if not problems:
        return None
    file_text = _says(on_file, f"{state_of(state_file)}, no judgment" if state_file is not None else "absent")
    shown = (
        f"{ENDPOINT_SOURCE}: {_says(claimed['success'] if claimed else None, 'no judgment')}, "
        f"{STATE_SOURCE}: {file_text}, {LAST_JUDGMENT_SOURCE}: {_says(last_line, 'absent')}"
    )
    return Fault(
        "verdict_conflict",
        f"the judgment's sources disagree ({shown}): {'; '.join(problems)}; not counted as a verdict",
    )


def sources_of(
    endpoint: Mapping[str, Any] | None, state_file: Mapping[str, Any] | None, last_line: bool | None
) -> dict[str, Any]:
    """What each source said, for result.json's ``verdict_sources``: a status source's
    judgment, or ``{"status": ...}`` when it holds none, or null when absent."""

    def said(status: Mapping[str, Any] | None) -> Any:
        if status is None:
            return None
        judgment = judgment_of(status)
        return dict(judgment) if judgment is not None else {"status": state_of(status)}

    return {ENDPOINT_SOURCE: said(endpoint), STATE_SOURCE: said(state_file), LAST_JUDGMENT_SOURCE: last_line}
