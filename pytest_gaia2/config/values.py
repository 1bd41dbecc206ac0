"""How each ``--gaia2-*`` value is read: one parser per kind of value, and the error they raise.

Every parser takes the option's name (for the message) and the raw text, and returns the
value or raises :class:`OptionError` naming the option and what was expected, so a value
that can never work stops the run at start-up.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_gaia2.engine.spec import EngineSpec


class OptionError(Exception):
    """A ``--gaia2-*`` value that can never work; raised at start-up, naming the option (the
    plugin shows it as pytest's usage error: ``pytest.UsageError`` is final, not a base class)."""


def non_negative_float(name: str, raw: str, what: str = "a number of seconds") -> float:
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"--gaia2-{name}: expected {what}, got {raw!r}") from None
    if not math.isfinite(value):  # float() accepts inf, nan and 1e999 (= inf)
        raise OptionError(f"--gaia2-{name}: expected a finite number, got {raw!r}")
    if value < 0:
        raise OptionError(f"--gaia2-{name}: must not be negative, got {raw!r}")
    return value


USD_MAX = 1e9
"""A budget above a billion dollars is a typo (or ``1e308``), not a limit."""


def usd(name: str, raw: str) -> float:
    """An amount of US dollars (``50``, ``12.5`` or ``$50``): finite, above 0, at most ``USD_MAX``."""
    value = non_negative_float(name, raw.strip().removeprefix("$"), "an amount of US dollars")
    if not 0 < value <= USD_MAX:
        raise OptionError(
            f"--gaia2-{name}: expected an amount of US dollars above 0 and at most {USD_MAX:,.0f}, got {raw!r}"
        )
    return value


def positive_float(name: str, raw: str) -> float:
    value = non_negative_float(name, raw)
    if value == 0:
        raise OptionError(f"--gaia2-{name}: must be greater than 0, got {raw!r}")
    return value


def non_negative_int(name: str, raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"--gaia2-{name}: expected a whole number, got {raw!r}") from None
    if value < 0:
        raise OptionError(f"--gaia2-{name}: must not be negative, got {raw!r}")
    return value


def positive_int(name: str, raw: str) -> int:
    value = non_negative_int(name, raw)
    if value == 0:
        raise OptionError(f"--gaia2-{name}: must be at least 1, got {raw!r}")
    return value


MAX_IN_FLIGHT = 64
"""The most scenarios one process keeps in flight: each is a thread and a container, and more than
this on one engine is a mistake (a typo's extra digit), not a plan."""


def in_flight(name: str, raw: str) -> int:
    value = non_negative_int(name, raw)
    if not 1 <= value <= MAX_IN_FLIGHT:
        raise OptionError(f"--gaia2-{name}: must be from 1 to {MAX_IN_FLIGHT}, got {raw!r}")
    return value


SMALLEST_LEVEL = 1e-6
"""The smallest error rate a test is asked for: below about 1e-308 its likelihood ratio threshold
(1 / level) is no finite double, and far before that no run could ever decide."""


def level(name: str, raw: str) -> float:
    """A test's error rate: a fraction above 0 and below 1 (0 would never decide, 1 always), at
    least SMALLEST_LEVEL."""
    value = fraction(name, raw)
    if not 0.0 < value < 1.0:
        raise OptionError(f"--gaia2-{name}: expected a fraction above 0 and below 1 (e.g. 0.05 for 5%), got {raw!r}")
    if value < SMALLEST_LEVEL:
        raise OptionError(f"--gaia2-{name}: {raw!r} is below {SMALLEST_LEVEL:g}, the smallest level a test decides at")
    return value


def fraction(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise OptionError(f"--gaia2-{name}: expected a fraction from 0 to 1 (e.g. 0.8), got {raw!r}") from None
    if not 0.0 <= value <= 1.0:
        raise OptionError(f"--gaia2-{name}: expected a fraction from 0 to 1 (e.g. 0.8 for 80%), got {raw!r}")
    return value


_SIZE = re.compile(r"\s*(\d+)\s*([KMG]?)\s*", re.IGNORECASE)
_SIZE_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def size_or_zero(name: str, raw: str) -> int:
    """Bytes, or a whole number with K, M or G (KiB-based, as docker's ``--memory 4g``)."""
    match = _SIZE.fullmatch(raw)
    if not match:
        raise OptionError(f"--gaia2-{name}: expected a size in bytes or with K, M or G (e.g. 64M), got {raw!r}")
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()]


def size(name: str, raw: str) -> int:
    value = size_or_zero(name, raw)
    if value == 0:
        raise OptionError(f"--gaia2-{name}: must be greater than 0, got {raw!r}")
    return value


def stripped_text(name: str, raw: str) -> str:
    return raw.strip()


_LANGUAGE = re.compile(r"[a-z]{2,3}(?:_[A-Za-z]{2,4})+")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]{0,127}")


def language_code(name: str, raw: str) -> str:
    """A ``language_Script`` code (``spa_Latn``, ``cmn_Hans``), as upstream's ``[target].language``."""
    text = raw.strip()
    if not _LANGUAGE.fullmatch(text):
        raise OptionError(f"--gaia2-{name}: expected a language_Script code such as spa_Latn or cmn_Hans, got {raw!r}")
    return text


def revision(name: str, raw: str) -> str:
    """A dataset revision: a branch, tag or commit of the dataset's repository (no spaces, no ``..``)."""
    text = raw.strip()
    if not _REVISION.fullmatch(text) or ".." in text:
        raise OptionError(f"--gaia2-{name}: expected a branch, tag or commit hash, got {raw!r}")
    return text


TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})


def boolean(name: str, raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in TRUE_WORDS:
        return True
    if text in FALSE_WORDS:
        return False
    raise OptionError(f"--gaia2-{name}: expected true or false, got {raw!r}")


def resume_target(name: str, raw: object) -> bool | str:
    """``True`` (the latest run folder), ``False``, or the path of the run folder to continue."""
    if isinstance(raw, bool) or str(raw).strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return boolean(name, raw)
    return str(raw).strip()


_IMAGE_REF = re.compile(
    r"^(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?"  # optional registry host[:port]/
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"  # first path component
    r"(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"  # more path components
    r"(?::[\w][\w.-]{0,127})?"  # optional tag
    r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$"  # optional digest
)


def image_reference(name: str, raw: str) -> str:
    ref = raw.strip()
    if not _IMAGE_REF.match(ref):
        raise OptionError(
            f"--gaia2-{name}: {raw!r} is not a valid image reference "
            "(expected [registry/]name[:tag][@digest], lower-case name)"
        )
    return ref


def port_range(name: str, raw: str) -> tuple[int, int]:
    match = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", raw)
    if not match:
        raise OptionError(f"--gaia2-{name}: expected LOW-HIGH (e.g. 20000-29999), got {raw!r}")
    low, high = int(match.group(1)), int(match.group(2))
    if not 1024 <= low < high <= 65535:
        raise OptionError(f"--gaia2-{name}: expected 1024 <= LOW < HIGH <= 65535, got {raw!r}")
    return low, high


def env_pair(name: str, raw: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    key = key.strip()
    if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        raise OptionError(f"--gaia2-{name}: expected KEY=VALUE with a valid variable name, got {key or raw!r}")
    return key, value


def copy_pair(name: str, raw: str) -> tuple[str, str]:
    src, sep, dest = raw.rpartition(":")
    if not sep or not src or not dest.startswith("/"):
        raise OptionError(f"--gaia2-{name}: expected HOST_PATH:/container/path, got {raw!r}")
    return src, dest


def env_name(name: str, raw: str) -> str:
    value = raw.strip()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", value):
        raise OptionError(
            f"--gaia2-{name}: expected the NAME of an environment variable that holds the key (never the key itself)"
        )
    return value


def engine_url(name: str, raw: str) -> EngineSpec:
    """``URL[#N[,api|ports]]``: a Docker engine, its capacity and how its adapters are reached."""
    from pytest_gaia2.engine.spec import parse, shown

    try:
        return parse(raw)
    except ValueError as exc:
        raise OptionError(f"--gaia2-{name} {shown(raw)!r}: {exc}") from None


_SHAPE = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    """The K-th (1-based) of N shards."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(name: str, raw: str) -> Shard:
    """``K/N`` with 1 <= K <= N: numbered like SLURM array tasks plus one, and like people count."""
    match = _SHAPE.fullmatch(raw)
    if not match:
        raise OptionError(f"--gaia2-{name}: expected K/N such as 1/4, got {raw!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1 or not 1 <= index <= count:
        raise OptionError(f"--gaia2-{name}: K must be between 1 and N in K/N, got {raw!r}")
    return Shard(index, count)
