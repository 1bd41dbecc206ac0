"""Event daemon of the reference image (the ``gaia2-eventd`` equivalent, file mode).

It owns ``daemon_status.json``: it tails events.jsonl, counts turn boundaries,
fires the scenario's ENV/USER events on the sim clock, judges each turn with
``gaia2_ref_judge`` and finally writes the terminal status the runner reads.

Usage: python3 gaia2_ref_daemon.py --scenario S --state-dir D
       [--poll-interval 0.5] [--faketime-path /tmp/faketime.rc] [--time-speed N]

Environment: GAIA2_JUDGE_FINAL_TURN, GAIA2_IDLE_TIMEOUT, and the fault switches
GAIA2_FAULT_JUDGE_DELAY, GAIA2_FAULT_JUDGMENT_LATE, GAIA2_FAULT_DAEMON_ERROR,
GAIA2_FAULT_HANG, GAIA2_FAULT_TOOL_LOOP (see README.md next to this file).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from types import FrameType
from typing import Any

from gaia2_ref_judge import Judge, Judgment, LoggedEvent, split_turns
from gaia2_ref_runtime import (
    AGENT_STOPPED,
    JsonlTail,
    append_event,
    append_jsonl,
    env_flag,
    env_float,
    fake_ret,
    make_line,
    read_sim_time,
    setup_logging,
    write_atomic,
    write_sim_time,
)
from gaia2_ref_scenario import (
    AUI,
    SMA,
    Scenario,
    ScenarioEvent,
    is_boundary_line,
    line_time,
    resolve_placeholders,
    sim_time_to_str,
)

log = logging.getLogger("gaia2-ref-eventd")


class Daemon:
    """Turn bookkeeping, ENV scheduling and judging for one scenario run."""

    def __init__(self, scenario: Scenario, state: Path, faketime: Path | None, speed: float, poll: float) -> None:
        self.scenario = scenario
        self.state = state
        self.faketime = faketime
        seeded = read_sim_time(faketime) if faketime else None
        self.origin = scenario.start_time or seeded or time.time()
        self.rate = max(scenario.time_increment * speed, 1e-6)
        self.poll = min(max(poll / self.rate, 0.05), poll)
        self.mono0 = time.monotonic()
        self.judge = Judge(scenario, start_time=self.origin)
        self.judge_final = env_flag("GAIA2_JUDGE_FINAL_TURN")
        self.idle_timeout = env_float("GAIA2_IDLE_TIMEOUT", 300.0)
        self.tail = JsonlTail(state / "events.jsonl")
        self.lines: list[LoggedEvent] = []
        self.turn = 0
        self.smu_count = 0
        self.num_events = 0
        self.last_response = ""
        self.judgment: Judgment | None = None
        self.conditions: list[float] = []  # sim time at which condition_turn_{k+1} passed
        self.fired: dict[str, float] = {}
        self.returns: dict[str, Any] = {}
        self.agent_by_tool: dict[str, list[LoggedEvent]] = defaultdict(list)
        self.oracle_slot: dict[str, tuple[str, int]] = {}
        per_tool: dict[str, int] = defaultdict(int)
        for turn in range(scenario.nb_turns):
            for event in scenario.oracle_turn(turn):
                tool = scenario.tool_of(event.app, event.fn)
                self.oracle_slot[event.event_id] = (tool, per_tool[tool])
                per_tool[tool] += 1
        self.last_faketime = ""
        self.last_activity = time.monotonic()

    # -- clock ---------------------------------------------------------------

    def sim_now(self) -> float:
        return self.origin + (time.monotonic() - self.mono0) * self.rate

    def sim_text(self) -> str:
        return sim_time_to_str(self.sim_now()) if self.faketime else ""

    def tick_clock(self) -> None:
        if self.faketime is None:
            return
        text = sim_time_to_str(self.sim_now())
        if text != self.last_faketime:
            write_sim_time(self.faketime, self.sim_now())
            self.last_faketime = text

    # -- status --------------------------------------------------------------

    def write_status(self, status: str, with_judgment: bool = True) -> None:
        data: dict[str, Any] = {
            "status": status,
            "turn": self.turn,
            "nb_turns": self.scenario.nb_turns,
            "num_events": self.num_events,
        }
        if self.last_response:
            data["last_response"] = self.last_response
        if with_judgment and self.judgment is not None:
            data["judgment"] = {"success": self.judgment.success, "failure_reason": self.judgment.failure_reason}
        write_atomic(self.state / "daemon_status.json", json.dumps(data) + "\n")

    def finish(self, status: str, judgment: Judgment | None) -> None:
        """Write the terminal status, honouring the judge-timing fault switches."""
        self.judgment = judgment
        if env_flag("GAIA2_FAULT_HANG"):
            log.warning("FAULT GAIA2_FAULT_HANG: would end %s, staying 'running' forever", status)
            self.write_status("running", with_judgment=False)
            while True:
                time.sleep(3600)
        delay = env_float("GAIA2_FAULT_JUDGE_DELAY", 0.0)
        if delay > 0:
            log.warning("FAULT GAIA2_FAULT_JUDGE_DELAY: holding 'running' for %.1fs before %s", delay, status)
            self.write_status("running", with_judgment=False)
            time.sleep(delay)
        late = env_float("GAIA2_FAULT_JUDGMENT_LATE", 0.0)
        if late > 0 and judgment is not None:
            log.warning("FAULT GAIA2_FAULT_JUDGMENT_LATE: writing %s without judgment, judgment in %.1fs", status, late)
            self.write_status(status, with_judgment=False)
            time.sleep(late)
        self.write_status(status)
        log.info("gaia2-ref-eventd shut down (status=%s)", status)

    # -- events --------------------------------------------------------------

    def ingest(self, records: list[dict[str, Any]]) -> bool:
        """Record new events.jsonl lines; True when the batch holds a turn boundary."""
        boundary = False
        for record in records:
            if "app" not in record or "fn" not in record:
                continue
            event = LoggedEvent.from_line(record, len(self.lines))
            self.lines.append(event)
            if event.kind in ("ENV", "USER"):
                self.fired.setdefault(event.event_id, event.time)
                self.returns.setdefault(event.event_id, event.ret)
                self.judge.observe(event)
            if event.kind == "ENV":
                continue
            self.num_events += 1
            if event.kind == "AGENT":
                self.agent_by_tool[self.scenario.tool_of(event.app, event.fn)].append(event)
            if is_boundary_line(record):
                boundary = True
                self.smu_count += 1
                self.last_response = str((record.get("args") or {}).get("content") or "")
            log.info("  event: %s.%s (w=%s)", event.app, event.fn, event.write)
        return boundary

    def turn_events(self, turn: int) -> list[LoggedEvent]:
        """Lines of one turn: after the turn-th boundary, up to and including the next."""
        turns = split_turns(self.lines)
        return turns[turn] if turn < len(turns) else []

    # -- dependencies and ENV scheduling ---------------------------------------

    def dep_time(self, dep_id: str) -> float | None:
        """When a dependency counts as fired (sim time), or None if it has not."""
        if dep_id in self.fired:
            return self.fired[dep_id]
        parent = self.scenario.by_id.get(dep_id)
        if parent is None:
            return self.origin
        if parent.is_oracle_smu:
            turn = self.scenario.turn_of.get(dep_id, 0)
            return self.conditions[turn] if turn < len(self.conditions) else None
        if parent.event_type == "AGENT":
            tool, index = self.oracle_slot.get(dep_id, ("", 0))
            done = self.agent_by_tool.get(tool, [])
            if index < len(done):
                self.returns.setdefault(dep_id, done[index].ret)
                return done[index].time
        return None

    def due_time(self, event: ScenarioEvent) -> float | None:
        """Sim time an ENV/USER event is due, or None while a parent is outstanding."""
        times = [self.origin]
        for dep in event.dependencies:
            when = self.dep_time(dep)
            if when is None:
                return None
            times.append(when)
        return max(times) + event.relative_time

    def schedulable(self) -> list[ScenarioEvent]:
        return [e for e in self.scenario.events if e.event_type != "AGENT" and e.event_id not in self.fired]

    def fire_due(self) -> tuple[bool, bool]:
        """Fire every due ENV/USER event; returns (fired_any, something_still_scheduled)."""
        fired_any = False
        progress = True
        while progress:
            progress = False
            now = self.sim_now()
            for event in self.schedulable():
                due = self.due_time(event)
                if due is not None and due <= now:
                    self.fire(event)
                    fired_any = progress = True
        waiting = any(self.due_time(e) is not None for e in self.schedulable())
        return fired_any, waiting

    def fire(self, event: ScenarioEvent) -> None:
        """Append the event's line (and, for user messages, a notification)."""
        sim_t = self.sim_text()
        if event.is_user_message:
            content = str(event.args.get("content") or "")
            turn = self.scenario.turn_of.get(event.event_id, 0)
            line = make_line(AUI, SMA, {"content": content}, False, None, sim_t, event.event_id)
            append_event(self.state, line)
            append_jsonl(self.state / "notifications.jsonl", {"type": "user_message", "content": content, "turn": turn})
            log.info("User message for turn %d fired (%s, %d chars)", turn, event.event_id, len(content))
        else:
            args, missing = resolve_placeholders(event.args, self.returns)
            if missing:
                log.warning("ENV %s: unresolved placeholders %s", event.event_id, missing)
            ret = fake_ret(event.event_id) if event.write else None
            app = self.scenario.app_classes.get(event.app, event.app)
            line = make_line(app, event.fn, args, event.write, ret, sim_t, event.event_id)
            append_event(self.state, line)
            self.returns[event.event_id] = ret
            log.info("ENV fired: %s.%s [%s] at +%.0fs sim", app, event.fn, event.event_id, self.sim_now() - self.origin)
        # The time the judge and the agent will read back from the line.
        self.fired[event.event_id] = line_time(line)

    # -- judging -------------------------------------------------------------

    def judge_turn(self, turn: int) -> Judgment:
        result = self.judge.judge_turn(turn, self.turn_events(turn))
        append_jsonl(self.state / "judgments.jsonl", result.record)
        log.info(
            "Turn %d judge: %s%s",
            turn,
            "PASS" if result.success else "FAIL",
            f" — {result.failure_reason}" if result.failure_reason else "",
        )
        return result

    def check_conditions(self) -> Judgment | None:
        """Pass turn conditions whose boundary has arrived; a failing judgment stops the run."""
        while len(self.conditions) < self.scenario.nb_turns - 1 and self.smu_count > len(self.conditions):
            result = self.judge_turn(len(self.conditions))
            if not result.success:
                return result
            self.conditions.append(self.sim_now())
            log.info("Condition condition_turn_%d passed", len(self.conditions))
        return None

    # -- main loop -----------------------------------------------------------

    def run(self) -> None:
        log.info(
            "gaia2-ref-eventd: scenario %s, %d events, %d turns, sim start %s, rate x%.2f",
            self.scenario.scenario_id,
            len(self.scenario.events),
            self.scenario.nb_turns,
            sim_time_to_str(self.origin),
            self.rate,
        )
        task = self.scenario.task_event
        if task is not None:
            self.fired[task.event_id] = self.origin
            append_jsonl(
                self.state / "notifications.jsonl",
                {"type": "user_message", "content": self.scenario.task or "", "turn": 0},
            )
            log.info("Sent initial user message (%d chars)", len(self.scenario.task or ""))
        self.tick_clock()
        self.write_status("running")
        while True:
            self.tick_clock()
            records = self.tail.read_new()
            boundary = self.ingest(records)
            if records:
                self.last_activity = time.monotonic()
                self.write_status("running")
            if boundary:
                self.turn += 1
                log.info(">>> TURN BOUNDARY DETECTED — turn %d <<<", self.turn)
                self.write_status("running")
                if env_flag("GAIA2_FAULT_DAEMON_ERROR"):
                    log.error("FAULT GAIA2_FAULT_DAEMON_ERROR: ending with status error")
                    self.finish("error", None)
                    return
            loop = int(env_float("GAIA2_FAULT_TOOL_LOOP", 0.0))
            if loop and self.num_events - self.smu_count >= loop:
                log.error("Daemon error: no turn boundary detected after %d agent events", loop)
                self.finish("error", None)
                return
            rejected = self.check_conditions()
            if rejected is not None:
                log.info("Judge rejected — fail fast")
                self.finish("stopped", rejected)
                return
            if (self.state / AGENT_STOPPED).exists():  # after the judge: an answer that arrived is judged
                if self.turn >= self.scenario.nb_turns and len(self.conditions) >= self.scenario.nb_turns - 1:
                    log.error("The agent stopped after its last answer; judging that answer")
                    self.complete()
                    return
                log.error("The agent stopped before its task was done (its model call failed); ending unjudged")
                self.finish("error", None)
                return
            fired_any, waiting = self.fire_due()
            if fired_any:
                self.last_activity = time.monotonic()
            if boundary and self.turn > 3 * self.scenario.nb_turns:
                log.error(
                    "Agent exceeded %d turns (expected %d) — aborting",
                    3 * self.scenario.nb_turns,
                    self.scenario.nb_turns,
                )
                self.finish("error", None)
                return
            if (
                self.turn >= self.scenario.nb_turns
                and len(self.conditions) >= self.scenario.nb_turns - 1
                and not waiting
            ):
                self.complete()
                return
            if not waiting and time.monotonic() - self.last_activity > self.idle_timeout:
                log.error("No activity for %.0fs — shutting down", self.idle_timeout)
                self.finish("error", None)
                return
            time.sleep(self.poll)

    def complete(self) -> None:
        final = self.scenario.nb_turns - 1
        if self.judge_final and self.judge.enabled:
            result = self.judge_turn(final)
            log.info(
                "Final turn judge: %s%s",
                "PASS" if result.success else "FAIL",
                f" — {result.failure_reason}" if result.failure_reason else "",
            )
            self.finish("complete" if result.success else "stopped", result)
            return
        log.info(
            "All turns done (%d/%d) — scenario complete, no final-turn judgment", self.turn, self.scenario.nb_turns
        )
        self.finish("complete", None)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--poll-interval", type=float, default=0.5)
    parser.add_argument("--faketime-path")
    parser.add_argument("--time-speed", type=float, default=1.0)
    args = parser.parse_args(argv)
    state = Path(args.state_dir)
    setup_logging(
        log.name, "%(asctime)s %(name)s %(levelname)s %(message)s", None, [state / "eventd.log"], file_mode="w"
    )
    signal.signal(signal.SIGTERM, _terminate)
    daemon: Daemon | None = None
    try:
        scenario = Scenario.load(args.scenario)
        faketime = Path(args.faketime_path) if args.faketime_path else None
        daemon = Daemon(scenario, state, faketime, args.time_speed if args.time_speed > 0 else 1.0, args.poll_interval)
        daemon.run()
    except Exception as exc:  # the runner must see a terminal status whatever went wrong
        log.exception("Daemon crashed: %s", exc)
        if daemon is not None:
            daemon.judgment = None
            daemon.write_status("error")
        else:
            write_atomic(
                state / "daemon_status.json",
                json.dumps({"status": "error", "turn": 0, "nb_turns": 1, "num_events": 0}) + "\n",
            )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
