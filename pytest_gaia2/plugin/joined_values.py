"""``--gaia2-x VALUE`` read as ``--gaia2-x=VALUE``: pytest's early rootdir choice, fixed by a rerun.

See :func:`rerun_with_joined_values` for why the space-separated form needs this at all.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_gaia2.config.options import OPTIONS

_TAKES_VALUE = frozenset(option.cli for option in OPTIONS if not option.flag)


def join_values(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """``args`` with every ``--gaia2-<name> VALUE`` written ``--gaia2-<name>=VALUE``, and those VALUEs.

    Tokens are read as argparse reads them: a value never starts with ``-`` (so a bare
    ``--gaia2-resume`` followed by another option stays bare), and nothing after ``--`` is an option.
    """
    joined: list[str] = []
    values: list[str] = []
    index = 0
    while index < len(args):
        token = args[index]
        if token == "--":
            joined += args[index:]
            break
        following = args[index + 1] if index + 1 < len(args) else None
        if token in _TAKES_VALUE and following is not None and not following.startswith("-"):
            joined.append(f"{token}={following}")
            values.append(following)
            index += 2
        else:
            joined.append(token)
            index += 1
    return joined, values


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long, or with a NUL byte: not a path pytest can use
        return False


def rerun_with_joined_values(config: pytest.Config) -> int | pytest.ExitCode | None:
    """Run pytest again, in this process, as if every ``--gaia2-x VALUE`` had been ``--gaia2-x=VALUE``.

    Why: pytest picks its rootdir and ini file (``Config.parse`` -> ``determine_setup``) from
    the command line *before* it loads plugins, so it does not know the ``--gaia2-*`` options
    yet and takes the VALUE of ``--gaia2-output VALUE`` for a test path. When that path
    exists, the ini file is looked for from VALUE upwards (so the project's may not be read
    at all) and, none found, the rootdir becomes the common parent of VALUE and the current
    folder (VALUE itself when that is ``/``). The plugin then looks for scenarios/, its output
    and .env in the wrong folder, or silently collects nothing; pytest's cache, testpaths
    and markers follow the same wrong choice, and xdist's workers, which re-parse the same
    arguments, make it again. The option values themselves are parsed right later on; only
    this early choice is wrong, and no plugin hook runs before it. So the run is started
    again with the values joined, the form that never had the problem. PYTEST_ADDOPTS, read
    at the same moment, is joined too.

    Call it from a ``tryfirst`` ``pytest_cmdline_main`` hook and return its result: ``None``
    when nothing needs joining (a VALUE that names no existing path cannot move the
    rootdir), else the exit status of the second run. xdist workers never re-run: they get
    the controller's arguments, joined already.
    """
    if hasattr(config, "workerinput"):
        return None
    here = config.invocation_params.dir
    args, values = join_values([str(arg) for arg in config.invocation_params.args])
    addopts, addopts_values = join_values(shlex.split(os.environ.get("PYTEST_ADDOPTS", "")))
    if not any(_exists(here / value.split("::")[0]) for value in values + addopts_values):
        return None
    with pytest.MonkeyPatch.context() as patch:
        if addopts_values:
            patch.setenv("PYTEST_ADDOPTS", shlex.join(addopts))
        return pytest.main(args, plugins=list(config.invocation_params.plugins or ()))
