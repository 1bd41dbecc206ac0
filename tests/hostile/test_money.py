"""Money from hostile traces and damaged ledgers, on real containers: an image built FROM the
reference image plants the trace.jsonl a test gives it (base64 in ``PLANTED_TRACE``) before
the real entrypoint runs, so the host reads exactly those usage numbers.

(a) costs of 1e308 never become Infinity: every file stays readable, the halt still works and a
    resume re-runs nothing judged; (b) a torn ledger loses only its torn line, with a warning;
    (c) the spend of an interrupted attempt is in the ledger once and counts after resume: in the
    halt, and in the totals (spend.jsonl, summary.json, the terminal and report.md) beside the
    attempt that replaced it.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest
from gaia2_testing import (
    SHIPPED,
    BackgroundRun,
    derived_image,
    gaia2_containers,
    results_of,
    run_folder,
    scenario_variant,
)

from pytest_gaia2.cost.budget import LEDGER_FILE, Ledger
from pytest_gaia2.store.folder import RunFolder
from pytest_gaia2.store.phases import running

ONE_FILE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"  # one agent call: its answer
PER_SCENARIO = 1.2
"""One call of 1,000,000 prompt and 100,000 completion tokens at $1 and $2 per million."""
PRICED_USAGE = ("--gaia2-env=GAIA2_REF_USAGE=1000000,100000,0", "--gaia2-env=MODEL=bench-model")
PLANT = """#!/usr/bin/bash
python3 -c 'import base64, os; open("/tmp/trace.jsonl", "wb").write(base64.b64decode(os.environ["PLANTED_TRACE"]))'
exec bash /opt/gaia2-real-entrypoint.sh "$@"
"""
IMAGE = "pytest-gaia2-test/planted-trace-oracle:1"
"""An oracle image by its name: no agent model to configure."""
JUDGE = ("--gaia2-judge-provider=none", "--gaia2-judge-model=none")


def llm_call(usage: dict[str, Any], model: str = "bench-model") -> dict[str, Any]:
    """A Format A trace line whose response reports ``usage``."""
    body = {"object": "chat.completion", "model": model, "choices": [], "usage": usage}
    return {"type": "llm_call", "request": {"model": model}, "raw_response": json.dumps(body)}


def planted(*lines: dict[str, Any]) -> str:
    trace = "".join(json.dumps(line) + "\n" for line in lines).encode()
    return f"--gaia2-env=PLANTED_TRACE={base64.b64encode(trace).decode()}"


HOSTILE_TRACE = planted(
    llm_call({"prompt_tokens": 1, "completion_tokens": 1, "cost": 1e308}),
    llm_call({"prompt_tokens": 1, "completion_tokens": 1, "cost": 1e308}),  # the two added were Infinity
    llm_call({"prompt_tokens": 10**400, "completion_tokens": 1e308, "cost": 1e308}),
)
PRICED_TRACE = planted(llm_call({"prompt_tokens": 1_000_000, "completion_tokens": 100_000}))


@pytest.fixture(scope="module")
def planting_image() -> str:
    derived_image(IMAGE, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-real-entrypoint.sh",
                  "COPY plant.sh /opt/gaia2-init-entrypoint.sh", files={"plant.sh": PLANT.encode()})
    return IMAGE


@pytest.fixture
def priced(pytester: pytest.Pytester, run_gaia2: Any, run_gaia2_inprocess: Any) -> Callable[..., pytest.RunResult]:
    """A run of the variants, priced; one that starts no scenario container (``no_container``: its
    verdicts stored, the rest stopped by the budget) runs in this process."""
    prices = pytester.path / "prices.json"
    prices.write_text(json.dumps({"bench-model": {"input": 1.0, "output": 2.0}}))

    def run(*args: str, no_container: bool = False) -> pytest.RunResult:
        runner = run_gaia2_inprocess if no_container else run_gaia2
        return runner("--gaia2-scenarios=variants", f"--gaia2-price-file={prices}", *args)

    return run


def _scenarios(pytester: pytest.Pytester, first: int, count: int) -> None:
    for n in range(first, first + count):
        scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id=f"scenario_universe_{21 + n}_money{n:02d}")


def _json_files(folder: Path) -> list[Path]:
    return [path for path in folder.rglob("*") if path.is_file() and path.suffix in {".json", ".jsonl"}
            and path.name != "trace.jsonl"]


def test_costs_of_1e308_are_refused_never_infinite_and_resume_reruns_nothing_judged(
    pytester: pytest.Pytester, priced: Any, planting_image: str
) -> None:
    _scenarios(pytester, 0, 2)
    hostile = priced(f"--gaia2-image={planting_image}", *JUDGE, HOSTILE_TRACE)
    hostile.assert_outcomes(passed=2)
    folder = run_folder(pytester.path / "out")
    for path in _json_files(folder):
        data = path.read_bytes()
        assert b"Infinity" not in data and b"NaN" not in data, path
        if path.suffix == ".json":
            json.loads(data)
    records = results_of(pytester.path / "out")
    assert all(r["cost_usd"] is None and r["cost_source"].startswith(
        "refused: trace.jsonl, llm_call 1: usage.cost is 1e+308, not a cost in USD up to 1e+06 a call") for r in records)
    assert all(r["usage"]["refused"][2].startswith("trace.jsonl, llm_call 3: usage.prompt_tokens is an integer")
               for r in records)
    assert hostile.stdout.str().count("its cost is unknown (not counted in the run's spend)") == 2
    hostile.stdout.fnmatch_lines(["cost: $0.00 over 0 priced scenario(s), 2 with cost unknown "
                                  "(2 refused as out of range)"])
    assert len(list(RunFolder(folder).records())) == 2
    assert all(RunFolder.read_record(folder / r["folder"]) is not None for r in records)
    # Resumed with a halt: the refused two are not run again, and their unknown cost is not free:
    # with no priced attempt to stand in for it, the budget stops the run before anything new.
    _scenarios(pytester, 2, 3)
    resumed = priced("--gaia2-resume", "--gaia2-resume-mismatch=warn", "--gaia2-budget-halt=2.0", *PRICED_USAGE,
                     no_container=True)
    outcomes = resumed.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("skipped")) == (2, 3), outcomes
    assert Ledger(folder).read().unknown == tuple(sorted(f"{r['split']}/{r['scenario_id']}#1" for r in records))
    resumed.stdout.fnmatch_lines(["*budget: the cost of 2 attempt(s) is unknown (usage out of range)*"])
    assert not any((folder / r["folder"] / "attempt_2").exists() for r in records)


def test_a_torn_ledger_keeps_its_whole_lines_and_says_what_it_lost(
    pytester: pytest.Pytester, priced: Any
) -> None:
    _scenarios(pytester, 0, 2)
    priced(*PRICED_USAGE).assert_outcomes(passed=2)
    folder = run_folder(pytester.path / "out")
    ledger = folder / LEDGER_FILE
    lines = ledger.read_bytes().splitlines(keepends=True)
    assert len(lines) == 2
    torn = lines[0] + lines[1][:10]
    ledger.write_bytes(torn)
    _scenarios(pytester, 2, 1)
    resumed = priced("--gaia2-resume", *PRICED_USAGE, "--gaia2-budget-halt=100")
    resumed.assert_outcomes(passed=3)
    resumed.stdout.fnmatch_lines([f"gaia2: warning: spend ledger: {ledger}: damaged line(s) 2 skipped; "
                                  "kept 1 entries ($1.20)"])
    assert ledger.read_bytes().startswith(torn)  # appended to, never rewritten
    # the whole line's $1.20, the torn line's $1.20 (its record carries it) and the new one's
    assert Ledger(folder).total() == pytest.approx(3 * PER_SCENARIO)


def test_an_interrupted_attempts_spend_is_in_the_ledger_once_and_counts_after_resume(
    pytester: pytest.Pytester, start_gaia2: Callable[..., BackgroundRun], priced: Any, planting_image: str
) -> None:
    scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id="scenario_universe_30_zzslow",
                     answer_after=900)
    run = start_gaia2("--gaia2-scenarios=variants", f"--gaia2-price-file={pytester.path / 'prices.json'}",
                      f"--gaia2-image={planting_image}", *JUDGE, PRICED_TRACE, "--gaia2-env=MODEL=bench-model")

    def spending() -> bool:
        """The harness holds the container (its phase is past starting: an interrupt during the
        launch finds no container to collect) and the trace is in it."""
        found = gaia2_containers(run.run_id())
        phases = [entry.get("phase") for entry in running(run_folder(pytester.path / "out"))]
        try:
            return (bool(found) and phases not in ([], ["starting"])
                    and found[0].exec_run(["test", "-s", "/tmp/trace.jsonl"]).exit_code == 0)
        except docker.errors.APIError:  # listed, then stopped before the exec: not yet (or no longer) spending
            return False

    run.interrupt_when("the container with its trace", spending)
    folder = run_folder(pytester.path / "out")
    record = json.loads((folder / "search" / "scenario_universe_30_zzslow" / "result.json").read_text())
    assert record["error_category"] == "interrupted" and record["cost_usd"] == pytest.approx(PER_SCENARIO)
    lines = (folder / LEDGER_FILE).read_text().splitlines()
    assert [json.loads(line)["entry"] for line in lines] == ["search/scenario_universe_30_zzslow#1"]
    # Resumed under a halt the interrupted attempt's spend already reached: nothing starts.
    resumed = priced("--gaia2-resume", f"--gaia2-image={planting_image}", *JUDGE, PRICED_TRACE,
                     "--gaia2-env=MODEL=bench-model", "--gaia2-budget-halt=1.0", "-rs", no_container=True)
    resumed.assert_outcomes(skipped=1)
    resumed.stdout.fnmatch_lines(["*budget: the run has spent $1.20, its halt is $1.00*"])
    assert (folder / LEDGER_FILE).read_text().splitlines() == lines
    # Resumed again with room in the halt (and the scenario now answering at once): attempt 2
    # runs and pays $1.20 more. Attempt 1's $1.20 is in the ledger and every total once, beside
    # attempt 2's, though attempt 2's record replaced attempt 1's as the result.
    scenario_variant(pytester.path / "variants", ONE_FILE, scenario_id="scenario_universe_30_zzslow")
    again = priced("--gaia2-resume", "--gaia2-resume-mismatch=warn", f"--gaia2-image={planting_image}", *JUDGE,
                   PRICED_TRACE, "--gaia2-env=MODEL=bench-model", "--gaia2-budget-halt=3.0", "--gaia2-report")
    again.assert_outcomes(passed=1)
    entries = [json.loads(line) for line in (folder / LEDGER_FILE).read_text().splitlines()]
    assert [entry["entry"] for entry in entries] == [f"search/scenario_universe_30_zzslow#{n}" for n in (1, 2)]
    assert Ledger(folder).total() == pytest.approx(2 * PER_SCENARIO)
    again.stdout.fnmatch_lines([f"cost: ${PER_SCENARIO:.2f} over 1 priced scenario(s); "
                                f"run spend ${2 * PER_SCENARIO:.2f} (halt $3.00)"])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["cost"]["usd"] == pytest.approx(PER_SCENARIO)  # the result's: attempt 2
    assert summary["stop"]["spent_usd"] == pytest.approx(2 * PER_SCENARIO) and summary["complete"] is True
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert f"every attempt, retries included (spend.jsonl): ${2 * PER_SCENARIO:.2f}" in report
    assert f"${PER_SCENARIO:.2f} on attempts a later attempt replaced" in report
    assert f"- budget: halt $3.00, cap none, spent ${2 * PER_SCENARIO:.2f}" in report
    assert [record["outcome"] for record in results_of(pytester.path / "out")] == ["passed"]  # one result


def test_a_zeroed_ledger_still_halts(pytester: pytest.Pytester, priced: Any) -> None:
    """spend.jsonl rewritten with ``usd: 0`` for every attempt (and one ahead of the next) cannot
    switch the budget off: the records carry their cost, the larger counts and the file is named."""
    _scenarios(pytester, 0, 2)
    priced(*PRICED_USAGE).assert_outcomes(passed=2)
    folder = run_folder(pytester.path / "out")
    ledger = folder / LEDGER_FILE
    entries = [json.loads(line)["entry"] for line in ledger.read_text().splitlines()]
    ahead = ["search/scenario_universe_23_money02#1", "search/scenario_universe_24_money03#1"]
    ledger.write_text("".join(json.dumps({"entry": entry, "usd": 0}) + "\n" for entry in [*entries, *ahead]))
    _scenarios(pytester, 2, 2)
    resumed = priced("--gaia2-resume", *PRICED_USAGE, "--gaia2-budget-halt=2.0", "-rs", no_container=True)
    outcomes = resumed.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("skipped")) == (2, 2), outcomes  # the two stored; none new
    resumed.stdout.fnmatch_lines([f"gaia2: warning: spend ledger: {ledger}: 2 entries below the cost their records "
                                  "carry (ledger $0.00, records $2.40): the records' cost counts*",
                                  "*budget: the run has spent $2.40, its halt is $2.00*"])
    assert Ledger(folder).total() == pytest.approx(2 * PER_SCENARIO)
    # With room in the halt the next scenario runs, and its spend is appended beside the planted 0.
    again = priced("--gaia2-resume", *PRICED_USAGE, "--gaia2-budget-halt=3.0")
    assert again.parseoutcomes().get("passed") == 3, again.stdout.str()
    lines = [json.loads(line) for line in ledger.read_text().splitlines()]
    assert sorted(line["usd"] for line in lines if line["entry"] in ahead) == [0, 0, PER_SCENARIO]
    assert Ledger(folder).total() == pytest.approx(3 * PER_SCENARIO)


def test_usage_out_of_range_is_an_unknown_cost_that_still_stops_a_budget(
    pytester: pytest.Pytester, priced: Any, planting_image: str
) -> None:
    """A provider (or the agent's own trace) reporting negative tokens once made every cost
    unknown and switched the budget off: now an unknown cost with nothing priced to stand in for
    it stops a budgeted run after the first attempt."""
    _scenarios(pytester, 0, 3)
    negative = planted(llm_call({"prompt_tokens": -1_000_000, "completion_tokens": 10}))
    run = priced(f"--gaia2-image={planting_image}", *JUDGE, negative, "--gaia2-budget-halt=0.000001", "-rs")
    outcomes = run.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("skipped")) == (1, 2), outcomes
    run.stdout.fnmatch_lines(["*budget: the cost of 1 attempt(s) is unknown (usage out of range) and no priced "
                              "attempt stands in for it; with a budget set, the run stops here*"])
    folder = run_folder(pytester.path / "out")
    assert Ledger(folder).read().unknown == (f"search/{results_of(pytester.path / 'out')[0]['scenario_id']}#1",)
