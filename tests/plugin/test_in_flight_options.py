"""``--gaia2-in-flight`` combinations that cannot keep their promise end as one usage error naming
the option, serially and at ``-n 2``: exit status 4, no INTERNALERROR, no run folder."""

from __future__ import annotations

import shutil
from collections.abc import Callable

import pytest
from gaia2_testing import SHIPPED


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(SHIPPED, pytester.path / "scenarios")
    return pytester


def refused(result: pytest.RunResult) -> list[str]:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.stdout.str(), result.stderr.str())
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text, text
    return [line for line in result.stderr.lines if line.startswith("ERROR")]


@pytest.mark.parametrize("layout", [(), ("-n", "2")], ids=["serial", "n2"])
def test_chains_keep_their_order_so_in_flight_is_refused_with_a_sequence(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], layout: tuple[str, ...]
) -> None:
    result = check_gaia2(*layout, "--gaia2-sequence=chains.jsonl", "--gaia2-in-flight=2")
    assert refused(result) == [
        "ERROR: --gaia2-sequence runs whole chains; it cannot be combined with --gaia2-in-flight 2"
    ]
    assert not (project.path / "out").exists()


def test_a_scheduler_that_may_move_an_item_started_ahead_is_refused(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult]
) -> None:
    result = check_gaia2("-n", "2", "--dist", "worksteal", "-m", "search_split", "--gaia2-in-flight=3")
    lines = refused(result)
    assert len(lines) == 1 and lines[0].startswith(
        "ERROR: --gaia2-in-flight 3 needs xdist's --dist load (the default with -n), not --dist worksteal"
    ), lines
    assert not (project.path / "out").exists()


@pytest.mark.parametrize(("args", "line"), [
    (("--gaia2-in-flight=0",), "ERROR: --gaia2-in-flight: must be from 1 to 64, got '0'"),
    (("-o", "gaia2_in_flight=many"), "ERROR: --gaia2-in-flight: expected a whole number, got 'many'"),
])
def test_a_value_out_of_range_names_the_option(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], args: tuple[str, ...], line: str
) -> None:
    assert refused(check_gaia2("-m", "search_split", *args)) == [line]
