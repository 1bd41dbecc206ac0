"""The one record of a scenario attempt, and its JSON form.

result.json, results.jsonl, summary.json, the terminal summary, JUnit properties and Allure
are all written from :class:`AttemptRecord`, so they cannot disagree. The first keys carry
gaia2-runner's names and meanings (contract section 5.3), so tools written for its output
read ours; the rest is pytest-gaia2's: identity, provenance and what the harness saw.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal, Mapping

Outcome = Literal["passed", "failed", "error"]

RUNNER_KEYS = (
    "scenario_id", "success", "reward", "num_agent_events", "num_oracle_events", "agent_response",
    "judged_in_container", "timed_out", "timeout_seconds", "daemon_status", "scenario_file",
    "failure_reasons", "error",
)
"""Keys gaia2-runner writes in result.json, in its order (contract 5.3)."""

PROVENANCE_KEYS = (
    "run_id", "session_id", "plugin_version", "image", "image_id", "provider", "model",
    "judge_provider", "judge_model", "base_url_host", "judge_base_url_host", "env_digest", "shard",
)
"""What made a verdict: the same in every record of one session, compared on resume."""


@dataclass(frozen=True)
class AttemptRecord:
    """One attempt at one scenario (one repeat), however it ended."""

    # gaia2-runner's keys
    scenario_id: str
    success: bool | None
    reward: float | None
    num_agent_events: int
    agent_response: str
    judged_in_container: bool
    timed_out: bool
    timeout_seconds: float
    daemon_status: dict[str, Any] | None
    scenario_file: str
    failure_reasons: list[str]
    error: str | None
    num_oracle_events: int = 0
    # identity and outcome
    split: str = ""
    universe: str | None = None
    repeat: int = 1
    repeats: int = 1
    attempt: int = 1
    outcome: Outcome = "error"
    error_category: str | None = None
    reused: bool = False
    folder: str = ""
    scenario_sha256: str | None = None
    # provenance (the session's, see PROVENANCE_KEYS)
    run_id: str = ""
    session_id: str = ""
    plugin_version: str = ""
    image: str | None = None
    image_id: str | None = None
    provider: str | None = None
    model: str | None = None
    judge_provider: str | None = None
    judge_model: str | None = None
    base_url_host: str | None = None
    judge_base_url_host: str | None = None
    env_digest: str | None = None
    shard: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    wall_time_s: float | None = None
    # what the harness saw
    container: str | None = None
    worker: str | None = None
    engine: str | None = None
    adapter_port: int | None = None
    host_port: int | None = None
    verdict_sources: dict[str, Any] | None = None
    skipped_files: list[dict[str, Any]] = field(default_factory=list)
    # what it cost (from the attempt's trace.jsonl and the prices)
    usage: dict[str, Any] | None = None
    cost_usd: float | None = None
    cost_source: str | None = None

    @property
    def key(self) -> str:
        """``<split>/<scenario_id>``, with ``/run_<k>`` when repeated: the scenario's
        identity in a run, one results.jsonl line each."""
        return scenario_key(self.split, self.scenario_id, self.repeat, self.repeats)

    @property
    def message(self) -> str:
        """What a person reads first: the judge's reason, the error, or the pass."""
        if self.outcome == "failed":
            return "; ".join(self.failure_reasons) or "judge rejected the run"
        if self.outcome == "error":
            return self.error or "error"
        return "judge: success"

    def to_json(self) -> dict[str, Any]:
        """gaia2-runner's keys first, in its order, then ours."""
        data = asdict(self)
        ordered = {key: data.pop(key) for key in RUNNER_KEYS}
        return {**ordered, **data}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AttemptRecord:
        """A record read back (result.json, results.jsonl); unknown keys are ignored and
        missing ones take their defaults, so files of earlier versions still read."""
        known = {f.name for f in fields(cls)}
        values = {key: value for key, value in data.items() if key in known}
        values.setdefault("scenario_id", str(data.get("scenario_id") or "unknown"))
        for key in RUNNER_KEYS:
            values.setdefault(key, None)
        values["failure_reasons"] = list(values.get("failure_reasons") or [])
        values["num_agent_events"] = int(values.get("num_agent_events") or 0)
        values["agent_response"] = str(values.get("agent_response") or "")
        values["judged_in_container"] = bool(values.get("judged_in_container"))
        values["timed_out"] = bool(values.get("timed_out"))
        values["timeout_seconds"] = float(values.get("timeout_seconds") or 0.0)
        values["scenario_file"] = str(values.get("scenario_file") or "")
        if "repeat" not in data and isinstance(data.get("run"), int):  # files of version 0.1
            values["repeat"] = data["run"]
        if "outcome" not in data:
            values["outcome"] = outcome_of(values.get("success"))
        return cls(**values)

    def reused_by(self, session_id: str) -> AttemptRecord:
        """The record as a later session reports it: the same verdict, marked reused."""
        return replace(self, reused=self.session_id != session_id)


def outcome_of(success: bool | None) -> Outcome:
    return "passed" if success is True else "failed" if success is False else "error"


def scenario_key(split: str, scenario_id: str, repeat: int, repeats: int) -> str:
    """The one spelling of a planned item's identity: test ids, records, not-run lists."""
    base = f"{split}/{scenario_id}"
    return f"{base}/run_{repeat}" if repeats > 1 else base


def is_judged(record: AttemptRecord | None) -> bool:
    """A judge's verdict (pass or fail): final within a run folder, never re-run."""
    return record is not None and record.success in (True, False)
