"""Reading one gaia2-runner run-config file's values as strictly as gaia2-runner does.

:class:`RunConfigReader` checks each TOML value's type (a number in quotes is an error, as
upstream), expands and resolves paths the way upstream does (``$VAR``, ``${VAR}``, ``~``,
then the file's folder), and collects what the keys become: option values and where each
came from, notes for the user, and literal keys kept apart as :class:`Secret`. Which key
becomes what is :mod:`~pytest_gaia2.config.upstream_config`'s table.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, NoReturn

from pytest_gaia2.config.values import OptionError

_ENV_REFERENCE = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_NAMED_VOLUME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_VOLUME = re.compile(r"(?P<src>.+?):(?P<dst>/[^:]*)(?::(?P<opts>[A-Za-z,]+))?")


class Secret:
    """A secret value that never shows itself in ``repr``/``str`` (tracebacks, --showlocals)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__


class RunConfigReader:
    """One pass over one file: typed access to TOML values and the collected results."""

    def __init__(self, path: Path, environ: Mapping[str, str]) -> None:
        self.file = path
        self.environ = environ
        self.options: dict[str, Any] = {}
        self.origin: dict[str, str] = {}
        self.notes: list[str] = []
        self.replaced: list[dict[str, str]] = []
        self.secrets: dict[str, Secret] = {}
        self.targets: list[str] = []

    def fail(self, where: str, problem: str) -> NoReturn:
        raise OptionError(f"{self.file}: {where}: {problem}")

    # -- TOML value types (as strict as upstream: a number in quotes is an error) ----------

    def text(self, where: str, value: object) -> str:
        if not isinstance(value, str):
            self.fail(where, f"must be a string, got {value!r}")
        return value.strip()

    def integer(self, where: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(where, f"must be an integer, got {value!r}")
        return value

    def number(self, where: str, value: object) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(where, f"must be a number, got {value!r}")
        return float(value)

    def boolean(self, where: str, value: object) -> bool:
        if not isinstance(value, bool):
            self.fail(where, f"must be true or false, got {value!r}")
        return value

    def strings(self, where: str, value: object) -> list[str]:
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            self.fail(where, f"must be a list of strings, got {value!r}")
        return [item.strip() for item in value if item.strip()]

    def path(self, where: str, value: object, *, must_exist: Literal["file", "dir", "any"] | None = None) -> str:
        """Expand ``$VAR``, ``${VAR}`` and ``~``, then resolve against the TOML file's folder."""
        text = self.text(where, value)
        missing: list[str] = []

        def expand(match: re.Match[str]) -> str:
            name = match.group(1) if match.group(1) is not None else match.group(2)
            if name in self.environ:
                return self.environ[name]
            missing.append(name)
            return match.group(0)

        expanded = _ENV_REFERENCE.sub(expand, text)
        if missing:
            self.fail(where, f"references unset environment variable(s): {', '.join(sorted(set(missing)))}")
        if expanded == "~" or expanded.startswith("~/"):
            expanded = (self.environ.get("HOME") or str(Path.home())) + expanded[1:]
        path = Path(os.path.expanduser(expanded))
        path = (path if path.is_absolute() else self.file.parent / path).resolve()
        if must_exist == "file" and not path.is_file():
            self.fail(where, f"{path} is not an existing file")
        if must_exist == "dir" and not path.is_dir():
            self.fail(where, f"{path} is not an existing directory")
        if must_exist == "any" and not path.exists():
            self.fail(where, f"{path} does not exist")
        return str(path)

    # -- results -----------------------------------------------------------------------------

    def set(self, where: str, key: str, raw: object) -> None:
        self.options[key] = raw
        self.origin[key] = where

    def env(self, where: str, name: str, value: str) -> None:
        """A setting newer gaia2-cli images read from a container variable: pass it through."""
        self.options.setdefault("env", []).append(f"{name}={value}")
        self.origin.setdefault("env", where)
        self.notes.append(f"{where} is passed into containers as {name} (read by gaia2-cli images that support it)")

    def note(self, where: str, text: str) -> None:
        self.notes.append(f"{where} {text}")

    def replace(self, where: str, configured: str, used: str) -> None:
        """A setting pytest-gaia2 cannot honour as written, and what stands in for it: kept for the
        record (run_config.json, the summary, the pages), not only said once at the start."""
        self.replaced.append({"key": where, "configured": configured, "used": used})
        self.note(where, f"= {configured!r} is replaced: the run uses {used}")

    def target(self, where: str, key: str, raw: object) -> None:
        self.targets.append(where)
        self.set(where, key, raw)

    def secret(self, where: str, section: dict[str, Any], variable: str, option: str) -> None:
        raw = section["api_key"]
        if not isinstance(raw, str):
            self.fail(where, "must be a string")  # never echo what may be a key
        value = raw.strip()
        if not value:
            return
        if section.get("api_key_env"):
            self.fail(where, "cannot be set together with api_key_env")
        self.secrets[variable] = Secret(value)
        self.set(where, option, variable)
        self.note(
            where,
            f"holds a literal key: it is handed to containers through {variable} and never written; prefer api_key_env",
        )

    def volumes(self, where: str, value: object) -> None:
        """Upstream's ``-v`` bind mounts become copies made before each container starts.

        As with ``-v``, a bare name is a named volume (refused: there is nothing to copy);
        a relative host path is taken from the TOML file's folder, like every other path here.
        """
        copies: list[str] = []
        for spec in self.strings(where, value):
            match = _VOLUME.fullmatch(spec)
            if not match:
                self.fail(where, f"expected HOST_PATH:/container/path[:options], got {spec!r}")
            if _NAMED_VOLUME.fullmatch(match["src"]):
                self.fail(where, f"{spec!r} names a volume; only host paths can be copied into containers")
            copies.append(f"{self.path(where, match['src'], must_exist='any')}:{match['dst']}")
        if copies:
            self.set(where, "copy_in", copies)
            self.note(
                where,
                "are copied into each container before it starts (--gaia2-copy-in), "
                "not mounted: changes made inside do not reach the host",
            )
