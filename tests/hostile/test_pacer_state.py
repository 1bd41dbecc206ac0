"""The pacer's state files (pacer.json and its lock) of a hostile or damaged run folder: a link
planted at either, a file that cannot be written, a forged next start. The pacer writes nothing
through a link, never stops the run over its own file, and never holds a start longer than
its longest interval per worker.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pytest_gaia2.run.pacer import LOCK_FILE, MAX_INTERVAL_S, PACER_FILE, Pacer


@pytest.mark.parametrize("planted", [PACER_FILE, LOCK_FILE])
def test_the_pacer_writes_nothing_through_a_link_planted_at_its_files(tmp_path: Path, planted: str) -> None:
    """A resumed run folder with pacer.json (or its lock) a link to a file outside: the outside
    file keeps its bytes, and a forged state there (a start a minute ahead) is never read."""
    folder, outside = tmp_path / "run", tmp_path / "outside.json"
    folder.mkdir()
    forged = json.dumps({"rate": 1.0, "next_start": 4e9}).encode()
    outside.write_bytes(forged)
    (folder / planted).symlink_to(outside)
    waits: list[float] = []
    pacer = Pacer(folder, None, sleep=waits.append)
    pacer.wait_turn()
    pacer.ended(True)
    pacer.wait_turn()
    assert outside.read_bytes() == forged
    assert waits == []
    if planted == PACER_FILE:  # replaced by the pacer's own file, not written through
        assert not (folder / PACER_FILE).is_symlink() and (folder / PACER_FILE).is_file()


def test_a_pacer_file_that_cannot_be_written_leaves_the_start_unpaced(tmp_path: Path) -> None:
    """pacer.json a folder (a damaged run folder resumed): the StoreError of its write stopped the run."""
    (tmp_path / PACER_FILE).mkdir()
    assert Pacer(tmp_path, 10.0, sleep=lambda seconds: None).wait_turn() == 0.0


@pytest.mark.parametrize("workers", [1, 2])
def test_a_forged_next_start_does_not_hold_a_start_for_a_day(tmp_path: Path, workers: int) -> None:
    """A next start a day ahead is not believed (a start would wait up to 24 h): a start waits at
    most one longest interval per worker of the session (every worker queued, one after the other)."""
    (tmp_path / PACER_FILE).write_text(json.dumps({"rate": 1.0, "next_start": time.time() + 86_000}))
    waits: list[float] = []
    Pacer(tmp_path, None, workers=workers, sleep=waits.append).wait_turn()
    assert 0 < max(waits, default=0.0) <= MAX_INTERVAL_S * workers
