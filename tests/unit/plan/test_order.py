"""The start order: every prefix of it is a stratified sample of the plan, the same everywhere."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction
from pathlib import Path

from gaia2_testing import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_gaia2.plan.items import PlannedItem, build, interleave, reorder, start_order
from pytest_gaia2.plan.scenarios import Scenario, ScenarioError


def plan(sizes: dict[tuple[str, int], int], repeats: int = 1) -> list[PlannedItem]:
    """Items in file order (split, then id) for ``{(split, universe): count}``."""
    scenarios = [
        Scenario(f"scenario_universe_{universe}_{split[:2]}{i:02d}", split, Path(f"/d/{split}/{universe}_{i}.json"))
        for (split, universe), count in sizes.items()
        for i in range(count)
    ]
    scenarios.sort(key=lambda s: (s.split, s.scenario_id))
    return build(scenarios, [], repeats=repeats, limits=None, attempts=1)


FIVE_SPLITS = {
    ("adaptability", 21): 6,
    ("ambiguity", 22): 6,
    ("execution", 23): 10,
    ("execution", 24): 2,
    ("search", 25): 8,
    ("time", 26): 3,
    ("time", 27): 5,
}


def worst_gap(order: list[PlannedItem], stratum) -> Fraction:
    """The largest distance, over every prefix, between a stratum's count and its share."""
    sizes = Counter(stratum(item) for item in order)
    seen: Counter = Counter()
    worst = Fraction(0)
    for length, item in enumerate(order, start=1):
        seen[stratum(item)] += 1
        for name, size in sizes.items():
            worst = max(worst, abs(seen[name] - Fraction(length * size, len(order))))
    return worst


def test_every_prefix_holds_each_split_within_one_scenario_of_its_share() -> None:
    items = plan(FIVE_SPLITS)
    order = start_order(items, seed=7)
    assert sorted(order, key=lambda i: i.key) == sorted(items, key=lambda i: i.key)
    assert worst_gap(order, lambda item: item.split) < 1
    assert {item.split for item in order[:8]} == {"adaptability", "ambiguity", "execution", "search", "time"}
    # File order would start with every adaptability scenario: the bias the order removes.
    assert {item.split for item in items[:6]} == {"adaptability"}


def test_within_a_split_universes_and_repeats_are_interleaved_too() -> None:
    items = plan(FIVE_SPLITS, repeats=3)
    order = start_order(items, seed=7)
    execution = [item for item in order if item.split == "execution"]
    assert worst_gap(execution, lambda item: item.universe) < 1
    universe_23 = [item for item in execution if item.universe == "universe_23"]
    assert worst_gap(universe_23, lambda item: item.repeat) < 1
    assert worst_gap(order, lambda item: item.split) < 1


def test_the_order_depends_on_the_seed_and_nothing_else() -> None:
    items = plan(FIVE_SPLITS)
    shuffled = list(items)
    random.Random(3).shuffle(shuffled)
    assert [i.key for i in start_order(items, 7)] == [i.key for i in start_order(shuffled, 7)]
    assert [i.key for i in start_order(items, 7)] != [i.key for i in start_order(items, 8)]


def test_broken_files_go_first_and_other_tests_keep_their_places() -> None:
    broken = ScenarioError(Path("/d/search/bad.json"), "file", "not JSON")
    items = build(
        [Scenario(f"scenario_universe_2{n}_x{n}", s, Path("/d/x.json")) for n, s in enumerate("aabbb")],
        [broken],
        repeats=1,
        limits=None,
        attempts=1,
    )
    assert start_order(items, 0)[0].error is broken
    tests = ["user_test_a", *items, "user_test_b"]
    ordered = reorder(tests, lambda t: t if isinstance(t, PlannedItem) else None, 0)
    assert ordered[0] == "user_test_a" and ordered[-1] == "user_test_b"
    assert ordered[1:-1] == start_order(items, 0)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.integers(1, 30), min_size=1, max_size=9), st.randoms(use_true_random=False))
def test_interleave_never_leaves_its_quota(sizes: list[int], rng: random.Random) -> None:
    groups = [[(g, i) for i in range(size)] for g, size in enumerate(sizes)]
    merged = interleave(groups, [rng.random() for _ in groups])
    assert sorted(merged) == sorted(x for group in groups for x in group)
    for g, group in enumerate(groups):
        assert [x for x in merged if x[0] == g] == group  # each group in its own order
    total = len(merged)
    seen = [0] * len(groups)
    for length, (g, _) in enumerate(merged, start=1):
        seen[g] += 1
        for h, size in enumerate(sizes):
            share = Fraction(length * size, total)
            assert share - 1 < seen[h] < share + 1
