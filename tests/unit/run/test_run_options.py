"""One run's options without pytest: paths anchored where pytest started, whether scenarios are
collected, nothing read (no .env, no price file) until asked for, and the budget from the values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.run.run_options import RunOptions
from pytest_gaia2.run.terms import Invocation


def options_of(base: Path, *, explicit_test_paths: bool = False, **cli: Any) -> RunOptions:
    invocation = Invocation(base=base, explicit_test_paths=explicit_test_paths)
    return RunOptions(invocation, lambda toml: options.resolve(cli, toml, {}), [])


def test_relative_paths_are_anchored_where_pytest_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    run = options_of(tmp_path, output="out")
    assert run.output == tmp_path / "out"
    assert run.path("a/b.json") == tmp_path / "a" / "b.json" and run.path("/abs") == Path("/abs")
    assert run.path("~/x") == tmp_path / "home" / "x"


@pytest.mark.parametrize(("folder", "explicit", "cli", "active"), [
    (False, False, {}, False),  # no scenarios/ folder and no option: nothing to collect
    (True, False, {}, True),  # the default scenarios/ folder
    (True, True, {}, False),  # test paths given: only what is asked for runs
    (False, True, {"scenarios": ["elsewhere"]}, True),
])
def test_scenarios_are_collected_when_asked_for_or_by_default(tmp_path: Path, folder: bool, explicit: bool,
                                                               cli: dict[str, Any], active: bool) -> None:
    if folder:
        (tmp_path / "scenarios").mkdir()
    assert options_of(tmp_path, explicit_test_paths=explicit, **cli).active is active


def test_nothing_is_read_until_asked_for(tmp_path: Path) -> None:
    (tmp_path / "prices.json").write_text("not json")
    run = options_of(tmp_path, price_file="prices.json")
    assert "settings" not in run.__dict__ and "prices" not in run.__dict__ and "redactor" not in run.__dict__
    assert run.upstream_config is None and run.notes == []


def test_the_budget_comes_from_the_values(tmp_path: Path) -> None:
    budget = options_of(tmp_path, budget_halt="2.5", budget_cap="3", max_errors="4").budget
    assert (budget.halt, budget.cap, budget.max_errors) == (2.5, 3.0, 4)
