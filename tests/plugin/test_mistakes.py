"""Ordinary mistakes are named before anything runs: an -m or -k that selects no scenario, a
sample larger than its pool. Neither reaches a container engine."""

from __future__ import annotations

import shutil

import pytest
from gaia2_testing import DATA

MANY = DATA / "scenarios" / "many" / "search"


@pytest.fixture
def scenarios(pytester: pytest.Pytester) -> str:
    """Ten scenarios of the search split."""
    split = pytester.path / "scenarios" / "search"
    split.mkdir(parents=True)
    for source in sorted(MANY.glob("*.json"))[:10]:
        shutil.copy(source, split)
    return "--gaia2-scenarios=scenarios"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("-m", "serch_split"),
            "ERROR: -m 'serch_split' selects no scenario. Markers: search_split, universe_*; "
            "nearest: 'serch_split' -> search_split",
        ),
        (
            ("-m", "search"),
            "ERROR: -m 'search' selects no scenario. Markers: search_split, *; nearest: 'search' -> search_split",
        ),
        (
            ("-k", "time_split or universe_99"),
            "ERROR: -k 'time_split or universe_99' selects no scenario. Markers: search_split, *; nearest: *",
        ),
    ],
    ids=["typo", "split-without-suffix", "keyword"],
)
def test_a_selection_of_nothing_names_the_markers_and_the_nearest(
    run_gaia2_inprocess, scenarios: str, args: tuple[str, ...], message: str
) -> None:
    result = run_gaia2_inprocess(scenarios, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "gaia2: 0 planned" not in result.stdout.str()


def test_a_sample_larger_than_its_pool_is_a_usage_error_naming_both_numbers(run_gaia2_inprocess, scenarios: str) -> None:
    result = run_gaia2_inprocess(scenarios, "--gaia2-sample=500")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --gaia2-sample 500: the pool has only 10 scenarios *; ask for at most 10*"])
    after_k = run_gaia2_inprocess(scenarios, "--gaia2-sample=8", "-k", "universe_21")
    assert after_k.ret == pytest.ExitCode.USAGE_ERROR
    after_k.stderr.fnmatch_lines(["ERROR: --gaia2-sample 8: the pool has only * scenarios*"])
