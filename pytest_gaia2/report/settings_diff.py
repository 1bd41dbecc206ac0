"""Which settings differ between runs, read from their run_config.json files.

A comparison is only about the agent when nothing else changed; pieces of one run can only be
merged when they were run alike. Both questions are answered from the same flattened view of
run_config.json: its provenance (image id, model, judge, plugin version), the settings as
written (profile, limits, extra env), the selection and the pytest filters. The file comes from
a run folder, so it is hostile: the walk is bounded, every value is shown cut and on one line,
control characters are shown escaped, and a value whose name looks secret is masked whatever the
file holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_gaia2.store.redact import MASK, looks_secret, printable

SECTIONS = ("provenance", "settings", "selection")
TOP_KEYS = ("dataset", "markexpr", "keyword")
IGNORED = frozenset({"provenance.run_id", "provenance.session_id", "settings.output"})
"""Differ between any two runs by construction."""
PIECE_KEYS = frozenset({"provenance.shard", "selection.shard"})
"""Differ between the shards of one plan: merge leaves them to its shard check."""
KEY_NAMES = frozenset(f"{who}api_key_{what}" for who in ("", "judge_") for what in ("env", "source", "set"))
"""Settings about keys that hold no key: the variable's name, where it came from, whether it is set."""
_NAME_LIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,60}")
MAX_DEPTH = 4
MAX_KEYS = 400
MAX_VALUE = 80


def _walk(prefix: str, value: object, depth: int) -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping) and depth < MAX_DEPTH:
        for key in sorted(value, key=str)[:MAX_KEYS]:
            yield from _walk(f"{prefix}.{printable(' '.join(str(key).split()))[:MAX_VALUE]}", value[key], depth + 1)
    else:
        yield prefix, value


def shown(name: str, value: object) -> str:
    """One value as one short line; masked when its name (any part) looks secret."""
    if value is None:
        return "-"
    parts = name.split(".")[1:]
    public = bool(parts) and parts[-1] in KEY_NAMES and (isinstance(value, bool) or _NAME_LIKE.fullmatch(str(value)))
    if not public and any(looks_secret(part) for part in parts) and value not in ("", False):
        return MASK
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    text = printable(" ".join(text.split()))
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def flatten(config: Mapping[str, Any]) -> dict[str, str]:
    """``section.key[.sub]`` -> shown value, for the parts of a run_config.json that say how it ran."""
    found: dict[str, str] = {}
    for name in SECTIONS:
        section = config.get(name)
        if isinstance(section, Mapping):
            for key, value in _walk(name, section, 1):
                if len(found) < MAX_KEYS:
                    found[key] = shown(key, value)
    for name in TOP_KEYS:
        found[name] = shown(name, config.get(name))
    return found


def differences(
    configs: Sequence[tuple[str, Mapping[str, Any]]], ignore: frozenset[str] = IGNORED
) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each setting whose shown value is not the same in every labelled config (absent counts as
    ``-``), with each label's value, in name order."""
    flat = [(label, flatten(config)) for label, config in configs]
    names = sorted({name for _, values in flat for name in values} - ignore)
    rows = []
    for name in names:
        values = [(label, values.get(name, "-")) for label, values in flat]
        if len({value for _, value in values}) > 1:
            rows.append((name, values))
    return rows


def lines(rows: list[tuple[str, list[tuple[str, str]]]]) -> list[str]:
    """``name: A value; B value`` per differing setting."""
    return [f"{name}: " + "; ".join(f"{label} {value}" for label, value in values) for name, values in rows]
