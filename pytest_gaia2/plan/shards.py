"""Shards: one selection cut into N disjoint pieces, to run on N machines or SLURM tasks.

``--gaia2-shard K/N`` keeps the K-th of N pieces of what the other filters, ``-k``, ``-m``
and the sample left. The cut is a pure function of the scenario ids and their split and
universe: the same on every xdist worker, every Python version and every machine, so N
tasks that each see the same files together run every scenario exactly once. Within each
(split, universe) stratum, scenarios are ordered by a SHA-256 of their id and dealt out in
turn, continuing from stratum to stratum: shard sizes differ by at most one and each shard
holds its share of every split and universe.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def _order(identity: str) -> str:
    return hashlib.sha256(identity.encode("utf-8")).hexdigest()


def partition(members: Iterable[tuple[str, str]], count: int) -> dict[str, int]:
    """The shard (1-based) of each identity, given ``(stratum, identity)`` pairs.

    Identities are unique; a repeated one keeps its first stratum.
    """
    strata: dict[str, list[str]] = {}
    seen: set[str] = set()
    for stratum, identity in members:
        if identity not in seen:
            seen.add(identity)
            strata.setdefault(stratum, []).append(identity)
    shard_of: dict[str, int] = {}
    position = 0
    for stratum in sorted(strata):
        for identity in sorted(strata[stratum], key=lambda ident: (_order(ident), ident)):
            shard_of[identity] = position % count + 1
            position += 1
    return shard_of
