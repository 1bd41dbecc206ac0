"""Sequential chains (--gaia2-sequence) on the real engine and reference image: the agent's home
travels container to container through the engine API and checkpoints in the run folder.

Scenario 2 answers with what scenario 1's agent wrote into its home (the reference agent's
``gaia2_reference`` remember/recall), so it passes in its chain and fails alone; interrupted
during scenario 3 and resumed, the chain restarts at scenario 3 from scenario 2's checkpoint. A
scenario that ends in error leaves no checkpoint: the next one starts from the state before it."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED, BackgroundRun, gaia2_containers, results_of, run_folder, scenario_variant

from pytest_gaia2.engine.client import SCENARIO_LABEL
from pytest_gaia2.store.kept import CONTAINER_FILES

SOURCE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
ANSWER = "Dr. Priya Raman's phone number is +351 213 555 019."
NOTE = "notes/dentist.txt"
IDS = ("chain_remember", "chain_recall", "chain_recall_late")
CHAIN = "search_universe_21"


def kept(checkpoint: Path) -> dict[str, bytes]:
    """A checkpoint's members by name: it holds one archive and no other file."""
    assert [path.name for path in checkpoint.rglob("*")] == [CONTAINER_FILES]
    with tarfile.open(checkpoint / CONTAINER_FILES) as archive:
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()}  # type: ignore[union-attr]


def chained_scenario(
    root: Path, scenario_id: str, memory: dict[str, object], answer_after: float | None = None
) -> None:
    scenario_variant(root, SOURCE, scenario_id=scenario_id, duration=180.0, answer_after=answer_after)
    path = root / "search" / f"{scenario_id}.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["gaia2_reference"] = memory
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def chain_files(tmp_path: Path) -> tuple[Path, Path]:
    """Three scenarios of universe 21 and the sequence file that chains them."""
    root = tmp_path / "scenarios"
    chained_scenario(root, IDS[0], {"remember": {"path": NOTE, "text": ANSWER}})
    chained_scenario(root, IDS[1], {"recall": NOTE})
    chained_scenario(root, IDS[2], {"recall": NOTE}, answer_after=20.0)
    sequence = tmp_path / "sequence.jsonl"
    chain = {"universe_id": "21", "cap": "search", "scenarios": [{"scenario_id": sid} for sid in IDS]}
    sequence.write_text(json.dumps(chain) + "\n", encoding="utf-8")
    return root, sequence


def test_a_scenario_that_needs_the_carried_home_fails_alone(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult], chain_files: tuple[Path, Path]
) -> None:
    root, _ = chain_files
    alone = run_gaia2(f"--gaia2-scenarios={root}", "-k", f"{IDS[1]} and not late")
    alone.assert_outcomes(failed=1)
    (record,) = results_of(pytester.path / "out")
    assert record["scenario_id"] == IDS[1] and record["outcome"] == "failed"
    assert record["universe_position"] is None


@pytest.mark.slow
def test_a_chain_carries_the_home_and_resumes_at_its_first_scenario_without_a_verdict(
    pytester: pytest.Pytester,
    start_gaia2: Callable[..., BackgroundRun],
    run_gaia2: Callable[..., pytest.RunResult],
    chain_files: tuple[Path, Path],
) -> None:
    root, sequence = chain_files
    args = (f"--gaia2-scenarios={root}", f"--gaia2-sequence={sequence}", "-n", "2")
    first = start_gaia2(*args)
    run_id = first.run_id()

    def two_judged_third_running() -> bool:
        done = {r["scenario_id"] for r in first.results()}
        return done == set(IDS[:2]) and any(c.labels.get(SCENARIO_LABEL) == IDS[2] for c in gaia2_containers(run_id))

    first.interrupt_when("two verdicts and the third container", two_judged_third_running, timeout=180)
    folder = run_folder(first.output)
    records = {r["scenario_id"]: r for r in results_of(first.output)}
    assert {sid: r["outcome"] for sid, r in records.items()} == {IDS[0]: "passed", IDS[1]: "passed", IDS[2]: "error"}
    assert [records[sid]["universe_position"] for sid in IDS] == [0, 1, 2]
    checkpoints = folder / "chains" / CHAIN
    assert sorted(p.name for p in checkpoints.iterdir()) == ["0000", "0001"]  # the errored third wrote none
    for position in ("0000", "0001"):
        members = kept(checkpoints / position)
        assert members[f"home/{NOTE}"].decode() == ANSWER and "app_state/contacts.json" in members

    resumed = run_gaia2(*args, "--gaia2-resume")
    resumed.assert_outcomes(passed=3)
    records = {r["scenario_id"]: r for r in results_of(pytester.path / "out")}
    assert run_folder(pytester.path / "out") == folder
    assert {sid for sid, r in records.items() if r["reused"]} == set(IDS[:2])  # not run again
    late = records[IDS[2]]
    assert late["outcome"] == "passed" and late["universe_position"] == 2 and late["attempt"] == 2
    assert late["agent_response"] == ANSWER  # recalled from scenario 1's note, carried through checkpoint 0001
    assert f"home/{NOTE}" in kept(checkpoints / "0002")


def test_an_errored_scenario_does_not_advance_its_chain(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult], tmp_path: Path
) -> None:
    """Scenario 2 overwrites the note, then goes idle and ends in error: scenario 3 starts from
    scenario 1's checkpoint, recalls scenario 1's note and passes."""
    root = tmp_path / "scenarios"
    ids = ("chain_first", "chain_idle", "chain_after_error")
    chained_scenario(root, ids[0], {"remember": {"path": NOTE, "text": ANSWER}})
    chained_scenario(root, ids[1], {"remember": {"path": NOTE, "text": "a wrong number"}}, answer_after=120.0)
    chained_scenario(root, ids[2], {"recall": NOTE})
    sequence = tmp_path / "sequence.jsonl"
    sequence.write_text(
        json.dumps({"universe_id": "21", "scenarios": [{"scenario_id": sid} for sid in ids]}) + "\n", encoding="utf-8"
    )
    result = run_gaia2(
        f"--gaia2-scenarios={root}", f"--gaia2-sequence={sequence}", "--gaia2-idle-timeout=6", "--gaia2-retries=0"
    )
    records = {r["scenario_id"]: r for r in results_of(pytester.path / "out")}
    assert [(records[sid]["outcome"], records[sid]["error_category"]) for sid in ids] == [
        ("passed", None),
        ("error", "idle_timeout"),
        ("passed", None),
    ], result.stdout.str()
    assert records[ids[2]]["agent_response"] == ANSWER
    checkpoints = run_folder(pytester.path / "out") / "chains" / "universe_21"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["0000", "0002"]
