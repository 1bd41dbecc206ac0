"""Choosing which scenarios run: splits, subset manifests, id files, seeded samples, prefixes.

Every function here is a pure function of its inputs (and the seed): the same files give the
same choice in the same order on every xdist worker and in every later run. Nothing depends
on hash randomisation or set order, and sampling draws only ``Random.random()``, the one
method whose sequence Python promises to keep across versions for a given seed.
"""

from __future__ import annotations

import difflib
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gaia2.config.splits import SPLITS, parse_splits
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.store.folder import write_text

FIRST_N_WARNING = (
    "--gaia2-first-n takes the first N scenarios in file order; Gaia2 files are grouped by "
    "universe, so a prefix over-represents the first universes (one team drew 17 of 20 from "
    "universe_21 and reported a gain that vanished on the full split). Prefer --gaia2-sample N "
    "--gaia2-seed S, a seeded sample stratified by split and universe."
)
"""Shown whenever a plain prefix is asked for (upstream's ``limit`` behaves the same way)."""

_MAX_LISTED = 10
MARK_TRIES = 256
"""Evaluations of a -m expression spent on the names it leaves open; past them the item is kept."""


class SelectionError(OptionError):
    """A selection option that cannot work; names the option and the file."""


@dataclass(frozen=True)
class Request:
    """What was asked, as given, for the run card and the notes."""

    splits: tuple[str, ...] | None = None
    subset: Path | None = None
    ids_file: Path | None = None
    sample: int | None = None
    seed: int = 0
    first_n: int | None = None


@dataclass(frozen=True)
class Selection:
    """The chosen scenarios (in input order) and what the user should be told about the choice."""

    scenarios: list[Scenario]
    notes: list[str] = field(default_factory=list)
    request: Request = field(default_factory=Request)


def _listed(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:_MAX_LISTED])
    return shown + (f", ... ({len(ids) - _MAX_LISTED} more)" if len(ids) > _MAX_LISTED else "")


def filter_splits(scenarios: Sequence[Scenario], splits: Sequence[str]) -> tuple[list[Scenario], list[str]]:
    """The scenarios of the given splits, and a note for each asked split that has none.

    A name that is neither a Gaia2 split nor a folder that was found is a typo: an error.
    """
    present = sorted({s.split for s in scenarios})
    unknown = [name for name in splits if name not in present and name not in SPLITS]
    if unknown:
        raise SelectionError(
            f"--gaia2-splits: unknown split {', '.join(map(repr, unknown))} "
            f"(found: {', '.join(present) or 'none'}; Gaia2 splits: {', '.join(SPLITS)})"
        )
    notes = [f"split {name!r} has no scenarios in the given folders" for name in splits if name not in present]
    wanted = set(splits)
    return [s for s in scenarios if s.split in wanted], notes


def read_manifest(path: Path) -> dict[str, list[str]]:
    """Upstream's subset manifest ``{"splits": {name: [scenario_id, ...]}}``, validated."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SelectionError(f"--gaia2-subset: cannot read {path} ({exc.strerror})") from None
    except ValueError as exc:
        raise SelectionError(f"--gaia2-subset: {path} is not valid JSON ({exc})") from None
    splits = data.get("splits") if isinstance(data, dict) else None
    if not isinstance(splits, dict):
        raise SelectionError(f'--gaia2-subset: {path}: expected an object {{"splits": {{name: [scenario ids]}}}}')
    for name, ids in splits.items():
        if not isinstance(ids, list) or not all(isinstance(item, str) for item in ids):
            raise SelectionError(f"--gaia2-subset: {path}: splits.{name} must be a list of scenario id strings")
    return {str(name): list(ids) for name, ids in splits.items()}


def read_ids_file(path: Path) -> list[str]:
    """Scenario ids, one per line; ``#`` starts a comment, blank lines are ignored."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise SelectionError(f"--gaia2-ids-file: cannot read {path} ({exc.strerror})") from None
    ids = (line.split("#", 1)[0].strip() for line in text.splitlines())
    return list(dict.fromkeys(i for i in ids if i))


def filter_ids(
    scenarios: Sequence[Scenario], ids: Sequence[str], *, known: Sequence[Scenario], source: str
) -> tuple[list[Scenario], list[str]]:
    """The scenarios whose id is listed, and notes for listed ids that are missing.

    ``known`` is everything discovered, so an id outside the chosen splits is told apart
    from one that does not exist at all.
    """
    wanted = set(ids)
    kept = [s for s in scenarios if s.scenario_id in wanted]
    found = {s.scenario_id for s in known}
    kept_ids = {s.scenario_id for s in kept}
    notes: list[str] = []
    absent = [i for i in ids if i not in found]
    if absent:
        notes.append(f"{len(absent)} ids in {source} not found: {_listed(absent)}")
    elsewhere = [i for i in ids if i in found and i not in kept_ids]
    if elsewhere:
        notes.append(f"{len(elsewhere)} ids in {source} are outside the chosen splits: {_listed(elsewhere)}")
    return kept, notes


def _allocate(sizes: Sequence[int], n: int, rng: random.Random) -> list[int]:
    """Proportional quotas summing to ``n``, largest remainders first, ties broken by ``rng``."""
    total = sum(sizes)
    quotas = [n * size // total for size in sizes]
    remainders = [n * size % total for size in sizes]
    tie_breaks = [rng.random() for _ in sizes]
    order = sorted(range(len(sizes)), key=lambda i: (-remainders[i], tie_breaks[i]))
    for index in order[: n - sum(quotas)]:
        quotas[index] += 1
    return quotas


SMOKE_SCENARIOS = 32
"""The midsmoke rung of upstream's runbook: 32 scenarios, judged on errors, not on the pass rate."""


def smoke_sample(pool: int) -> int | None:
    """--gaia2-smoke's sample size for a pool of ``pool`` scenarios: SMOKE_SCENARIOS, or all (None)."""
    return SMOKE_SCENARIOS if pool > SMOKE_SCENARIOS else None


def sample(scenarios: Sequence[Scenario], n: int, seed: int) -> list[Scenario]:
    """A seeded sample of ``n`` scenarios stratified by split, then by universe, in input order.

    Each split gets its proportional share of ``n``, and each universe its proportional share
    of its split's seats (largest-remainder rounding both times), so per-split rates rest on
    the right number of scenarios even when there are more (split, universe) strata than
    seats. Within a stratum the scenarios with the smallest seeded keys are taken. The result
    depends only on the set of scenario ids, ``n`` and ``seed``.
    """
    if n >= len(scenarios):
        return list(scenarios)
    ordered = sorted(scenarios, key=lambda s: (s.split, s.universe or "", s.scenario_id))
    rng = random.Random(seed)
    keys = {s.scenario_id: rng.random() for s in ordered}
    strata: dict[str, dict[str, list[Scenario]]] = defaultdict(lambda: defaultdict(list))
    for scenario in ordered:
        strata[scenario.split][scenario.universe or ""].append(scenario)
    splits = sorted(strata)
    split_quotas = _allocate([sum(map(len, strata[split].values())) for split in splits], n, rng)
    chosen: set[str] = set()
    for split, split_quota in zip(splits, split_quotas, strict=True):
        universes = sorted(strata[split])
        quotas = _allocate([len(strata[split][universe]) for universe in universes], split_quota, rng)
        for universe, quota in zip(universes, quotas, strict=True):
            members = sorted(strata[split][universe], key=lambda s: (keys[s.scenario_id], s.scenario_id))
            chosen.update(s.scenario_id for s in members[:quota])
    return [s for s in scenarios if s.scenario_id in chosen]


def first_n(scenarios: Sequence[Scenario], n: int) -> list[Scenario]:
    """The first ``n`` scenarios in the given (file) order; see :data:`FIRST_N_WARNING`."""
    return list(scenarios[:n])


# select() takes keyword arguments named like these two functions; it calls them by these names.
_sample, _first_n = sample, first_n


_WORDS = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_OPERATORS = {"and", "or", "not", "True", "False", "None"}


def nothing_selected(option: str, expression: str, markers: Sequence[str], names: Sequence[str]) -> str:
    """Why ``-m``/``-k EXPRESSION`` ran nothing, said before anything runs: the split and universe
    markers that exist and, for each word of the expression, the nearest marker or name."""
    words = [word for word in _WORDS.findall(expression) if word not in _OPERATORS]
    nearest = [
        f"{word!r} -> {match[0]}"
        for word in dict.fromkeys(words)
        for match in [difflib.get_close_matches(word, [*markers, *names], n=1, cutoff=0.5)]
        if match and match[0] != word
    ]
    return f"{option} {expression!r} selects no scenario. Markers: {_listed(list(markers))}" + (
        f"; nearest: {', '.join(nearest)}" if nearest else ""
    )


class _Open(Exception):
    """The expression asked for a name no choice has been made for yet."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _matcher(owned: frozenset[str], has: frozenset[str], chosen: dict[str, bool]) -> Callable[..., bool]:
    def matcher(name: str, /, **kwargs: object) -> bool:
        if name in owned:
            return name in has and not kwargs
        if name not in chosen:
            raise _Open(name)
        return chosen[name]

    return matcher


def could_match(evaluate: Callable[[Callable[..., bool]], bool], owned: frozenset[str], has: frozenset[str]) -> bool:
    """Whether a -m expression (``evaluate``: it calls the matcher with each marker name it needs)
    can select an item that has the markers ``has`` of the ``owned`` ones the plugin sets (a name
    of ``owned`` it lacks is certainly absent, and the plugin's markers take no arguments),
    whatever markers outside ``owned`` a conftest may add later: every choice of those names is
    tried, up to :data:`MARK_TRIES` evaluations, past which the answer is yes. Only a no lets an
    item go uncreated; pytest's own -m still decides on every item created."""
    pending: list[dict[str, bool]] = [{}]
    tries = 0
    while pending:
        tries += 1
        if tries > MARK_TRIES:
            return True
        chosen = pending.pop()
        try:
            if evaluate(_matcher(owned, has, chosen)):
                return True
        except _Open as open_name:
            pending += [{**chosen, open_name.name: False}, {**chosen, open_name.name: True}]
    return False


def manifest(scenarios: Iterable[tuple[str, str]]) -> dict[str, dict[str, list[str]]]:
    """Upstream's subset-manifest dict for ``(split, scenario id)`` pairs: splits and ids sorted."""
    by_split: dict[str, list[str]] = defaultdict(list)
    for split, scenario_id in scenarios:
        by_split[split].append(scenario_id)
    return {"splits": {split: sorted(set(ids)) for split, ids in sorted(by_split.items())}}


def write_manifest(path: Path, scenarios: Iterable[tuple[str, str]]) -> None:
    """Write the subset manifest of ``(split, scenario id)`` pairs (atomically), ready for ``--gaia2-subset``."""
    write_text(path, json.dumps(manifest(scenarios), indent=2) + "\n")


def select(
    scenarios: Sequence[Scenario],
    *,
    splits: str | Sequence[str] | None = None,
    subset: Path | None = None,
    ids_file: Path | None = None,
    sample: int | None = None,
    seed: int = 0,
    first_n: int | None = None,
) -> Selection:
    """Apply the selection options in a fixed order: splits, subset, ids file, then sample or prefix.

    Filters intersect. ``sample`` and ``first_n`` exclude each other.
    """
    split_names = parse_splits(splits)
    request = Request(split_names, subset, ids_file, sample, seed, first_n)
    if sample is not None and first_n is not None:
        raise SelectionError(
            "--gaia2-sample and --gaia2-first-n cannot be combined: choose a seeded sample or a prefix"
        )
    chosen = list(scenarios)
    notes: list[str] = []
    if split_names is not None:
        chosen, found = filter_splits(chosen, split_names)
        notes += found
    if subset is not None:
        ids = [i for split_ids in read_manifest(subset).values() for i in split_ids]
        chosen, found = filter_ids(chosen, list(dict.fromkeys(ids)), known=scenarios, source=subset.name)
        notes += found
    if ids_file is not None:
        chosen, found = filter_ids(chosen, read_ids_file(ids_file), known=scenarios, source=ids_file.name)
        notes += found
    if sample is not None:
        if sample > len(chosen):
            raise SelectionError(
                f"--gaia2-sample {sample}: the pool has only {len(chosen)} scenarios (after the splits, subset, "
                f"ids file, -k and -m); ask for at most {len(chosen)}, or leave --gaia2-sample out to run them all"
            )
        chosen = _sample(chosen, sample, seed)
    if first_n is not None:
        notes.append(FIRST_N_WARNING)
        chosen = _first_n(chosen, first_n)
    return Selection(chosen, notes, request)
