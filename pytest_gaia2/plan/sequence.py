"""Sequential chains (``--gaia2-sequence FILE``, upstream gaia2-runner's sequence file).

One JSON object per line: ``{"universe_id": "21", "cap": "execution", "scenarios":
[{"scenario_id": "..."}]}``. Each line is one chain: its scenarios run in that order on one
worker, each in a fresh container that receives the agent's home and the app state the chain
carried so far (:mod:`~pytest_gaia2.run.chain`). A scenario belongs to at most one chain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan.scenarios import Scenario
from pytest_gaia2.store.safejson import JsonReadError, read_regular_file

MAX_FILE_BYTES = 8 << 20
"""A sequence file larger than this is refused (upstream's lists are a few hundred KiB)."""
MAX_LISTED = 5
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Chain:
    """One line of a sequence file: a universe's scenarios, in the order they are chained."""

    universe_id: str
    cap: str | None
    scenario_ids: tuple[str, ...]

    @property
    def key(self) -> str:
        """``<cap>_universe_<id>`` (upstream's chain name), unique within the file and folder-safe."""
        universe = f"universe_{_UNSAFE.sub('_', self.universe_id)}"
        return f"{_UNSAFE.sub('_', self.cap)}_{universe}" if self.cap else universe


def _problem(where: str, text: str) -> OptionError:
    return OptionError(f"--gaia2-sequence {where}: {text}")


def _chain(entry: object, where: str) -> Chain:
    if not isinstance(entry, dict):
        raise _problem(where, "expected a JSON object")
    universe_id, cap, scenarios = entry.get("universe_id"), entry.get("cap"), entry.get("scenarios")
    if isinstance(universe_id, int) and not isinstance(universe_id, bool):
        universe_id = str(universe_id)
    if not isinstance(universe_id, str) or not universe_id.strip() or not isinstance(scenarios, list) or not scenarios:
        raise _problem(where, "expected a 'universe_id' and a non-empty 'scenarios' list")
    if cap is not None and not isinstance(cap, str):
        raise _problem(where, "'cap' must be a string")
    ids = tuple(item.get("scenario_id") if isinstance(item, dict) else None for item in scenarios)
    if not all(isinstance(sid, str) and sid.strip() for sid in ids):
        raise _problem(where, "every entry of 'scenarios' needs a non-empty 'scenario_id' string")
    return Chain(universe_id.strip()[:200], (cap or "").strip()[:200] or None, tuple(str(sid).strip() for sid in ids))


def parse(text: str, source: str) -> list[Chain]:
    """Chains of a sequence file, in file order; an :class:`OptionError` names the line of the
    first problem (invalid JSON, a missing field, a chain or scenario listed twice)."""
    chains: list[Chain] = []
    keys: set[str] = set()
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise _problem(where, f"invalid JSON ({str(exc)[:80]})") from None
        chain = _chain(entry, where)
        if chain.key in keys:
            raise _problem(where, f"chain {chain.key} is listed twice")
        repeated = sorted({sid for sid in chain.scenario_ids if sid in seen or chain.scenario_ids.count(sid) > 1})
        if repeated:
            raise _problem(where, f"scenarios listed more than once: {', '.join(repeated[:MAX_LISTED])}")
        keys.add(chain.key)
        seen.update(chain.scenario_ids)
        chains.append(chain)
    if not chains:
        raise _problem(source, "lists no chains")
    return chains


def load(path: Path) -> list[Chain]:
    """:func:`parse` of the file at ``path``, read bounded (a regular file, at most MAX_FILE_BYTES)."""
    try:
        data = read_regular_file(path, max_bytes=MAX_FILE_BYTES)
    except JsonReadError as exc:
        raise _problem(str(path), str(exc)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _problem(str(path), "is not UTF-8 text") from None
    return parse(text, path.name)


def chained(chains: Sequence[Chain], scenarios: Sequence[Scenario]) -> list[tuple[Chain, int, Scenario]]:
    """Each chain's scenarios in chain order, as ``(chain, position, scenario)``; scenarios no
    chain lists are left out. A listed id missing from ``scenarios`` is an error naming it."""
    by_id: dict[str, Scenario] = {}
    for scenario in scenarios:
        by_id.setdefault(scenario.scenario_id, scenario)
    missing = [sid for chain in chains for sid in chain.scenario_ids if sid not in by_id]
    if missing:
        shown = ", ".join(missing[:MAX_LISTED]) + (
            f" (+{len(missing) - MAX_LISTED} more)" if len(missing) > MAX_LISTED else ""
        )
        raise OptionError(
            f"--gaia2-sequence: {len(missing)} scenario(s) of the sequence file are not among the "
            f"selected scenarios: {shown}"
        )
    return [(chain, position, by_id[sid]) for chain in chains for position, sid in enumerate(chain.scenario_ids)]
