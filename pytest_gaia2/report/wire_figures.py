"""The model gateway's figures on the pages: what it measured per run and per scenario (calls,
tokens, money, HTTP 429s, retries), by how much the agents' own traces differ, and, for a run
with the gateway off, that its containers held the keys and its money is the agents' account.

The figures come from each record's ``wire``, ``usage`` and ``cost_usd`` (with the gateway on,
the gateway's own measurement) and on or off from run_config.json's ``gateway``. A run folder
may come from anywhere, so all of it is hostile input: a count is believed only as an int in
range, an amount only as a finite number in range, a text is cut and made printable, and a page
lists at most :data:`MAX_SCENARIOS` scenarios.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from pytest_gaia2.cost.budget import usd_text
from pytest_gaia2.cost.spend import WIRE_LOG
from pytest_gaia2.cost.usage import read_usage
from pytest_gaia2.report import run_facts
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord

MAX_SCENARIOS = 500
"""Scenarios listed in a page's table of wire figures; the rest are counted in the totals."""
COUNT_MAX = 10**12
"""A count (calls, tokens) past this is not believed."""
TEXT_MAX = 300
MAX_EARLIER = 5000
"""Earlier attempts (retried ones) read from their result.json for a run's sums; past this the
sums stand on the final attempts' figures and the rest."""
RUN_DEPTH = 4
"""An attempt folder lies at most this many folders below its run folder (split, id, run, attempt)."""
TRACE_LINE_MAX_BYTES = 4 * 2**20
OFF = (
    "The model gateway was off for this run: its containers got the provider keys as environment "
    "variables, and the money shown is the agents' own account (trace.jsonl), not measured on the wire"
)


def count(value: Any) -> int:
    """A count from a file: a non-negative int in range, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= COUNT_MAX else 0


def amount(value: Any) -> float | None:
    """An amount of USD from a file: a finite number in range, else None (unknown)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and abs(value) <= run_facts.USD_MAX else None


def signed_usd(value: float) -> str:
    return ("+" if value >= 0 else "-") + usd_text(abs(value))


@dataclass(frozen=True)
class Figures:
    """The gateway's figures for one attempt, or summed over a run's attempts."""

    scenarios: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    unpriced: int = 0
    """Attempts whose calls the gateway could not price (not counted in ``usd``)."""
    rate_limited: int = 0
    server_errors: int = 0
    refused_calls: int = 0
    retried: int = 0
    """Calls made after a refused or failed one: the clients' retries."""
    reruns: int = 0
    """Attempts beyond each scenario's first (``--gaia2-retries``)."""
    unseen_calls: int = 0
    differ: int = 0
    """Scenarios whose trace tells another story: another amount, no trace, or unseen calls."""
    trace_minus_wire_usd: float = 0.0

    def __add__(self, other: Figures) -> Figures:
        return Figures(**{spec.name: getattr(self, spec.name) + getattr(other, spec.name) for spec in fields(self)})


def of_record(record: AttemptRecord) -> Figures | None:
    """The gateway's figures for one attempt; None when its calls did not go through the gateway."""
    wire = record.wire
    if not isinstance(wire, Mapping) or not wire:
        return None
    usage = record.usage if isinstance(record.usage, Mapping) else {}
    usd = amount(record.cost_usd)
    calls = count(wire.get("calls"))
    gap = amount(wire.get("trace_minus_wire_usd"))
    unseen = count(wire.get("unseen_calls"))
    untraced = calls > 0 and amount(wire.get("trace_cost_usd")) is None
    return Figures(
        scenarios=1,
        calls=calls,
        input_tokens=count(usage.get("input_tokens")),
        output_tokens=count(usage.get("output_tokens")),
        usd=usd or 0.0,
        unpriced=int(usd is None and calls > 0),
        rate_limited=count(wire.get("rate_limited")),
        server_errors=count(wire.get("server_errors")),
        refused_calls=count(wire.get("refused_calls")),
        retried=count(wire.get("retried")),
        reruns=max(0, min(record.attempt, COUNT_MAX) - 1),
        unseen_calls=unseen,
        differ=int(bool(gap) or untraced or unseen > 0),
        trace_minus_wire_usd=gap or 0.0,
    )


def earlier_attempts(run_folder: Path, records: Iterable[AttemptRecord]) -> list[AttemptRecord]:
    """The attempts before each record's own (the ones ``--gaia2-retries`` replaced), read from
    their result.json: the gateway served them too, so a run's sums count them (at most
    :data:`MAX_EARLIER`)."""
    folder = store.RunFolder(run_folder)
    found: list[AttemptRecord] = []
    for record in records:
        if record.attempt <= 1 or len(found) >= MAX_EARLIER:
            continue
        try:
            where = folder.scenario_dir(record.split, record.scenario_id, record.repeat, record.repeats)
        except store.StoreError:
            continue
        found += [
            earlier
            for earlier in folder.attempt_records(where)
            if earlier.attempt < record.attempt and earlier.key == record.key
        ]
    return found[:MAX_EARLIER]


def _as_earlier(figures: Figures) -> Figures:
    """An earlier attempt's figures as they add to its scenario's: calls, tokens, money and
    trouble, but not another scenario, nor its trace's story (the final attempt tells that)."""
    return replace(figures, scenarios=0, reruns=0, unseen_calls=0, differ=0, trace_minus_wire_usd=0.0)


def _trace_gap(record: AttemptRecord, figures: Figures) -> str:
    """How the attempt's trace differs from the wire, in a few words."""
    wire = record.wire or {}
    if figures.calls and amount(wire.get("trace_cost_usd")) is None:
        return "no priced trace" if count(wire.get("trace_calls")) else "no trace"
    gap = amount(wire.get("trace_minus_wire_usd"))
    return signed_usd(gap) if gap else "agrees"


def _money(figures: Figures) -> str:
    """A scenario's money: unknown when none of its attempts' calls had a price."""
    if figures.unpriced and not figures.usd:
        return "unknown"
    return usd_text(figures.usd) + (f" (+{figures.unpriced:,} attempt(s) of unknown cost)" if figures.unpriced else "")


def scenario_row(record: AttemptRecord, figures: Figures) -> dict[str, Any]:
    """One scenario's line of the pages' table: every cell a short text or a count."""
    return {
        "key": run_facts.text(record.key, TEXT_MAX) or "",
        "attempt": min(record.attempt, COUNT_MAX),
        "calls": figures.calls,
        "tokens": f"{figures.input_tokens:,} / {figures.output_tokens:,}",
        "usd": _money(figures),
        "rate_limited": figures.rate_limited,
        "server_errors": figures.server_errors,
        "refused_calls": figures.refused_calls,
        "retried": figures.retried,
        "unseen_calls": figures.unseen_calls,
        "trace": _trace_gap(record, figures),
    }


def _troubles(figures: Figures) -> list[str]:
    """The calls that did not simply go out and come back, by kind."""
    return [
        f"{value:,} {label}"
        for value, label in (
            (figures.rate_limited, "rate-limited (HTTP 429)"),
            (figures.server_errors, "failed at the provider (5xx or no answer)"),
            (figures.refused_calls, "refused at a cap"),
            (figures.retried, "retried after one of those"),
        )
        if value
    ]


def total_lines(total: Figures) -> list[str]:
    """The run's wire figures as the pages list them."""
    troubles = ", ".join(_troubles(total))
    lines = [
        f"{total.calls:,} model calls in {total.scenarios:,} scenario(s)"
        + (f" ({total.reruns:,} of their attempts re-run by --gaia2-retries)" if total.reruns else "")
        + (f": {troubles}" if troubles else ""),
        f"tokens: {total.input_tokens:,} in, {total.output_tokens:,} out",
        f"money: {usd_text(total.usd)}"
        + (f", and {total.unpriced:,} attempt(s) of unknown cost" if total.unpriced else ""),
    ]
    if not total.differ:
        lines.append("the agents' own traces agree with the wire")
    else:
        lines.append(
            f"the agents' own traces differ in {total.differ:,} scenario(s), by {signed_usd(total.trace_minus_wire_usd)} in all"
            + (
                f"; {total.unseen_calls:,} calls the gateway never saw (an image bypassing the base URL)"
                if total.unseen_calls
                else ""
            )
        )
    return lines


def off_note(config: Mapping[str, Any]) -> str | None:
    """What the pages say of a run whose gateway was off (run_config.json's ``gateway``), with the
    run's own reason; None when it was on, or when the run says nothing of it (an older run)."""
    fact = config.get("gateway")
    if not isinstance(fact, Mapping) or fact.get("on") is not False:
        return None
    why = run_facts.text(fact.get("off"), TEXT_MAX)
    return f"{OFF} ({why})." if why else None


def run_page(
    config: Mapping[str, Any], records: Iterable[AttemptRecord], earlier: Iterable[AttemptRecord] = ()
) -> dict[str, Any] | None:
    """What index.html and report.html show of the gateway: the run's totals and one line per
    scenario it served (at most :data:`MAX_SCENARIOS`), each summing the scenario's attempts
    (``earlier``: :func:`earlier_attempts`), or that it was off; None: nothing to say."""
    off = off_note(config)
    before: dict[str, Figures] = {}
    for attempt in earlier:
        if (figures := of_record(attempt)) is not None:
            before[attempt.key] = before.get(attempt.key, Figures()) + _as_earlier(figures)
    served = [
        (record, figures + before.get(record.key, Figures()))
        for record in records
        if (figures := of_record(record)) is not None
    ]
    if not served and off is None:
        return None
    total = sum((figures for _, figures in served), Figures())
    return {
        "off": off,
        "lines": total_lines(total) if served else [],
        "rows": [scenario_row(record, figures) for record, figures in served[:MAX_SCENARIOS]],
        "left_out": max(0, len(served) - MAX_SCENARIOS),
        "log": WIRE_LOG,
    }


def run_config_above(folder: Path) -> dict[str, Any]:
    """run_config.json of the run that holds the attempt ``folder`` (bounded); empty when none does."""
    for parent in list(folder.parents)[:RUN_DEPTH]:
        if store.holds_a_run(parent):
            return run_facts.config_of(parent)
    return {}


def trace_page(folder: Path, record: AttemptRecord | None) -> dict[str, Any] | None:
    """What trace.html shows beside the wire's calls: the gateway's account of the attempt and the
    agent's own (trace.jsonl) side by side, and by how much their money differs; or that the
    run's gateway was off. None: nothing to say."""
    figures = of_record(record) if record is not None else None
    if figures is None or record is None:
        off = off_note(run_config_above(folder))
        return {"off": off, "rows": [], "lines": []} if off else None
    wire = record.wire or {}
    traced = read_usage(folder / "trace.jsonl", TRACE_LINE_MAX_BYTES)
    trace_usd = amount(wire.get("trace_cost_usd"))
    rows = [
        {
            "side": f"the model gateway ({WIRE_LOG})",
            "calls": figures.calls,
            "tokens": f"{figures.input_tokens:,} / {figures.output_tokens:,}",
            "usd": "unknown" if figures.unpriced else usd_text(figures.usd),
        },
        {
            "side": "the agent's own trace (trace.jsonl)",
            "calls": count(wire.get("trace_calls")),
            "tokens": f"{traced.input_tokens:,} / {traced.output_tokens:,}" if traced.calls else "",
            "usd": usd_text(trace_usd) if trace_usd is not None else "unknown",
        },
    ]
    gap = _trace_gap(record, figures)
    lines = [
        "the trace's money agrees with the wire's"
        if gap == "agrees"
        else f"the trace's money differs from the wire's by {gap}"
        if gap.startswith(("+", "-"))
        else f"the agent left {gap}: the wire's figure stands"
    ]
    if figures.unseen_calls:
        lines.append(
            f"{figures.unseen_calls:,} calls in the trace the gateway never saw (an image bypassing the base URL)"
        )
    if troubles := _troubles(figures):
        lines.append(f"of its {figures.calls:,} calls: " + ", ".join(troubles))
    return {"off": None, "rows": rows, "lines": lines}
