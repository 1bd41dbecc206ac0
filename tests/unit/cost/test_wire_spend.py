"""The gateway's figures in an attempt's record and the run's summary: the wire's usage and cost
stand, the trace is the cross-check, and the summary says by how much they differ."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from pytest_gaia2.cost import spend
from pytest_gaia2.store.record import AttemptRecord

WIRE = {
    "calls": 3,
    "refused_calls": 1,
    "rate_limited": 0,
    "server_errors": 0,
    "usage": {"calls": 3, "input_tokens": 30, "output_tokens": 15},
    "cost_usd": 0.06,
    "cost_source": "price file",
    "stopped": None,
}


def traced(calls: int, usd: float | None) -> dict[str, Any]:
    return {"usage": {"calls": calls, "input_tokens": 1}, "cost_usd": usd, "cost_source": "price file"} if calls else {}


def test_the_wire_figure_stands_and_the_trace_is_kept_beside_it() -> None:
    fields = spend.wire_cost(WIRE, traced(3, 0.01))
    assert (fields["cost_usd"], fields["usage"], fields["cost_source"]) == (0.06, WIRE["usage"], "price file")
    wire = fields["wire"]
    assert (wire["calls"], wire["trace_calls"], wire["trace_cost_usd"]) == (3, 3, 0.01)
    assert wire["trace_minus_wire_usd"] == pytest.approx(-0.05)
    assert wire["unseen_calls"] == 0 and wire["log"] == "wire.jsonl"


def test_calls_the_gateway_never_saw_are_counted() -> None:
    assert spend.wire_cost({**WIRE, "calls": 1}, traced(4, 0.08))["wire"]["unseen_calls"] == 3


def test_an_agent_without_a_trace_costs_what_the_wire_says() -> None:
    fields = spend.wire_cost(WIRE, traced(0, None))
    assert fields["cost_usd"] == 0.06
    assert (fields["wire"]["trace_calls"], fields["wire"]["trace_minus_wire_usd"]) == (0, None)


def record(key: int, wire: dict[str, Any] | None, usd: float | None) -> AttemptRecord:
    base = AttemptRecord.from_json({"scenario_id": f"s{key}", "split": "search", "success": True})
    usage = {"calls": 3, "input_tokens": 30, "output_tokens": 15}
    return replace(base, usage=usage if usd is not None else None, cost_usd=usd, wire=wire)


def test_the_summary_says_how_many_traces_differ_and_by_how_much() -> None:
    agree = spend.wire_cost(WIRE, traced(3, 0.06))["wire"]
    lower = spend.wire_cost(WIRE, traced(3, 0.01))["wire"]
    silent = spend.wire_cost(WIRE, traced(0, None))["wire"]
    block = spend.summary([record(1, agree, 0.06), record(2, lower, 0.06), record(3, silent, 0.06)])
    assert block is not None
    wire = block["wire"]
    assert (wire["scenarios"], wire["calls"], wire["refused_calls"], wire["differ"], wire["untraced"]) == (
        3,
        9,
        3,
        2,
        1,
    )
    assert wire["trace_minus_wire_usd"] == pytest.approx(-0.05)
    (line,) = spend.wire_lines(wire)
    assert line == (
        "gateway: 9 model calls measured on the wire, 135 tokens, $0.1800 (3 refused at a cap); the agents' traces differ in "
        "2 scenario(s) by -$0.0500 in all, 1 with no trace"
    )
    assert spend.summary_lines(block, None)[-1] == line


def test_agreeing_traces_say_so_and_a_run_without_the_gateway_has_no_wire_line() -> None:
    agree = spend.wire_cost({**WIRE, "refused_calls": 0}, traced(3, 0.06))["wire"]
    block = spend.summary([record(1, agree, 0.06)])
    assert block is not None
    assert spend.wire_lines(block["wire"]) == [
        "gateway: 3 model calls measured on the wire, 45 tokens, $0.0600; the agents' traces agree"
    ]
    without = spend.summary([record(1, None, 0.06)])
    assert without is not None and "wire" not in without


def test_retries_and_scenarios_of_unknown_cost_are_in_the_gateway_line() -> None:
    retried = spend.wire_cost({**WIRE, "refused_calls": 0, "rate_limited": 2, "retried": 2}, traced(3, 0.06))["wire"]
    block = spend.summary([record(1, retried, 0.06), replace(record(2, retried, 0.06), cost_usd=None)])
    assert block is not None
    assert block["wire"]["retried"] == 4 and block["wire"]["unpriced"] == 1
    (line,) = spend.wire_lines(block["wire"])
    assert line.startswith(
        "gateway: 6 model calls measured on the wire, 90 tokens, $0.0600 and 1 attempt(s) of unknown cost "
        "(4 rate-limited, 4 retried)"
    )


def test_the_attempts_a_retry_replaced_count_in_the_gateway_line() -> None:
    final = replace(record(1, spend.wire_cost({**WIRE, "refused_calls": 0}, traced(3, 0.06))["wire"], 0.06), attempt=2)
    refused = spend.wire_cost({**WIRE, "calls": 1, "refused_calls": 0, "rate_limited": 1}, traced(1, None))["wire"]
    earlier = replace(record(1, refused, None), usage={"calls": 1})
    block = spend.summary([final], [earlier])
    assert block is not None and block["usd"] == 0.06  # the money of the final attempts; the ledger has every one
    (line,) = spend.wire_lines(block["wire"])
    assert line.startswith("gateway: 4 model calls measured on the wire in 2 attempts, 45 tokens, $0.0600 and "
                           "1 attempt(s) of unknown cost (1 rate-limited)")
