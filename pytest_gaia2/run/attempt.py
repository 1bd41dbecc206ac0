"""The life of one attempt at one scenario: launch, health, [notify], poll, collect, decide.

Plain calls with plain data; pytest only sees the :class:`~pytest_gaia2.run.evidence.ScenarioResult`
at the end. Every path, however it ends, copies out what the container holds and writes
``result.json`` into a folder no earlier attempt used, before the container is removed. The
verdict such facts make is :func:`~pytest_gaia2.run.attempt_record.build_record`'s to decide.
"""

from __future__ import annotations

import datetime as _dt
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.config import container_env
from pytest_gaia2.config.settings import container_env as build_container_env
from pytest_gaia2.cost.budget import entry_of, record_spend
from pytest_gaia2.cost.spend import attempt_cost, attempt_tokens, is_refused, wire_cost
from pytest_gaia2.cost.usage import TraceUsage
from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.run import ahead, interrupts
from pytest_gaia2.run.attempt_record import AttemptFacts, build_record
from pytest_gaia2.run.copy_out import collect
from pytest_gaia2.run.evidence import Evidence, ScenarioResult, status_in_container
from pytest_gaia2.run.gateway import STATUS_EVERY_S, GatewayClient, GatewayError
from pytest_gaia2.run.verdict import Fault, Gaia2InfraError, is_terminal, judgment_of, state_of
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.limits import STATUS_MAX_BYTES, Limits
from pytest_gaia2.store.phases import PhaseBoard, phase_of
from pytest_gaia2.store.redact import Redactor
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded

if TYPE_CHECKING:
    from pytest_gaia2.config.settings import RunSettings
    from pytest_gaia2.cost.prices import PriceBook
    from pytest_gaia2.engine.adapter import AdapterClient, ExecAdapterClient
    from pytest_gaia2.engine.archive import FileContent
    from pytest_gaia2.engine.client import Engine
    from pytest_gaia2.engine.container import Container
    from pytest_gaia2.engine.ports import PortLeases

log = logging.getLogger("pytest_gaia2")

CONTAINER_SCENARIO_PATH = "/var/gaia2/custom_scenario.json"
ADAPTER_PORT = 8090
STATUS_FAILURES_BEFORE_FILE = 3
"""Consecutive /status failures before the state file is read instead."""
LOG_TAIL_LINES = 20
HOST_PORT_TRIES = 3
"""Host-network mode: a leased port another program grabbed first is replaced."""
PORT_TAKEN_SIGNS = ("address already in use", "eaddrinuse")
FIRST_POLL = 0.05
"""Polling is fast for FAST_WINDOW seconds after the start and after each change of status
(a new turn: the end may be near), then backs off to ``LAST_POLL``. A local /status answer
costs well under a millisecond: a short scenario's verdict is seen within 50 ms, and no
verdict waits more than a quarter of a second."""
FAST_WINDOW = 2.0
LAST_POLL = 0.25
EXIT_CHECK_EVERY = 0.5
"""While the adapter boots, /health is asked every FIRST_POLL seconds but the engine (an inspect
call: host CPU in the harness and in the engine) only this often whether the container exited."""


def progress_of(status: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a new daemon event changes in /status (the idle timeout's clock): the status, the
    turn and the count of events the daemon has read; the rest may change without progress."""
    return tuple(str(status.get(key))[:64] for key in ("status", "turn", "num_events"))


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class AttemptSetup:
    """What every attempt of one session shares: the engine, settings, limits and provenance."""

    engine: Engine
    settings: RunSettings
    limits: Limits
    redactor: Redactor
    provenance: Mapping[str, Any]
    run_root: Path
    host_ports: PortLeases | None = None
    files: tuple[tuple[str, FileContent, int], ...] = field(default=())
    """``--gaia2-copy-in`` files and the CA bundle, read once per session."""
    prices: PriceBook | None = None
    stop_reason: Callable[[], str | None] = field(default=lambda: None)
    """Why a running attempt must stop now (the run's spend passed its cap), or None."""
    board: PhaseBoard | None = None
    """Where this process tells the live status each attempt's phase."""
    container_env: Callable[[Scenario, dict[str, str]], None] = field(default=lambda scenario, env: None)
    """Adjusts a scenario's container environment in place before launch (the run's
    ``pytest_gaia2_container_env`` hook, :func:`~pytest_gaia2.run.hooked_env.adjust`)."""
    gateway: GatewayClient | None = None
    """The run's model gateway (:mod:`~pytest_gaia2.run.gateway`), None when it is off."""
    scenario_cap: float | None = None
    """--gaia2-scenario-cap: USD one attempt's model calls may spend through the gateway."""
    token_cap: int | None = None
    """--gaia2-scenario-token-cap: tokens one attempt's model calls may use through the gateway."""


def container_name(scenario: Scenario, session_id: str, repeat: int, attempt: int) -> str:
    """Unique and readable: ``gaia2-<scenario>-<session>-r<repeat>a<attempt>``."""
    return f"gaia2-{scenario.scenario_id}-{session_id[:8]}-r{repeat}a{attempt}"


class ScenarioAttempt:
    """One attempt at one scenario. ``start`` then ``drive``; ``remove`` always, at the end."""

    def __init__(
        self,
        setup: AttemptSetup,
        scenario: Scenario,
        folder: Path,
        *,
        key: str,
        repeat: int,
        repeats: int,
        attempt: int,
        universe_position: int | None = None,
        carried: tuple[tuple[str, FileContent, int], ...] = (),
    ) -> None:
        self.setup = setup
        self.universe_position = universe_position
        """With --gaia2-sequence: the scenario's place in its chain, kept in the record."""
        self.carried = carried
        """The chain's home and app state, put into the container before it starts."""
        self.scenario = scenario
        self.folder = folder
        self.repeat = repeat
        self.repeats = repeats
        self.attempt = attempt
        self.container: Container | None = None
        self.client: AdapterClient | ExecAdapterClient | None = None
        self.result: ScenarioResult | None = None
        self.endpoint_status: dict[str, Any] | None = None
        self.observed_status: dict[str, Any] | None = None
        """The first terminal status with a judgment read while polling (a rejection there is final)."""
        """The last answer of /status (kept for the record's reconciliation, never the verdict)."""
        self.ports: list[int] = []
        self.started = time.monotonic()
        self.started_at = now_iso()
        self.timeout = setup.limits.effective_timeout(scenario.duration)
        self.adapter_port = ADAPTER_PORT
        self.key = key
        """The planned item's key (``<split>/<id>[/run_<k>]``), spelled once by the plan."""
        self.token: str | None = None
        """The attempt's gateway token: granted at launch, revoked when the attempt is written."""
        self.next_gateway_check = 0.0
        self.phase("starting")

    def phase(self, name: str) -> None:
        if self.setup.board is not None:
            self.setup.board.set(self.key, name, attempt=self.attempt)

    # -- phase 1: the container, up and reachable ------------------------------------------

    def start(self) -> Container:
        """Launch and wait for /health from the host; on failure, result.json is already written.

        A judgment already on file when health fails is the verdict (``drive`` returns it).
        """
        try:
            self._start_on_free_ports()
        except Gaia2InfraError as exc:
            result = self.finish_with(Fault(exc.category, exc.detail))
            if result.errored:
                raise Gaia2InfraError(exc.category, result.record.error or exc.detail) from None
        except BaseException as exc:
            self.stopped(exc)
            raise
        assert self.container is not None
        return self.container

    def _start_on_free_ports(self) -> None:
        """Host-network mode: again on new ports if a leased one was taken between the
        lease's check and the container binding it."""
        for tries_left in reversed(range(HOST_PORT_TRIES)):
            try:
                self.container = self._launch()
                self._wait_healthy()
                self.phase("healthy")
                return
            except Gaia2InfraError as exc:
                if not (tries_left and self.ports and self._port_taken(exc)):
                    raise
            log.warning(
                "gaia2: host port %s was taken; starting %s again on new ports", self.ports, self.scenario.test_id
            )
            self.remove()

    def _port_taken(self, exc: Gaia2InfraError) -> bool:
        text = str(exc) + (self.container.logs(tail=LOG_TAIL_LINES) if self.container else "")
        return any(sign in text.lower() for sign in PORT_TAKEN_SIGNS)

    def _launch(self) -> Container:
        from pytest_gaia2.engine.adapter import client_for
        from pytest_gaia2.engine.container import LaunchSpec
        from pytest_gaia2.engine.errors import ContainerExited, EngineError

        setup, settings = self.setup, self.setup.settings
        gateway_port = None
        if settings.network == "host" and setup.host_ports is not None:
            self.ports = setup.host_ports.acquire(2)
            self.adapter_port, gateway_port = self.ports
        env = build_container_env(
            settings,
            adapter_port=self.adapter_port,
            gateway_port=gateway_port,
            start_time=self.scenario.start_time,
            gateway=self._gateway_env(),
        )
        setup.container_env(self.scenario, env)
        try:
            scenario_bytes = self.scenario.path.read_bytes()
        except OSError as exc:
            raise Gaia2InfraError("invalid_scenario", f"{self.scenario.path}: cannot read ({exc.strerror})") from None
        spec = LaunchSpec(
            image=settings.image,
            name=container_name(self.scenario, str(setup.provenance["session_id"]), self.repeat, self.attempt),
            env=env,
            labels=setup.engine.labels(self.scenario.scenario_id),
            adapter_port=self.adapter_port,
            network=settings.network,
            files=((CONTAINER_SCENARIO_PATH, scenario_bytes, 0o644), *setup.files, *self.carried),
            extra_hosts=container_env.extra_hosts(),  # host network too: same base URL everywhere
            memory_bytes=setup.limits.memory or None,
            pids_limit=setup.limits.pids_limit or None,
            log_max_bytes=setup.limits.max_file_size,  # the engine keeps no more than container.log may hold
            # Meta's agent images give tools to the agent through a setuid wrapper, which
            # no-new-privileges would defeat; the oracle images (the reference image too, whatever its
            # agent does) have no such wrapper.
            no_new_privileges=settings.profile is container_env.ORACLE or settings.is_reference,
        )
        try:
            container = setup.engine.launch(spec)
        except ContainerExited as exc:
            self._save_text("container.log", exc.logs)
            raise Gaia2InfraError("container_exited", self._exited_message(exc.exit_code, exc.logs)) from None
        except EngineError as exc:
            raise Gaia2InfraError("container_start", self.setup.redactor.redact(str(exc))) from None
        self.client = client_for(container, setup.engine.reach, self.adapter_port)
        return container

    def _gateway_env(self) -> container_env.GatewayEnv | None:
        """The attempt's token and the gateway's URLs (granted once, whatever relaunches follow)."""
        gateway = self.setup.gateway
        if gateway is None:
            return None
        if self.token is None:
            try:
                self.token = gateway.grant(
                    entry_of(self.key, self.attempt), self.folder, self.setup.scenario_cap, self.setup.token_cap
                )
            except GatewayError as exc:
                raise Gaia2InfraError("gateway_error", str(exc)) from None
        return container_env.GatewayEnv(self.token, gateway.urls.get("agent"), gateway.urls.get("judge"))

    def _gateway_stop(self) -> Fault | None:
        """A cap the gateway enforced on this attempt's calls: the attempt ends on it at once."""
        if self.setup.gateway is None or self.token is None or time.monotonic() < self.next_gateway_check:
            return None
        self.next_gateway_check = time.monotonic() + STATUS_EVERY_S
        try:
            stopped = self.setup.gateway.stopped(self.token)
        except GatewayError:
            return None  # asked again next time; the revocation at the end tells it too
        return Fault(*stopped) if stopped else None

    def _revoke(self) -> dict[str, Any] | None:
        """The attempt's token revoked, and what the gateway measured of its calls (None: no token,
        or the gateway did not answer: then the trace's figures stand, said in a warning)."""
        if self.setup.gateway is None or self.token is None:
            return None
        token, self.token = self.token, None
        try:
            return self.setup.gateway.revoke(token)
        except GatewayError as exc:
            log.warning("gaia2: %s: %s; its cost is read from its trace", self.key, exc)
            return None

    def _exited_message(self, code: int | None, logs: str) -> str:
        tail = "\n".join(self.setup.redactor.redact(logs).rstrip().splitlines()[-LOG_TAIL_LINES:])
        return (
            f"the container's main process exited with code {code} before a verdict; "
            f"last log lines:\n{tail or '(no output)'}\nsee {self.folder / 'container.log'}"
        )

    def _exited_fault(self) -> Gaia2InfraError | None:
        assert self.container is not None
        exited = self.container.exited()
        if exited is None:
            return None
        self._save_text("container.log", exited.logs)
        return Gaia2InfraError("container_exited", self._exited_message(exited.exit_code, exited.logs))

    def _wait_healthy(self) -> None:
        from pytest_gaia2.engine.adapter import AdapterUnavailable

        assert self.container is not None and self.client is not None
        deadline = time.monotonic() + self.setup.limits.health_timeout
        last = "no answer yet"
        next_exit_check = 0.0
        while True:
            try:
                if self.client.connected():
                    return
                last = "answered but not connected"
            except AdapterUnavailable as exc:
                last = str(exc)
            now = time.monotonic()
            if now >= next_exit_check or now >= deadline:
                exited = self._exited_fault()
                if exited is not None:
                    raise exited
                next_exit_check = now + EXIT_CHECK_EVERY
            if now >= deadline:
                break
            ahead.pause(FIRST_POLL)
        if self._answers_inside():
            raise Gaia2InfraError(
                "port_unreachable",
                f"the adapter answers /health inside the container (curl 127.0.0.1:{self.adapter_port}) "
                f"but not from the host through the published port 127.0.0.1:{self.container.host_port} -> "
                f"{self.adapter_port}/tcp (network {self.setup.settings.network}, engine {self.setup.engine.address}); "
                "the container's port is not reachable from this host (Docker Desktop with host networking, "
                "a firewall, a remote engine, or an adapter bound to 127.0.0.1 only); see container.log",
            )
        raise Gaia2InfraError(
            "health_timeout",
            f"the adapter at {self.container.adapter_url} did not report connected within "
            f"{self.setup.limits.health_timeout:g} s (last: {last}); see {self.folder / 'container.log'} "
            "and entrypoint.log",
        )

    def _answers_inside(self) -> bool:
        """One in-container check, as upstream's runner does it, to tell a port problem from a dead adapter."""
        assert self.container is not None
        code, output = self.container.answer(
            [
                "curl",
                "-sf",
                "-m",
                "2",
                "--noproxy",
                "127.0.0.1",
                f"http://127.0.0.1:{self.adapter_port}/health",
            ]
        )
        try:
            return code == 0 and bool(loads_bounded(output.encode(), max_bytes=STATUS_MAX_BYTES).get("connected"))
        except (JsonReadError, AttributeError):
            return False

    # -- phase 2: drive to a verdict ----------------------------------------------------------

    def drive(self) -> ScenarioResult:
        """Send the task if needed, poll to a terminal status, collect, decide, write result.json."""
        if self.result is not None:  # the verdict was already on file at start
            return self.result
        try:
            return self._drive()
        except BaseException as exc:
            self.stopped(exc)
            raise

    def _drive(self) -> ScenarioResult:
        from pytest_gaia2.engine.adapter import AdapterUnavailable

        assert self.container is not None and self.client is not None
        if not self.scenario.has_events and self.scenario.task:
            try:
                self.client.notify(self.scenario.task)
            except AdapterUnavailable as exc:
                return self.finish_with(Fault("status_unreachable", f"could not send the task: {exc}"))
        timed_out, fault = self._poll()
        return self.finish_with(fault, timed_out=timed_out)

    def _poll(self) -> tuple[bool, Fault | None]:
        """Poll /status (the state file when the endpoint is gone) until it is time to collect:
        a judgment or a terminal status seen, or the deadline. What was seen only says when;
        the verdict is decided from the collected files. Each /status call is bounded in
        time and size (:mod:`~pytest_gaia2.engine.adapter`), so the deadline holds."""
        from pytest_gaia2.engine.adapter import AdapterUnavailable

        assert self.container is not None and self.client is not None
        deadline = self.started + self.timeout
        status: dict[str, Any] | None = None
        failures = 0
        grace_until: float | None = None
        interval = FIRST_POLL
        changed = active = time.monotonic()
        progress: tuple[Any, ...] | None = None
        idle_limit = self.setup.limits.idle_timeout
        while True:
            current: dict[str, Any] | None = None
            try:
                current = self.client.status()
                self.endpoint_status = current
                if state_of(current) == "unknown":  # malformed: no hint at all, as if it did not answer
                    raise AdapterUnavailable("GET /status: no status the host reads")
                failures = 0
            except AdapterUnavailable:
                failures += 1
                if failures >= STATUS_FAILURES_BEFORE_FILE:
                    current = status_in_container(self.container)
            if current is not None:
                if current != status:
                    changed = time.monotonic()
                interval = FIRST_POLL if time.monotonic() - changed < FAST_WINDOW else min(LAST_POLL, interval * 1.5)
                status = current
                if self.observed_status is None and is_terminal(status) and judgment_of(status) is not None:
                    self.observed_status = status
                self.phase(phase_of(status))
                if progress_of(status) != progress:
                    progress, active = progress_of(status), time.monotonic()
            if judgment_of(status) is not None:
                return False, None
            if is_terminal(status):
                if state_of(status) == "error":
                    return False, None  # the daemon gave up: no judgment will follow
                # Complete or stopped without a judgment yet: the judge may still be writing it.
                self.phase("judging")
                grace_until = grace_until or time.monotonic() + self.setup.limits.judge_grace
                if time.monotonic() >= grace_until:
                    return False, None
            if failures >= STATUS_FAILURES_BEFORE_FILE:
                exited = self._exited_fault()
                if exited is not None:
                    return False, Fault(exited.category, exited.detail)
            if idle_limit and grace_until is None and time.monotonic() - active >= idle_limit:
                return False, Fault(
                    "idle_timeout",
                    f"no new daemon event for {idle_limit:g} s (last status: {state_of(status)}, turn "
                    f"{(status or {}).get('turn')}, {(status or {}).get('num_events')} events; --gaia2-idle-timeout); "
                    "see eventd.log and events.jsonl",
                )
            stop = self.setup.stop_reason()
            if stop:
                return False, Fault("budget_cap", stop)
            capped = self._gateway_stop()
            if capped is not None:
                return False, capped
            if time.monotonic() >= deadline:
                if failures >= STATUS_FAILURES_BEFORE_FILE and status is None:
                    return False, Fault(
                        "status_unreachable",
                        "/status stopped answering and no daemon_status.json was found in the "
                        "container; see container.log and entrypoint.log",
                    )
                return True, None
            ahead.pause(interval)

    # -- phase 3: collect, decide, record -------------------------------------------------------

    def stopped(self, exc: BaseException) -> None:
        """Ctrl-C, SIGTERM, pytest-timeout or a bug ended the attempt early: result.json and files anyway."""
        if self.result is None:
            category = "harness_error" if isinstance(exc, Exception) else "interrupted"
            text = self.setup.redactor.redact(str(exc)).rstrip(".")
            cause = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
            self.finish_with(
                None, stop=Fault(category, f"stopped before a verdict by {cause}; see container.log and eventd.log")
            )

    def _save_text(self, name: str, text: str) -> None:
        store.write_text(self.folder / name, self.setup.redactor.redact(text))

    def finish_with(self, fault: Fault | None, *, timed_out: bool = False, stop: Fault | None = None) -> ScenarioResult:
        """Collect whatever exists, take a last look at the verdict, and write result.json.

        A second Ctrl-C is held until result.json is on disk.
        """
        with interrupts.held():
            self.phase("collecting")
            self.folder.mkdir(parents=True, exist_ok=True)
            try:
                skipped = collect(self.container, self.folder, self.setup.limits, self.setup.redactor)
            except Exception as exc:  # noqa: BLE001 - the record is written whatever the copy did
                skipped = [{"path": store.STATE_DIR, "reason": f"copy-out failed: {type(exc).__name__}"}]
            wire = self._revoke()
            if wire is not None and isinstance(wire.get("stopped"), list) and stop is None:
                stop = Fault(*map(str, wire["stopped"][:2]))  # a cap outranks what the refused agent did next
            usage = TraceUsage()
            evidence = Evidence.read(self.folder, usage)
            record = build_record(self._facts(fault, stop, timed_out, skipped), evidence, self.setup.redactor)
            if self.universe_position is not None:
                record = replace(record, universe_position=self.universe_position)
            if self.setup.prices is not None:
                traced = attempt_cost(usage.usage(), self.setup.prices, self.setup.settings.model)
                record = replace(record, **(wire_cost(wire, traced) if wire is not None else traced))
                record_spend(  # before result.json
                    self.setup.run_root,
                    self.key,
                    self.attempt,
                    record.cost_usd,
                    attempt_tokens(record),
                    refused=is_refused(record),
                )
            store.RunFolder.write_record(self.folder, record)
            if record.agent_response:
                store.write_text(self.folder / "agent_response.txt", record.agent_response)
            from pytest_gaia2.report.trace_page import write_trace

            write_trace(self.folder, evidence.files, usage.usage())
            if self.client is not None:
                self.client.close()
            self.result = ScenarioResult(record, self.folder, evidence)
            return self.result

    def _facts(
        self, fault: Fault | None, stop: Fault | None, timed_out: bool, skipped: list[dict[str, Any]]
    ) -> AttemptFacts:
        container = self.container
        return AttemptFacts(
            scenario=self.scenario,
            repeat=self.repeat,
            repeats=self.repeats,
            attempt=self.attempt,
            folder=self.folder,
            run_root=self.setup.run_root,
            timeout=self.timeout,
            started_at=self.started_at,
            ended_at=now_iso(),
            wall_time_s=round(time.monotonic() - self.started, 3),
            container=container.name if container else None,
            host_port=container.host_port if container else None,
            adapter_port=self.adapter_port,
            worker=self.setup.engine.worker,
            engine=self.setup.engine.address,
            provenance=self.setup.provenance,
            skipped_files=skipped,
            endpoint_status=self.endpoint_status,
            timed_out=timed_out,
            fault=fault,
            stop=stop,
            stuck_loop_min_calls=self.setup.limits.stuck_loop_min_calls,
            observed_status=self.observed_status,
        )

    def remove(self) -> None:
        """Remove the container (killed: after collection it is disposable) and free its ports."""
        if self.setup.board is not None:
            self.setup.board.clear(self.key)
        try:
            if self.container is not None:
                # Host-network ports are freed below: their container must be gone first.
                self.setup.engine.remove(
                    self.container,
                    graceful=self.setup.limits.keep,
                    stop_timeout=self.setup.limits.stop_timeout,
                    background=self.setup.settings.network != "host",
                )
                self.container = None
        finally:
            if self.ports and self.setup.host_ports is not None:
                self.setup.host_ports.release(self.ports)
                self.ports = []
