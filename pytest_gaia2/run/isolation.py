"""Whether an image keeps its judge from its agent, asked of a throwaway container of that image.

Meta's agent images run the agent as user ``agent``, apart from the judge (user ``gaia2``, who
alone may enter ``/var/gaia2``): an agent there cannot read the scenario (the answer key),
rewrite the judge's state or signal the judge. An image that does not separate them gives
verdicts its agent could have forged. So pre-flight starts one container of the image with its
own init and a real scenario and, once the judge's state exists, asks as ``agent``: can it read
the scenario file, write into the state folder (a new file, or the judge's files), signal a
process of the state folder's owner? The answer is kept in run_config.json and shown on every
page and in the summary; ``--gaia2-require-isolation`` refuses an image that fails it.
"""

from __future__ import annotations

import secrets
import time
from typing import TYPE_CHECKING

from pytest_gaia2.report.run_facts import Isolation
from pytest_gaia2.store.folder import EVENTS_FILE, STATE_DIR, STATUS_FILE

if TYPE_CHECKING:
    from pytest_gaia2.engine.client import Engine

AGENT_USER = "agent"
SCENARIO_PATH = "/var/gaia2/custom_scenario.json"
STATE_WAIT_S = 30.0
"""How long the image's init may take to lay out the judge's state before the probe asks anyway."""
JUDGE_FILES = (STATUS_FILE, "judgments.jsonl", EVENTS_FILE)

SHELL = ("/bin/sh", "-c")
"""Every probe command runs through ``/bin/sh`` with its own PATH: Meta's agent images set a
restricted PATH (``/home/agent/bin``) that holds no shell tools."""
PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; export PATH; "

PROBE = (
    PATH
    + r"""
s=$1; d=$2; judge=$3; shift 3
read=no; cat "$s" >/dev/null 2>&1 && read=yes
write=no
probe="$d/.pytest-gaia2-isolation-probe"
if (: > "$probe") 2>/dev/null; then write=yes; rm -f "$probe"; fi
for f in "$@"; do [ -e "$d/$f" ] && (: >> "$d/$f") 2>/dev/null && write=yes; done
signal=no
for p in /proc/[0-9]*; do
  [ "$(stat -c %u "$p" 2>/dev/null)" = "$judge" ] && kill -0 "${p#/proc/}" 2>/dev/null && signal=yes
done
echo "isolation read=$read write=$write signal=$signal"
"""
)
"""Run as the agent's user with argv: scenario path, state folder, judge's uid, the judge's files.
``: >> file`` opens for appending and writes nothing: the judge's files are not changed."""

_ANSWERS = {"yes": True, "no": False}


def parse(output: str) -> Isolation:
    """The probe's answer line (the last that starts ``isolation``); a problem when there is none."""
    for line in reversed(output.splitlines()):
        words = line.split()
        if words[:1] != ["isolation"]:
            continue
        fields = dict(word.partition("=")[::2] for word in words[1:])
        read, write, signal = (_ANSWERS.get(fields.get(name, "")) for name in ("read", "write", "signal"))
        if read is None or write is None or signal is None:
            break
        return Isolation(reads_scenario=read, writes_state=write, signals_judge=signal)
    return Isolation(problem="the isolation probe gave no answer", passing=True)


def probe(engine: Engine, image: str, scenario: bytes, *, wait_s: float = STATE_WAIT_S) -> Isolation:
    """Start a container of ``image`` (its own init, ``scenario`` where the runner puts it), wait
    for the judge's state, and ask as the agent's user; the container is removed whatever happens."""
    from pytest_gaia2.engine.client import HELPER_ID
    from pytest_gaia2.engine.container import LaunchSpec
    from pytest_gaia2.engine.errors import EngineError

    spec = LaunchSpec(
        image=image,
        name=f"gaia2-isolation-probe-{secrets.token_hex(6)}",
        env={"GAIA2_JUDGE_FINAL_TURN": "1"},
        labels=engine.labels(HELPER_ID),
        adapter_port=8090,
        files=((SCENARIO_PATH, scenario, 0o644),),
        pids_limit=256,
        memory_bytes=512 << 20,
    )
    try:
        container = engine.launch(spec)
    except EngineError as exc:
        return Isolation(problem=f"the isolation probe could not start a container: {exc}", passing=True)
    try:
        deadline = time.monotonic() + wait_s
        while container.exec([*SHELL, PATH + 'test -e "$1"', "probe", f"{STATE_DIR}/{STATUS_FILE}"])[0] != 0:
            if time.monotonic() > deadline or container.exited() is not None:
                break
            time.sleep(0.5)
        code, owner = container.answer([*SHELL, PATH + 'stat -c %u "$1"', "probe", STATE_DIR])
        judge = owner.strip()
        if code != 0 or not judge.isdigit():
            return Isolation(problem=f"the image has no judge's state folder at {STATE_DIR}")
        code, output = container.answer(
            [*SHELL, PROBE, "probe", SCENARIO_PATH, STATE_DIR, judge, *JUDGE_FILES], user=AGENT_USER
        )
        if code != 0 and "isolation" not in output:
            return Isolation(problem=f"the image has no user {AGENT_USER!r} apart from the judge's")
        return parse(output)
    finally:
        engine.remove(container)
