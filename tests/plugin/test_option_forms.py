"""``--gaia2-x VALUE`` and ``--gaia2-x=VALUE`` give the same run, serial and with ``-n 2``.

pytest picks its rootdir before it loads plugins, so the value of a ``--gaia2-*`` option
written after a space, when it names an existing path, was taken for a test path: the rootdir
moved and the plugin looked for scenarios/, its output and .env in the wrong folder, or
silently collected nothing (see ``joined_values.rerun_with_joined_values``). Each case runs both
forms and compares what every process saw: rootdir, collected ids, the output in the header.
No engine is needed: a conftest records the collected items, then runs none of them, so
xdist's workers collect for real (``--collect-only`` would keep xdist from starting them).
The runs are in this process: the rootdir is chosen from the same arguments there, the rerun
is in-process anyway, and a subprocess only added a second of start-up to each of 20 runs
(xdist's workers are processes of their own either way).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED

RECORDER = '''
import json
import os

import pytest


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """What this process (controller or worker) would run; then nothing runs."""
    name = getattr(config, "workerinput", {}).get("workerid", "main")
    seen = {"rootdir": str(config.rootpath), "ids": sorted(item.nodeid for item in items)}
    (config.invocation_params.dir / f"seen-{name}.json").write_text(json.dumps(seen))
    items[:] = []
'''

MODES = {"serial": (), "xdist": ("-n", "2")}
SEARCH = sorted(path.stem for path in SHIPPED.glob("search/*.json"))


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(RECORDER)
    return pytester


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An existing folder outside the project: the kind of path that moved pytest's rootdir."""
    return tmp_path_factory.mktemp("elsewhere")


def _run(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    """Exit status, the header's output folder, whether the plugin said anything (its header or
    an error naming an option), and per process its rootdir and collected ids."""
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-m", "search_split", *args)
    seen = {}
    for path in sorted(pytester.path.glob("seen-*.json")):
        seen[path.stem.removeprefix("seen-")] = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
    headers = [line for line in result.outlines if line.startswith("gaia2: ") and ", output " in line]
    output = re.search(r"output (.+)$", headers[0]) if headers else None
    spoke = any(line.startswith("gaia2:") or "--gaia2-" in line or "pytest-gaia2:" in line
                for line in result.outlines + result.errlines)
    return {"ret": result.ret, "output": output and output.group(1), "seen": seen, "spoke": spoke}


def _same_both_ways(pytester: pytest.Pytester, option: str, value: Path | str, *args: str) -> dict[str, Any]:
    """Run ``option value`` and ``option=value``; they must agree in everything; the run is returned."""
    spaced = _run(pytester, *args, option, str(value))
    joined = _run(pytester, *args, f"{option}={value}")
    assert spaced == joined
    return joined


def _processes(mode: str) -> set[str]:
    return {"gw0", "gw1"} if mode == "xdist" else {"main"}


def _search_split(seen: dict[str, Any], rootdir: Path) -> bool:
    """One process collected the search split's scenarios, one item each, under ``rootdir``."""
    ids = seen["ids"]
    return seen["rootdir"] == str(rootdir) and len(ids) == len(SEARCH) and all(
        any(scenario_id in item for item in ids) for scenario_id in SEARCH)


def _inside(shown: str | None, folder: Path) -> bool:
    """The header names ``folder`` or a run folder inside it."""
    return shown is not None and (Path(shown) == folder or folder in Path(shown).parents)


@pytest.mark.parametrize("mode", MODES)
def test_output_written_both_ways(project: pytest.Pytester, elsewhere: Path, mode: str) -> None:
    """``pytest -n 2 -m search_split --gaia2-output /some/dir`` collected nothing."""
    shutil.copytree(SHIPPED, project.path / "scenarios")
    run = _same_both_ways(project, "--gaia2-output", elsewhere, *MODES[mode])
    assert set(run["seen"]) == _processes(mode)
    assert all(_search_split(seen, project.path) for seen in run["seen"].values())
    assert _inside(run["output"], elsewhere)


@pytest.mark.parametrize("mode", MODES)
def test_scenarios_written_both_ways(project: pytest.Pytester, elsewhere: Path, mode: str) -> None:
    """``--gaia2-scenarios DIR`` moved the rootdir, and with it the default output, to a parent folder."""
    shutil.copytree(SHIPPED, elsewhere / "shipped")
    run = _same_both_ways(project, "--gaia2-scenarios", elsewhere / "shipped", *MODES[mode])
    assert set(run["seen"]) == _processes(mode)
    assert all(_search_split(seen, project.path) for seen in run["seen"].values())
    assert _inside(run["output"], project.path / "gaia2-results")


def _earlier_run(pytester: pytest.Pytester, output: Path) -> Path:
    """A run folder to continue, from a run of its own: the newest folder holding run_config.json
    (else ``output`` itself, which resume then refuses the same way in both forms)."""
    _run(pytester, f"--gaia2-output={output}")
    folders = sorted((path.parent for path in output.rglob("run_config.json")), key=lambda p: p.stat().st_mtime)
    return folders[-1] if folders else output


@pytest.mark.parametrize("mode", MODES)
def test_bare_resume_before_a_spaced_output(project: pytest.Pytester, elsewhere: Path, mode: str) -> None:
    """``--gaia2-resume --gaia2-output /abs/dir`` turned the plugin off without a word."""
    shutil.copytree(SHIPPED, project.path / "scenarios")
    _earlier_run(project, elsewhere)
    run = _same_both_ways(project, "--gaia2-output", elsewhere, *MODES[mode], "--gaia2-resume")
    assert run["spoke"]
    for seen in run["seen"].values():
        assert seen["rootdir"] == str(project.path)


@pytest.mark.parametrize("mode", MODES)
def test_resume_path_written_both_ways(project: pytest.Pytester, elsewhere: Path, mode: str) -> None:
    shutil.copytree(SHIPPED, project.path / "scenarios")
    folder = _earlier_run(project, elsewhere)
    run = _same_both_ways(project, "--gaia2-resume", folder, *MODES[mode], f"--gaia2-output={elsewhere}")
    assert run["spoke"]
    for seen in run["seen"].values():
        assert seen["rootdir"] == str(project.path)
