"""Allure's ``flaky`` mark for scenarios whose repeats disagree.

Allure marks a result flaky through ``statusDetails.flaky``; allure-pytest sets it for no test, and
while a repeat runs nobody knows what the scenario's other repeats (on other workers, later) will
say. So the mark is set once the run is over, on the controller, in the result files this run's
tests wrote: those carrying the hidden, history-neutral parameter :data:`RUN_PARAMETER` with this
run's id. Files of other runs in the same folder are never touched, and each file is read bounded
and replaced atomically.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.safejson import JsonReadError, read_json_file

RUN_PARAMETER = "gaia2 run"
"""The hidden Allure parameter naming the run a result belongs to (excluded from the history id)."""
RESULT_MAX_BYTES = 64 << 20
"""A larger result file is not one of ours (allure-pytest's hold attachments by reference)."""
MAX_RESULT_FILES = 200_000


def disagreeing(records: Iterable[AttemptRecord]) -> set[str]:
    """The keys of every repeat of each scenario whose repeats got both a pass and a failure."""
    verdicts: dict[tuple[str, str], set[str]] = {}
    keys: dict[tuple[str, str], set[str]] = {}
    for record in records:
        scenario = (record.split, record.scenario_id)
        keys.setdefault(scenario, set()).add(record.key)
        if record.outcome in ("passed", "failed"):
            verdicts.setdefault(scenario, set()).add(record.outcome)
    return {key for scenario, found in verdicts.items() if len(found) == 2 for key in keys[scenario]}


def _parameter(result: dict[str, Any], name: str) -> Any:
    for parameter in result.get("parameters") or ():
        if isinstance(parameter, dict) and parameter.get("name") == name:
            return parameter.get("value")
    return None


def mark_flaky(alluredir: Path, run_id: str, keys: set[str], item_parameter: str) -> int:
    """Set ``statusDetails.flaky`` in this run's result files of ``keys``; how many were marked.

    allure-pytest writes a parameter's value as its ``repr``, so the run id and key are compared
    in that form too."""
    if not keys:
        return 0
    wanted = {repr(key) for key in keys} | keys
    marked = 0
    try:
        entries = [e for e in os.scandir(alluredir) if e.name.endswith("-result.json")][:MAX_RESULT_FILES]
    except OSError:
        return 0
    for entry in entries:
        path = Path(entry.path)
        try:
            result = read_json_file(path, max_bytes=RESULT_MAX_BYTES, follow_symlinks=False)
        except JsonReadError:
            continue
        if not isinstance(result, dict) or _parameter(result, RUN_PARAMETER) not in (run_id, repr(run_id)):
            continue
        if _parameter(result, item_parameter) not in wanted:
            continue
        found = result.get("statusDetails")
        details: dict[str, Any] = found if isinstance(found, dict) else {}
        if details.get("flaky") is True:
            continue
        store.write_json(path, {**result, "statusDetails": {**details, "flaky": True}})
        marked += 1
    return marked
