"""One process's progress board with several scenarios in flight (``--gaia2-in-flight``): their
phase changes come from threads at once, and the board stays whole and right."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from pytest_gaia2.store.phases import PhaseBoard, running


def test_phase_changes_from_many_threads_leave_a_whole_board(tmp_path: Path) -> None:
    board = PhaseBoard(tmp_path, "main")
    failures: list[BaseException] = []

    def scenario(key: str) -> None:
        try:
            for step in range(40):
                board.set(key, f"phase {step}", attempt=1)
            if key.endswith(("0", "2", "4", "6")):
                board.clear(key)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            failures.append(exc)

    threads = [threading.Thread(target=scenario, args=(f"search/s{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert sorted(entry["key"] for entry in running(tmp_path)) == ["search/s1", "search/s3", "search/s5", "search/s7"]
    assert all(entry["phase"] == "phase 39" for entry in running(tmp_path))
    assert [p.name for p in tmp_path.iterdir()] == ["progress.main.json"], "no temporary file left behind"
    assert json.loads((tmp_path / "progress.main.json").read_text())["worker"] == "main"
