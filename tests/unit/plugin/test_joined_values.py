"""``--gaia2-x VALUE`` read as ``--gaia2-x=VALUE``: the tokens joined, and when pytest is not rerun."""

from __future__ import annotations

import pytest

from pytest_gaia2.plugin.joined_values import join_values, rerun_with_joined_values


@pytest.mark.parametrize(("args", "joined", "values"), [
    (["--gaia2-output", "/x", "-n", "2"], ["--gaia2-output=/x", "-n", "2"], ["/x"]),
    (["--gaia2-output=/x", "tests"], ["--gaia2-output=/x", "tests"], []),
    (["--gaia2-resume", "--gaia2-output", "o"], ["--gaia2-resume", "--gaia2-output=o"], ["o"]),
    (["--gaia2-resume", "runs/1"], ["--gaia2-resume=runs/1"], ["runs/1"]),
    (["--gaia2-resume"], ["--gaia2-resume"], []),
    (["--gaia2-keep", "tests"], ["--gaia2-keep", "tests"], []),  # a flag takes no value
    (["--gaia2-env", "A=1", "--gaia2-env", "B=2"], ["--gaia2-env=A=1", "--gaia2-env=B=2"], ["A=1", "B=2"]),
    (["-m", "search_split", "--", "--gaia2-output", "x"], ["-m", "search_split", "--", "--gaia2-output", "x"], []),
    (["--gaia2-output"], ["--gaia2-output"], []),  # argparse reports the missing value
])
def test_join_values(args: list[str], joined: list[str], values: list[str]) -> None:
    assert join_values(args) == (joined, values)


def test_no_rerun_when_no_value_names_an_existing_path(pytester: pytest.Pytester,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_ADDOPTS", raising=False)
    config = pytester.parseconfig("--gaia2-output", "not-there-yet", "--gaia2-output=.")
    assert rerun_with_joined_values(config) is None


def test_an_xdist_worker_never_reruns(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--gaia2-output", ".")
    config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]
    assert rerun_with_joined_values(config) is None
