"""Stop when decided: a sequential test of a run against a baseline run, valid however often it looks.

Looking at a McNemar p-value after every scenario and stopping at the first p < 0.05 claims a
difference far more often than 5% of the time when there is none: every look is another
chance. The test here is the mixture sequential probability ratio test on the discordant pairs
(Robbins 1970, Ann Math Stat 41:1397; as an e-process, Ramdas et al. 2023, Stat Sci 38:576):
under "no difference" each discordant pair goes either way with probability 1/2 (McNemar's
null), and the likelihood ratio of "some p, drawn from the uniform Beta(1,1) prior" against
p = 1/2 is a nonnegative martingale starting at 1. Ville's inequality bounds the chance that it
*ever* reaches 1/level by the level, so the run may look after every pair and stop at the first
crossing. The mixture covers both directions at once: it decides "better" or "worse".

Only judged verdicts on both sides make a pair (passed or failed, in the baseline and in this
run); an error, or a scenario not run in the baseline, says nothing about the difference.

The scenario is the unit. With ``--gaia2-repeat K`` a scenario's K pairs are not independent
(a scenario one agent solves and the other does not tends to go that way every time), so
counting them as K discordant pairs would cross the bound far more often than the level. A
scenario counts once, when the last of its planned runs is in: for the run if B's pass fraction
over its judged pairs is above the baseline's, against it if below. Under "no difference" the
two runs of a scenario are exchangeable, so either way is equally likely and the bound holds;
with one repeat this is the pair itself.

The pairs are taken in the run's start order (its plan), never in the order verdicts arrive:
under several workers a quick verdict arrives first, and if failures are quicker than passes
(or slower) the arrival order would favour one direction and the bound would not hold. The
test looks at the longest prefix of the plan whose verdicts are all in, and asks whether the
ratio crossed at any point of it: the same answer on every worker and on a resume, and a
decision, once made, stays made however the scenarios still in flight end.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.report.paired import Answer
from pytest_gaia2.report.rates import percent
from pytest_gaia2.report.rows import is_key, planned_keys
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord, RecordError, verdict_of
from pytest_gaia2.store.redact import printable
from pytest_gaia2.store.safejson import JsonLimitError, JsonReadError

Key = tuple[str, str, int]
"""(split, scenario id, repeat): what a pair is matched by, as ``pytest-gaia2 compare`` matches."""
JUDGED = ("passed", "failed")
DECIDED = "decided"
"""How the reason of a scenario not started because the comparison was decided begins."""


def log_mixture_ratio(worse: int, better: int) -> float:
    """The log of the Beta(1,1)-mixture likelihood ratio of ``better`` discordant pairs won by
    this run and ``worse`` won by the baseline, against "each way with probability 1/2":
    ``2^n * B(better + 1, worse + 1) = 2^n * better! * worse! / (n + 1)!``. Log-gamma keeps it
    finite for any counts."""
    if worse < 0 or better < 0:
        raise ValueError(f"log_mixture_ratio: counts must be >= 0, got {worse} and {better}")
    n = worse + better
    return n * math.log(2) + math.lgamma(better + 1) + math.lgamma(worse + 1) - math.lgamma(n + 2)


@dataclass(frozen=True)
class Decision:
    """Where the test first crossed: the direction, the discordant counts (``worse``: passed in
    the baseline, failed here; ``better``: the other way), the judged pairs and the scenarios
    of the plan looked at up to there, the level and the likelihood ratio reached."""

    direction: str
    worse: int
    better: int
    pairs: int
    looked: int
    level: float
    ratio: float
    baseline: str = ""
    unit: str = "pairs"
    """``scenarios`` with repeats (each scenario counted once), else ``pairs``."""

    @property
    def reason(self) -> str:
        """The reason each scenario not started gives, and the run's stop."""
        return (
            f"{DECIDED}: {self.direction} than baseline {printable(self.baseline)}: {self.better} better, {self.worse} worse "
            f"of {self.pairs} judged {self.unit} (sequential test at level {percent(self.level)}); no new scenario starts"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "direction": self.direction,
            "worse": self.worse,
            "better": self.better,
            "pairs": self.pairs,
            "looked": self.looked,
            "level": self.level,
            "likelihood_ratio": round(self.ratio, 6),
            "test": "mixture-sprt-beta11-discordant" + ("-scenarios" if self.unit == "scenarios" else ""),
            "unit": self.unit,
            "baseline": self.baseline,
        }


def first_decision(
    pairs: Iterable[tuple[bool, bool] | None], level: float, baseline: str = "", unit: str = "pairs"
) -> Decision | None:
    """The first point of ``pairs`` (in plan order: ``(passed in the baseline, passed here)``, or
    None for a scenario that makes no pair) where the mixture ratio reaches ``1 / level``; None
    while it has not. Only a discordant pair moves the ratio, so only those are looked at."""
    if not 0 < level < 1:
        raise ValueError(f"first_decision: level must be between 0 and 1, got {level}")
    threshold = -math.log(level)
    worse = better = judged = looked = 0
    for pair in pairs:
        looked += 1
        if pair is None:
            continue
        judged += 1
        if pair[0] == pair[1]:
            continue
        worse, better = worse + pair[0], better + pair[1]
        log_ratio = log_mixture_ratio(worse, better)
        if log_ratio >= threshold:
            direction = "better" if better > worse else "worse"
            return Decision(direction, worse, better, judged, looked, level, math.exp(log_ratio), baseline, unit)
    return None


def scenario_pair(pairs: Sequence[tuple[bool, bool] | None]) -> tuple[bool, bool] | None:
    """One scenario's pair from its runs' pairs: the sign of B's passes minus the baseline's over
    the runs judged in both, as one pair ((False, True): B ahead; (True, False): behind; (True,
    True): level); None when no run of it is judged in both. One run: that run's pair, as a tie."""
    judged = [pair for pair in pairs if pair is not None]
    if not judged:
        return None
    ahead = sum(b for _, b in judged) - sum(a for a, _ in judged)
    if len(judged) == 1:
        return judged[0]
    return ahead <= 0, ahead >= 0


def _scenario(key: str) -> tuple[str, str]:
    (split, scenario_id, _), *_ = planned_keys([key])
    return split, scenario_id


def repeated(order: Sequence[str]) -> bool:
    """Whether the plan holds some scenario more than once (``--gaia2-repeat``)."""
    return len({_scenario(key) for key in order if is_key(key)}) < sum(1 for key in order if is_key(key))


def plan_pairs(
    order: Sequence[str],
    baseline: Mapping[Key, str],
    current: Mapping[str, AttemptRecord],
    hashes: Mapping[str, str | None] | None = None,
) -> list[tuple[bool, bool] | None]:
    """The pairs of the longest prefix of the plan ``order`` (keys as the records spell them)
    whose verdicts are all in ``current``: it ends at the first key without one (still running,
    or not started), or whose record was made from another scenario file than the plan's
    (``hashes``, by key): a resume runs that scenario again, so its old verdict is none yet.
    One pair per scenario (:func:`scenario_pair`), once the last of its planned runs is in."""
    pairs: list[tuple[bool, bool] | None] = []
    hashes = hashes or {}
    planned = Counter(_scenario(key) for key in order if is_key(key))
    runs: dict[tuple[str, str], list[tuple[bool, bool] | None]] = {}
    for key in order:
        record = current.get(key)
        if record is None or not record.made_from(hashes.get(key)):
            break
        before = baseline.get((record.split, record.scenario_id, record.repeat))
        judged = before in JUDGED and record.outcome in JUDGED
        scenario = runs.setdefault((record.split, record.scenario_id), [])
        scenario.append((before == "passed", record.outcome == "passed") if judged else None)
        if len(scenario) >= planned.get((record.split, record.scenario_id), 1):
            pairs.append(scenario_pair(scenario))
    return pairs


def _log_ratios(signs: Sequence[int]) -> list[float]:
    """The log mixture ratio after each scenario (sign +1: B ahead, -1: behind, 0: level)."""
    worse = better = 0
    ratios = []
    for sign in signs:
        worse, better = worse + (sign < 0), better + (sign > 0)
        ratios.append(log_mixture_ratio(worse, better))
    return ratios


MIXTURE_SCALE = 100
"""The number of scenarios around which the confidence sequence of the gap is tightest."""


def always_valid(differences: Sequence[float], level: float, baseline: str = "", unit: str = "pairs") -> Answer:
    """The sequential test's own answer on per-scenario differences of pass fractions (B - A, in
    the order they came in, -1..1), valid however the run stopped.

    Which way: the mixture test above on their signs, at ``level``: the same decision the stop
    made, at the same point, and kept once made. The p-value is the always-valid one,
    1 / (the largest ratio reached). The range of the gap is a confidence sequence: the running
    intersection of the normal-mixture bound for the mean of differences bounded in -1..1
    (sub-Gaussian with variance 1: Howard, Ramdas, McAuliffe & Sekhon 2021, Ann Stat 49:1055,
    the two-sided normal mixture), |S_t - t gap| <= sqrt((t + r) log((t + r) / (r level^2))),
    with r tuned to :data:`MIXTURE_SCALE` scenarios, cut to the side the test decided. Unlike a
    fixed-sample interval on a run that stopped because its difference looked large, it keeps its
    coverage at any stopping time.
    """
    signs = [(value > 0) - (value < 0) for value in differences]
    decision = first_decision(
        [(True, True) if sign == 0 else (sign < 0, sign > 0) for sign in signs], level, baseline, unit
    )
    largest = max(_log_ratios(signs), default=0.0)
    threshold = 2 * math.log(1 / level)
    r = MIXTURE_SCALE / (threshold + math.log(1 + threshold))
    low, high, total = -1.0, 1.0, 0.0
    for t, value in enumerate(differences, start=1):
        total += value
        reach = math.sqrt((t + r) * math.log((t + r) / (r * level * level)))
        low, high = max(low, (total - reach) / t), min(high, (total + reach) / t)
    if low > high:  # the intersection ran dry: a chance of at most the level; keep its last point
        low = high = (low + high) / 2
    if decision is not None:
        low, high = (
            (max(low, 0.0), max(high, 0.0)) if decision.direction == "better" else (min(low, 0.0), min(high, 0.0))
        )
    return Answer(
        delta=sum(differences) / len(differences) if differences else None,
        low=low,
        high=high,
        p=min(1.0, math.exp(-largest)),
        confidence=1 - level,
        direction=decision.direction if decision is not None else None,
        method="confidence-sequence",
        test=f"mixture-sprt-beta11-discordant{'-scenarios' if unit == 'scenarios' else ''} (always valid)",
        decision=decision,
    )


BASELINE_MAX_KEYS = 800 * 32
"""The most scenario runs a baseline may hold: Gaia2's 800 scenarios at 32 repeats each (a
pass@32 of the whole benchmark, some $14,000 at the $0.55 a run docs/explanation/scale.md measures). Each
costs the reader about 0.2 KB in every process that holds the baseline."""
BASELINE_MAX_LINES = 8 * BASELINE_MAX_KEYS
"""The most results.jsonl lines read: one per attempt, so room for the lines retries and
resumes append before a run's end rewrites the file to one a key. Reading one costs about
10 µs, so this bounds the time (about 2 s), as the keys bound the memory."""
BASELINE_MAX_BYTES = 256 * 2**20
"""The largest baseline results.jsonl read: those lines at the 1 to 2 KB a record takes."""


@dataclass(frozen=True)
class Baseline:
    """The baseline run folder's verdicts by (split, scenario, repeat): each results.jsonl line
    must be a record whose identity and outcome check (a damaged file is an error naming it, as
    ``pytest-gaia2 compare`` reads a run), and only those are kept, within the bounds above."""

    path: Path
    outcomes: dict[Key, str]

    @classmethod
    def load(cls, path: str | Path) -> Baseline:
        """Raises :class:`store.StoreError` naming the folder or file when it is no run folder,
        its results cannot be read or hold more than a Gaia2 run can (the bounds above)."""
        folder = store.RunFolder.existing(path)
        results, outcomes = folder.results, dict[Key, str]()
        try:
            for number, row in store.numbered_lines(results, max_bytes=BASELINE_MAX_BYTES):
                if number > BASELINE_MAX_LINES:
                    raise store.StoreError(
                        f"{results}: more than the {BASELINE_MAX_LINES} lines a baseline may hold "
                        f"(Gaia2's 800 scenarios x 32 repeats, {BASELINE_MAX_LINES // BASELINE_MAX_KEYS} attempts each)"
                    )
                try:
                    if isinstance(row, JsonLimitError):
                        raise RecordError(None, str(row))
                    key, outcome = verdict_of(row)
                except RecordError as exc:
                    raise store.StoreError(f"{results}: line {number}: {exc}") from None
                outcomes[key] = outcome
                if len(outcomes) > BASELINE_MAX_KEYS:
                    raise store.StoreError(
                        f"{results}: more than the {BASELINE_MAX_KEYS} scenario runs a baseline may hold "
                        "(Gaia2's 800 scenarios x 32 repeats)"
                    )
        except JsonReadError as exc:
            if os.path.lexists(results):
                raise store.StoreError(f"{results}: {exc}") from None
        if not outcomes:
            raise store.StoreError(f"{results}: no results to compare with")
        return cls(folder.path, outcomes)

    def shipped(self) -> list[Any]:
        """The baseline as the controller hands it to xdist workers (``workerinput``), so no
        worker reads the file again: the path and one [split, id, repeat, outcome] per key."""
        return [str(self.path), [[*key, outcome] for key, outcome in self.outcomes.items()]]

    @classmethod
    def unshipped(cls, shipment: Sequence[Any]) -> Baseline:
        """The controller's :meth:`shipped` baseline, on a worker."""
        path, rows = shipment
        return cls(Path(path), {(split, sid, repeat): outcome for split, sid, repeat, outcome in rows})

    def shared(self, planned: Sequence[str]) -> int:
        """How many planned keys the baseline judged (a pair can only ever come from those)."""
        keys = planned_keys([key for key in planned if is_key(key)])
        return sum(1 for key in keys if self.outcomes.get(key) in JUDGED)

    def decide(
        self,
        order: Sequence[str],
        current: Iterable[AttemptRecord],
        level: float,
        hashes: Mapping[str, str | None] | None = None,
    ) -> Decision | None:
        """The decision on this run's verdicts so far (``current``, every worker's and every
        session's, each counted only if made from the plan's scenario file, ``hashes`` by key),
        or None while undecided."""
        latest = {record.key: record for record in current}
        unit = "scenarios" if repeated(order) else "pairs"
        return first_decision(plan_pairs(order, self.outcomes, latest, hashes), level, str(self.path), unit)
