"""Where a run's folder goes, before pre-flight: nothing is created yet, a resumed run keeps the id
it was made with, and a folder that cannot be resumed is one usage error."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.run.folder_opening import locate
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.terms import Invocation
from pytest_gaia2.store import folder as store

STARTED = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def located(output: Path, notes: list[str], **cli: Any) -> tuple[store.RunFolder, str]:
    """Where the run goes when pytest started in ``output`` and writes its runs there."""
    run_options = RunOptions(Invocation(base=output), lambda toml: options.resolve({"output": ".", **cli}, toml, {}), [])
    return locate(run_options, run_id="new", session_id="session", started=STARTED, notes=notes)


def test_a_new_run_names_its_folder_and_creates_nothing(tmp_path: Path) -> None:
    notes: list[str] = []
    folder, run_id = located(tmp_path / "out", notes)
    assert run_id == "new" and folder.path == tmp_path / "out" / store.run_folder_name("new", STARTED)
    assert not (tmp_path / "out").exists() and notes == []


def test_a_resumed_run_keeps_the_id_it_was_made_with(tmp_path: Path) -> None:
    earlier = store.RunFolder.create(tmp_path, "earlier", STARTED)
    earlier.file(store.RUN_CONFIG_FILE).write_text(json.dumps({"run_id": "earlier"}))
    folder, run_id = located(tmp_path, [], resume=True)
    assert (folder.path, run_id) == (earlier.path, "earlier")
    named, _ = located(tmp_path, [], resume=earlier.path.name)
    assert named.path == earlier.path


def test_a_resumed_run_whose_config_names_no_run_takes_the_session_id(tmp_path: Path) -> None:
    store.RunFolder.create(tmp_path, "earlier", STARTED).file(store.RUN_CONFIG_FILE).write_text("{}")
    assert located(tmp_path, [], resume=True)[1] == "session"


def test_nothing_to_resume_is_one_usage_error(tmp_path: Path) -> None:
    with pytest.raises(OptionError):
        located(tmp_path / "empty", [], resume=True)
    assert not (tmp_path / "empty").exists()
