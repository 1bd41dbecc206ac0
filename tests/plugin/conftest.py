"""Plugin fixtures shared by more than one module of tests/plugin."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from gaia2_testing import DATA, gaia2_containers, stored_record, stored_verdict

MANY = DATA / "scenarios" / "many" / "search"
MALFORMED = DATA / "scenarios" / "malformed"
UNREADABLE = ("not_json.json", "not_object.json", "missing_id.json", "events_not_list.json")


@pytest.fixture
def stored_run(pytester: pytest.Pytester, run_gaia2_inprocess) -> Callable[..., pytest.RunResult]:
    """Scenario files plus stored verdicts (``passed`` then ``failed``, each ``repeats`` times in
    gaia2-runner's ``run_<k>`` layout), ``unstored`` scenario files without one (they would start
    a container) and ``errors`` unreadable files; returns a runner that resumes them with extra
    options and checks no container is left."""

    def store_verdict(source: Path, success: bool, repeat: int, repeats: int) -> None:
        record = stored_record(source, success, repeat, repeats)
        folder = pytester.path / "run" / (f"run_{repeat}" if repeats > 1 else "") / "search" / source.stem
        folder.mkdir(parents=True)
        stored_verdict(folder, record)

    def prepare(
        passed: int, failed: int, errors: int = 0, unstored: int = 0, repeats: int = 1
    ) -> Callable[..., pytest.RunResult]:
        split = pytester.path / "scenarios" / "search"
        split.mkdir(parents=True)
        for index, source in enumerate(sorted(MANY.glob("*.json"))[: passed + failed]):
            shutil.copy(source, split)
            success = index < passed
            for repeat in range(1, repeats + 1):
                store_verdict(source, success, repeat, repeats)
        for source in sorted(MANY.glob("*.json"))[passed + failed : passed + failed + unstored]:
            shutil.copy(source, split)
        (pytester.path / "run" / "run_config.json").write_text(json.dumps({"run_id": "stored"}), encoding="utf-8")
        broken = pytester.path / "scenarios" / "broken"
        broken.mkdir()
        for name in UNREADABLE[:errors]:
            shutil.copy(MALFORMED / name, broken)

        def run(*args: str) -> pytest.RunResult:
            result = run_gaia2_inprocess("--gaia2-scenarios=scenarios", "--gaia2-resume=run", *args)
            sessions = pytester.path / "run" / "sessions.jsonl"
            for line in sessions.read_text(encoding="utf-8").splitlines() if sessions.is_file() else []:
                assert gaia2_containers(json.loads(line)["session_id"]) == []
            return result

        return run

    return prepare
