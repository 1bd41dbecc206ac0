"""``pytest-gaia2 compare`` and ``merge`` on real runs of the shipped search scenarios.

Each run replaces the reference image's oracle with a scripted agent that gives one scenario's
right answer to every scenario: that scenario passes, the others are judged failures. Two runs
with agents answering different scenarios therefore disagree on known ids, which the
comparison must name exactly; and one agent's run cut into two disjoint halves, merged, must
count what its unsharded run counted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED, console, file_sums, made_once, results_of, run_folder, run_pytest

SEARCH_IDS = sorted(path.stem for path in (SHIPPED / "search").glob("*.json"))
RIGHT_IN_A = "scenario_universe_21_7kww6e"
RIGHT_IN_B = "scenario_universe_24_zqzvsf"
FIRST_HALF = [RIGHT_IN_A, RIGHT_IN_B]
SECOND_HALF = [sid for sid in SEARCH_IDS if sid not in FIRST_HALF]


def answering(folder: Path, scenario_id: str) -> Path:
    """A one-line agent script that sends ``scenario_id``'s oracle answer (right only for that scenario)."""
    data = json.loads((SHIPPED / "search" / f"{scenario_id}.json").read_text(encoding="utf-8"))
    (answer,) = [event["action"]["args"][0]["value"] for event in data["events"] if event["event_type"] == "AGENT"]
    script = folder / f"answer-{scenario_id}.jsonl"
    script.write_text(json.dumps({"app": "AgentUserInterface", "fn": "send_message_to_user",
                                  "args": {"content": answer}}) + "\n", encoding="utf-8")
    return script


def scripted_run(folder: Path, right: str, *selection: str) -> Path:
    """The shipped search split (or ``selection``'s part of it) with an agent right only on ``right``;
    the run folder it wrote."""
    folder.mkdir(parents=True, exist_ok=True)
    script = answering(folder, right)
    result = run_pytest(folder, "-n", "2", f"--gaia2-scenarios={SHIPPED}", "-m", "search_split", *selection,
                        f"--gaia2-copy-in={script}:/tmp/agent-script.jsonl",
                        "--gaia2-env=GAIA2_AGENT_SCRIPT=/tmp/agent-script.jsonl")
    ran = [sid for sid in SEARCH_IDS if not selection or sid in " ".join(selection)]
    assert result.parseoutcomes().get("passed", 0) == (right in ran), "\n".join(result.outlines)
    assert result.parseoutcomes().get("failed", 0) == len(ran) - (right in ran), "\n".join(result.outlines)
    return run_folder(folder / "out")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The four runs at once (each in a folder of its own, as independent runs are): one after
    the other they took a minute, mostly waiting on their containers."""
    plans = {
        "a": (RIGHT_IN_A,),
        "b": (RIGHT_IN_B,),
        "half1": (RIGHT_IN_A, "-k", " or ".join(FIRST_HALF)),
        "half2": (RIGHT_IN_A, "-k", " or ".join(SECOND_HALF)),
    }

    def make(root: Path) -> None:
        with ThreadPoolExecutor(len(plans)) as pool:
            for started in [pool.submit(scripted_run, root / name, *plan) for name, plan in plans.items()]:
                started.result()

    root = made_once(tmp_path_factory, "compare-merge", make)
    return {name: run_folder(root / name / "out") for name in plans}


@pytest.mark.slow
def test_compare_finds_exactly_the_discordant_ids(runs: dict[str, Path], tmp_path: Path) -> None:
    report = tmp_path / "compare.json"
    done = console("compare", runs["a"], runs["b"], "--format", "json", "--output", report)
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    (pair,) = data["comparisons"]
    expected = {"both_passed": [], "only_a_passed": [f"search/{RIGHT_IN_A}"],
                "only_b_passed": [f"search/{RIGHT_IN_B}"],
                "neither_passed": [f"search/{sid}" for sid in SECOND_HALF]}
    assert pair["strict"]["cells"] == expected
    assert pair["judged"]["cells"] == expected  # every pair was judged in both runs
    assert (pair["strict"]["delta"], pair["judged_left_out"], data["matched"]) == (0, 0, len(SEARCH_IDS))
    assert pair["strict"]["mcnemar_exact_p"] == 1.0
    assert data["missing"] == {"A": [], "B": []}
    assert data["warnings"] == []  # same image, judge and scenario files: only the agent differs

    # The gate as CI runs it: the command's own process and its exit status.
    markdown = subprocess.run([sys.executable, "-m", "pytest_gaia2.cli", "compare", str(runs["a"]), str(runs["b"]),
                               "--fail-if-worse", "0.1"], check=False, capture_output=True, text=True, timeout=120)
    assert markdown.returncode == 0, markdown.stderr
    assert f"- passed in A only (1): search/{RIGHT_IN_A}" in markdown.stdout
    assert f"- passed in B only (1): search/{RIGHT_IN_B}" in markdown.stdout


def test_two_halves_merged_count_what_the_whole_run_counted(runs: dict[str, Path], tmp_path: Path) -> None:
    pieces = [runs["half1"], runs["half2"]]
    before = [file_sums(piece) for piece in pieces]
    out = tmp_path / "merged"
    # Each half copied its own script file in (same answers, another path): a setting that differs.
    refused = console("merge", out, *pieces)
    assert refused.returncode == 2 and "settings.copy_in" in refused.stderr and not out.exists()
    done = console("merge", out, *pieces, "--allow-mixed")
    assert done.returncode == 0, done.stderr
    assert [file_sums(piece) for piece in pieces] == before
    merged = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    whole = json.loads((runs["a"] / "summary.json").read_text(encoding="utf-8"))
    counted = ("planned", "done", "total", "passed", "failed", "errors", "not_run", "complete")
    assert {key: merged[key] for key in counted} == {key: whole[key] for key in counted}
    assert (merged["passed"], merged["failed"], merged["planned"]) == (1, len(SEARCH_IDS) - 1, len(SEARCH_IDS))
    assert merged["strict"] == whole["strict"] and merged["splits"] == whole["splits"]
    assert sorted(r["scenario_id"] for r in results_of(out)) == SEARCH_IDS
    for sid in SEARCH_IDS:  # every scenario folder, with what the container left
        assert (out / "search" / sid / "events.jsonl").is_file()
        assert (out / "search" / sid / "daemon_status.json").is_file()
        assert (out / "search" / sid / "trace.html").is_file()
    index = (out / "index.html").read_text(encoding="utf-8")  # the merged run's own index, linking each trace
    assert all(f'href="search/{sid}/trace.html"' in index for sid in SEARCH_IDS), index[:2000]
    config = json.loads((out / "run_config.json").read_text(encoding="utf-8"))
    assert [piece["path"] for piece in config["merged_from"]] == [str(piece) for piece in pieces]
    assert [piece["run_config"]["keyword"] for piece in config["merged_from"]] == [
        " or ".join(FIRST_HALF), " or ".join(SECOND_HALF)]

    # The merged folder compares with the whole run as an equal: no discordant pair. With B
    # as a third run, every scenario gets its pattern.
    three = console("compare", runs["a"], out, runs["b"], "--format", "json")
    assert three.returncode == 0, three.stderr
    data = json.loads(three.stdout)
    assert data["comparisons"][0]["strict"]["cells"]["only_a_passed"] == []
    assert data["comparisons"][0]["strict"]["cells"]["only_b_passed"] == []
    assert data["patterns"] == {f"search/{RIGHT_IN_A}": "PPF", f"search/{RIGHT_IN_B}": "FFP",
                                **{f"search/{sid}": "FFF" for sid in SECOND_HALF}}
