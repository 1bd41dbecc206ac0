"""Allure's ``environment.properties`` for Gaia2 runs: the values, their merge, the file format.

Several runs may write into one results folder (a CI job with a retry step), and Allure
reads one value per key, so the file is merged, not replaced: each key keeps every distinct
value seen, in order, joined by ``", "`` (``model=qwen3, llama3``; ``run.id`` lists every
run). Per-run keys (``run.<id>.model``) would keep which run used what, but grow the widget
by a dozen rows per run; that pairing is already in each test's parameters and in each run
folder's run_config.json. The file is Java properties, read by Allure as Latin-1.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_gaia2.config.settings import REFERENCE_JUDGE_PLACEHOLDER
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.safejson import JsonReadError, read_regular_file

ENVIRONMENT_FILE = "environment.properties"
VALUE_SEPARATOR = ", "
ENVIRONMENT_MAX_BYTES = 1024 * 1024
"""A merged environment.properties stays small; anything larger is not ours and is replaced."""


def judge_text(settings: Mapping[str, Any]) -> str:
    """The run's judge as the pages name it: ``provider/model``; the image's own judge when no
    model is set (the reference image's placeholder ``none/none`` is no model); ``none`` when the
    settings do not say."""
    if "judge_provider" not in settings and "judge_model" not in settings:
        return "none"
    provider, model = (str(settings.get(key) or "") for key in ("judge_provider", "judge_model"))
    if {provider, model} <= {"", REFERENCE_JUDGE_PLACEHOLDER}:
        return "in-image, no model configured"
    return f"{provider or 'none'}/{model or 'none'}"


def environment(run_config: Mapping[str, Any]) -> dict[str, str]:
    """The Environment widget's values for one run, from its run_config.json (no secret in it)."""

    def part(key: str) -> Mapping[str, Any]:
        value = run_config.get(key)
        return value if isinstance(value, Mapping) else {}

    settings, provenance, engine = part("settings"), part("provenance"), part("engine")
    values = {
        "image": settings.get("image"),
        "image.id": provenance.get("image_id"),
        "engine.version": engine.get("version"),
        "profile": settings.get("profile"),
        "model": settings.get("model"),
        "provider": settings.get("provider"),
        "judge": judge_text(settings),
        "network": settings.get("network"),
        "workers": run_config.get("workers"),
        "plugin.version": run_config.get("plugin_version"),
        "run.id": run_config.get("run_id"),
        "run.started": run_config.get("started_at"),
    }
    replaced = replaced_settings(run_config)
    if replaced:
        values["upstream.replaced"] = "; ".join(replaced)
    return {key: "none" if value is None else str(value) for key, value in values.items()}


def replaced_settings(run_config: Mapping[str, Any]) -> list[str]:
    """What a gaia2-runner TOML asked for that the run replaced (``upstream_config.replaced``), in words;
    entries that are not the plain strings the plugin writes are left out (the file is untrusted)."""
    upstream = run_config.get("upstream_config")
    entries = upstream.get("replaced") if isinstance(upstream, Mapping) else None
    if not isinstance(entries, list):
        return []
    words: list[str] = []
    for entry in entries[:16]:
        if isinstance(entry, Mapping) and all(isinstance(entry.get(k), str) for k in ("key", "configured", "used")):
            words.append(f"{entry['key']} = {entry['configured'][:200]!r} replaced by {entry['used'][:200]}")
    return words


def merge_environment(existing: Mapping[str, str], new: Mapping[str, str]) -> dict[str, str]:
    """Every key of both, each with every distinct value in the order first seen (see the
    module's docstring); keys another tool wrote are kept."""
    merged: dict[str, str] = {}
    for key in dict.fromkeys([*existing, *new]):
        values: list[str] = []
        for text in (existing.get(key), new.get(key)):
            for value in text.split(VALUE_SEPARATOR) if text is not None else ():
                if value not in values:
                    values.append(value)
        merged[key] = VALUE_SEPARATOR.join(values)
    return merged


_CONTROL = {"n": "\n", "r": "\r", "t": "\t", "f": "\f"}
_ESCAPED = {char: f"\\{code}" for code, char in _CONTROL.items()}
_UNESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")


def _escape(text: str, *, key: bool = False) -> str:
    """Java properties escaping (the file is read as Latin-1): backslashes, line breaks,
    non-ASCII as UTF-16 ``\\uXXXX`` units; in keys also the separators and comment marks."""
    out = []
    for index, char in enumerate(text):
        if char == "\\":
            out.append("\\\\")
        elif char in _ESCAPED:
            out.append(_ESCAPED[char])
        elif ord(char) >= 128:
            units = char.encode("utf-16-be", "surrogatepass")
            out.extend(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))
        elif (key and char in "=: #!") or (char == " " and index == 0):
            out.append(f"\\{char}")
        else:
            out.append(char)
    return "".join(out)


_PROPERTY = re.compile(r"((?:\\.|[^\\=:\s])+)\s*[=:]?\s*(.*)")


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        return chr(int(code[1:], 16)) if len(code) == 5 else _CONTROL.get(code, code)

    # \uXXXX pairs of a character beyond the BMP become one character again.
    return _UNESCAPE.sub(one, text).encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def format_properties(values: Mapping[str, str]) -> str:
    return "".join(f"{_escape(key, key=True)}={_escape(value)}\n" for key, value in values.items())


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` lines as :func:`format_properties` writes them (and ``key: value``,
    ``key value``, comments); continuation lines are not supported."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        line = line.lstrip()
        match = _PROPERTY.fullmatch(line) if line and line[0] not in "#!" else None
        if match:
            values[_unescape(match.group(1))] = _unescape(match.group(2))
    return values


def write_environment(alluredir: Path, run_config: Mapping[str, Any]) -> None:
    """environment.properties: this run's values merged into what earlier runs wrote there."""
    path = alluredir / ENVIRONMENT_FILE
    try:
        existing = parse_properties(read_regular_file(path, max_bytes=ENVIRONMENT_MAX_BYTES).decode("latin-1"))
    except JsonReadError:
        existing = {}
    store.write_text(path, format_properties(merge_environment(existing, environment(run_config))))
