"""What the console's commands read of a run folder before they compare, merge or export it:
run_config.json's plan, checked, and the keys the run planned as its pages count them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_gaia2.report import run_facts
from pytest_gaia2.report.rows import planned_keys
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.record import AttemptRecord


def read_run_config(folder: store.RunFolder) -> tuple[dict[str, Any], list[str]]:
    """A run folder's run_config.json and its ``planned`` keys, checked: one error naming the file."""
    path = folder.file(store.RUN_CONFIG_FILE)
    config = store.read_json(path)
    planned = config.get("planned", []) if isinstance(config, dict) else None
    if not isinstance(config, dict) or not isinstance(planned, list) or not all(isinstance(k, str) for k in planned):
        raise CommandError(f"{path}: 'planned' must be a list of <split>/<scenario_id>[/run_<k>] strings")
    try:
        planned_keys(planned)
    except ValueError as exc:
        raise CommandError(f"{path}: {exc}") from None
    return config, planned


def latest_plan(folder: store.RunFolder, config: Mapping[str, Any], records: Sequence[AttemptRecord]) -> list[str]:
    """The keys the run planned as its pages count them (:meth:`run_facts.RunFacts.plan`): the
    latest session's, from summary.json, else run_config.json's plus every key with a record."""
    keys = run_facts.read(folder.path, config).plan(records).keys
    return list(keys) if keys is not None else []
