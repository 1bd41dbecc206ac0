"""The run's core without pytest: a RunContext made from an Invocation and option values plans,
refuses bad combinations with the option's name, takes records and ends with its own statuses."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED

from pytest_gaia2.config import options
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan.selection import FIRST_N_WARNING
from pytest_gaia2.run.context import RunContext
from pytest_gaia2.run.terms import ExitStatus, Invocation

SEARCH = SHIPPED / "search"


class Written(RunContext):
    """A run whose lines and hooks are kept, as the plugin's controller would show and call them."""

    def __init__(self, invocation: Invocation, read: Any) -> None:
        self.lines: list[str] = []
        self.called: list[tuple[str, dict[str, Any]]] = []
        super().__init__(invocation, read)

    def write(self, line: str) -> None:
        self.lines.append(line)

    def hook(self, name: str) -> Any:
        def call(**kwargs: Any) -> None:
            self.called.append((name, kwargs))
            if name == "pytest_gaia2_summary":
                raise RuntimeError("a user's hook broke")

        return call


@pytest.fixture
def contexts(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Iterator[Any]:
    made: list[RunContext] = []

    def make(cls: type[RunContext] = Written, invocation: Invocation | None = None, **cli: Any) -> Any:
        cli.setdefault("output", str(tmp_path / "out"))
        read = lambda toml: options.resolve(cli, toml, {})  # noqa: E731 - the plugin's reader, without pytest
        context = cls(invocation or Invocation(base=tmp_path), read)
        made.append(context)
        return context

    yield make
    for context in made:
        context.close()


def test_a_run_without_scenarios_idles(contexts: Any) -> None:
    """Test paths given and no scenario option: nothing is planned and the end changes nothing."""
    context = contexts(invocation=Invocation(base=Path("/nonexistent"), explicit_test_paths=True))
    assert not context.active and context.plan.items() == [] and context.header_lines() == []
    assert context.finish_run(ExitStatus.OK) is None
    assert context.summary_lines() == []


def test_a_run_plans_its_scenarios_and_says_so(contexts: Any) -> None:
    context = contexts(scenarios=[str(SEARCH)], first_n="2", seed="3")
    assert context.active and not context.is_worker and context.workers == 1
    items = context.plan.items()
    assert {item.split for item in items} == {"search"} and len(items) == len(list(SEARCH.glob("*.json")))
    assert len(context.plan.narrow(items)) == 2
    header = context.header_lines()
    assert f"{len(items)} scenarios found" in header[0] and header[-1] == f"gaia2: {FIRST_N_WARNING}"


def test_a_worker_takes_what_the_controller_handed_over(contexts: Any, tmp_path: Path) -> None:
    handed: Mapping[str, Any] = {"workerid": "gw1", "workercount": 2, "gaia2_session_id": "s" * 32,
                                 "gaia2_run_id": "r" * 32, "gaia2_folder": str(tmp_path / "run")}
    context = contexts(invocation=Invocation(base=tmp_path, worker_input=handed, processes=2),
                       scenarios=[str(SEARCH)])
    assert (context.is_worker, context.worker, context.workers) == (True, "gw1", 2)
    assert (context.session_id, context.run_id) == ("s" * 32, "r" * 32)
    assert context.folder is not None and context.folder.path == tmp_path / "run"
    context.take_report({"key": "search/x", "why": "budget"}, None)  # only the controller keeps records
    assert context.book.not_started == {}


@pytest.mark.parametrize(("cli", "message"), [
    ({"language": "spa_Latn"}, "--gaia2-language applies to --gaia2-dataset only"),
    ({"dataset_revision": "main"}, "--gaia2-dataset-revision applies to --gaia2-dataset only"),
    ({"scenario_cap": "0.5"}, "--gaia2-scenario-cap needs the model gateway, which is off for this run"),
    ({"scenario_token_cap": "10"}, "--gaia2-scenario-token-cap needs the model gateway"),
    ({"sequence": "chains.jsonl", "smoke": True}, "--gaia2-sequence runs whole chains; it cannot be combined "
                                                  "with --gaia2-smoke"),
])
def test_a_combination_that_cannot_run_is_refused_naming_the_option(contexts: Any, cli: dict[str, Any],
                                                                    message: str) -> None:
    with pytest.raises(OptionError, match=f"^{message}"):
        contexts(scenarios=[str(SEARCH)], **cli)


def test_a_users_hook_that_fails_is_one_warning_line(contexts: Any) -> None:
    context = contexts(scenarios=[str(SEARCH)])
    context.call_hook("pytest_gaia2_summary", summary={}, lines=[])
    assert context.called == [("pytest_gaia2_summary", {"summary": {}, "lines": []})]
    assert context.lines == ["gaia2: warning: pytest_gaia2_summary failed: RuntimeError: a user's hook broke"]


def test_without_the_plugin_there_are_no_hooks_and_lines_are_printed(contexts: Any,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    context = contexts(RunContext, scenarios=[str(SEARCH)])
    context.call_hook("pytest_gaia2_summary", summary={}, lines=[])
    context.write("gaia2: a line")
    assert capsys.readouterr().out == "gaia2: a line\n"


def test_the_exit_statuses_are_numbered_as_pytest_numbers_its_own() -> None:
    """The plugin hands the run's status to pytest as it is: 0 to 5 mean what pytest's mean."""
    for status in ExitStatus:
        if status != ExitStatus.REFUSED:
            assert pytest.ExitCode[status.name] == status
    assert ExitStatus.REFUSED not in set(pytest.ExitCode)  # a refusal never reads as one of pytest's
