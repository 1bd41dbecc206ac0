"""The reference image's stand-in agent: oracle replay, or a scripted replay.

A process of its own, run by the init as user ``agent``: it can neither read
``/var/gaia2`` nor write the judge's state nor signal the judge, so it logs its
actions and reads the state only through the adapter's tool socket
(gaia2_ref_tools.py), as Gaia2's agents go through their setuid tool wrapper.
The init hands it the scenario on its standard input (it is an oracle by
design; the file itself stays the judge's). Like Gaia2's oracle replay it
starts once the daemon reports ``running``. By default it replays the scenario's oracle (so the run passes);
with ``GAIA2_AGENT_SCRIPT`` it replays a JSONL script instead (so a test can
make the run fail, or misbehave, on purpose).

Script lines (JSONL):
  {"app": A, "fn": F, "args": {...}, "w": bool, "ret": value}   an action
  {"app": "AgentUserInterface", "fn": "send_message_to_user",
   "args": {"content": "..."}, "w": true}                        a turn boundary
  {"wait_for_user_message": true}      wait for the next turn's user message
  {"sleep": seconds}                   pause (wall-clock seconds)

With ``GAIA2_REF_USAGE`` set, every action written to events.jsonl (oracle
event, script action, synthetic turn boundary) is preceded by one simulated
LLM-call line in ``$GAIA2_TRACE_FILE`` (see gaia2_ref_trace.py); with
``GAIA2_REF_AGENT_LLM=1``, by one real model call (see gaia2_ref_model.py).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gaia2_ref_model import SWITCH, ModelCaller, ProviderRefused
from gaia2_ref_runtime import (
    TERMINAL_STATUSES,
    env_float,
    fake_ret,
    faketime_path,
    read_sim_time,
    setup_logging,
)
from gaia2_ref_scenario import (
    AUI,
    SMU,
    Scenario,
    ScenarioEvent,
    line_time,
    resolve_placeholders,
)
from gaia2_ref_tools import RemoteTail, ToolClient, socket_path
from gaia2_ref_trace import USAGE_VARIABLE, TraceWriter, Usage

SYNTHETIC_BOUNDARY = "[oracle replay complete]"


class Agent:
    """Replays oracle or scripted actions through the tool socket, turn by turn."""

    def __init__(
        self, scenario: dict[str, Any] | None, tools: ToolClient, faketime: Path, log: logging.Logger,
        stop: threading.Event,
    ) -> None:
        self.scenario_data = scenario
        self.tools = tools
        self.faketime = faketime
        self.log = log
        self.stop = stop
        self.events_tail = RemoteTail("events")
        self.notes_tail = RemoteTail("notes")
        self.status: dict[str, Any] = {"status": "waiting"}
        """The daemon's status as the last look around (``_refresh``) found it."""
        self.seen: dict[str, dict[str, Any]] = {}
        self.user_turns: set[int] = set()
        self.answers = 0
        self.trace: TraceWriter | None = None
        try:
            self.trace = TraceWriter.from_env()
        except ValueError as exc:
            self.log.error("%s; no trace is written", exc)
        self.model: ModelCaller | None = None
        try:
            self.model = ModelCaller.from_env()
        except ValueError as exc:
            self.log.error("%s; no model is called", exc)
        if self.model is not None:  # real calls write their own trace lines
            self.trace = None
            self.log.info("%s: one model call per action to %s (model %s)", SWITCH, self.model.url, self.model.model)
        self.home = Path(os.environ.get("GAIA2_AGENT_HOME", "").strip() or "/home/agent")
        self.recalled: str | None = None
        """With the scenario's ``gaia2_reference.recall``: the remembered text every answer carries."""
        self.loop_after = int(env_float("GAIA2_FAULT_TOOL_LOOP", 0.0))
        self.idle_after = int(env_float("GAIA2_FAULT_IDLE_AFTER_TURN", 0.0))
        if self.loop_after > 0 and self.trace is None:  # a loop of model calls shows in the trace
            self.trace = TraceWriter(
                Path(os.environ.get("GAIA2_TRACE_FILE", "").strip() or "/tmp/trace.jsonl"),
                Usage(100, 10),
                os.environ.get("MODEL", "").strip() or "gaia2-reference",
            )
        if self.trace is not None:
            self.log.info(
                "%s: one llm_call line per action in %s (model %s, usage %s)",
                USAGE_VARIABLE,
                self.trace.path,
                self.trace.model,
                self.trace.usage.block(),
            )

    def run(self) -> None:
        try:
            self._run()
        except ProviderRefused as exc:  # like an agent whose LLM client raised: no answer, no judgment
            self.log.error("Model call failed: %s; the agent stops without answering", exc)
            self.tools.stopped(str(exc))
        except Exception:  # a crashed agent must not take the adapter down with it
            self.log.exception("Agent crashed")

    def _run(self) -> None:
        if self.scenario_data is None:
            self.log.info("No scenario; agent idle")
            return
        scenario = Scenario(self.scenario_data)
        if not self._wait(lambda: self.status.get("status") != "waiting", None):
            return
        if not scenario.events:
            self.log.info("Scenario has no events; waiting for a task on /notify")
            if not self._wait(self.tools.notified, None):
                return
        self._memory(self.scenario_data)
        script = os.environ.get("GAIA2_AGENT_SCRIPT", "").strip()
        if self.loop_after > 0:
            self.run_loop()
        elif script:
            self.run_script(Path(script))
        else:
            self.run_oracle(scenario)

    # -- memory in the agent's home (sequential chains) ----------------------------

    def _memory(self, data: dict[str, Any]) -> None:
        """The scenario's ``gaia2_reference`` object: ``remember: {"path", "text"}`` writes a
        file under the agent's home before acting; ``recall: "<path>"`` makes every answer to
        the user the text of that file (an agent whose home was not carried does not remember)."""
        spec = data.get("gaia2_reference") or {}
        if not isinstance(spec, dict):
            return
        remember = spec.get("remember")
        if isinstance(remember, dict) and isinstance(remember.get("path"), str):
            target = self._home_path(remember["path"])
            if target is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(str(remember.get("text") or ""), encoding="utf-8")
                self.log.info("Remembered %s in the agent's home", remember["path"])
        recall = spec.get("recall")
        if isinstance(recall, str):
            target = self._home_path(recall)
            try:
                self.recalled = target.read_text(encoding="utf-8").strip() if target else None
            except OSError:
                self.recalled = None
            if self.recalled is None:
                self.recalled = "I do not remember."
            self.log.info("Recalled %s: %s", recall, "found" if target and target.exists() else "missing")

    def _home_path(self, relative: str) -> Path | None:
        parts = Path(relative).parts
        if not parts or Path(relative).is_absolute() or ".." in parts:
            self.log.error("Memory path %r is not below the agent's home; ignored", relative)
            return None
        return self.home.joinpath(*parts)

    # -- waiting -------------------------------------------------------------

    def _wait(self, predicate: Callable[[], bool], timeout: float | None) -> bool:
        """Poll ``predicate``; False on timeout, shutdown or a terminal daemon."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.stop.is_set():
            self._refresh()
            if predicate():
                return True
            if self.status.get("status") in TERMINAL_STATUSES:
                self.log.info("Daemon reached a terminal status; agent stops")
                return False
            if deadline is not None and time.monotonic() > deadline:
                return False
            self.stop.wait(0.2)
        return False

    def _refresh(self) -> None:
        """New events and notifications, and the status: one request, as the agent polls while it waits."""
        self.status, (events, notes) = self.tools.poll([self.events_tail, self.notes_tail])
        for record in events:
            event_id = record.get("event_id")
            if event_id:
                self.seen.setdefault(str(event_id), record)
        for note in notes:
            if note.get("type") == "user_message":
                self.user_turns.add(int(note.get("turn") or 0))

    def _wait_user_message(self, turn: int) -> bool:
        self.log.info("Waiting for the user message of turn %d", turn)
        return self._wait(lambda: max(self.user_turns, default=-1) >= turn, None)

    def _write(self, app: str, fn: str, args: dict[str, Any], write: bool, ret: Any) -> dict[str, Any]:
        if self.model is not None:  # the model chooses each action first; ProviderRefused ends the work
            self.model.call(app, fn)
        if self.trace is not None:  # the "model call" that chose the action comes before it
            try:
                self.trace.record(app, fn, args)
            except OSError as exc:
                self.log.error("Cannot write the trace line to %s: %s", self.trace.path, exc)
        line = self.tools.act(app, fn, args, write, ret)
        self.log.info("  %s.%s(%s) w=%s", app, fn, ", ".join(args), write)
        if app == AUI and fn == SMU:
            self.answers += 1
            if self.answers == self.idle_after:
                self.log.warning("FAULT GAIA2_FAULT_IDLE_AFTER_TURN: silent after turn %d", self.answers)
                self.stop.wait()  # idle until the container stops; nothing more is written
        return line

    # -- fault: a runaway loop of tool calls ------------------------------------------

    def run_loop(self) -> None:
        """GAIA2_FAULT_TOOL_LOOP: the same read, chosen by one model call each, until the daemon gives up."""
        self.log.warning("FAULT GAIA2_FAULT_TOOL_LOOP: calling a tool again and again, never answering")
        while not self.stop.is_set() and self.tools.status().get("status") not in TERMINAL_STATUSES:
            self._write("SystemApp", "get_current_time", {}, False, None)
            self.stop.wait(0.2)

    # -- scripted agent --------------------------------------------------------

    def run_script(self, path: Path) -> None:
        self.log.info("Scripted agent: replaying %s", path)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            self.log.error("Cannot read GAIA2_AGENT_SCRIPT %s: %s", path, exc)
            return
        turn = 0
        for number, raw in enumerate(lines, 1):
            if self.stop.is_set():
                return
            if not raw.strip():
                continue
            try:
                item = json.loads(raw)
            except ValueError:
                self.log.error("Script line %d is not JSON; skipped", number)
                continue
            if item.get("wait_for_user_message"):
                turn += 1
                if not self._wait_user_message(turn):
                    return
            elif "sleep" in item:
                self.stop.wait(float(item["sleep"]))
            elif item.get("app") and item.get("fn"):
                app, fn = str(item["app"]), str(item["fn"])
                args = item.get("args") if isinstance(item.get("args"), dict) else {}
                self._write(app, fn, args, bool(item.get("w", app == AUI and fn == SMU)), item.get("ret"))
            else:
                self.log.error("Script line %d is not an action, wait or sleep; skipped", number)
        self.log.info("Scripted agent finished")

    # -- oracle replay -----------------------------------------------------------

    def run_oracle(self, scenario: Scenario) -> None:
        self.log.info("Oracle replay: %d turn(s)", scenario.nb_turns)
        origin = scenario.start_time or read_sim_time(self.faketime) or 0.0
        offsets = self._offsets(scenario)
        done: dict[str, float] = {}
        returns: dict[str, Any] = {}
        for turn in range(scenario.nb_turns):
            if turn > 0 and not self._open_turn(scenario, turn):
                return
            events = scenario.oracle_turn(turn)
            actions = sorted((e for e in events if not e.is_oracle_smu), key=lambda e: offsets[e.event_id])
            ends = [e for e in events if e.is_oracle_smu]
            self.log.info("--- Turn %d (%d actions) ---", turn, len(actions))
            for event in actions + ends:
                if not self._perform(scenario, event, origin, done, returns):
                    return
            if not ends and turn == scenario.nb_turns - 1:
                self._write(AUI, SMU, {"content": SYNTHETIC_BOUNDARY}, True, None)
        self.log.info("Oracle replay finished")

    @staticmethod
    def _offsets(scenario: Scenario) -> dict[str, float]:
        """Nominal offset of each event from the start (sum of relative times on its longest chain)."""
        memo: dict[str, float] = {}

        def offset(event_id: str) -> float:
            if event_id not in memo:
                memo[event_id] = 0.0
                event = scenario.by_id[event_id]
                parents = [offset(d) for d in event.dependencies if d in scenario.by_id]
                memo[event_id] = max(parents, default=0.0) + event.relative_time
            return memo[event_id]

        return {e.event_id: offset(e.event_id) for e in scenario.events}

    def _open_turn(self, scenario: Scenario, turn: int) -> bool:
        """Wait until ``turn`` may start: its user message arrived (or a fixed delay)."""
        if any(e.is_user_message for e in scenario.follow_ups(turn)):
            return self._wait_user_message(turn)
        delay = env_float("GAIA2_ORACLE_TURN_DELAY", 2.0)
        self.log.info("Turn %d has no user message; waiting %.1fs", turn, delay)
        return not self.stop.wait(delay)

    def _perform(
        self, scenario: Scenario, event: ScenarioEvent, origin: float, done: dict[str, float], returns: dict[str, Any]
    ) -> bool:
        """Perform one oracle event once its ENV/USER parents fired and its time came."""
        task_id = scenario.task_event.event_id if scenario.task_event else None
        outside = [
            d
            for d in event.dependencies
            if d in scenario.by_id and scenario.by_id[d].event_type != "AGENT" and d != task_id
        ]
        if outside and not self._wait(lambda: all(d in self.seen for d in outside), None):
            return False
        for event_id, record in self.seen.items():
            returns.setdefault(event_id, record.get("ret"))
        args, missing = resolve_placeholders(event.args, returns)
        if missing:
            self.log.warning("  unresolved placeholders %s in %s", missing, event.event_id)
        if event.relative_time > 1.0 and event.dependencies and read_sim_time(self.faketime) is not None:
            parents = [origin]
            for dep in event.dependencies:
                if dep in done:
                    parents.append(done[dep])
                elif dep in self.seen:
                    parents.append(line_time(self.seen[dep]))
            target = max(parents) + event.relative_time
            self.log.info("  %s waits for sim time +%.0fs", event.event_id, target - origin)
            if not self._wait(lambda: (read_sim_time(self.faketime) or 0.0) >= target, None):
                return False
        if event.is_oracle_smu:
            content = self.recalled if self.recalled is not None else str(args.get("content") or "")
            line = self._write(AUI, SMU, {"content": content}, True, None)
        else:
            ret = fake_ret(event.event_id) if event.write else None
            line = self._write(scenario.app_classes.get(event.app, event.app), event.fn, args, event.write, ret)
        done[event.event_id] = line_time(line)
        returns[event.event_id] = line.get("ret")
        return True


def main() -> int:
    """The agent process: the scenario on stdin (empty: none), the tool socket from the environment."""
    log = setup_logging("gaia2-ref-agent", "[%(asctime)s] %(message)s", "%H:%M:%S", [])
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    raw = sys.stdin.read()
    try:
        scenario = json.loads(raw) if raw.strip() else None
    except ValueError:
        log.error("The scenario on stdin is not JSON; agent idle")
        scenario = None
    log.info("=== gaia2 reference agent (pid %d, uid %d) ===", os.getpid(), os.getuid())
    Agent(scenario if isinstance(scenario, dict) else None, ToolClient(socket_path()), faketime_path(), log, stop).run()
    stop.wait()  # stays until the container stops, as an agent runtime does
    return 0


if __name__ == "__main__":
    sys.exit(main())
