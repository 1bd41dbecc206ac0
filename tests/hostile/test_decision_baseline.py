"""``--gaia2-stop-when-decided`` against hostile input: a decision level too small for a double,
a baseline path with escapes in the reason, a baseline larger than a Gaia2 run.

Each test drives the sequential test or the baseline reader directly (no container): a level that
overflows mid-run, a raw escape in the reason every skipped scenario prints, or a baseline read
whole in every process would each fail here.
"""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
from gaia2_testing import raw_controls

from pytest_gaia2.config.values import SMALLEST_LEVEL, OptionError, level
from pytest_gaia2.report.sequential import (
    BASELINE_MAX_BYTES,
    BASELINE_MAX_KEYS,
    BASELINE_MAX_LINES,
    Baseline,
    first_decision,
)
from pytest_gaia2.store.folder import StoreError

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


def test_the_decided_reason_shows_the_baseline_escaped() -> None:
    """The reason every scenario not started gives (pytest prints skip reasons raw) names the baseline."""
    decision = first_decision([(True, False)] * 8, 0.05, "/out/\x1b]0;pwned\x07run")
    assert decision is not None and not raw_controls(decision.reason) and "\\x1b]0;pwned" in decision.reason


# -- a baseline's size ------------------------------------------------------------------------------


def baseline_run(folder: Path, lines: Iterator[str]) -> Path:
    """A baseline run folder whose results.jsonl is ``lines``, written as they come."""
    folder.mkdir()
    (folder / "run_config.json").write_text("{}")
    with (folder / "results.jsonl").open("w") as results:
        results.writelines(lines)
    return folder


def read_measured(folder: Path) -> tuple[Baseline | StoreError, float, int]:
    """Baseline.load's result (or refusal), its seconds of CPU, and its peak of allocated bytes in
    a second read (tracing slows the reader several times over). CPU, not the clock: the work
    a reader does is the same on a machine busy with other tests, its wall time is not."""

    def read() -> Baseline | StoreError:
        try:
            return Baseline.load(folder)
        except StoreError as exc:
            return exc

    started = time.process_time()
    result = read()
    seconds = time.process_time() - started
    tracemalloc.start()
    read()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return result, seconds, peak


def test_a_baseline_of_a_whole_gaia2_run_is_read_keeping_only_its_verdicts(tmp_path: Path) -> None:
    """800 scenarios x 32 repeats of records of about 1.5 KB each (44 MB): every process reads
    the baseline, so it keeps the verdicts alone (a reader of whole records holds about 2 KB a
    record, 110 us each)."""
    padding = "x" * 1400
    lines = (
        json.dumps(
            {
                "scenario_id": f"s{index // 32}",
                "repeat": index % 32 + 1,
                "repeats": 32,
                "outcome": "passed",
                "agent_response": padding,
            }
        )
        + "\n"
        for index in range(BASELINE_MAX_KEYS)
    )
    read, seconds, peak = read_measured(baseline_run(tmp_path / "base", lines))
    assert isinstance(read, Baseline) and len(read.outcomes) == BASELINE_MAX_KEYS
    assert peak < 16 * 2**20, peak  # the whole records: over 50 MB
    assert seconds < 10, seconds


@pytest.mark.parametrize("kind", ["keys", "lines", "bytes"])
def test_a_baseline_larger_than_a_gaia2_run_is_refused_quickly_in_bounded_memory(tmp_path: Path, kind: str) -> None:
    """More scenario runs than 800 x 32, more lines than their attempts or more bytes than their
    records: one error naming the file, before the rest is read (a 75 MB file of small
    records took 68 s and 1.27 GB in every process; the 1 GiB a results file may be, 18 GB)."""
    folder = tmp_path / "base"
    if kind == "keys":
        baseline_run(folder, (f'{{"scenario_id": "s{index}"}}\n' for index in range(BASELINE_MAX_KEYS + 2)))
    elif kind == "lines":
        baseline_run(folder, ('{"scenario_id": "s"}\n' for _ in range(BASELINE_MAX_LINES + 2)))
    else:
        baseline_run(folder, iter(()))
        os.truncate(folder / "results.jsonl", BASELINE_MAX_BYTES + 1)
    read, seconds, peak = read_measured(folder)
    assert isinstance(read, StoreError) and str(read).startswith(f"{folder / 'results.jsonl'}: "), read
    assert {"keys": "scenario runs", "lines": "lines", "bytes": "bytes allowed"}[kind] in str(read)
    assert peak < 16 * 2**20, peak
    assert seconds < 10, seconds
