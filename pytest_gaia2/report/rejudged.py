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
from typing import Any

from pytest_gaia2.report.rates import Rate
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


def aggregate(
    in_container: Mapping[str, bool],
    verdicts: Mapping[str, Mapping[str, bool | None]],
    reasons: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Each judge (by folder name) against the in-container verdicts and, with several judges, against each other.

    ``verdicts`` maps judge -> key -> True/False, None when the judge gave no verdict (which
    counts as not passed in rates, and as no vote in agreement: agreement is over the scenarios
    the judge decided, its n); ``reasons`` maps judge -> key -> why it gave none.
    """
    keys = sorted(in_container)
    n = len(keys)
    out: dict[str, Any] = {
        "scenarios": n,
        "in_container": Rate.of(sum(in_container[k] for k in keys), n).to_dict(),
        "judges": {},
    }
    for judge, by_key in verdicts.items():
        judged = [k for k in keys if by_key.get(k) is not None]
        agree = sum(by_key[k] == in_container[k] for k in judged)
        out["judges"][judge] = {
            "passed": sum(by_key.get(k) is True for k in keys),
            "failed": sum(by_key.get(k) is False for k in keys),
            "errors": n - len(judged),
            "pass_rate": Rate.of(sum(by_key.get(k) is True for k in keys), n).to_dict(),
            "agreement_with_in_container": Rate.of(agree, len(judged)).to_dict(),
            "flipped_to_fail": [k for k in judged if in_container[k] and not by_key[k]],
            "flipped_to_pass": [k for k in judged if not in_container[k] and by_key[k]],
            "error_ids": [k for k in keys if by_key.get(k) is None],
            "error_reasons": {
                k: why for k in keys if by_key.get(k) is None and (why := (reasons or {}).get(judge, {}).get(k))
            },
        }
    out["disagree_with_in_container"] = {
        k: sorted(j for j, by_key in verdicts.items() if by_key.get(k) is not None and by_key[k] != in_container[k])
        for k in keys
    }
    out["disagree_with_in_container"] = {k: v for k, v in out["disagree_with_in_container"].items() if v}
    judges = list(verdicts)
    if len(judges) > 1:
        votes = {k: [verdicts[j].get(k) for j in judges] for k in keys}
        pairs = [(a, b) for i, a in enumerate(judges) for b in judges[i + 1 :]]
        both = [
            (verdicts[a][k], verdicts[b][k])
            for a, b in pairs
            for k in keys
            if verdicts[a].get(k) is not None and verdicts[b].get(k) is not None
        ]
        out["strict_all"] = Rate.of(sum(all(v is True for v in vs) for vs in votes.values()), n).to_dict()
        out["majority"] = Rate.of(
            sum(2 * sum(v is True for v in vs) > len(judges) for vs in votes.values()), n
        ).to_dict()
        out["agreement"] = Rate.of(sum(a == b for a, b in both), len(both)).to_dict()
        out["unanimity"] = Rate.of(sum(None not in vs and len(set(vs)) == 1 for vs in votes.values()), n).to_dict()
        out["disagreeing_judges"] = sorted(k for k, vs in votes.items() if len({v for v in vs if v is not None}) > 1)
    return out
