"""The ``--gaia2-*`` options as pytest registers and reads them: the command line, the ini file
and pytest's rootdir; the table and the parsing are :mod:`pytest_gaia2.config.options`'s."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_gaia2.config.options import BY_KEY, GROUP, OPTIONS, Options, anchored, resolve
from pytest_gaia2.config.values import OptionError


def add_options(parser: pytest.Parser) -> None:
    """Register every option in the ``gaia2`` group and its matching ini key."""
    group = parser.getgroup(GROUP, "Gaia2 benchmark scenarios")
    for option in OPTIONS:
        # argparse %-formats help texts (``%(default)s``): a literal "95%" must reach it as "95%%".
        kwargs: dict[str, Any] = {"dest": f"gaia2_{option.key}", "help": option.help.replace("%", "%%")}
        if option.flag:
            kwargs.update(action="store_const", const=True, default=None)
        elif option.bare:
            kwargs.update(nargs="?", const=True, default=None, metavar="PATH")
        elif option.multiple:
            kwargs.update(action="append", default=None)
        else:
            kwargs.update(default=None)
            if option.choices:
                kwargs["choices"] = list(option.choices)
        group.addoption(option.cli, **kwargs)
        ini_type: Literal["linelist", "bool", "string"] = (
            "linelist" if option.multiple else ("bool" if option.flag else "string")
        )
        parser.addini(option.ini, option.help, type=ini_type, default=[] if option.multiple else None)


def read(config: pytest.Config, toml: Mapping[str, Any] | None = None) -> Options:
    """All option values for this run, parsed, from a pytest config (and an optional TOML mapping).

    A relative path is anchored where it was written, as pytest anchors its own: on the command
    line, to the folder pytest was started in; in the ini file, to that file's folder (the
    TOML config anchors its own to its folder). Defaults stay relative: see ``base_dir``.
    """
    here = config.invocation_params.dir
    cli: dict[str, Any] = {}
    ini: dict[str, Any] = {}
    for option in OPTIONS:
        cli[option.key] = anchored(option, config.getoption(f"gaia2_{option.key}"), here)
        value = _ini(config, option.ini)
        if option.flag and value is False:
            value = None  # an unset bool ini reads as False; let the default speak
        ini[option.key] = anchored(option, value if value not in ("", None) else None, _ini_dir(config))
    return resolve(cli, toml or {}, ini)


def _ini(config: pytest.Config, name: str) -> Any:
    """An ini value; one pytest refuses (a bool's "invalid truth value") names its key."""
    try:
        return config.getini(name)
    except pytest.UsageError as exc:
        raise OptionError(f"{name}: {exc}") from None


def config_file(config: pytest.Config) -> str | None:
    """``--gaia2-config`` (else ``gaia2_config``), anchored as ``read`` anchors paths: the TOML
    file has to be loaded before ``read`` can merge it."""
    option = BY_KEY["config"]
    given = config.getoption("gaia2_config")
    path: str | None = (
        anchored(option, given, config.invocation_params.dir)
        if given
        else anchored(option, config.getini("gaia2_config") or None, _ini_dir(config))
    )
    return path


def _ini_dir(config: pytest.Config) -> Path:
    return config.inipath.parent if config.inipath else config.rootpath


def base_dir(config: pytest.Config) -> Path:
    """The folder the defaults live in: scenarios/, gaia2-results/ and .env at pytest's rootdir.

    pytest's rootdir is only right for ``--gaia2-x VALUE`` (with a space) when
    ``joined_values.rerun_with_joined_values`` runs first; the ``=`` form is always right.
    """
    return config.rootpath


def may_collect(config: pytest.Config) -> bool:
    """Whether this run can collect a scenario at all, decided without reading any: when not,
    the plugin idles (registers its options and markers, imports nothing else)."""
    for key in ("scenarios", "dataset", "config", "preflight_only"):
        if config.getoption(f"gaia2_{key}") or _ini(config, f"gaia2_{key}"):
            return True
    return not explicit_test_paths(config) and (base_dir(config) / "scenarios").is_dir()


def explicit_test_paths(config: pytest.Config) -> bool:
    """Whether test paths were given (``pytest tests/unit``): then no scenario runs by default.

    pytest decides ``args_source`` after every plugin's options are known, so the value of
    ``--gaia2-output DIR`` never counts as a test path here (paths from ``addopts`` do).
    """
    return config.args_source == pytest.Config.ArgsSource.ARGS
