"""What the re-judges of a run said, for the report: each judge against the run's own verdicts.

``pytest-gaia2 rejudge`` writes each re-judge into ``rejudge/<NNN>-<time>/<judge>/rejudgments.jsonl``.
The report reads them back (bounded, regular files inside the run folder only) and compares each
judge with the in-container verdicts of the run's records (never with a verdict the file claims
for the run): raw agreement, Cohen's kappa (agreement beyond what two judges with these pass
rates would reach by chance; Cohen 1960) and the ids that flipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_gaia2.report.rows import natural_key
from pytest_gaia2.store import folder as store

REJUDGE_DIR = "rejudge"
REJUDGMENTS_FILE = "rejudgments.jsonl"
"""One judge's verdicts, one line per scenario (its own schema: no run record, so not results.jsonl)."""
NUMBER_DIGITS = 9
NUMBER_MAX = 10**NUMBER_DIGITS - 1
"""The highest re-judge number: the one after it would have a digit more, which no reader takes
for a re-judge (a folder of the run may be forged with any name)."""
_NUMBER = re.compile(rf"([0-9]{{3,{NUMBER_DIGITS}}})-")
"""How a re-judge folder's name begins: ``007-``; more digits than NUMBER_DIGITS is no re-judge."""
_NUMBERED = re.compile(_NUMBER.pattern + r"[0-9A-Za-z]{1,40}")
SHOWN = 10
"""The latest re-judges the report shows."""


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two binary ratings of the same items; None when it is undefined (no
    items, or both raters gave one answer throughout, so chance agreement is certain)."""
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    yes_a = sum(a for a, _ in pairs) / n
    yes_b = sum(b for _, b in pairs) / n
    chance = yes_a * yes_b + (1 - yes_a) * (1 - yes_b)
    return None if chance >= 1 else (observed - chance) / (1 - chance)


@dataclass(frozen=True)
class JudgeResult:
    """One judge of one re-judge against the run's in-container verdicts."""

    rejudge: str
    judge: str
    compared: int
    errors: int
    agreement: float | None
    kappa: float | None
    to_fail: tuple[str, ...]
    to_pass: tuple[str, ...]


def judge_result(rejudge: str, judge: str, verdicts: Mapping[str, bool | None], run: Mapping[str, bool]) -> JudgeResult:
    """``verdicts`` by record key (None: no verdict) against ``run``, the run's judged verdicts."""
    keys = sorted(run.keys() & verdicts.keys(), key=natural_key)
    pairs = [(run[key], verdict) for key in keys if (verdict := verdicts[key]) is not None]
    return JudgeResult(
        rejudge=rejudge,
        judge=judge,
        compared=len(pairs),
        errors=sum(verdicts[key] is None for key in keys),
        agreement=sum(a == b for a, b in pairs) / len(pairs) if pairs else None,
        kappa=cohen_kappa(pairs),
        to_fail=tuple(key for key in keys if run[key] and verdicts[key] is False),
        to_pass=tuple(key for key in keys if not run[key] and verdicts[key] is True),
    )


def _verdicts(path: Path) -> dict[str, bool | None]:
    return {
        line["key"]: line.get("success") if isinstance(line.get("success"), bool) else None
        for line in store.read_jsonl(path)
        if isinstance(line.get("key"), str)
    }


def number_of(name: str) -> int | None:
    """The number a re-judge folder's name begins with (at most :data:`NUMBER_MAX`), None for any other name."""
    match = _NUMBER.match(name)
    return int(match[1]) if match else None


def _numbered(run: Path) -> list[str]:
    """The run's numbered re-judge folders, oldest first."""
    root = run / REJUDGE_DIR
    if root.is_symlink() or not root.is_dir():
        return []
    found = ((int(match[1]), entry.name) for entry in root.iterdir() if (match := _NUMBERED.fullmatch(entry.name)))
    return [name for _, name in sorted(found)]


def latest_verdicts(run: Path, judge: str) -> tuple[str, dict[str, bool | None]] | None:
    """The newest re-judge of the run with a judge of this name: (its folder, verdicts by key).
    A numbered folder that leads outside the run (a planted link) is passed over, as :func:`read`
    passes it: it hides no older re-judge."""
    for name in reversed(_numbered(run)):
        try:
            path = store.inside(run, REJUDGE_DIR, name, judge, REJUDGMENTS_FILE)
        except store.StoreError:
            continue
        verdicts = _verdicts(path)
        if verdicts:
            return name, verdicts
    return None


def read(run: Path, in_container: Mapping[str, bool]) -> list[JudgeResult]:
    """Every judge of the latest :data:`SHOWN` numbered re-judges of the run, oldest first."""
    results = []
    for name in _numbered(run)[-SHOWN:]:
        try:
            folder = store.inside(run, REJUDGE_DIR, name)
        except store.StoreError:
            continue
        if folder.is_symlink() or not folder.is_dir():
            continue
        for judge in sorted(entry.name for entry in folder.iterdir() if entry.is_dir() and not entry.is_symlink()):
            try:
                path = store.inside(run, REJUDGE_DIR, name, judge, REJUDGMENTS_FILE)
            except store.StoreError:
                continue
            verdicts = _verdicts(path)
            if verdicts:
                results.append(judge_result(name, judge, verdicts, in_container))
    return results
