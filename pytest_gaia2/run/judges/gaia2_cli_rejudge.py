"""Offline re-judge for Meta's gaia2-cli images: saved events judged again by the image's own
``gaia2-eventd`` code, with no agent, no adapter and no polling.

Upstream judges only inside the running daemon (``gaia2_cli.daemon.eventd``), so this drives
that daemon's own objects: ``Gaia2EventDaemon.setup()`` loads the scenario, builds the
``EventProcessor`` with its turn triggers and the ``Judge`` (LiteLLM engine from
``create_litellm_engine`` as eventd builds it); each saved events.jsonl line then goes through
the daemon's own line conversion (``_add_events_to_processor``), in file order, with the
processor's clock moved to the line's sim time first. A turn boundary ticks the processor (an
intermediate turn is judged when its condition fires, fail fast) and runs the daemon's own
completion check (the final turn is judged, ``GAIA2_JUDGE_FINAL_TURN`` as the runner always
sets it); ``daemon_status.json`` and ``judgments.jsonl`` are the daemon's own writes. What the
live daemon did besides judging is not done again: ENV actions are not executed (their saved
lines carry their results), nothing is sent to an agent.

Differences from a live run, all in poll timing: each boundary line counts as one turn (the
daemon counts one per poll batch), and the clock moves by the lines' ``sim_t`` (else ``t``),
not by the daemon's polls. A model that cannot be asked (an HTTP error, a rate limit) gives no
verdict and a retryable error here, where the daemon would count its silence as a failed check.

Usage: python3 gaia2_cli_rejudge.py --jobs JOBS.json --out DIR [FOLDER ...]

JOBS.json is ``[{"folder": "search/x", "scenario": PATH, "events": PATH,
"user_details": PATH (optional: the run's user_details.json)}, ...]``; only the FOLDERs named
are judged (all when none). Each writes ``DIR/<folder>/judgments.jsonl`` and
``DIR/<folder>/status.json`` (daemon_status.json; ``error`` and ``retryable`` when no verdict
could be made). Judge settings come from ``GAIA2_JUDGE_MODEL``, ``GAIA2_JUDGE_PROVIDER``,
``GAIA2_JUDGE_BASE_URL`` and ``GAIA2_JUDGE_API_KEY``; a model of ``none`` (or none at all)
means no model: hard checks only, as eventd without ``--judge-model``. Exit status 0 unless
the jobs file itself is unusable.
"""

from __future__ import annotations

import argparse
import inspect
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import gaia2_cli.judge
from gaia2_cli.daemon.eventd import Gaia2EventDaemon
from gaia2_cli.judge import RateLimitError
from gaia2_core.loader import ScenarioLoader

PLACEHOLDER_MODELS = ("", "none")
"""Judge models that mean "no model" (pytest-gaia2's placeholder, as for its reference image)."""
MAX_DRAIN_STEPS = 100_000
"""Queued events fired after the last line at most (a scenario's ENV events, far fewer)."""
SIM_TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


class JudgeUnavailable(Exception):
    """The judge's model could not be asked: no verdict, and worth asking again."""


def answering(create: Callable[..., Any]) -> Callable[..., Any]:
    """``create_litellm_engine`` whose engines raise JudgeUnavailable instead of answering None."""

    def create_engine(*args: Any, **kwargs: Any) -> Any:
        engine = create(*args, **kwargs)

        def ask(messages: list[dict[str, Any]], **options: Any) -> tuple[str, dict[str, Any]]:
            try:
                text, info = engine(messages, **options)
            except RateLimitError as exc:
                raise JudgeUnavailable(f"rate limited: {exc}") from None
            if text is None:
                raise JudgeUnavailable(f"the judge model did not answer: {info.get('error') or info}")
            return text, info

        return ask

    return create_engine


def sim_time(line: dict[str, Any]) -> float:
    """The line's time as eventd reads it: ``sim_t`` (UTC) when it parses, else ``t``."""
    try:
        return datetime.strptime(line["sim_t"], SIM_TIME_FORMAT).replace(tzinfo=timezone.utc).timestamp()
    except (KeyError, TypeError, ValueError):
        return float(line.get("t") or 0.0)


def read_lines(path: Path) -> list[dict[str, Any]]:
    """The action lines of an events.jsonl in file order (what eventd's reads would return)."""
    lines = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if isinstance(line, dict) and "app" in line and "fn" in line:
            lines.append(line)
    return lines


def move_clock(processor: Any, line: dict[str, Any], env_id: str) -> None:
    """Advance the processor to the line's time; an ENV line's own event first fires, as it
    did before its CLI wrote the line (``sim_t`` is whole seconds, the schedule is not)."""
    target = max(processor._current_time, sim_time(line))
    if env_id and env_id not in processor._completed:
        due = [at for at, _, item in processor._queue if item.event_id == env_id]
        if due:
            target = max(target, min(due))
    processor.tick_to(target)


def replay(daemon: Gaia2EventDaemon, lines: list[dict[str, Any]]) -> None:
    """The daemon's poll loop over saved lines: ends with a terminal daemon_status.json, else raises."""
    processor = daemon._processor
    for line in lines:
        env_id = str(line.get("event_id") or "")
        env_id = env_id if env_id.startswith("Event-ENV-") else ""
        move_clock(processor, line, env_id)
        if processor.stopped:
            break
        daemon._add_events_to_processor([line])
        if env_id:
            if processor._judge is not None:  # as eventd does once the ENV CLI returned
                processor._judge.env_return_values[env_id] = line.get("ret")
            continue
        daemon._total_events += 1
        if line["app"] == "AgentUserInterface" and line["fn"] == "send_message_to_user":
            daemon._last_agent_response = (line.get("args") or {}).get("content", "")
            daemon._turn_count += 1
            processor.tick()
            if processor.stopped:
                break
            if daemon._check_scenario_complete():
                return
    if not processor.stopped and daemon._turn_count >= processor.nb_turns:
        for _ in range(MAX_DRAIN_STEPS):  # the idle polls: queued ENV events fire, then completion
            if processor.stopped or processor.next_event_time is None:
                break
            processor.tick_to(max(processor._current_time, processor.next_event_time))
        if not processor.stopped and daemon._check_scenario_complete():
            return
    if processor.stopped:
        daemon._final_judgment = processor._last_judgment
        daemon.shutdown("stopped")
        return
    raise ValueError(
        f"the events end at turn {daemon._turn_count} of {processor.nb_turns} "
        "before the scenario completed (no verdict, as the daemon would time out)"
    )


def user_details(job: dict[str, Any], scenario: str) -> str | None:
    """The user_details.json eventd would read: the run's own, else the scenario's user contact
    (upstream's fallback for post-hoc judging)."""
    if job.get("user_details"):
        return Path(job["user_details"]).read_text(encoding="utf-8")
    found = ScenarioLoader(scenario).extract_oracle_data({}, 1)[3]
    return json.dumps(found.model_dump()) if found else None


NEWER_SETTINGS = (
    ("GAIA2_JUDGE_PROMPT_VERSION", "judge_prompt_version", str.strip),
    ("GAIA2_JUDGE_EXTRA_BODY", "judge_extra_body", json.loads),
)
"""Judge settings of newer gaia2-cli releases: the variable, the daemon's keyword, its reading."""


def newer_judge_settings(env: dict[str, str]) -> dict[str, Any]:
    """The newer judge settings that are set, as the daemon's keywords; one this image's daemon
    does not take is an error for that job, never silently dropped (its verdicts would differ)."""
    accepted = inspect.signature(Gaia2EventDaemon).parameters
    found: dict[str, Any] = {}
    for variable, keyword, read in NEWER_SETTINGS:
        raw = env.get(variable, "").strip()
        if not raw:
            continue
        if keyword not in accepted:
            raise ValueError(f"{variable} is set but this image's gaia2-eventd has no {keyword} setting")
        found[keyword] = read(raw)
    return found


def rejudge_one(job: dict[str, Any], out: Path, env: dict[str, str]) -> None:
    folder = out / str(job["folder"])
    folder.mkdir(parents=True, exist_ok=True)
    model = env.get("GAIA2_JUDGE_MODEL", "").strip()
    with tempfile.TemporaryDirectory(prefix="gaia2-rejudge-state-") as state:
        try:
            details = user_details(job, str(job["scenario"]))
            if details is not None:
                Path(state, "user_details.json").write_text(details, encoding="utf-8")
            daemon = Gaia2EventDaemon(
                scenario_path=str(job["scenario"]),
                state_dir=state,
                judge_model=None if model.lower() in PLACEHOLDER_MODELS else model,
                judge_provider=env.get("GAIA2_JUDGE_PROVIDER", "").strip() or None,
                judge_base_url=env.get("GAIA2_JUDGE_BASE_URL", "").strip() or None,
                judge_api_key=env.get("GAIA2_JUDGE_API_KEY", "").strip() or None,
                **newer_judge_settings(env),
            )
            daemon.setup()
            replay(daemon, read_lines(Path(job["events"])))
            status = json.loads(Path(state, "daemon_status.json").read_text(encoding="utf-8"))
        except JudgeUnavailable as exc:
            status = {"status": "error", "error": str(exc), "retryable": True}
        except Exception as exc:  # noqa: BLE001 - upstream's code may raise anything; the other jobs still get judged
            status = {"status": "error", "error": f"cannot judge: {type(exc).__name__}: {exc}", "retryable": False}
        judgments = Path(state, "judgments.jsonl")
        if judgments.is_file():
            shutil.copyfile(judgments, folder / "judgments.jsonl.tmp")
        else:
            (folder / "judgments.jsonl.tmp").write_text("", encoding="utf-8")
    (folder / "judgments.jsonl.tmp").replace(folder / "judgments.jsonl")
    (folder / "status.json.tmp").write_text(json.dumps(status) + "\n", encoding="utf-8")
    (folder / "status.json.tmp").replace(folder / "status.json")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("folders", nargs="*")
    args = parser.parse_args(argv)
    jobs = json.loads(Path(args.jobs).read_text(encoding="utf-8"))
    logging.getLogger().setLevel(logging.ERROR)  # the daemon's setup warnings (no contacts.json here) are noise
    os.environ["GAIA2_JUDGE_FINAL_TURN"] = "1"  # the runner always sets it: the final turn gets a verdict
    gaia2_cli.judge.create_litellm_engine = answering(gaia2_cli.judge.create_litellm_engine)
    wanted = set(args.folders)
    for job in jobs:
        if not wanted or job["folder"] in wanted:
            rejudge_one(job, Path(args.out), dict(os.environ))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
