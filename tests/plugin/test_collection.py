"""Collection through pytester: ids, markers, the default scenarios folder, and user tests."""

from __future__ import annotations

import shutil

import pytest

from gaia2_testing import DATA, SHIPPED


def _with_shipped(pytester: pytest.Pytester) -> None:
    shutil.copytree(SHIPPED, pytester.path / "scenarios")


def test_default_scenarios_folder_without_paths(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2::")]
    assert len(ids) == len(list(SHIPPED.rglob("*.json")))
    assert "gaia2::test_scenario[search/scenario_universe_21_7kww6e]" in ids


def test_explicit_test_paths_collect_no_scenario(pytester: pytest.Pytester) -> None:
    """`pytest tests/unit` must not run (or even collect) scenario items."""
    _with_shipped(pytester)
    pytester.makepyfile(test_unit="def test_one():\n    assert True\n")
    result = pytester.runpytest("test_unit.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "gaia2::" not in result.stdout.str()


def test_strict_markers_and_split_selection(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "ambiguity_split",
                                "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2::")]
    assert ids and all("[ambiguity/" in line for line in ids)


def test_folder_outside_the_splits_gets_its_own_marker(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "custom_split",
                                f"--gaia2-scenarios={DATA / 'scenarios' / 'other_split'}", "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2::")]
    assert len(ids) == 1 and "[custom/" in ids[0]


def test_user_tests_are_parametrized_per_scenario(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    pytester.makepyfile(test_mine="""
        def test_task_is_known(gaia2_scenario):
            assert gaia2_scenario.task
            assert gaia2_scenario.scenario_id in str(gaia2_scenario.path)
    """)
    result = pytester.runpytest("test_mine.py", "--gaia2-scenarios=scenarios", "-p", "no:cacheprovider",
                                "-k", "test_task_is_known")
    result.assert_outcomes(passed=len(list(SHIPPED.rglob("*.json"))))
