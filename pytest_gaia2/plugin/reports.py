"""What pytest reports carry for a scenario: the record, JUnit properties, masked text.

Called from the plugin's ``pytest_runtest_makereport`` wrapper: the record travels with the
final report (to the xdist controller too), becomes JUnit properties, and every report's
text (longrepr with ``-l`` locals, captured output) is masked before anyone writes it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_gaia2.plugin import private_api
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import printable

if TYPE_CHECKING:
    from pytest_gaia2.plan.items import PlannedItem
    from pytest_gaia2.run.attempt import ScenarioAttempt
    from pytest_gaia2.run.context import RunContext
    from pytest_gaia2.run.evidence import ScenarioResult


CARRIED = ("gaia2_record", "gaia2_not_started")
"""The report attributes the plugin sets: its record (JSON) and why a planned key did not start."""
CARRIED_KEY = "gaia2"
"""Where a serialised report carries them (from an xdist worker to the controller)."""


def carry(report: object, data: dict[str, object] | None) -> dict[str, object] | None:
    """``data`` (pytest's serialised ``report``) with the plugin's attributes under
    :data:`CARRIED_KEY` alone, taken from the report itself."""
    if data is None:
        return data
    for name in CARRIED:
        data.pop(name, None)
    carried = {name: getattr(report, name) for name in CARRIED if hasattr(report, name)}
    if carried:
        data[CARRIED_KEY] = carried
    return data


def unpack(data: dict[str, object]) -> Callable[[object], None]:
    """Take the plugin's attributes out of a serialised report before pytest rebuilds it; what
    puts them on the rebuilt report."""
    carried = data.pop(CARRIED_KEY, None)

    def restore(report: object) -> None:
        if isinstance(carried, dict):
            for name in CARRIED:
                if name in carried:
                    setattr(report, name, carried[name])

    return restore


def mask(context: RunContext, report: pytest.TestReport) -> None:
    """Secrets and control characters out of the report's longrepr and captured sections (only
    rewritten when one is there): terminal, JUnit XML and xdist all see the cleaned text."""

    def clean(text: str) -> str:
        return printable(context.redactor.redact(text))

    longrepr = report.longrepr
    if longrepr is not None and not isinstance(longrepr, tuple):
        text = str(longrepr)
        if clean(text) != text:
            report.longrepr = clean(text)
    elif isinstance(longrepr, tuple):
        report.longrepr = (longrepr[0], longrepr[1], clean(str(longrepr[2])))
    report.sections = [(name, clean(content)) for name, content in report.sections]


def _record(
    context: RunContext,
    planned: PlannedItem,
    call: pytest.CallInfo[None],
    result: ScenarioResult | None,
    attempt: ScenarioAttempt | None,
) -> AttemptRecord:
    """The item's record: its result's, its attempt's, its broken file's, or a harness error."""
    if result is not None:
        return result.record
    if attempt is not None and attempt.result is not None:
        return attempt.result.record
    if planned.error is not None:
        return context.runs.runner.error_record(planned, "invalid_scenario", str(planned.error))
    from pytest_gaia2.run.verdict import Gaia2InfraError

    excinfo = call.excinfo
    if excinfo is not None and isinstance(excinfo.value, Gaia2InfraError):
        return context.runs.runner.error_record(planned, excinfo.value.category, excinfo.value.detail)
    cause = f"{excinfo.typename}: {excinfo.value}" if excinfo is not None else "no record was written"
    return context.runs.runner.error_record(planned, "harness_error", f"the harness failed before any attempt: {cause}")


def annotate(
    context: RunContext,
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    planned: PlannedItem | None,
    result: ScenarioResult | None,
    attempt: ScenarioAttempt | None,
) -> None:
    """Mask the report; on the item's final report, attach the record and its JUnit properties."""
    if not context.active:
        return
    uses_scenario = planned is not None and (
        result is not None
        or attempt is not None
        or planned.error is not None
        or "gaia2_result" in getattr(item, "fixturenames", ())
    )
    final = report.when == "call" or (report.when == "setup" and report.failed)
    if planned is not None and report.skipped and isinstance(report.longrepr, tuple):
        why = str(report.longrepr[2]).removeprefix("Skipped: ")
        report.gaia2_not_started = {"key": planned.key, "why": why}  # type: ignore[attr-defined]
    if uses_scenario and final and planned is not None and not hasattr(report, "gaia2_record"):
        record = _record(context, planned, call, result, attempt)
        _explain(report, call, record, context.folder.path / record.folder if context.folder else None)
        report.gaia2_record = record.to_json()  # type: ignore[attr-defined]
        properties: list[tuple[str, object]] = [
            ("gaia2_scenario_id", record.scenario_id),
            ("gaia2_split", record.split),
            ("gaia2_verdict", record.outcome),
            ("gaia2_error_category", record.error_category or ""),
            ("gaia2_attempt", str(record.attempt)),
            ("gaia2_reused", str(record.reused).lower()),
            ("gaia2_model", record.model or ""),
            ("gaia2_image", record.image or ""),
            ("gaia2_judge", "/".join(str(part or "none") for part in (record.judge_provider, record.judge_model))),
            *(
                [
                    ("gaia2_cost_usd", "" if record.cost_usd is None else f"{record.cost_usd:.6f}"),
                    ("gaia2_tokens_in", str(record.usage.get("input_tokens", 0))),
                    ("gaia2_tokens_out", str(record.usage.get("output_tokens", 0))),
                ]
                if record.usage
                else []
            ),
        ]
        report.user_properties.extend(properties)
        names = {name for name, _ in properties}
        item.user_properties[:] = [prop for prop in item.user_properties if prop[0] not in names] + properties
    mask(context, report)


def _explain(
    report: pytest.TestReport, call: pytest.CallInfo[None], record: AttemptRecord, folder: Path | None
) -> None:
    """A short longrepr that says what happened instead of a harness traceback."""
    from pytest_gaia2.run.verdict import Gaia2InfraError

    if call.excinfo is None:
        return
    if isinstance(call.excinfo.value, Gaia2InfraError) or record.outcome == "error":
        report.longrepr = f"[{record.error_category}] {record.message}"
    elif record.outcome == "failed" and report.when == "call":
        report.longrepr = f"AssertionError: {record.message}" + (f"\n(files: {folder})" if folder else "")


def add_junit_properties(config: pytest.Config, context: RunContext) -> None:
    """Run-level JUnit properties (planned, done, not run, complete) on the controller."""
    add = private_api.junit_property_writer(config)
    if context.is_worker or not context.prepared or add is None:
        return
    for name, value in context.book.junit_properties():
        add(name, value)
