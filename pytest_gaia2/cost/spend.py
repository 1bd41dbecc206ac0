"""What a run cost: each attempt's usage and cost, measured on the wire by the model gateway
(when it is on) or read from its trace.jsonl, priced, and the sums per split and in total that
the summary, summary.json, JUnit and Allure show. With the gateway on, the trace is the cross-check:
each record's ``wire`` says by how much the agent's own account differs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.prices import REFUSED, PriceBook
from pytest_gaia2.cost.usage import read_usage, shown_names
from pytest_gaia2.store.record import AttemptRecord

WIRE_LOG = "wire.jsonl"
"""The gateway's log of an attempt's calls, in the attempt's folder."""
WIRE_COUNTS = ("calls", "refused_calls", "rate_limited", "server_errors", "retried")
TOKEN_KEYS = ("calls", "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


def attempt_cost(folder: Path, prices: PriceBook, model: str | None) -> dict[str, Any]:
    """Record fields for an attempt's spend; nothing when it left no trace (oracle images)."""
    usage = read_usage(folder / "trace.jsonl")
    if usage.calls == 0:
        return {}
    cost = prices.cost(usage, model)
    return {"usage": usage.to_json(), "cost_usd": cost.usd, "cost_source": cost.source}


def wire_cost(wire: dict[str, Any], traced: dict[str, Any]) -> dict[str, Any]:
    """Record fields for an attempt whose calls went through the gateway: the gateway's usage and
    cost (``wire``, its revocation's summary), with the trace's (``traced``, :func:`attempt_cost`)
    kept beside them as the cross-check, and the calls the gateway never saw (an image that
    bypassed the base URL) counted."""
    trace_usage = traced.get("usage") or {}
    trace_calls = int(trace_usage.get("calls") or 0)
    trace_usd = traced.get("cost_usd")
    usd = wire.get("cost_usd")
    difference = round(trace_usd - usd, 6) if isinstance(trace_usd, float) and isinstance(usd, float) else None
    return {
        "usage": wire.get("usage"),
        "cost_usd": usd,
        "cost_source": wire.get("cost_source"),
        "wire": {
            "log": WIRE_LOG,
            **{key: int(wire.get(key) or 0) for key in WIRE_COUNTS},
            "trace_calls": trace_calls,
            "trace_cost_usd": trace_usd,
            "trace_minus_wire_usd": difference,
            "unseen_calls": max(0, trace_calls - int(wire.get("calls") or 0)),
        },
    }


def attempt_tokens(record: AttemptRecord) -> int | None:
    """The tokens an attempt used, input and output, for --gaia2-token-halt; None when its calls
    reported no usage (nothing to count, not zero)."""
    usage = record.usage or {}
    if not usage.get("usage_calls"):
        return None
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


def is_refused(record: AttemptRecord) -> bool:
    """Whether the attempt's cost was refused as out of range (see :mod:`~pytest_gaia2.cost.prices`)."""
    return str(record.cost_source or "").startswith(REFUSED)


def refusal_notice(record: AttemptRecord) -> list[str]:
    """The one warning for an attempt whose cost was refused: which file and field, and that
    its cost is unknown rather than 0."""
    if not is_refused(record):
        return []
    return [
        f"gaia2: warning: {record.key}: cost {record.cost_source}; its cost is unknown (not counted in the run's spend)"
    ]


def _tokens(records: Iterable[AttemptRecord]) -> dict[str, int]:
    totals = dict.fromkeys(TOKEN_KEYS, 0)
    for record in records:
        for key in TOKEN_KEYS:
            totals[key] += int((record.usage or {}).get(key) or 0)
    return totals


def summary(records: Iterable[AttemptRecord], earlier: Iterable[AttemptRecord] = ()) -> dict[str, Any] | None:
    """Spend in total and per split: USD over the priced scenarios, how many were priced, tokens;
    with the gateway on, its figures, which count the ``earlier`` attempts a retry replaced too.

    None when no scenario left a trace (nothing to say, rather than $0).
    """
    traced = [record for record in records if record.usage]
    if not traced:
        return None

    def block(group: list[AttemptRecord]) -> dict[str, Any]:
        priced = [record.cost_usd for record in group if record.cost_usd is not None]
        return {
            "usd": round(sum(priced), 6),
            "priced": len(priced),
            "unpriced": len(group) - len(priced),
            "refused": sum(map(is_refused, group)),
            "tokens": _tokens(group),
        }

    by_split: dict[str, list[AttemptRecord]] = defaultdict(list)
    for record in traced:
        by_split[record.split].append(record)
    unknown = sorted(
        {
            model
            for record in traced
            if record.cost_usd is None and not is_refused(record)
            for model in ([record.model] if record.model else (record.usage or {}).get("models") or [])
        }
    )
    return {
        **block(traced),
        "by_split": {split: block(group) for split, group in sorted(by_split.items())},
        "unknown_models": unknown,
        **({"wire": wire_summary(traced, earlier)} if any(record.wire for record in traced) else {}),
    }


def _differs(wire: dict[str, Any]) -> bool:
    """Whether an attempt's own trace tells another story than the wire: another amount, no
    priced trace for calls that were made, or calls the gateway never saw."""
    gap = wire.get("trace_minus_wire_usd")
    untold = wire.get("trace_cost_usd") is None and int(wire.get("calls") or 0) > 0
    return bool(gap) or untold or int(wire.get("unseen_calls") or 0) > 0


def wire_summary(records: Iterable[AttemptRecord], earlier: Iterable[AttemptRecord] = ()) -> dict[str, Any]:
    """What the gateway measured over the attempts it served (the final ones, and the ``earlier``
    ones a retry replaced), and how far the final attempts' traces are off."""
    served = [record for record in records if record.wire]
    every = served + [record for record in earlier if record.wire]
    wires = [record.wire for record in served if record.wire]
    totals = {key: sum(int((record.wire or {}).get(key) or 0) for record in every) for key in WIRE_COUNTS}
    gaps = [wire["trace_minus_wire_usd"] for wire in wires if isinstance(wire.get("trace_minus_wire_usd"), float)]
    priced = [record.cost_usd for record in every if record.cost_usd is not None]
    return {
        "scenarios": len(wires),
        **totals,
        "unseen_calls": sum(int(wire.get("unseen_calls") or 0) for wire in wires),
        "attempts": len(every),
        "tokens": sum(int((record.usage or {}).get(key) or 0) for record in every for key in TOKEN_KEYS[1:3]),
        "usd": round(sum(priced), 6),
        "unpriced": len(every) - len(priced),
        "differ": sum(map(_differs, wires)),
        "untraced": sum(1 for wire in wires if not wire.get("trace_calls") and wire.get("calls")),
        "trace_minus_wire_usd": round(sum(gaps), 6),
    }


def wire_lines(wire: dict[str, Any] | None) -> list[str]:
    """The terminal's line on the gateway's figures and the traces' cross-check."""
    if not wire:
        return []
    troubles = [
        f"{wire[key]} {label}"
        for key, label in (
            ("refused_calls", "refused at a cap"),
            ("rate_limited", "rate-limited"),
            ("server_errors", "failed at the provider"),
            ("retried", "retried"),
        )
        if wire.get(key)
    ]
    money = f"${wire['usd']:.4f}" + (
        f" and {wire['unpriced']} attempt(s) of unknown cost" if wire.get("unpriced") else ""
    )
    reruns = wire.get("attempts", 0) - wire["scenarios"]
    line = (
        f"gateway: {wire['calls']} model calls measured on the wire"
        + (f" in {wire['attempts']} attempts" if reruns > 0 else "")
        + f", {wire['tokens']:,} tokens, {money}"
    ) + (f" ({', '.join(troubles)})" if troubles else "")
    if not wire["differ"]:
        return [line + "; the agents' traces agree"]
    gap = wire["trace_minus_wire_usd"]
    return [
        line + f"; the agents' traces differ in {wire['differ']} scenario(s)"
        f" by {'+' if gap >= 0 else '-'}${abs(gap):.4f} in all"
        + (f", {wire['untraced']} with no trace" if wire["untraced"] else "")
        + (
            f", {wire['unseen_calls']} calls the gateway never saw (an image bypassing the base URL)"
            if wire["unseen_calls"]
            else ""
        )
    ]


def summary_lines(block: dict[str, Any] | None, budget_text: str | None) -> list[str]:
    """The terminal's spend lines (none when nothing was traced)."""
    if block is None:
        return []
    tokens = block["tokens"]
    why = [f"no price for: {shown_names(block['unknown_models'])}"] if block["unknown_models"] else []
    why += [f"{block['refused']} refused as out of range"] if block.get("refused") else []
    lines = [
        f"cost: ${block['usd']:.2f} over {block['priced']} priced scenario(s)"
        + (
            f", {block['unpriced']} with cost unknown" + (f" ({'; '.join(why)})" if why else "")
            if block["unpriced"]
            else ""
        )
        + (f"; {budget_text}" if budget_text else ""),
        f"tokens: {tokens['input_tokens']} in ({tokens['cached_input_tokens']} cached), "
        f"{tokens['output_tokens']} out, {tokens['calls']} calls",
    ]
    lines += [
        f"  {split}: ${group['usd']:.2f}, {group['tokens']['calls']} calls"
        for split, group in block["by_split"].items()
    ]
    return lines + wire_lines(block.get("wire"))
