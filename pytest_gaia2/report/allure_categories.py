"""Allure's ``categories.json`` for Gaia2 runs: judge-failure kinds and infrastructure errors.

Allure puts a result in *every* category whose regexes fully match (DOTALL), so the groups
are disjoint by construction. A judge failure (status failed, message ``AssertionError:
<the judge's reason>``) is grouped by the kind of reason, matched on its fixed words only
(never an event id, tool or path): count mismatches, an oracle action the agent never
attempted, or attempted with other arguments, a checker's rejection, a causality or timing
violation, the declared duration exceeded, no reason; anything else is "Judge failures:
other". An infrastructure error is grouped by its category, matched on the trace, which the
plugin sets to ``[<category>] <message>`` for every error whatever raised it; in status
broken or failed, since pytest-timeout's hard bound fails a test instead of breaking it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_gaia2.store.record import CATEGORIES

CATEGORIES_FILE = "categories.json"
JUDGE_PREFIX = "Judge failures: "
JUDGE_OTHER = f"{JUDGE_PREFIX}other"
INFRA_PREFIX = "Infrastructure error: "

_EXCEPTION = r"(?:[\w.]+: )?"  # Allure's message starts with the exception's type
_CANNOT_MATCH = r"Cannot match \S+ \([^)]*\): "  # "Cannot match <tool> (<oracle event id>): "
_CANDIDATE = r"[^\s:;]+: "  # the first rejected candidate's event id (reasons are joined by "; ")
_INFRA_TRACE = r"\[\w+\] .*"

JUDGE_KINDS: tuple[tuple[str, str, str], ...] = (
    (
        "SMU count mismatch",
        "the agent messaged the user fewer times than the oracle, or more than once extra",
        r"SMU count mismatch\b.*",
    ),
    (
        "tool count mismatch",
        "the agent called some write tool a different number of times than the oracle",
        r"Tool count mismatch\b.*",
    ),
    (
        "oracle action never attempted",
        "no agent call of the oracle's tool was left to compare (no candidates)",
        _CANNOT_MATCH + r"no candidates.*",
    ),
    (
        "arguments differ",
        "the agent called the oracle's tool with other arguments",
        _CANNOT_MATCH + _CANDIDATE + r"arg .*",
    ),
    (
        "rejected by a checker",
        "a tool checker (exact or LLM) rejected the agent's call",
        _CANNOT_MATCH + _CANDIDATE + r"\w*checker\b.*",
    ),
    (
        "causality violation",
        "the agent acted before the action the oracle's event depends on",
        _CANNOT_MATCH + _CANDIDATE + r"causality violation.*",
    ),
    (
        "timing",
        "the agent acted outside the oracle's delay window",
        _CANNOT_MATCH + _CANDIDATE + r"time check failed.*",
    ),
    (
        "declared duration exceeded",
        "the scenario ran past its declared duration without a judgment (upstream counts the agent as too slow)",
        r"ran past the scenario's declared duration.*",
    ),
    ("no reason given", "the judge rejected the run without a reason", r"judge rejected the run.*"),
)
"""(kind, what it means, regex of the judge's reason): the judge's failure messages
(contract section 7, ``reference/gaia2_ref_judge.py``, ``verdict.decide``)."""


def categories() -> list[dict[str, Any]]:
    """categories.json: one failed group per kind of judge failure, a catch-all, and one group
    per infrastructure error category (``record.CATEGORIES``, the table docs/reference/categories.md shows)."""
    not_infra = f"(?!{_INFRA_TRACE})"
    groups = [
        {
            "name": f"{JUDGE_PREFIX}{kind}",
            "description": what,
            "matchedStatuses": ["failed"],
            "messageRegex": _EXCEPTION + reason,
            "traceRegex": f"{not_infra}.*",
        }
        for kind, what, reason in JUDGE_KINDS
    ]
    any_kind = "|".join(_EXCEPTION + reason for _, _, reason in JUDGE_KINDS)
    groups.append(
        {
            "name": JUDGE_OTHER,
            "description": "a failed test whose message is none of the judge's known kinds",
            "matchedStatuses": ["failed"],
            "messageRegex": f"(?!{any_kind}).*",
            "traceRegex": f"{not_infra}.*",
        }
    )
    groups += [
        {
            "name": f"{INFRA_PREFIX}{category}",
            "description": f"{what}; look at {where}",
            "matchedStatuses": ["broken", "failed"],
            "traceRegex": rf"\[{category}\] .*",
        }
        for category, (what, where) in CATEGORIES.items()
    ]
    return groups


def matches(group: Mapping[str, Any], status: str, message: str | None, trace: str | None) -> bool:
    """Allure's rule (``CategoriesPlugin.matches``): the status is listed, and each regex given
    matches the whole text, ``.`` matching line breaks too."""

    def fits(regex: str | None, text: str | None) -> bool:
        return regex is None or (text is not None and re.fullmatch(regex, text, re.DOTALL) is not None)

    return (
        status in group["matchedStatuses"]
        and fits(group.get("messageRegex"), message)
        and fits(group.get("traceRegex"), trace)
    )


def category_of(status: str, message: str | None, trace: str | None) -> str | None:
    """The category Allure will put a result in (the groups are disjoint), or None."""
    return next((group["name"] for group in categories() if matches(group, status, message, trace)), None)
