"""What a run cost: each attempt's usage and cost from its trace.jsonl and the prices, and the
sums per split and in total that the summary, summary.json, JUnit and Allure show."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.prices import REFUSED, PriceBook
from pytest_gaia2.cost.usage import read_usage, shown_names
from pytest_gaia2.store.record import AttemptRecord

TOKEN_KEYS = ("calls", "input_tokens", "output_tokens", "cached_input_tokens", "cache_write_tokens")


def attempt_cost(folder: Path, prices: PriceBook, model: str | None) -> dict[str, Any]:
    """Record fields for an attempt's spend; nothing when it left no trace (oracle images)."""
    usage = read_usage(folder / "trace.jsonl")
    if usage.calls == 0:
        return {}
    cost = prices.cost(usage, model)
    return {"usage": usage.to_json(), "cost_usd": cost.usd, "cost_source": cost.source}


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


def summary(records: Iterable[AttemptRecord]) -> dict[str, Any] | None:
    """Spend in total and per split: USD over the priced scenarios, how many were priced, tokens.

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
    }


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
    return lines
