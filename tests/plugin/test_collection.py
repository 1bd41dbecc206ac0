"""Collection through pytester: ids, markers, the default scenarios folder, and user tests."""

from __future__ import annotations

import os
import shutil

import pytest
from gaia2_testing import DATA, SHIPPED, stored_verdict


def _with_shipped(pytester: pytest.Pytester) -> None:
    shutil.copytree(SHIPPED, pytester.path / "scenarios")


def test_default_scenarios_folder_without_paths(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2/")]
    assert len(ids) == len(list(SHIPPED.rglob("*.json")))
    assert "gaia2/search::test_scenario[scenario_universe_21_7kww6e]" in ids


def test_explicit_test_paths_collect_no_scenario(pytester: pytest.Pytester) -> None:
    """`pytest tests/unit` must not run (or even collect) scenario items."""
    _with_shipped(pytester)
    pytester.makepyfile(test_unit="def test_one():\n    assert True\n")
    result = pytester.runpytest("test_unit.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "gaia2/" not in result.stdout.str()


def test_strict_markers_and_split_selection(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "ambiguity_split",
                                "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2/")]
    assert ids and all(line.startswith("gaia2/ambiguity::") for line in ids)


def test_m_creates_no_item_of_a_split_it_cannot_select(pytester: pytest.Pytester) -> None:
    """``pytest -m search_split --co -q`` said "4/12 tests collected (8 deselected)": the other
    splits' items were made and then dropped, which reads as scenarios lost. A marker a conftest
    adds later (not the plugin's) may still select any item, so those are made and -m decides."""
    _with_shipped(pytester)
    search = len(list(SHIPPED.glob("search/*.json")))
    result = pytester.runpytest("--collect-only", "-q", "-m", "search_split", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines([f"{search} tests collected in *"])
    assert "deselected" not in result.stdout.str()
    pytester.makeconftest("""
        import pytest

        def pytest_collection_modifyitems(items):
            for item in items:
                if "scenario_universe_21_83x6ru" in item.nodeid:
                    item.add_marker(pytest.mark.chosen)
    """)
    pytester.makeini("[pytest]\nmarkers =\n    chosen: picked by the conftest\n")
    result = pytester.runpytest("--collect-only", "-q", "-m", "search_split or chosen", "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2/")]
    assert len(ids) == search + 1 and "gaia2/ambiguity::test_scenario[scenario_universe_21_83x6ru]" in ids


def test_folder_outside_the_splits_gets_its_own_marker(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "custom_split",
                                f"--gaia2-scenarios={DATA / 'scenarios' / 'other_split'}", "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2/")]
    assert len(ids) == 1 and ids[0].startswith("gaia2/custom::")


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


def test_universe_markers_are_registered_and_select(pytester: pytest.Pytester) -> None:
    _with_shipped(pytester)
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", "-m", "universe_21",
                                "-p", "no:cacheprovider")
    ids = [line for line in result.outlines if line.startswith("gaia2/")]
    expected = [path for path in SHIPPED.rglob("*.json") if "universe_21_" in path.name]
    assert result.ret == 0 and len(ids) == len(expected) >= 2
    assert all("universe_21_" in line for line in ids)
    markers = pytester.runpytest("--markers", "-p", "no:cacheprovider")
    markers.stdout.fnmatch_lines(["@pytest.mark.universe_21: Gaia2 scenarios of universe_21"])


def test_help_works_where_the_plugin_is_installed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*--gaia2-gate-on=*", "*95% interval*"])


@pytest.mark.docker  # resuming stored verdicts still runs pre-flight, which asks the engine
def test_junit_classname_is_the_split_with_model_image_and_judge(pytester: pytest.Pytester) -> None:
    """The JUnit file groups scenarios by split and carries what judged them, from stored verdicts."""
    import xml.etree.ElementTree as ET

    _with_shipped(pytester)
    run = pytester.path / "run"
    for path in SHIPPED.glob("search/*.json"):
        folder = run / "search" / path.stem
        folder.mkdir(parents=True)
        record = {"scenario_id": path.stem, "split": "search", "success": True, "model": "m1",
                  "image": "img:1", "judge_provider": "p", "judge_model": "j"}
        stored_verdict(folder, record)
    (run / "run_config.json").write_text("{}", encoding="utf-8")
    result = pytester.runpytest_subprocess("-m", "search_split", "--gaia2-resume=run", "--junitxml=j.xml",
                                           "-p", "no:cacheprovider")
    assert result.ret == 0
    tree = ET.parse(pytester.path / "j.xml")
    cases = tree.findall(".//testcase")
    assert cases and {case.get("classname") for case in cases} == {"gaia2.search"}
    props = {p.get("name"): p.get("value") for p in cases[0].findall(".//property")}
    assert (props["gaia2_model"], props["gaia2_image"], props["gaia2_judge"]) == ("m1", "img:1", "p/j")
    suite = {p.get("name"): p.get("value") for p in tree.findall("./testsuite/properties/property")}
    assert (suite["gaia2_planned"], suite["gaia2_done"], suite["gaia2_complete"]) == (
        str(len(cases)), str(len(cases)), "true")


def test_a_run_folder_is_never_walked_nor_its_conftest_imported(pytester: pytest.Pytester) -> None:
    """What a container handed back lies in run folders: the next plain ``pytest`` in the project
    neither imports a conftest.py there nor collects a test file, also through ``latest``. The
    same files in a folder that is not a run folder are collected (the control)."""
    for top, run_folder in (("gaia2-results", "20261204T000000Z-0123abcd"), ("plain", "")):
        state = pytester.path / top / run_folder / "search" / "s1" / "state"
        state.mkdir(parents=True)
        marker = pytester.path / f"{top}.imported"
        (state / "conftest.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n")
        (state / "test_planted.py").write_text("def test_planted():\n    pass\n")
    for name in ("run_config.json", "results.jsonl"):
        (pytester.path / "gaia2-results" / "20261204T000000Z-0123abcd" / name).write_text("{}")
    (pytester.path / "gaia2-results" / "latest").symlink_to("20261204T000000Z-0123abcd")
    (pytester.path / "plain" / "run_config.json").write_text("{}")  # another tool's file: not a run folder
    result = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert [line for line in result.outlines if "::" in line] == ["plain/search/s1/state/test_planted.py::test_planted"]
    assert (pytester.path / "plain.imported").exists() and not (pytester.path / "gaia2-results.imported").exists()


@pytest.mark.parametrize("start", ["in", "given"])
def test_pytest_started_in_a_run_folder_or_given_a_path_in_it_collects_nothing_there(
        pytester: pytest.Pytester, start: str) -> None:
    """Also when pytest does not walk in from above: started inside an attempt folder, or given
    a path below a run folder (the name filter keeps test files out; a project's doctest glob
    could still match a container's README.md)."""
    run = pytester.path / "gaia2-results" / "20261204T000000Z-0123abcd"
    state = run / "search" / "s1" / "state"
    state.mkdir(parents=True)
    (run / "run_config.json").write_text("{}")
    (run / "results.jsonl").write_text("")
    (state / "README.md").write_text(">>> open('ran', 'w').write('x')\n1\n")
    (pytester.path / "test_one.py").write_text("def test_one():\n    pass\n")
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "--doctest-glob=*.md"]
    if start == "in":
        pytester.chdir()
        os.chdir(state)
        result = pytester.runpytest(*args, f"--rootdir={pytester.path}")
    else:
        result = pytester.runpytest(*args, "gaia2-results/20261204T000000Z-0123abcd/search")
    assert [line for line in result.outlines if "::" in line or ".md" in line] == []
