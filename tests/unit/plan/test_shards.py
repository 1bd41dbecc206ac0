"""The shard partition: disjoint, complete, balanced, stratified, and the same everywhere."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest

from pytest_gaia2.config.values import OptionError, Shard, parse_shard
from pytest_gaia2.plan.shards import partition

# 60 scenarios: 3 splits x 4 universes x 5, as (stratum, identity) pairs.
MEMBERS = [(f"{split}\0universe_{u}", f"{split}/scenario_universe_{u}_{n:03d}")
           for split in ("search", "time", "execution") for u in range(21, 25) for n in range(5)]


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 60, 61])
def test_shards_are_disjoint_complete_and_balanced(count: int) -> None:
    shard_of = partition(MEMBERS, count)
    assert set(shard_of) == {identity for _, identity in MEMBERS}
    assert set(shard_of.values()) <= set(range(1, count + 1))
    sizes = Counter(shard_of.values())
    assert max(sizes.values()) - min(sizes.get(k, 0) for k in range(1, count + 1)) <= 1


def test_each_shard_holds_its_share_of_every_split_and_universe() -> None:
    shard_of = partition(MEMBERS, 4)
    for stratum in {s for s, _ in MEMBERS}:
        in_stratum = Counter(shard_of[i] for s, i in MEMBERS if s == stratum)  # 5 per stratum over 4 shards
        assert sum(in_stratum.values()) == 5 and max(in_stratum.values()) - min(in_stratum.values()) <= 1
        assert len(in_stratum) == 4
    per_split = Counter((identity.split("/")[0], shard) for identity, shard in shard_of.items())
    assert set(per_split.values()) == {5}  # 20 scenarios of each split, 5 in each shard


def test_order_of_input_does_not_matter() -> None:
    assert partition(reversed(MEMBERS), 3) == partition(MEMBERS, 3)


def test_a_filtered_selection_is_partitioned_on_its_own() -> None:
    """After -k keeps a third of the scenarios, the shards still cover exactly what is left."""
    kept = [m for m in MEMBERS if m[1].startswith("time/")]
    shard_of = partition(kept, 2)
    assert sorted(shard_of) == sorted(i for _, i in kept)
    assert Counter(shard_of.values()) == {1: 10, 2: 10}


def test_the_partition_is_the_same_in_another_interpreter() -> None:
    """No hash randomisation or set order enters: a fresh process with another hash seed agrees."""
    code = ("import json, sys; from pytest_gaia2.plan.shards import partition; "
            "members = json.load(sys.stdin); print(json.dumps(partition(map(tuple, members), 5), sort_keys=True))")
    import json

    outputs = {subprocess.run([sys.executable, "-c", code], input=json.dumps(MEMBERS), capture_output=True,
                              text=True, check=True, env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(outputs) == 1
    assert json.loads(outputs.pop()) == partition(MEMBERS, 5)


def test_a_known_assignment_never_changes() -> None:
    """Shards of a run resumed after an upgrade must be the same shards: this pins the algorithm."""
    members = [("search\0universe_21", f"search/s{n}") for n in range(6)]
    assert partition(members, 3) == {"search/s0": 3, "search/s1": 3, "search/s2": 1,
                                     "search/s3": 2, "search/s4": 1, "search/s5": 2}


@pytest.mark.parametrize("raw, shard", [("1/4", Shard(1, 4)), (" 4 / 4 ", Shard(4, 4)), ("1/1", Shard(1, 1))])
def test_parse(raw: str, shard: Shard) -> None:
    assert parse_shard("shard", raw) == shard and str(shard) == raw.replace(" ", "")


@pytest.mark.parametrize("raw", ["0/4", "5/4", "1/0", "1", "a/b", "-1/2", "1/2/3", ""])
def test_parse_rejects(raw: str) -> None:
    with pytest.raises(OptionError, match="--gaia2-shard"):
        parse_shard("shard", raw)
