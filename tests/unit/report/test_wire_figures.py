"""The model gateway's figures on the pages: index.html, report.html and trace.html sum what the
gateway measured (calls, tokens, money, 429s, retries) per run and per scenario, show by how
much the agents' traces differ, and say when the gateway was off. The run folder is hostile
input: any value in a record's ``wire`` or run_config.json's ``gateway`` renders, bounded and
escaped, and never raises."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from gaia2_testing import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.cost.usage import read_usage
from pytest_gaia2.report import wire_figures
from pytest_gaia2.report.document import REPORT_HTML, write_report
from pytest_gaia2.report.trace_page import write_index, write_trace
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

HOSTILE = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">'
STARTED = dt.datetime(2026, 12, 5, 23, 0, tzinfo=dt.timezone.utc)
WIRE = {"log": "wire.jsonl", "calls": 4, "refused_calls": 0, "rate_limited": 2, "server_errors": 0, "retried": 2,
        "trace_calls": 2, "trace_cost_usd": 0.01, "trace_minus_wire_usd": -0.03, "unseen_calls": 0}
USAGE = {"calls": 4, "usage_calls": 2, "input_tokens": 20, "output_tokens": 10}


def record(sid: str, wire: dict[str, Any] | None = WIRE, **extra: Any) -> AttemptRecord:
    base = AttemptRecord.from_json({"scenario_id": sid, "split": "search", "success": True, "folder": f"search/{sid}"})
    return replace(base, wire=wire, usage=USAGE if wire else None, cost_usd=0.04 if wire else None, **extra)


def run_folder(root: Path, records: list[AttemptRecord], gateway: Any = None) -> Path:
    folder = store.RunFolder.create(root / "out", "0123456789abcdef", STARTED)
    config: dict[str, Any] = {"run_id": "0123456789abcdef", "started_at": STARTED.isoformat(),
                              "planned": [r.key for r in records]}
    if gateway is not None:
        config["gateway"] = gateway
    store.write_json(folder.file(store.RUN_CONFIG_FILE), config)
    for item in records:
        store.append_jsonl(folder.results, item.to_json())
    return folder.path


def test_the_run_and_each_scenario_sum_what_the_gateway_measured() -> None:
    records = [record("a"), record("b", attempt=2), record("c", wire=None)]
    page = wire_figures.run_page({"gateway": {"on": True, "routes": ["agent"], "off": None}}, records)
    assert page is not None and page["off"] is None
    assert page["lines"] == [
        "8 model calls in 2 scenario(s) (1 of their attempts re-run by --gaia2-retries): 4 rate-limited (HTTP 429), "
        "4 retried after one of those",
        "tokens: 40 in, 20 out",
        "money: $0.08",
        "the agents' own traces differ in 2 scenario(s), by -$0.06 in all",
    ]
    assert [(row["key"], row["calls"], row["rate_limited"], row["retried"], row["usd"], row["trace"])
            for row in page["rows"]] == [("search/a", 4, 2, 2, "$0.04", "-$0.03"), ("search/b", 4, 2, 2, "$0.04", "-$0.03")]


def test_a_scenario_without_a_trace_or_a_price_says_so() -> None:
    silent = {**WIRE, "trace_calls": 0, "trace_cost_usd": None, "trace_minus_wire_usd": None}
    page = wire_figures.run_page({}, [replace(record("a", wire=silent), cost_usd=None)])
    assert page is not None
    assert page["rows"][0]["trace"] == "no trace" and page["rows"][0]["usd"] == "unknown"
    assert "money: $0.00, and 1 attempt(s) of unknown cost" in page["lines"]


def test_a_run_with_the_gateway_off_says_its_containers_held_the_keys(tmp_path: Path) -> None:
    off = {"on": False, "routes": [], "off": "model gateway off (--gaia2-gateway=off): containers get the keys"}
    folder = run_folder(tmp_path, [record("a", wire=None)], gateway=off)
    html = write_index(folder).read_text(encoding="utf-8")
    assert "The model gateway was off for this run: its containers got the provider keys as environment" in html
    assert "(model gateway off (--gaia2-gateway=off): containers get the keys)" in html
    attempt = folder / "search" / "a"
    store.write_json(attempt / "result.json", record("a", wire=None).to_json())
    assert 'id="gateway-off"' in write_trace(attempt).read_text(encoding="utf-8")


def test_an_older_run_or_one_without_keys_says_nothing_of_the_gateway(tmp_path: Path) -> None:
    for gateway in (None, {"on": False, "routes": [], "off": None}):
        folder = run_folder(tmp_path / str(gateway is None), [record("a", wire=None)], gateway=gateway)
        html = write_index(folder).read_text(encoding="utf-8")
        assert "wire-figures" not in html and "gateway-off" not in html


def test_index_and_report_show_the_figures_escaped(tmp_path: Path) -> None:
    folder = run_folder(tmp_path, [record(HOSTILE), record("b")], gateway={"on": True, "routes": ["agent"]})
    index = write_index(folder).read_text(encoding="utf-8")
    write_report(folder)
    report = (folder / REPORT_HTML).read_text(encoding="utf-8")
    markdown = (folder / "report.md").read_text(encoding="utf-8")
    assert "## Model calls on the wire" in markdown
    assert "- 8 model calls in 2 scenario(s): 4 rate-limited (HTTP 429), 4 retried after one of those" in markdown
    for html in (index, report):
        assert 'id="wire-figures"' in html and "<script>window" not in html
        assert "8 model calls in 2 scenario(s): 4 rate-limited (HTTP 429), 4 retried after one of those" in html
        assert "&lt;script&gt;window" in html


def test_the_pages_list_a_bounded_number_of_scenarios() -> None:
    records = [record(f"s{i}") for i in range(wire_figures.MAX_SCENARIOS + 3)]
    page = wire_figures.run_page({}, records)
    assert page is not None
    assert len(page["rows"]) == wire_figures.MAX_SCENARIOS and page["left_out"] == 3
    assert page["lines"][0].startswith(f"{4 * len(records):,} model calls in {len(records)} scenario(s)")


def test_trace_html_sets_the_gateways_account_beside_the_agents(tmp_path: Path) -> None:
    attempt = tmp_path / "search" / "a"
    store.write_json(attempt / "result.json", record("a").to_json())
    trace = [{"type": "llm_call", "request": {"model": "m"},
              "raw_response": json.dumps({"usage": {"prompt_tokens": 5, "completion_tokens": 1}})}] * 2
    (attempt / "trace.jsonl").write_text("".join(json.dumps(line) + "\n" for line in trace), encoding="utf-8")
    store.append_jsonl(attempt / "wire.jsonl", {"time": "t", "route": "agent", "status": 429, "retry": True})
    html = write_trace(attempt).read_text(encoding="utf-8")
    check = wire_figures.trace_page(attempt, record("a"), read_usage(attempt / "trace.jsonl"))
    assert check is not None
    assert [(row["calls"], row["tokens"], row["usd"]) for row in check["rows"]] == [
        (4, "20 / 10", "$0.04"), (2, "10 / 2", "$0.01")]
    assert check["lines"][0] == "the trace's money differs from the wire's by -$0.03"
    assert "of its 4 calls: 2 rate-limited (HTTP 429), 2 retried after one of those" in check["lines"]
    assert 'id="wire-check"' in html and "the trace&#39;s money differs from the wire&#39;s by -$0.03" in html
    assert "retry" in html


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=10,
)
WIRE_KEYS = st.sampled_from([*WIRE, "usage"])


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(wire=st.dictionaries(WIRE_KEYS, JSON, min_size=1), gateway=JSON, cost=JSON)
@example(wire={"calls": 10**30, "trace_minus_wire_usd": 1e308, "trace_cost_usd": "x"}, gateway={"on": False, "off": HOSTILE},
         cost=None)
@example(wire={"calls": -5, "retried": True, "trace_minus_wire_usd": "-0.5"}, gateway={"on": False, "off": 7}, cost=-1e300)
def test_any_values_in_a_run_folder_render_bounded_and_escaped(
    tmp_path: Path, wire: dict[str, Any], gateway: Any, cost: Any
) -> None:
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    line = {**record("a").to_json(), "wire": wire, "cost_usd": cost, "usage": wire.get("usage")}
    store.write_json(folder / store.RUN_CONFIG_FILE, {"gateway": gateway})
    (folder / "results.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    html = write_index(folder).read_text(encoding="utf-8")
    assert "<script>window" not in html and "could not be rendered" not in html
    attempt = folder / "search" / "a"
    store.write_json(attempt / "result.json", line)
    store.write_json(attempt / "wire.jsonl", wire)
    trace = write_trace(attempt).read_text(encoding="utf-8")
    assert "<script>window" not in trace and "could not be rendered" not in trace
    stored = list(store.RunFolder(folder).records())
    page = wire_figures.run_page({"gateway": gateway}, stored)
    for item in stored:
        figures = wire_figures.of_record(item)
        if figures is not None:
            assert all(0 <= getattr(figures, name) <= wire_figures.COUNT_MAX
                       for name in ("calls", "rate_limited", "retried", "unseen_calls", "input_tokens"))
            assert abs(figures.trace_minus_wire_usd) <= 1e9
    if page is not None and page["off"]:
        assert len(page["off"]) < len(wire_figures.OFF) + wire_figures.TEXT_MAX + 10


def test_the_attempts_a_retry_replaced_are_summed_with_their_scenario(tmp_path: Path) -> None:
    refused = {**WIRE, "calls": 1, "rate_limited": 1, "retried": 0, "trace_calls": 1, "trace_cost_usd": None,
               "trace_minus_wire_usd": None}
    first = replace(record("b", wire=refused), cost_usd=None, usage={"calls": 1, "usage_calls": 0})
    final = record("b", attempt=2)
    folder = run_folder(tmp_path, [record("a"), final])
    store.write_json(folder / "search" / "b" / "result.json", first.to_json())
    store.write_json(folder / "search" / "b" / "attempt_2" / "result.json", final.to_json())
    earlier = wire_figures.earlier_attempts(folder, [record("a"), final])
    assert [(item.key, item.attempt) for item in earlier] == [("search/b", 1)]
    page = wire_figures.run_page({}, [record("a"), final], earlier)
    assert page is not None
    assert page["lines"][0] == ("9 model calls in 2 scenario(s) (1 of their attempts re-run by --gaia2-retries): "
                                "5 rate-limited (HTTP 429), 4 retried after one of those")
    assert page["lines"][2] == "money: $0.08, and 1 attempt(s) of unknown cost"
    row = page["rows"][1]
    assert (row["key"], row["calls"], row["rate_limited"], row["usd"]) == (
        "search/b", 5, 3, "$0.04 (+1 attempt(s) of unknown cost)")
    assert "9 model calls in 2 scenario(s)" in write_index(folder).read_text(encoding="utf-8")
