"""The stop on every page: report.md, report.html and index.html show why the run
stopped (a --gaia2-probe-only run: as its projection), its budget and spend (digits kept under a cent), the keys not started with why, ran vs
planned per stratum, and the run's name and tags; summary.json and run_config.json are read as
hostile files (checked, bounded, escaped).

Run folders are written with the real store, record, summary and book code.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.cost.projection import Projection
from pytest_gaia2.report import run_facts
from pytest_gaia2.report.document import REPORT_HTML, REPORT_MD, write_report
from pytest_gaia2.report.sequential import first_decision
from pytest_gaia2.report.stats import summarise
from pytest_gaia2.report.summary import Stop, coverage, write_summary_json
from pytest_gaia2.report.trace_page import write_index
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord, outcome_of

STARTED = dt.datetime(2026, 12, 1, 9, 15, tzinfo=dt.timezone.utc)
PLANNED = [f"{split}/s_{n}" for split in ("search", "time") for n in range(3)]
REASON = "budget: the run has spent $0.0060, its halt is $0.0050; no new scenario starts"


def _record(key: str) -> AttemptRecord:
    split, sid = key.split("/")
    return AttemptRecord(
        scenario_id=sid, success=True, reward=None, num_agent_events=2, agent_response="", judged_in_container=True,
        timed_out=False, timeout_seconds=600.0, daemon_status=None, scenario_file="", failure_reasons=[], error=None,
        split=split, universe=f"universe_{sid[-1]}", outcome=outcome_of(True), run_id="r" * 32, cost_usd=0.003)


def _halted_folder(
    root: Path, stop: dict[str, Any] | None, config: dict[str, Any] | None = None, planned: list[str] = PLANNED
) -> Path:
    """Two of six planned scenarios done (both of split search), as a halted run leaves them
    (``planned``: another plan, in run_config.json and summary.json both)."""
    folder = store.RunFolder.create(root / "out", "0123456789abcdef", STARTED)
    records = [_record("search/s_0"), _record("search/s_1")]
    store.write_json(folder.file(store.RUN_CONFIG_FILE), {
        "run_id": "0123456789abcdef", "started_at": STARTED.isoformat(), "planned": planned,
        "name": "baseline", "tags": ["nightly", "gpt"], **(config or {})})
    for record in records:
        store.append_jsonl(folder.results, record.to_json())
    summary = summarise([record.to_json() for record in records], planned)
    extra = {"stop": stop, "coverage": coverage(summary)} if stop is not None else {}
    write_summary_json(folder.file(store.SUMMARY_FILE), summary, None, extra=extra)
    return folder.path


def _stop(reason: str = REASON) -> dict[str, Any]:
    not_run = [key for key in PLANNED if key not in ("search/s_0", "search/s_1")]
    return Stop(reason, halt=0.005, cap=None, spent=0.006, spent_at_stop=0.006,
                not_started=tuple((key, "budget: halt reached") for key in not_run)).to_dict()


class _Text(HTMLParser):
    """The text of each element with an id (and of its descendants), to read a page as shown."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str | None] = []
        self.by_id: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("meta", "br", "img", "link"):
            return
        if tag in ("td", "th", "li", "tr"):  # cells read apart, as a browser shows them
            self.handle_data(" ")
        found = dict(attrs).get("id")
        self.open.append(found)
        if found:
            self.by_id[found] = ""

    def handle_endtag(self, tag: str) -> None:
        if self.open and tag not in ("meta", "br", "img", "link"):
            self.open.pop()

    def handle_data(self, data: str) -> None:
        for element in self.open:
            if element:
                self.by_id[element] += data


def _shown(html: str) -> dict[str, str]:
    parser = _Text()
    parser.feed(html)
    return {key: " ".join(value.split()) for key, value in parser.by_id.items()}


def test_report_and_index_show_the_stop_the_coverage_and_the_name(tmp_path: Path) -> None:
    folder = _halted_folder(tmp_path, _stop())
    write_report(folder)
    markdown = (folder / REPORT_MD).read_text(encoding="utf-8")
    assert f"not run: {', '.join(f'`{key}`' for key in PLANNED[2:])}. Stopped: `{REASON}`. Do not publish" in markdown
    assert "Run name: `baseline`; tags: `nightly`, `gpt`" in markdown
    assert "- budget: halt $0.0050, cap none, spent $0.0060, spent at stop $0.0060" in markdown
    assert "- 4 not started (budget: halt reached): `search/s_2`, `time/s_0`, `time/s_1`, `time/s_2`" in markdown
    assert "| split `search` | 3 | 2 | 1 |  |" in markdown and "| split `time` | 3 | 0 | 1 | yes |" in markdown
    for page in (folder / REPORT_HTML, write_index(folder)):
        shown = _shown(page.read_text(encoding="utf-8"))
        assert f"Stopped: {REASON}." in shown["incomplete"] or f"stopped: {REASON}." in shown["incomplete"]
        assert shown["incomplete"].startswith("INCOMPLETE: 2 of 6 planned scenarios done")
        assert shown["run-name"] == "Run name: baseline; tags: nightly gpt"
        assert shown["stop-budget"] == "budget: halt $0.0050, cap none, spent $0.0060, spent at stop $0.0060"
        assert "4 not started (budget: halt reached): search/s_2 time/s_0 time/s_1 time/s_2" in shown["stop"]
        assert shown["coverage"].split("under-covered", 1)[1].split() == [
            "split", "search", "3", "2", "1", "split", "time", "3", "0", "1", "yes",
            # a key never started has no universe known: its file was never read for it
            "universe", "universe_0", "1", "1", "0.33", "universe", "universe_1", "1", "1", "0.33",
            "universe", "unknown", "4", "0", "1.33", "yes"]


def test_index_counts_done_of_planned_not_rows(tmp_path: Path) -> None:
    shown = _shown(write_index(_halted_folder(tmp_path, _stop())).read_text(encoding="utf-8"))
    assert shown["counts"].startswith("2 of 6 planned scenarios done, 2 row(s)")


def test_a_run_stopped_because_decided_says_which_way_with_the_counts_and_the_level(tmp_path: Path) -> None:
    """--gaia2-stop-when-decided: the pages and summary.json's ``stop.decided`` carry the decision."""
    decision = first_decision([(True, False)] * 8, 0.05, "/runs/base")
    assert decision is not None
    not_run = tuple((key, decision.reason) for key in PLANNED[2:])
    folder = _halted_folder(tmp_path, Stop(decision.reason, not_started=not_run, decided=decision).to_dict())
    write_report(folder)
    why = ("decided: worse than baseline /runs/base: 0 better, 8 worse of 8 judged pairs "
           "(sequential test at level 5.0%); no new scenario starts")
    assert f"Stopped: `{why}`. Do not publish" in (folder / REPORT_MD).read_text(encoding="utf-8")
    for page in (folder / REPORT_HTML, write_index(folder)):
        assert why in _shown(page.read_text(encoding="utf-8"))["incomplete"]
    block = json.loads((folder / store.SUMMARY_FILE).read_text(encoding="utf-8"))["stop"]["decided"]
    assert (block["direction"], block["worse"], block["better"], block["pairs"], block["level"]) == (
        "worse", 8, 0, 8, 0.05)


def test_a_run_without_summary_says_it_does_not_know_why(tmp_path: Path) -> None:
    folder = _halted_folder(tmp_path, None)
    (folder / store.SUMMARY_FILE).unlink()
    write_report(folder)
    for page in (folder / REPORT_HTML, write_index(folder)):
        shown = _shown(page.read_text(encoding="utf-8"))
        assert "unknown (no summary.json: the run was killed, or is still running)" in shown["incomplete"]
    assert "Stopped: `unknown (no summary.json" in (folder / REPORT_MD).read_text(encoding="utf-8")


def test_a_complete_run_has_no_stop_section_without_a_budget(tmp_path: Path) -> None:
    folder = _halted_folder(tmp_path, None, {"name": None, "tags": []}, planned=["search/s_0", "search/s_1"])
    write_report(folder)
    markdown = (folder / REPORT_MD).read_text(encoding="utf-8")
    assert "INCOMPLETE" not in markdown and "Stop and coverage" not in markdown and "Run name" not in markdown
    shown = _shown(write_index(folder).read_text(encoding="utf-8"))
    assert "incomplete" not in shown and "stop" not in shown and "coverage" not in shown


def test_a_complete_run_past_its_halt_says_so_instead_of_a_bare_no(tmp_path: Path) -> None:
    """Every planned scenario ran, yet the spend is past the halt: "stopped: no" next to it would
    read as a contradiction, so every page says why (a halt stops only new starts); the index's
    cost reads as money ($0.0060, never 0.0060)."""
    stop = Stop(None, halt=0.005, spent=0.006).to_dict()
    folder = _halted_folder(tmp_path, stop, {"name": None, "tags": []}, planned=["search/s_0", "search/s_1"])
    write_report(folder)
    why = ("no: every planned scenario ran; the spend passed the $0.0050 halt only in scenarios already running: "
           "a halt stops new starts, and every planned scenario had started")
    assert f"- stopped: `{why}`" in (folder / REPORT_MD).read_text(encoding="utf-8")
    assert _shown((folder / REPORT_HTML).read_text(encoding="utf-8"))["stop-reason"] == f"stopped: {why}"
    shown = _shown(write_index(folder).read_text(encoding="utf-8"))
    assert shown["stop-budget"] == (
        "budget: halt $0.0050, cap none, spent $0.0060, spent at stop none (the spend passed the $0.0050 halt "
        "only in scenarios already running: a halt stops new starts, and every planned scenario had started)")
    assert "incomplete" not in shown
    assert shown["counts"].endswith("0 error — cost $0.0060")
    capped = Stop(None, halt=0.004, cap=0.005, spent=0.006).status(complete=True)
    assert capped == ("no: every planned scenario ran; the spend passed the $0.0050 cap: the scenarios running "
                      "then were stopped before a verdict (their records say so)")
    assert Stop(None, halt=0.01, spent=0.006).status(complete=True) == "no: every planned scenario ran"
    assert Stop(None).status(complete=False) is None


def test_hostile_stop_and_names_are_escaped_checked_and_cut(tmp_path: Path) -> None:
    stop = {**_stop("<script>alert(1)</script>\x1b[31m" + "x" * 5000), "halt_usd": 1e300, "cap_usd": "5",
            "spent_usd": -1, "not_started": [{"key": "<b>k</b>", "why": 7}, "junk", {"why": "no key"}]}
    folder = _halted_folder(tmp_path, stop, {"name": "<img src=x>", "tags": ["a", 3, "a", "<i>"]})
    write_report(folder)
    for page in (folder / REPORT_HTML, write_index(folder)):
        html = page.read_text(encoding="utf-8")
        assert "<script>alert" not in html and "<img src=x>" not in html and "<b>k</b>" not in html
        assert "\x1b" not in html and "x" * (run_facts.REASON_CHARS + 1) not in html
        shown = _shown(html)
        assert shown["stop-budget"] == "budget: halt none, cap none, spent none, spent at stop $0.0060"
        assert "1 not started (unknown): <b>k</b>" in shown["stop"]
        assert shown["run-name"] == "Run name: <img src=x>; tags: a <i>"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=20), inner, max_size=6),
    max_leaves=10,
)
"""Any JSON value, small: the readers check each field's type and range, which a value of ten leaves
tests as well as one of forty (a test draws up to seventeen of them, and drawing forty-leaf trees
was three quarters of this module's CPU)."""
STOP_KEYS = ("stopped", "reason", "halt_usd", "cap_usd", "spent_usd", "spent_at_stop_usd", "not_started")


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(STOP_KEYS), JSON | st.lists(st.dictionaries(
    st.sampled_from(("key", "why")), JSON), max_size=5)), JSON)
def test_stop_of_any_json_is_checked(block: dict[str, Any], other: Any) -> None:
    for document in ({"stop": block}, {"stop": other}, other if isinstance(other, dict) else {}):
        stop = run_facts.stop_of(document)
        if stop is None:
            continue
        for amount in (stop.halt, stop.cap, stop.spent, stop.spent_at_stop):
            assert amount is None or (isinstance(amount, float) and 0 <= amount <= run_facts.USD_MAX)
        texts = [stop.reason or "", *(part for pair in stop.not_started for part in pair)]
        assert all(isinstance(text, str) and len(text) <= run_facts.REASON_CHARS for text in texts)
        assert all("\x1b" not in text for text in texts)
        json.dumps(stop.to_dict())


@settings(max_examples=examples(200), deadline=None)
@given(st.dictionaries(st.sampled_from(("name", "tags", "started_at")), JSON))
def test_facts_of_any_run_config_are_checked(config: dict[str, Any]) -> None:
    facts = run_facts.read(Path("/nonexistent"), config)
    assert facts.name is None or len(facts.name) <= run_facts.NAME_CHARS
    assert len(facts.tags) <= run_facts.MAX_TAGS and len(set(facts.tags)) == len(facts.tags)
    assert facts.started is None or facts.started.tzinfo is not None
    assert facts.stop is None


def _probe_only_folder(root: Path, probe: Any) -> Path:
    """A --gaia2-probe-only run: its probe of two done, the other four left out by it."""
    not_run = [key for key in PLANNED if key not in ("search/s_0", "search/s_1")]
    stop = Stop("--gaia2-probe-only: not in the probe", halt=50.0, cap=None, spent=0.006, spent_at_stop=None,
                not_started=tuple((key, "--gaia2-probe-only: not in the probe") for key in not_run)).to_dict()
    folder = _halted_folder(root, stop)
    summary = json.loads((folder / store.SUMMARY_FILE).read_text(encoding="utf-8"))
    store.write_json(folder / store.SUMMARY_FILE, {**summary, "probe": probe})
    return folder


PROBE = Projection(planned=6, probed=2, usd=0.018, low=0.012, high=0.024, hours=0.5, workers=2, halt=0.01)


def test_a_probe_only_run_is_shown_as_its_projection_not_as_incomplete(tmp_path: Path) -> None:
    folder = _probe_only_folder(tmp_path, PROBE.to_json())
    write_report(folder)
    projection = PROBE.line().removeprefix("gaia2: ")
    assert projection.endswith("the halt ($0.01) is expected to complete 4 of the 6 (95% interval 3–5)")
    markdown = (folder / REPORT_MD).read_text(encoding="utf-8")
    assert (f"**PROBE ONLY:** 2 of 6 planned scenarios ran as the probe (`--gaia2-probe-only`); its result is "
            f"the projection: `{projection}`.") in markdown
    assert "INCOMPLETE" not in markdown
    for page in (folder / REPORT_HTML, write_index(folder)):
        shown = _shown(page.read_text(encoding="utf-8"))
        assert "incomplete" not in shown
        assert shown["probe-only"].startswith("PROBE ONLY: 2 of 6 planned scenarios ran as the probe "
                                              f"(--gaia2-probe-only); its result is the projection: {projection}.")


def test_a_probe_only_run_cut_short_is_incomplete(tmp_path: Path) -> None:
    """One key not started for another reason (or no projection on record): the run is incomplete."""
    folder = _probe_only_folder(tmp_path, PROBE.to_json())
    summary = json.loads((folder / store.SUMMARY_FILE).read_text(encoding="utf-8"))
    summary["stop"]["not_started"][0]["why"] = "interrupted (Ctrl-C, SIGTERM or a collection error)"
    store.write_json(folder / store.SUMMARY_FILE, summary)
    unpriced = _probe_only_folder(tmp_path / "b", {**PROBE.to_json(), "usd": "0.018"})
    for run in (folder, unpriced):
        write_report(run)
        assert "**INCOMPLETE:**" in (run / REPORT_MD).read_text(encoding="utf-8")
        assert "probe-only" not in _shown(write_index(run).read_text(encoding="utf-8"))


PROBE_KEYS = ("planned", "probed", "usd", "low", "high", "hours", "workers", "halt", "cap", "chosen", "in_flight")


def test_the_probe_block_reads_back_as_written_and_an_earlier_one_as_one_in_flight() -> None:
    written = Projection(**{**PROBE.to_json(), "in_flight": 4})  # type: ignore[arg-type]
    assert run_facts.probe_of({"probe": written.to_json()}) == written
    earlier = {key: value for key, value in PROBE.to_json().items() if key != "in_flight"}
    assert run_facts.probe_of({"probe": earlier}) == PROBE


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(PROBE_KEYS), JSON), JSON)
@example({"usd": 1e-300, "low": 1e-300, "high": 1e-300, "planned": 1, "halt": 1e9}, None)  # 1e9 / 1e-300 is inf
def test_probe_of_any_json_is_checked(block: dict[str, Any], other: Any) -> None:
    for document in ({"probe": {**PROBE.to_json(), **block}}, {"probe": block}, {"probe": other}):
        found = run_facts.probe_of(document)
        if found is None:
            continue
        assert 0 <= found.planned <= run_facts.COUNT_MAX and 0 <= found.probed <= run_facts.COUNT_MAX
        assert 1 <= found.workers <= run_facts.COUNT_MAX and 0 <= found.hours <= run_facts.HOURS_MAX
        assert 1 <= found.in_flight <= run_facts.COUNT_MAX
        money = (found.usd, found.low, found.high, found.halt, found.cap)
        assert all(value is None or 0 <= value <= run_facts.USD_MAX for value in money)
        assert "\x1b" not in found.line() and "\n" not in found.line()  # finite numbers: the line always forms


def test_the_plan_is_the_latest_sessions_from_summary_json(tmp_path: Path) -> None:
    """run_config.json keeps the first session's plan (here three keys); summary.json the latest
    session's (six): every page counts summary.json's."""
    folder = _halted_folder(tmp_path, _stop(), {"planned": PLANNED[:3]})
    facts = run_facts.read(folder)
    records = list(store.RunFolder(folder).records())
    assert facts.first_plan == tuple(PLANNED[:3]) and facts.plan(records) == run_facts.Plan(tuple(PLANNED))
    write_report(folder)
    assert "- planned: 6 scenarios, done: 2, not run: 4\n" in (folder / REPORT_MD).read_text(encoding="utf-8")
    for page in (folder / REPORT_HTML, write_index(folder)):
        shown = _shown(page.read_text(encoding="utf-8"))
        assert shown["incomplete"].startswith("INCOMPLETE: 2 of 6 planned scenarios done") and "plan-note" not in shown


FIRST_PLAN_NOTE = "planned: the first session's plan (run_config.json) and every result, as "


@pytest.mark.parametrize(("damage", "why"), [
    (lambda path: path.unlink(), "summary.json is missing"),
    (lambda path: path.write_text("{", encoding="utf-8"), "summary.json cannot be read"),
    (lambda path: store.write_json(path, {**json.loads(path.read_text()), "done": 3}), "summary.json's plan is damaged"),
    (lambda path: store.write_json(path, {**json.loads(path.read_text()), "not_run": ["<b>"] * 4}),
     "summary.json's plan is damaged"),
    (lambda path: store.append_jsonl(path.with_name(store.RESULTS_FILE), _record("time/s_0").to_json()),
     "summary.json does not fit results.jsonl (a later session is running, or was killed)"),
], ids=["missing", "unreadable", "counts", "keys", "later-session"])
def test_without_summary_jsons_plan_the_pages_fall_back_and_say_so(
    tmp_path: Path, damage: Callable[[Path], Any], why: str
) -> None:
    """The first session's plan (run_config.json: three keys) and every key with a result, as before."""
    folder = _halted_folder(tmp_path, _stop(), {"planned": PLANNED[:3]})
    damage(folder / store.SUMMARY_FILE)
    records = list(store.RunFolder(folder).records())
    plan = run_facts.read(folder).plan(records)
    assert plan.note == FIRST_PLAN_NOTE + why
    assert plan.keys == (*PLANNED[:3], *sorted({record.key for record in records} - set(PLANNED[:3])))
    write_report(folder)
    assert f"- {FIRST_PLAN_NOTE}{why}\n" in (folder / REPORT_MD).read_text(encoding="utf-8")
    for page in (folder / REPORT_HTML, write_index(folder)):
        assert _shown(page.read_text(encoding="utf-8"))["plan-note"] == FIRST_PLAN_NOTE + why


def test_a_run_config_plan_with_a_bad_key_is_no_plan(tmp_path: Path) -> None:
    """One key that is no <split>/<scenario_id> and the list is not believed; the pages are still written."""
    folder = _halted_folder(tmp_path, _stop(), {"planned": ["search/s_0", "no-split"]})
    (folder / store.SUMMARY_FILE).unlink()
    plan = run_facts.read(folder).plan(list(store.RunFolder(folder).records()))
    assert plan == run_facts.Plan(None, "planned: every result, no plan on record (summary.json is missing, "
                                        "run_config.json has none)")
    write_report(folder)
    assert "- planned: 2 scenarios, done: 2, not run: 0\n" in (folder / REPORT_MD).read_text(encoding="utf-8")


KEYS = st.lists(st.sampled_from(["search/s_0", "time/s_1/run_2", "s_0", "", "a/b/c", 3, None]) | st.text(max_size=8),
                max_size=6)


@settings(max_examples=examples(300), deadline=None)
@given(st.dictionaries(st.sampled_from(("planned", "done", "not_run")), JSON | KEYS | st.integers(-2, 8)), KEYS | JSON)
def test_the_plan_of_any_summary_and_run_config_is_checked(summary: dict[str, Any], planned: Any) -> None:
    facts = run_facts.RunFacts(
        None, (), None, None, last_plan=run_facts.summary_plan_of(summary), first_plan=run_facts.keys_of(planned)
    )
    last = facts.last_plan
    if last is not None:
        assert 0 <= last.done <= last.planned == last.done + len(last.not_run) <= run_facts.COUNT_MAX
    records = [_record("search/s_0")]
    plan = facts.plan(records)
    assert plan.keys is None or len(set(plan.keys)) == len(plan.keys)
    assert (plan.note is None) == (last is not None and last.done == 1 and "search/s_0" not in last.not_run)
    counted = summarise([record.to_json() for record in records], plan.keys)  # never a key summarise refuses
    assert counted.done == 1 and (last is None or plan.note is not None or counted.planned == last.planned)
