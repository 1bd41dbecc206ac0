"""The life of one scenario: launch, health, [notify], poll, collect, verdict, result.json.

Plain calls with plain data; pytest only sees the :class:`RunResult` at the end. Every
path, however it ends, collects what the container holds and writes ``result.json``
before the container is removed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from . import artifacts
from .adapter import AdapterClient, AdapterUnavailable
from .engine import Container, Engine, EngineError, LaunchSpec, engine_address
from .scenarios import Scenario
from .verdict import Fault, Verdict, decide, is_terminal, judgment_of

CONTAINER_SCENARIO_PATH = "/var/gaia2/custom_scenario.json"
ADAPTER_PORT = 8090
STATUS_FILE = f"{artifacts.STATE_DIR}/daemon_status.json"
# Consecutive /status failures before the state file is read instead.
STATUS_FAILURES_BEFORE_FILE = 3
LOG_TAIL_LINES = 20


class Gaia2InfraError(Exception):
    """The harness, not the agent, failed: raised in setup so pytest reports an error (Allure: broken)."""

    def __init__(self, category: str, message: str) -> None:
        self.category = category
        super().__init__(f"[{category}] {message}")


@dataclass(frozen=True)
class Limits:
    timeout: float = 600.0
    health_timeout: float = 120.0
    judge_grace: float = 15.0
    stop_timeout: float = 5.0
    poll_interval: float = 1.0

    def effective_timeout(self, duration: float | None) -> float:
        """Upstream's rule: the larger of the scenario duration + 60 s and the configured timeout."""
        return max(self.timeout, (duration or 0.0) + 60.0) if duration else self.timeout


@dataclass(frozen=True)
class Launch:
    """How to start the container for one attempt; ``env`` may hold secrets and is never written."""

    image: str
    env: Mapping[str, str]
    network: str = "bridge"
    adapter_port: int = ADAPTER_PORT
    files: tuple[tuple[str, bytes, int], ...] = ()
    extra_hosts: Mapping[str, str] = field(default_factory=dict)
    image_id: str | None = None


@dataclass
class RunResult:
    """What one run produced: the verdict, the record written as result.json, and the files."""

    scenario: Scenario
    verdict: Verdict
    record: dict[str, Any]
    folder: Path

    @property
    def passed(self) -> bool:
        return self.verdict.outcome == "passed"

    @property
    def failed(self) -> bool:
        return self.verdict.outcome == "failed"

    @property
    def errored(self) -> bool:
        return self.verdict.outcome == "error"

    @property
    def daemon_status(self) -> dict[str, Any] | None:
        return self.record.get("daemon_status")

    @property
    def agent_response(self) -> str:
        return str(self.record.get("agent_response") or "")

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events.jsonl lines the run left (agent actions, ENV events, turn boundaries)."""
        return artifacts.events_of(self.folder)

    @property
    def judgments(self) -> list[dict[str, Any]]:
        return artifacts.read_jsonl(self.folder / "daemon_judgments.jsonl")


def container_name(scenario: Scenario, run_id: str, run: int, attempt: int) -> str:
    """Unique and readable: ``gaia2-<scenario>-<run id>-r<run>a<attempt>``."""
    return f"gaia2-{scenario.scenario_id}-{run_id[:8]}-r{run}a{attempt}"


class ScenarioRun:
    """One attempt at one scenario. ``start`` then ``finish``; the caller removes the container."""

    def __init__(
        self,
        scenario: Scenario,
        engine: Engine,
        launch: Launch,
        limits: Limits,
        folder: Path,
        *,
        run: int = 1,
        attempt: int = 1,
        redact: Callable[[str], str] = lambda text: text,
        log: Callable[[str], None] = lambda message: None,
    ) -> None:
        self.scenario = scenario
        self.engine = engine
        self.launch = launch
        self.limits = limits
        self.folder = folder
        self.run = run
        self.attempt = attempt
        self.redact = redact
        self.log = log
        self.container: Container | None = None
        self.last_result: RunResult | None = None
        self.client: AdapterClient | None = None
        self.started = time.monotonic()
        self.timeout = limits.effective_timeout(scenario.duration)

    # -- phase 1: the container, up and reachable -------------------------------------------

    def start(self) -> Container:
        """Launch and wait for /health from the host; on failure, result.json is already written.

        A judgment already on file when health fails is the verdict (``drive`` returns it), not an error.
        """
        try:
            self.container = self._launch()
            self.client = AdapterClient(self.container.adapter_url)
            self._wait_healthy()
        except Gaia2InfraError as exc:
            result = self.finish_with(Fault(exc.category, str(exc).split("] ", 1)[-1]))
            if result.errored:  # raised with the message result.json holds, folder included
                raise Gaia2InfraError(exc.category, result.verdict.message) from None
        except BaseException as exc:
            self._stopped(exc)
            raise
        return self.container

    def _stopped(self, exc: BaseException) -> None:
        """Ctrl-C, SIGTERM, pytest-timeout or a bug ended the attempt early: result.json and files anyway."""
        if self.last_result is None:
            category = "harness_error" if isinstance(exc, Exception) else "interrupted"
            text = str(exc).rstrip(".")
            cause = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            self.finish_with(Fault(category, f"stopped before a verdict by {cause}; see container.log and eventd.log"))

    def _launch(self) -> Container:
        scenario_bytes = self.scenario.path.read_bytes()
        spec = LaunchSpec(
            image=self.launch.image,
            name=container_name(self.scenario, self.engine.run_id, self.run, self.attempt),
            env=self.launch.env,
            labels=self.engine.labels(self.scenario.scenario_id),
            adapter_port=self.launch.adapter_port,
            network=self.launch.network,
            files=((CONTAINER_SCENARIO_PATH, scenario_bytes, 0o644), *self.launch.files),
            extra_hosts=self.launch.extra_hosts,
        )
        try:
            return self.engine.launch(spec)
        except EngineError as exc:
            raise Gaia2InfraError("container_start", self.redact(str(exc))) from None

    def _exited_fault(self) -> Gaia2InfraError | None:
        assert self.container is not None
        status, code = self.container.state()
        if status not in {"exited", "dead"}:
            return None
        tail = self.redact(self.container.logs(tail=LOG_TAIL_LINES)).rstrip()
        return Gaia2InfraError(
            "container_exited",
            f"the container's main process exited with code {code} before a verdict; "
            f"last log lines:\n{tail or '(no output)'}\nsee {self.folder / 'container.log'}",
        )

    def _wait_healthy(self) -> None:
        assert self.container is not None and self.client is not None
        deadline = time.monotonic() + self.limits.health_timeout
        last = "no answer yet"
        while True:
            try:
                if self.client.connected():
                    return
                last = "answered but not connected"
            except AdapterUnavailable as exc:
                last = str(exc)
            exited = self._exited_fault()
            if exited is not None:
                raise exited
            if time.monotonic() >= deadline:
                break
            time.sleep(0.25)
        if self._answers_inside():
            raise Gaia2InfraError(
                "port_unreachable",
                f"the adapter answers /health inside the container (curl 127.0.0.1:{self.launch.adapter_port}) "
                f"but not from the host through the published port 127.0.0.1:{self.container.host_port} -> "
                f"{self.launch.adapter_port}/tcp (network {self.launch.network}, engine {engine_address()}); "
                "the container's port is not reachable from this host (Docker Desktop with host networking, "
                "a firewall, a remote engine, or an adapter bound to 127.0.0.1 only); see container.log",
            )
        raise Gaia2InfraError(
            "health_timeout",
            f"the adapter at {self.container.adapter_url} did not report connected within "
            f"{self.limits.health_timeout:g} s (last: {last}); see {self.folder / 'container.log'} "
            "and entrypoint.log",
        )

    def _answers_inside(self) -> bool:
        """One in-container check, as upstream's runner does it, to tell a port problem from a dead adapter."""
        assert self.container is not None
        code, output = self.container.exec([
            "curl", "-sf", "-m", "2", "--noproxy", "127.0.0.1",
            f"http://127.0.0.1:{self.launch.adapter_port}/health",
        ])
        if code != 0:
            return False
        try:
            return bool(json.loads(output).get("connected"))
        except (ValueError, AttributeError):
            return False

    # -- phase 2: drive to a verdict ----------------------------------------------------------

    def drive(self) -> RunResult:
        """Send the task if needed, poll to a terminal status, collect, decide, write result.json."""
        if self.last_result is not None:  # the verdict was already on file at start
            return self.last_result
        try:
            return self._drive()
        except BaseException as exc:
            self._stopped(exc)
            raise

    def _drive(self) -> RunResult:
        assert self.container is not None and self.client is not None
        if not self.scenario.has_events and self.scenario.task:
            try:
                self.client.notify(self.scenario.task)
            except AdapterUnavailable as exc:
                return self.finish_with(Fault("status_unreachable", f"could not send the task: {exc}"))
        status, timed_out, fault = self._poll()
        return self.finish_with(fault, status=status, timed_out=timed_out)

    def _status_from_file(self) -> dict[str, Any] | None:
        assert self.container is not None
        raw = self.container.read_file(STATUS_FILE)
        if raw is None:
            return None
        try:
            value = json.loads(raw.decode("utf-8", errors="replace"))
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def _poll(self) -> tuple[dict[str, Any] | None, bool, Fault | None]:
        """Poll /status (the state file when the endpoint is gone) until a verdict or the deadline."""
        assert self.client is not None
        deadline = self.started + self.timeout
        status: dict[str, Any] | None = None
        failures = 0
        grace_until: float | None = None
        while True:
            current: dict[str, Any] | None = None
            try:
                current = self.client.status()
                failures = 0
            except AdapterUnavailable:
                failures += 1
                if failures >= STATUS_FAILURES_BEFORE_FILE:
                    current = self._status_from_file()
            if current is not None:
                status = current
            if judgment_of(status) is not None:
                return status, False, None
            if is_terminal(status):
                if status.get("status") == "error":
                    return status, False, None  # the daemon gave up: no judgment will follow
                # Complete or stopped without a judgment yet: the judge may still be writing it.
                grace_until = grace_until or time.monotonic() + self.limits.judge_grace
                if time.monotonic() >= grace_until:
                    return status, False, None
            if failures >= STATUS_FAILURES_BEFORE_FILE:
                exited = self._exited_fault()
                if exited is not None:
                    status = self._status_from_file() or status
                    return status, False, Fault(exited.category, str(exited).split("] ", 1)[-1])
            if time.monotonic() >= deadline:
                if failures >= STATUS_FAILURES_BEFORE_FILE and status is None:
                    return None, False, Fault(
                        "status_unreachable",
                        "/status stopped answering and no daemon_status.json was found in the "
                        "container; see container.log and entrypoint.log",
                    )
                return status, True, None
            time.sleep(self.limits.poll_interval)

    # -- phase 3: collect, decide, record -------------------------------------------------------

    def _collect(self) -> dict[str, Any] | None:
        """Copy the state folder and logs out; the daemon status on file, if any."""
        if self.container is None:
            return None
        state_tree = self.container.read_tree(artifacts.STATE_DIR)
        logs: dict[str, bytes] = {}
        for path, name in artifacts.LOG_FILES.items():
            content = self.container.read_file(path)
            if content is not None:
                logs[name] = content
        for path, content in self.container.read_tree(artifacts.OPENCLAW_LOG_DIR).items():
            if path.endswith(".log"):
                logs.setdefault("openclaw.log", content)
        logs["container.log"] = self.container.logs().encode("utf-8")
        artifacts.save_collected(self.folder, state_tree, logs, self.redact)
        raw = artifacts.read_json(self.folder / "daemon_status.json")
        return raw if isinstance(raw, dict) else None

    def finish_with(
        self, fault: Fault | None, *, status: dict[str, Any] | None = None, timed_out: bool = False
    ) -> RunResult:
        """Collect whatever exists, take a last look at the verdict, and write result.json."""
        self.folder.mkdir(parents=True, exist_ok=True)
        on_file = self._collect()
        # The file is the daemon's own record: prefer it when it knows more than the endpoint did.
        if judgment_of(on_file) is not None or (status is None and on_file is not None):
            status = on_file
        if status is not None:  # the endpoint's copy was never written to disk, so never redacted
            status = json.loads(self.redact(json.dumps(status, ensure_ascii=False)))
        verdict = decide(
            status, timed_out=timed_out, timeout_seconds=self.timeout,
            duration=self.scenario.duration, fault=fault,
        )
        message = self.redact(verdict.message)
        if verdict.outcome == "error" and verdict.category != "container_start":
            message = f"{message} (files: {self.folder})"
        verdict = replace(verdict, message=message,
                          failure_reason=self.redact(verdict.failure_reason) if verdict.failure_reason else None)
        record = self._record(verdict, status, timed_out)
        artifacts.write_json(self.folder / artifacts.RESULT_FILE, record)
        if record["agent_response"]:
            artifacts.write_text(self.folder / "agent_response.txt", record["agent_response"])
        if self.client is not None:
            self.client.close()
        self.last_result = RunResult(self.scenario, verdict, record, self.folder)
        return self.last_result

    def _record(self, verdict: Verdict, status: dict[str, Any] | None, timed_out: bool) -> dict[str, Any]:
        events = artifacts.events_of(self.folder)
        response = str((status or {}).get("last_response") or artifacts.last_agent_response(events))
        agent_events = [
            e for e in events if not str(e.get("event_id", "")).startswith(("Event-ENV-", "Event-USER-"))
        ]
        return {
            "scenario_id": self.scenario.scenario_id,
            "split": self.scenario.split,
            "universe": self.scenario.universe,
            "run": self.run,
            "attempt": self.attempt,
            "success": verdict.success,
            "outcome": verdict.outcome,
            "reused": False,
            "error": verdict.message if verdict.outcome == "error" else None,
            "error_category": verdict.category,
            "failure_reasons": [verdict.failure_reason] if verdict.failure_reason else [],
            "reward": {True: 1.0, False: 0.0, None: None}[verdict.success],
            "num_agent_events": len(agent_events),
            "judged_in_container": judgment_of(status) is not None,
            "timed_out": timed_out,
            "timeout_seconds": self.timeout,
            "daemon_status": status,
            "agent_response": self.redact(response),
            "scenario_file": str(self.scenario.path),
            "wall_time_s": round(time.monotonic() - self.started, 3),
            "image": self.launch.image,
            "image_id": self.launch.image_id,
            "container": self.container.name if self.container else None,
            "worker": self.engine.worker,
            "adapter_port": self.launch.adapter_port,
            "host_port": self.container.host_port if self.container else None,
        }

    def remove(self) -> None:
        """Remove the container (bounded by the stop timeout); safe to call twice."""
        if self.container is not None:
            self.engine.remove(self.container, self.limits.stop_timeout)
            self.container = None
