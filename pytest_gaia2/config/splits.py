"""The one reading of a split list (``search,time``, a list, or ``all``); the split names
themselves and what an id says are :mod:`pytest_gaia2.store.names`' (re-exported here).

Tiny on purpose: the plugin registers the split markers from it even in runs that never
collect a scenario.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.store.names import SPLITS, split_marker, universe_of

__all__ = ["SPLITS", "TRANSLATED_SPLITS", "parse_splits", "split_marker", "split_names", "universe_of"]

TRANSLATED_SPLITS = tuple(name for name in SPLITS if name != "time")
"""The splits of a per-language dataset (``--gaia2-language``): ``time`` is English-only."""


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


def split_names(
    spec: str | Sequence[str] | None, *, source: str = "--gaia2-splits", language: str | None = None
) -> list[str]:
    """The split names a spec asks for: comma-separated (or a list), ``all``, or unset for all.

    Order is kept and duplicates dropped. Unknown names and ``all`` mixed with other names
    are rejected, naming the bad value and where it came from (``source``). With a
    ``language``, "all" means the translated splits and ``time`` is refused by name.
    """
    available = TRANSLATED_SPLITS if language else SPLITS
    names = parse_splits(spec, source=source, lower=True)
    if names is None:
        return list(available)
    untranslated = [name for name in names if name in SPLITS and name not in available]
    if untranslated:
        raise OptionError(
            f"{source}: split {', '.join(map(repr, untranslated))} is not available in language {language!r}: "
            f"per-language datasets provide {', '.join(available)}"
        )
    unknown = [name for name in names if name not in SPLITS]
    if unknown:
        raise OptionError(
            f"{source}: unknown split {', '.join(map(repr, unknown))} (expected 'all' or some of {', '.join(SPLITS)})"
        )
    return list(names)
