"""State initialisation for the reference image (the ``gaia2-init`` equivalent).

Usage (called by ``/opt/gaia2-init-entrypoint.sh``):

    python3 gaia2_ref_init.py state <scenario.json> <state_dir>

lays out what the runner later copies out (one ``<app>.json`` per app,
``app_class_map.json``, an empty ``events.jsonl``, ``user_details.json``), then
prints the scenario start as ``YYYY-MM-DD HH:MM:SS`` (UTC) for FAKETIME, or
nothing when the scenario has no start time: one Python start for both, as
every container start pays for it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from gaia2_ref_scenario import Scenario, sim_time_to_str


def app_file_name(name: str) -> str:
    """``EmailClientV2`` -> ``email_client_v2``, ``RentAFlat`` -> ``rent_a_flat``."""
    snake = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return re.sub(r"[^a-z0-9_]+", "_", snake.lower()).strip("_") or "app"


def init_state(scenario_file: Path, state: Path) -> Scenario:
    scenario = Scenario.load(str(scenario_file))
    state.mkdir(parents=True, exist_ok=True)
    for app in scenario.apps:
        name = str(app.get("name") or app.get("class_name") or "")
        if name:
            (state / f"{app_file_name(name)}.json").write_text(
                json.dumps(app.get("app_state") or {}, indent=1), encoding="utf-8"
            )
    (state / "app_class_map.json").write_text(json.dumps(scenario.app_classes), encoding="utf-8")
    (state / "events.jsonl").write_text("", encoding="utf-8")
    (state / "events.lock").touch()
    (state / "user_details.json").write_text(json.dumps(scenario.user_details()) + "\n", encoding="utf-8")
    return scenario


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "state":
        start = init_state(Path(argv[1]), Path(argv[2])).start_time
        if start > 0:
            print(sim_time_to_str(start))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
