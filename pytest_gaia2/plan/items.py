"""What a run plans to run: one :class:`PlannedItem` per scenario file and repeat.

Filters (splits, subset, ids file) apply when the plan is built; the seeded sample and the
first-N prefix apply to what survives ``-k``, ``-m`` and ``--deselect`` (:func:`narrow`), so
``--gaia2-sample N`` means N scenarios run. The same inputs give the same plan on every
xdist worker and in every later run.

What survives then starts in a seeded order interleaved across split, universe and repeat
(:func:`start_order`): whatever stops the run early (a budget halt, Ctrl-C, a time limit, a
crashed worker), the scenarios that started are a stratified sample of the plan, not the first
splits in folder order.
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pytest_gaia2.config.options import Options
from pytest_gaia2.config.splits import SPLITS, split_marker
from pytest_gaia2.config.values import Shard
from pytest_gaia2.plan import selection, sequence
from pytest_gaia2.plan.scenarios import Scenario, ScenarioError
from pytest_gaia2.plan.sequence import Chain
from pytest_gaia2.plan.shards import partition
from pytest_gaia2.store import names
from pytest_gaia2.store.folder import StoreError, safe_part
from pytest_gaia2.store.limits import Limits
from pytest_gaia2.store.record import AttemptRecord, kept_task, scenario_key

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
T = TypeVar("T")
ORDERS = ("interleaved", "file")
"""``--gaia2-order``: the seeded interleaved start order (default), or the files' order."""
ITEM_PARAMETER = "gaia2_item"
"""The parameter that carries a :class:`PlannedItem` into a test (and Allure hides)."""


@dataclass(frozen=True)
class PlannedItem:
    """One test item: a scenario (or a file that cannot run) and its repeat index."""

    split: str
    name: str
    repeat: int = 1
    repeats: int = 1
    scenario: Scenario | None = None
    error: ScenarioError | None = None
    hard_timeout: float | None = None
    chain: str | None = None
    """With --gaia2-sequence: the key of the chain the scenario belongs to."""
    position: int | None = None
    """Its place in that chain, from 0 (upstream's ``universe_position``)."""
    key: str = field(init=False, compare=False)
    """``<split>/<id>[/run_<k>]``: the item's identity in records, manifests and not-run lists,
    spelled once when the item is planned and carried to every attempt."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", scenario_key(self.split, self.name, self.repeat, self.repeats))

    @property
    def param_id(self) -> str:
        """The id inside ``test_scenario[...]`` (the split is already in the node id's module)."""
        return f"{self.name}/run_{self.repeat}" if self.repeats > 1 else self.name

    def __repr__(self) -> str:
        """Short and stable across runs: Allure hashes the parameter's repr into its history id."""
        return f"PlannedItem({self.key!r})"

    @property
    def split_marker(self) -> str:
        return split_marker(self.split)

    @property
    def universe(self) -> str | None:
        return self.scenario.universe if self.scenario else None

    def marker_names(self) -> frozenset[str]:
        """The names -m can select this item by among the markers the plugin owns: ``gaia2``, the
        split marker, the universe marker (the plugin adds pytest-timeout's ``hard_timeout``,
        which is not the plugin's to select by)."""
        return frozenset(name for name in ("gaia2", self.split_marker, self.universe) if name)

    def error_record(self, provenance: dict[str, Any]) -> AttemptRecord:
        """The record of a scenario file that could not run at all."""
        return AttemptRecord(
            scenario_id=self.name,
            success=None,
            reward=None,
            num_agent_events=0,
            agent_response="",
            judged_in_container=False,
            timed_out=False,
            timeout_seconds=0.0,
            daemon_status=None,
            scenario_file=str(self.error.path if self.error else ""),
            failure_reasons=[],
            error=str(self.error),
            split=self.split,
            outcome="error",
            error_category="invalid_scenario",
            **self.described(),
            **provenance,
        )

    def described(self) -> dict[str, Any]:
        """The record fields that say what the scenario is (its apps and task), none for a file
        that could not be read."""
        if self.scenario is None:
            return {}
        return {
            "apps": list(dict.fromkeys(self.scenario.apps)),
            "task": kept_task(self.scenario.task),
        }


def probe_keys(items: Sequence[PlannedItem], k: int, seed: int) -> set[str]:
    """The keys of a stratified, seeded sample of ``k`` scenarios (all their repeats): the
    ``--gaia2-probe`` scenarios."""
    scenarios = list({item.scenario.scenario_id: item.scenario for item in items if item.scenario}.values())
    chosen = {scenario.scenario_id for scenario in selection.sample(scenarios, k, seed)}
    return {item.key for item in items if item.scenario and item.name in chosen}


def error_split(error: ScenarioError) -> str:
    """The folder a broken file sits in, as its split, when that is a usable name."""
    parent = error.path.parent.name if error.path.suffix else error.path.name
    try:
        return safe_part(parent) if parent else "scenarios"
    except StoreError:
        return "scenarios"


def error_name(stem: str, taken: set[tuple[str, str]], split: str) -> str:
    """A folder-safe name for a broken file's record, unique without regard to case (two
    files may share a stem, or differ only in case); ``taken`` holds :func:`names.folder_key` pairs."""
    base = _UNSAFE.sub("_", stem).strip(".-")[:100] or "scenario"
    if names.problem(base) is not None:  # a Windows device name: CON, nul.x, ...
        base = f"_{base}"
    name, n = base, 1
    while (names.folder_key(split), names.folder_key(name)) in taken:
        n += 1
        name = f"{base}-{n}"
    return name


def build(
    scenarios: Sequence[Scenario],
    errors: Sequence[ScenarioError],
    *,
    repeats: int,
    limits: Limits | None,
    attempts: int,
    chains: Sequence[Chain] | None = None,
) -> list[PlannedItem]:
    """Every item to collect: each scenario times ``repeats`` (with ``chains``, each chained
    scenario once, in chain order), then one item per broken file."""

    def timeout(s: Scenario) -> float | None:
        return limits.hard_timeout(s.duration, attempts) if limits else None

    if chains is not None:
        items = [
            PlannedItem(s.split, s.scenario_id, scenario=s, hard_timeout=timeout(s), chain=chain.key, position=position)
            for chain, position, s in sequence.chained(chains, scenarios)
        ]
    else:
        items = [
            PlannedItem(s.split, s.scenario_id, repeat, repeats, scenario=s, hard_timeout=timeout(s))
            for s in scenarios
            for repeat in range(1, repeats + 1)
        ]
    taken = {(names.folder_key(item.split), names.folder_key(item.name)) for item in items}
    for error in errors:
        split = error_split(error)
        name = error_name(error.path.stem, taken, split)
        taken.add((names.folder_key(split), names.folder_key(name)))
        items.append(PlannedItem(split, name, error=error))
    return items


def filtered(scenarios: Sequence[Scenario], values: Options, resolve: Any) -> selection.Selection:
    """The filters that do not depend on -k/-m: splits, subset manifest, ids file."""
    return selection.select(
        scenarios,
        splits=values.splits if not values.dataset else None,
        subset=resolve(values.subset) if values.subset else None,
        ids_file=resolve(values.ids_file) if values.ids_file else None,
    )


def narrow(
    items: Sequence[PlannedItem], *, sample: int | None, seed: int, first_n: int | None, shard: Shard | None = None
) -> set[str]:
    """The keys to keep after a seeded sample or a prefix of the surviving scenarios, then a shard.

    Repeats of a chosen scenario stay together (also in one shard); broken files are kept
    (they report themselves), each in exactly one shard.
    """
    kept = list(items)
    if sample is not None or first_n is not None:
        runnable = {item.scenario.scenario_id: item.scenario for item in items if item.scenario}
        chosen = selection.select(list(runnable.values()), sample=sample, seed=seed, first_n=first_n)
        ids = {s.scenario_id for s in chosen.scenarios}
        kept = [item for item in kept if item.scenario is None or item.name in ids]
    if shard is not None:
        shard_of = partition(
            ((f"{item.split}\0{item.universe or ''}", f"{item.split}/{item.name}") for item in kept), shard.count
        )
        kept = [item for item in kept if shard_of[f"{item.split}/{item.name}"] == shard.index]
    return {item.key for item in kept}


def interleave(groups: Sequence[Sequence[T]], ties: Sequence[float]) -> list[T]:
    """The groups' items merged so that every prefix holds each group within one item of its
    share (``prefix length x group size / total``), each group in its own order.

    Balinski and Young's quota method with the earliest deadline first: at step L a group may
    give its next item while it has given fewer than its share of L (upper quota); among those,
    the group whose share would run more than one item ahead of it soonest goes first (lower
    quota), ``ties`` breaking ties. Neither quota is ever broken.
    """
    total = sum(len(group) for group in groups)
    taken = [0] * len(groups)
    merged: list[T] = []
    for step in range(1, total + 1):
        eligible = [i for i, group in enumerate(groups) if taken[i] * total < step * len(group)]
        best = min(eligible, key=lambda i: (-(-(taken[i] + 1) * total // len(groups[i])), ties[i], i))
        merged.append(groups[best][taken[best]])
        taken[best] += 1
    return merged


def start_order(items: Sequence[PlannedItem], seed: int) -> list[PlannedItem]:
    """The order items start in: broken files first (they cost nothing), then the scenarios
    interleaved by split, within a split by universe, within a universe by repeat, each
    universe's scenarios in a seeded order (the same in every repeat).

    Every prefix is then proportional to the plan by split (within one scenario), and by
    universe and repeat within a split. A pure function of the items' identities and the seed:
    the same on every xdist worker, shard and machine.
    """
    rng = random.Random(seed)
    runnable = sorted((item for item in items if item.scenario), key=lambda i: (i.split, i.universe or "", i.name))
    keys: dict[tuple[str, str], float] = {}
    tree: dict[str, dict[str, dict[int, list[PlannedItem]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for item in runnable:
        keys.setdefault((item.split, item.name), rng.random())
        tree[item.split][item.universe or ""][item.repeat].append(item)

    def merged(groups: list[list[PlannedItem]]) -> list[PlannedItem]:
        return interleave(groups, [rng.random() for _ in groups])

    def by_key(group: list[PlannedItem]) -> list[PlannedItem]:
        return sorted(group, key=lambda i: (keys[(i.split, i.name)], i.name))

    ordered = merged(
        [
            merged([merged([by_key(runs[r]) for r in sorted(runs)]) for _, runs in sorted(tree[split].items())])
            for split in sorted(tree)
        ]
    )
    return [item for item in items if item.scenario is None] + ordered


def reorder(items: list[T], planned: Callable[[T], PlannedItem | None], seed: int) -> list[T]:
    """``items`` with the planned ones in :func:`start_order`, in the places planned items held
    (a user's other tests keep theirs; tests of the same scenario stay in their order)."""
    slots = [index for index, item in enumerate(items) if planned(item) is not None]
    tests: dict[str, list[T]] = defaultdict(list)
    unique: dict[str, PlannedItem] = {}
    for index in slots:
        item = planned(items[index])
        assert item is not None
        tests[item.key].append(items[index])
        unique.setdefault(item.key, item)
    ordered = [test for item in start_order(list(unique.values()), seed) for test in tests[item.key]]
    result = list(items)
    for index, test in zip(slots, ordered, strict=True):
        result[index] = test
    return result


def universe_markers(items: Sequence[PlannedItem]) -> list[str]:
    return sorted({item.universe for item in items if item.universe})


def extra_split_markers(items: Sequence[PlannedItem]) -> list[str]:
    known = {f"{split}_split" for split in SPLITS}
    return sorted({item.split_marker for item in items} - known)
