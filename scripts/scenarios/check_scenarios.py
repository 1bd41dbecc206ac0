"""Structural checks for Gaia2 scenario files (no container needed).

    python scripts/scenarios/check_scenarios.py [PATH ...]

Without arguments it checks the shipped ``scenarios/`` tree plus the valid
test variants (``many``, ``other_split``, ``judge_fail``, ``no_events``).
Checks: JSON shape, id format, unique event ids, dependencies that exist and
form no cycle, oracle events that are writes or ``send_message_to_user``
(except under ``judge_fail``), the turn structure the gaia2-cli judge derives
(turn = number of oracle send_message_to_user ancestors; one oracle
send_message_to_user per turn, last in its turn; a later turn starts from a
USER/ENV event that depends on the previous turn's send_message_to_user),
split-specific shapes, ids in arguments that exist in the app state, and
the expected wall time (<= 10 s of scheduled delays).
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict, deque
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TEST_DATA = REPO / "tests" / "data" / "scenarios"
ID_RE = re.compile(r"^scenario_universe_(2[1-9]|30)_[0-9a-z]{6}$")
SPLITS = {"search", "execution", "adaptability", "time", "ambiguity"}
AUI = "AgentUserInterface"


def is_smu(ev: dict) -> bool:
    a = ev.get("action") or {}
    return a.get("app") == AUI and a.get("function") == "send_message_to_user"


def parse_args(action: dict) -> dict:
    out = {}
    for arg in action["args"]:
        v, t = arg["value"], arg["value_type"]
        if v is not None and t in ("list", "dict"):
            v = json.loads(v)
            assert isinstance(v, list if t == "list" else dict), f"arg {arg['name']} is not a {t}"
        out[arg["name"]] = v
    return out


def check(path: Path, allow_read_oracle: bool = False) -> list[str]:  # noqa: C901
    errs: list[str] = []

    def err(msg: str) -> None:
        errs.append(msg)

    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        return ["not a JSON object"]
    for key in ("version", "metadata", "apps", "events", "completed_events", "world_logs", "context", "augmentation"):
        if key not in data:
            err(f"missing top-level key {key}")
    d = data.get("metadata", {}).get("definition", {})
    sid = d.get("scenario_id")
    if not isinstance(sid, str) or not ID_RE.match(sid):
        err(f"bad scenario_id {sid!r}")
    if path.stem != sid:
        err(f"file name {path.name} does not match scenario_id {sid}")
    for key, typ in (
        ("duration", (int, float)),
        ("start_time", float),
        ("time_increment_in_seconds", int),
        ("tags", list),
    ):
        if not isinstance(d.get(key), typ):
            err(f"metadata.definition.{key} missing or wrong type: {d.get(key)!r}")

    # ---- apps
    apps = {}
    for app in data.get("apps", []):
        if not {"name", "class_name", "app_state"} <= set(app):
            err(f"app entry lacks name/class_name/app_state: {app.get('name')}")
            continue
        apps[app["name"]] = app["app_state"]
    if AUI not in apps:
        err("no AgentUserInterface app")
    contacts = apps.get("Contacts", {}).get("contacts", {})
    if "Contacts" in apps and sum(1 for c in contacts.values() if c.get("is_user")) != 1:
        err("Contacts must hold exactly one is_user contact")
    for c in contacts.values():
        if c.get("is_user") and not (isinstance(c.get("address"), str) and c["address"]):
            err("the is_user contact needs a string address (gaia2-cli's UserDetails requires one)")
    for cid, c in contacts.items():
        if c.get("contact_id") != cid:
            err(f"contact key {cid} != contact_id")

    # ---- events
    events = data.get("events")
    if not isinstance(events, list):
        return errs + ["events is not a list"]
    by_id: dict[str, dict] = {}
    for ev in events:
        eid = ev.get("event_id")
        if eid in by_id:
            err(f"duplicate event id {eid}")
        by_id[eid] = ev
        et = ev.get("event_type")
        if not isinstance(eid, str) or not eid.startswith(f"Event-{et}-"):
            err(f"event id {eid} does not match type {et}")
        want_cls = "OracleEvent" if et == "AGENT" else "Event"
        if ev.get("class_name") != want_cls:
            err(f"{eid}: class_name {ev.get('class_name')} (expected {want_cls})")
        for key in ("event_time", "dependencies", "event_relative_time", "action"):
            if key not in ev:
                err(f"{eid}: missing {key}")
        a = ev.get("action") or {}
        for key in ("action_id", "app", "function", "operation_type", "args"):
            if key not in a:
                err(f"{eid}: action missing {key}")
        if str(a.get("operation_type", "")).lower() not in ("read", "write"):
            err(f"{eid}: operation_type {a.get('operation_type')!r}")
        if a.get("app") not in apps:
            err(f"{eid}: app {a.get('app')} not in apps")
        try:
            ev["_args"] = parse_args(a)
        except Exception as e:  # noqa: BLE001
            err(f"{eid}: bad args: {e}")
            ev["_args"] = {}
    if errs:
        return errs
    for ev in events:
        for dep in ev["dependencies"]:
            if dep not in by_id:
                err(f"{ev['event_id']}: unknown dependency {dep}")
    if errs:
        return errs

    # cycle check + absolute offsets
    offsets: dict[str, float] = {}
    visiting: set[str] = set()

    def offset(eid: str) -> float:
        if eid in offsets:
            return offsets[eid]
        if eid in visiting:
            raise ValueError(f"dependency cycle through {eid}")
        visiting.add(eid)
        ev = by_id[eid]
        o = max((offset(p) for p in ev["dependencies"]), default=0.0) + (ev["event_relative_time"] or 0.0)
        visiting.discard(eid)
        offsets[eid] = o
        return o

    try:
        for eid in by_id:
            offset(eid)
    except ValueError as e:
        return errs + [str(e)]

    # ---- task
    users = [e for e in events if e["event_type"] == "USER"]
    roots = [e for e in users if not e["dependencies"]]
    if not roots:
        err("no USER event without dependencies (the task)")
    else:
        t = roots[0]
        if (
            t["action"]["app"] != AUI
            or t["action"]["function"] != "send_message_to_agent"
            or not t["_args"].get("content")
        ):
            err("first USER event is not AgentUserInterface.send_message_to_agent with content")
    for u in users:
        if u["action"]["function"] != "send_message_to_agent":
            err(f"{u['event_id']}: USER event is not send_message_to_agent")

    # ---- oracle convention
    oracle = [e for e in events if e["event_type"] == "AGENT"]
    if not oracle:
        err("no oracle (AGENT) events")
    for o in oracle:
        if not is_smu(o) and o["action"]["operation_type"].lower() != "write" and not allow_read_oracle:
            err(f"{o['event_id']}: oracle event {o['action']['app']}.{o['action']['function']} is a read")

    # ---- turns (as gaia2-cli: number of oracle SMU ancestors)
    turn: dict[str, int] = {}

    def turn_of(eid: str) -> int:
        if eid in turn:
            return turn[eid]
        t = 0
        for p in by_id[eid]["dependencies"]:
            t = max(t, turn_of(p) + (1 if by_id[p]["event_type"] == "AGENT" and is_smu(by_id[p]) else 0))
        turn[eid] = t
        return t

    for eid in by_id:
        turn_of(eid)
    nb_turns = max(turn.values()) + 1
    smu_by_turn: dict[int, list[str]] = defaultdict(list)
    for o in oracle:
        if is_smu(o):
            smu_by_turn[turn[o["event_id"]]].append(o["event_id"])
    for t in range(nb_turns):
        smus = smu_by_turn.get(t, [])
        if len(smus) != 1:
            err(f"turn {t}: {len(smus)} oracle send_message_to_user events (expected 1)")
            continue
        # every other oracle event of the turn must be an ancestor of the SMU
        anc: set[str] = set()
        q = deque([smus[0]])
        while q:
            x = q.popleft()
            for p in by_id[x]["dependencies"]:
                if p not in anc:
                    anc.add(p)
                    q.append(p)
        for o in oracle:
            if turn[o["event_id"]] == t and o["event_id"] != smus[0] and o["event_id"] not in anc:
                err(f"turn {t}: oracle {o['event_id']} is not before the turn's send_message_to_user")
        if t > 0:
            starters = [
                e
                for e in events
                if e["event_type"] in ("USER", "ENV")
                and turn[e["event_id"]] == t
                and any(by_id[p]["event_type"] == "AGENT" and is_smu(by_id[p]) for p in e["dependencies"])
            ]
            if not starters:
                err(f"turn {t}: no USER/ENV event depends on turn {t - 1}'s send_message_to_user")
    for e in events:
        if e["event_type"] == "USER" and e["dependencies"]:
            if not any(by_id[p]["event_type"] == "AGENT" and is_smu(by_id[p]) for p in e["dependencies"]):
                err(f"{e['event_id']}: follow-up USER message does not depend on an oracle send_message_to_user")

    # ---- ids used in args exist in the app state
    cal = apps.get("Calendar", {}).get("events", {})
    for o in events:
        a, args = o["action"], o["_args"]
        if a["function"] == "edit_contact" and args.get("contact_id") not in contacts:
            err(f"{o['event_id']}: contact_id not in Contacts")
        if a["function"] == "delete_calendar_event" and args.get("event_id") not in cal:
            err(f"{o['event_id']}: event_id not in Calendar")
        if a["app"] in ("Chats", "Messages"):
            st = apps[a["app"]]
            if "user_id" in args and args["user_id"] not in st["id_to_name"]:
                err(f"{o['event_id']}: user_id not in {a['app']}")
            if "conversation_id" in args and args["conversation_id"] not in st["conversations"]:
                err(f"{o['event_id']}: conversation_id not in {a['app']}")
            if a["function"] == "create_and_add_message":
                conv = st["conversations"].get(args.get("conversation_id"), {})
                if args.get("sender_id") not in conv.get("participant_ids", []):
                    err(f"{o['event_id']}: sender not in conversation")

    # ---- split-specific shape
    split = path.parent.name
    writes = [o for o in oracle if not is_smu(o)]
    envs = [e for e in events if e["event_type"] == "ENV"]
    if split == "search" and not allow_read_oracle and writes:
        err("search scenario has oracle writes")
    if split == "execution" and not writes:
        err("execution scenario has no oracle write")
    if split == "adaptability":
        env_ids = {e["event_id"] for e in envs}
        reacting = [o for o in writes if set(o["dependencies"]) & env_ids]
        if not envs or not reacting:
            err("adaptability scenario needs an ENV event and an oracle write depending on it")
    if split == "time" and not any((o["event_relative_time"] or 0) > 1.0 for o in writes):
        err("time scenario has no timed oracle write (event_relative_time > 1)")
    if split == "ambiguity":
        if nb_turns < 2:
            err("ambiguity scenario needs 2 turns")
        elif any(turn[o["event_id"]] == 0 for o in writes):
            err("ambiguity turn 0 must only ask (send_message_to_user)")
    wall = max(offsets.values(), default=0.0)
    if wall > 10.0:
        err(f"scheduled delays add up to {wall} s (> 10 s)")
    if data["metadata"]["definition"]["duration"] > 600:
        err("duration > 600 s")
    return errs


def main(argv: list[str]) -> int:
    if argv:
        paths = [Path(p) for p in argv]
    else:
        paths = [REPO / "scenarios"] + [TEST_DATA / d for d in ("many", "other_split", "judge_fail", "no_events")]
    files: list[Path] = []
    for p in paths:
        files += sorted(p.rglob("*.json")) if p.is_dir() else [p]
    ids: dict[str, Path] = {}
    bad = 0
    for f in files:
        if "no_events" in f.parts:
            data = json.loads(f.read_text())
            errs = [] if data["events"] == [] and data["completed_events"] else ["no_events variant malformed"]
        else:
            errs = check(f, allow_read_oracle="judge_fail" in f.parts)
        sid = json.loads(f.read_text()).get("metadata", {}).get("definition", {}).get("scenario_id")
        if sid in ids:
            errs.append(f"scenario_id {sid} also in {ids[sid]}")
        ids[sid] = f
        if errs:
            bad += 1
            print(f"FAIL {f}")
            for e in errs:
                print(f"     - {e}")
    print(f"{len(files) - bad}/{len(files)} files OK")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
