"""The stop-when-decided test, the pacer's files and the report's reads against hostile input:
a decision level too small for a double, links planted at pacer.json and its lock, a
summary.json that names one big scenario file by a thousand spellings, and a category name
that sends an escape through a plot's glyph warning.

Each test drives the reader or writer directly (no container); each fails on the code before
its fix (a traceback mid-run, a file read a thousand times, a raw escape on the terminal), or
pins a defence no other test covered (no write through a link at the pacer's files).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_gaia2.config.values import SMALLEST_LEVEL, OptionError, level
from pytest_gaia2.report.sequential import first_decision
from pytest_gaia2.run.pacer import LOCK_FILE, PACER_FILE, Pacer

# -- --gaia2-decision-level ----------------------------------------------------------------------


@pytest.mark.parametrize("raw", ["5e-324", "1e-320", "1e-7"])
def test_a_decision_level_too_small_to_decide_at_is_refused(raw: str) -> None:
    """5e-324 passed as "above 0": its threshold -log(level) is 744, and the first decision's
    ``exp`` of a ratio that high raised OverflowError in the worker, after a thousand pairs."""
    with pytest.raises(OptionError, match="the smallest level a test decides at"):
        level("decision-level", raw)


def test_at_the_smallest_level_a_long_one_way_run_decides_with_a_finite_ratio() -> None:
    decision = first_decision([(False, True)] * 5000, level("decision-level", str(SMALLEST_LEVEL)))
    assert decision is not None and decision.better == decision.pairs
    json.dumps(decision.to_dict(), allow_nan=False)


# -- pacer.json and pacer.json.lock --------------------------------------------------------------


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
