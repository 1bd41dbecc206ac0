"""--gaia2-stop-when-decided: a run compared with a baseline run folder stops starting scenarios
once the sequential test decides, says so (terminal, summary.json), and a resume keeps to it; a
baseline that cannot serve is one usage error before anything starts.

The current run's verdicts are stored ones a resume reports again (the ``stored_run`` fixture), in
file order: the scenarios after the deciding one have none, so each would start a container if
the run did not stop; none does (their folders are never made).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import MANY


def baseline(root: Path, outcomes: list[str]) -> Path:
    """A baseline run folder: run_config.json and results.jsonl, one verdict per scenario of MANY in order."""
    folder = root / "base"
    folder.mkdir()
    ids = [source.stem for source in sorted(MANY.glob("*.json"))[: len(outcomes)]]
    (folder / "run_config.json").write_text(json.dumps({"planned": [f"search/{sid}" for sid in ids]}))
    lines = [
        json.dumps({"scenario_id": sid, "split": "search", "run": 1, "attempt": 1, "outcome": outcome})
        for sid, outcome in zip(ids, outcomes, strict=True)
    ]
    (folder / "results.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_a_run_worse_than_its_baseline_stops_starting_scenarios_and_a_resume_keeps_to_it(
    pytester: pytest.Pytester, stored_run
) -> None:
    """Baseline: 13 passed. This run: 2 passed, then 8 failed (eight discordant pairs one way:
    likelihood ratio 2^8/9 = 28.4 >= 1/0.05), then 3 scenarios that never start."""
    base = baseline(pytester.path, ["passed"] * 13)
    run = stored_run(passed=2, failed=8, unstored=3)
    options = (f"--gaia2-stop-when-decided={base}", "--gaia2-order=file")
    for _ in range(2):  # the run, then a resume of it: the decision stands
        result = run(*options)
        result.assert_outcomes(passed=2, failed=8, skipped=3)
        reason = (
            f"decided: worse than baseline {base}: 0 better, 8 worse of 10 judged pairs "
            "(sequential test at level 5.0%); no new scenario starts"
        )
        result.stdout.fnmatch_lines([f"gaia2: stopped: {reason}", f"gaia2: 3 not started ({reason}): *"])
        assert result.outlines[-1] == (  # the last line, after pytest's own
            "gaia2: INCOMPLETE: 3 of 13 planned scenarios did not run; stopped early: "
            + reason.removesuffix("; no new scenario starts"))
        stop = json.loads((pytester.path / "run" / "summary.json").read_text())["stop"]
        assert stop["stopped"] is True and stop["reason"] == reason
        assert [item["why"] for item in stop["not_started"]] == [reason] * 3
        assert stop["decided"] == {
            "direction": "worse",
            "worse": 8,
            "better": 0,
            "pairs": 10,
            "looked": 10,
            "level": 0.05,
            "likelihood_ratio": round(2**8 / 9, 6),
            "test": "mixture-sprt-beta11-discordant",
            "unit": "pairs",
            "baseline": str(base),
        }
        for sources in sorted(MANY.glob("*.json"))[10:13]:
            assert not (pytester.path / "run" / "search" / sources.stem).exists()


def test_an_undecided_comparison_stops_nothing(pytester: pytest.Pytester, stored_run) -> None:
    """Seven discordant pairs one way (likelihood ratio 16 < 1/0.05) decide nothing."""
    base = baseline(pytester.path, ["passed"] * 7)
    result = stored_run(passed=0, failed=7)(f"--gaia2-stop-when-decided={base}")
    result.assert_outcomes(failed=7)
    assert "gaia2: stopped:" not in result.stdout.str()
    assert json.loads((pytester.path / "run" / "summary.json").read_text())["stop"]["decided"] is None


def test_the_decision_level_sets_where_it_decides(pytester: pytest.Pytester, stored_run) -> None:
    """The same seven pairs at level 10%: 16 >= 1/0.1, so the eighth scenario never starts."""
    base = baseline(pytester.path, ["passed"] * 8)
    run = stored_run(passed=0, failed=7, unstored=1)
    result = run(f"--gaia2-stop-when-decided={base}", "--gaia2-decision-level=0.1", "--gaia2-order=file")
    result.assert_outcomes(failed=7, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "gaia2: stopped: decided: worse than baseline *: 0 better, 7 worse of 7 judged "
            "pairs (sequential test at level 10.0%); no new scenario starts"
        ]
    )


@pytest.mark.parametrize(
    ("setup", "option", "message"),
    [
        (
            "missing",
            "--gaia2-stop-when-decided=nowhere",
            "ERROR: --gaia2-stop-when-decided: *nowhere is not a run folder (no run_config.json)",
        ),
        (
            "damaged",
            "--gaia2-stop-when-decided=base",
            "ERROR: --gaia2-stop-when-decided: *base/results.jsonl: line 1: *",
        ),
        (
            "unrelated",
            "--gaia2-stop-when-decided=base",
            "ERROR: --gaia2-stop-when-decided: the baseline * judged none of the 2 planned scenarios*",
        ),
        (
            "self",
            "--gaia2-stop-when-decided=run",
            "ERROR: --gaia2-stop-when-decided: *run is the run folder this run writes into; the baseline is an earlier run",
        ),
        ("ok", "--gaia2-decision-level=0", "ERROR: --gaia2-decision-level: expected a fraction above 0 and below 1*"),
    ],
)
def test_a_baseline_that_cannot_serve_is_one_usage_error_before_anything_starts(
    pytester: pytest.Pytester, stored_run, setup: str, option: str, message: str
) -> None:
    run = stored_run(passed=2, failed=0)
    base = baseline(pytester.path, ["passed"] * 2)
    if setup == "damaged":
        (base / "results.jsonl").write_text("{not json\n")
    if setup == "unrelated":
        (base / "results.jsonl").write_text(
            json.dumps({"scenario_id": "other", "split": "search", "run": 1, "attempt": 1, "outcome": "passed"}) + "\n"
        )
    if setup == "self":
        (pytester.path / "run" / "results.jsonl").write_text((base / "results.jsonl").read_text())
    result = run(option)
    result.stderr.fnmatch_lines([message])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert not (pytester.path / "run" / "summary.json").exists()


def test_a_baseline_named_with_escapes_reaches_the_terminal_escaped(pytester: pytest.Pytester, stored_run) -> None:
    """An output folder whose latest run is named ``...ESC]0;pwned BEL...`` (its ``latest`` link
    says so): the usage error naming it set the terminal's title (pytest prints a usage error
    raw), and so would every skipped scenario's reason once decided."""
    run = stored_run(passed=2, failed=0)
    output = pytester.path / "out"
    output.mkdir()
    base = baseline(pytester.path, ["passed"] * 2).rename(output / "20260101T000000Z-\x1b]0;pwned\x07x")
    (output / "latest").symlink_to(base.name)
    (base / "results.jsonl").write_text("{not json\n")
    result = run(f"--gaia2-stop-when-decided={output}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "\x1b" not in result.stderr.str() and "\\x1b]0;pwned\\x07x/results.jsonl: line 1" in result.stderr.str()


@pytest.mark.docker
def test_verdicts_a_resume_runs_again_decide_nothing(pytester: pytest.Pytester, stored_run) -> None:
    """The earlier session judged both scenarios failed, on scenario files since changed (their
    records' scenario_sha256 is another; the resume is told to go on): it runs both again, so those verdicts make no
    pair. Before, they decided 'worse' against the baseline's two passes at level 90% (likelihood
    ratio 4/3 >= 1/0.9) and neither scenario started; now both run (the oracle passes) and nothing
    is decided."""
    base = baseline(pytester.path, ["passed"] * 2)
    run = stored_run(passed=0, failed=2)
    stale = []
    for stored in sorted((pytester.path / "run").glob("search/*/result.json")):
        stale.append(json.dumps({**json.loads(stored.read_text()), "scenario_sha256": "0" * 64}))
        stored.write_text(stale[-1])
    (pytester.path / "run" / "results.jsonl").write_text("\n".join(stale) + "\n")
    options = ("--gaia2-decision-level=0.9", "--gaia2-order=file", "--gaia2-resume-mismatch=warn")
    result = run(f"--gaia2-stop-when-decided={base}", *options)
    result.assert_outcomes(passed=2)
    assert "decided" not in result.stdout.str()
    assert json.loads((pytester.path / "run" / "summary.json").read_text())["stop"]["decided"] is None
