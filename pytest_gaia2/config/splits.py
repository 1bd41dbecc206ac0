"""Gaia2's split names, the universe in a scenario id, and the one reading of a split list (``search,time``, a list, or ``all``).

Tiny on purpose: the plugin registers the split markers from it even in runs that never
collect a scenario.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_gaia2.config.values import OptionError

SPLITS: tuple[str, ...] = ("execution", "search", "adaptability", "time", "ambiguity")
_UNIVERSE = re.compile(r"universe_(\d+)")
_NOT_IN_MARKER = re.compile(r"[^A-Za-z0-9_]")


def split_marker(split: str) -> str:
    """The split's marker, ``search_split``: any folder name becomes a valid marker name."""
    return f"{_NOT_IN_MARKER.sub('_', split)}_split"


def universe_of(scenario_id: str) -> str | None:
    """``universe_21`` for ``scenario_universe_21_5bftlu``: Gaia2 ids carry their universe."""
    match = _UNIVERSE.search(scenario_id)
    return f"universe_{match.group(1)}" if match else None


def parse_splits(
    spec: str | Sequence[str] | None, *, source: str = "--gaia2-splits", lower: bool = False
) -> tuple[str, ...] | None:
    """The names a spec asks for, in order, without duplicates; ``None`` for unset or ``all``.

    ``all`` mixed with other names is refused, naming the value and where it came from.
    """
    raw = spec.split(",") if isinstance(spec, str) else list(spec or ())
    names = tuple(dict.fromkeys(text.lower() if lower else text for item in raw if (text := str(item).strip())))
    if not names or names == ("all",):
        return None
    if "all" in names:
        raise OptionError(f"{source}: 'all' cannot be combined with other splits, got {', '.join(names)!r}")
    return names


def split_names(spec: str | Sequence[str] | None, *, source: str = "--gaia2-splits") -> list[str]:
    """The split names a spec asks for: comma-separated (or a list), ``all``, or unset for all.

    Order is kept and duplicates dropped. Unknown names and ``all`` mixed with other names
    are rejected, naming the bad value and where it came from (``source``).
    """
    names = parse_splits(spec, source=source, lower=True)
    if names is None:
        return list(SPLITS)
    unknown = [name for name in names if name not in SPLITS]
    if unknown:
        raise OptionError(
            f"{source}: unknown split {', '.join(map(repr, unknown))} (expected 'all' or some of {', '.join(SPLITS)})"
        )
    return list(names)
