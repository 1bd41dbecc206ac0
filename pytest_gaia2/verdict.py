"""From what the daemon reported to passed / failed / error: the mapping rules, pure.

A judgment that exists is always the verdict, whatever else went wrong; without one,
the harness (not the agent) is blamed, except when the scenario ran past its declared
duration, which upstream counts as the agent being too slow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

Outcome = Literal["passed", "failed", "error"]

TERMINAL_STATUSES = frozenset({"complete", "stopped", "error"})

# Error categories: what happened, and where to look. The README's table and the
# Allure categories are generated from this one table.
CATEGORIES: dict[str, tuple[str, str]] = {
    "invalid_scenario": ("the scenario file cannot be run (bad JSON, missing field, duplicate id)",
                         "the file and field named in the message"),
    "container_start": ("the engine could not create or start the container",
                        "the message (engine error), `docker logs` is empty"),
    "container_exited": ("the container's main process exited before a verdict",
                         "exit code and last log lines in the message; container.log"),
    "health_timeout": ("the adapter never reported connected on /health",
                       "container.log, entrypoint.log"),
    "port_unreachable": ("the adapter answers inside the container but not through the published port",
                         "network mode, published port and engine in the message"),
    "status_unreachable": ("/status stopped answering and no daemon_status.json was found",
                           "container.log, entrypoint.log, eventd.log"),
    "daemon_error": ("the in-container daemon ended with status error",
                     "eventd.log, daemon_status.json"),
    "no_judgment": ("the daemon ended without a judgment",
                    "daemon_status.json, eventd.log"),
    "timeout": ("no terminal status before the scenario timeout (no declared duration)",
                "eventd.log, events.jsonl"),
    "interrupted": ("the run was stopped before a verdict: Ctrl-C, SIGTERM, or pytest-timeout's hard bound",
                    "what stopped it in the message; container.log, eventd.log"),
    "verdict_conflict": ("the sources of the judgment disagree (/status, daemon_status.json, the last "
                         "line of daemon_judgments.jsonl): a pass is never counted on a forged status",
                         "each source's verdict in the message and in result.json's verdict_sources"),
    "budget_cap": ("the run's spend passed --gaia2-budget-cap while the scenario was running",
                   "the summary's spend; the scenario's files are kept as far as it got"),
    "harness_error": ("pytest-gaia2 or the engine client raised an unexpected exception",
                      "the traceback in the pytest report; container.log"),
}


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


def judgment_of(status: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The judgment in a daemon status, if it holds a usable one."""
    if not status:
        return None
    judgment = status.get("judgment")
    if isinstance(judgment, Mapping) and isinstance(judgment.get("success"), bool):
        return judgment
    return None


def is_terminal(status: Mapping[str, Any] | None) -> bool:
    return bool(status) and status.get("status") in TERMINAL_STATUSES


def decide(
    status: Mapping[str, Any] | None,
    *,
    timed_out: bool,
    timeout_seconds: float,
    duration: float | None,
    fault: Fault | None = None,
    conflict: Fault | None = None,
) -> Verdict:
    """The verdict for one attempt, from the last daemon status found anywhere and the facts of
    the attempt. A conflict between the judgment's sources outranks any judgment."""
    if conflict is not None:
        return Verdict("error", conflict.message, category=conflict.category)
    judgment = judgment_of(status)
    if judgment is not None:
        if judgment["success"]:
            return Verdict("passed", "judge: success")
        reason = str(judgment.get("failure_reason") or "judge rejected the run (no reason given)")
        return Verdict("failed", reason, failure_reason=reason)
    if fault is not None:
        return Verdict("error", fault.message, category=fault.category)
    state = (status or {}).get("status", "unknown")
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


def conflict_of(sources: Mapping[str, bool | None]) -> Fault | None:
    """A ``verdict_conflict`` when the sources that hold a judgment do not all agree.

    A missing source (the endpoint gone, no judgments file) is no conflict; a pass on one
    source and a rejection on another is, whichever is right.
    """
    present = {name: success for name, success in sources.items() if success is not None}
    if len(set(present.values())) < 2:
        return None
    shown = ", ".join(f"{name}: {'pass' if success else 'fail'}" for name, success in present.items())
    return Fault("verdict_conflict", f"the judgment's sources disagree ({shown}); not counted as a pass")
