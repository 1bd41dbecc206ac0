"""What the run and the process it runs in hand each other: an :class:`Invocation` (what the
process was asked, as plain values) in; an :class:`ExitStatus`, a :class:`RunStopped` or a
:class:`RunExit` out.

Their own module, apart from :mod:`~pytest_gaia2.run.context`: the plugin's controller, the docs
generator and the tests name a run's exits without loading the run and its engine client.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class ExitStatus(enum.IntEnum):
    """A run's exit status, numbered as pytest numbers its own (0 to 5); the plugin's refusal
    (10) stays clear of the codes pytest adds (9.2 gives 6 to ``--max-warnings``)."""

    OK = 0
    TESTS_FAILED = 1
    INTERRUPTED = 2
    INTERNAL_ERROR = 3
    USAGE_ERROR = 4
    NO_TESTS_COLLECTED = 5
    REFUSED = 10


EXIT_REFUSED = int(ExitStatus.REFUSED)
"""The exit status of a run pre-flight refused (the engine does not answer, the image is missing,
a model endpoint is not ready, the run to resume was made with other settings, its folder is in
use): pytest's 3 means an internal error and its 6 too many warnings."""
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (
        0,
        "every scenario passed, or the gate (`--gaia2-min-pass-rate`, `--gaia2-max-error-rate`) is met; "
        "`--gaia2-preflight-only`: every check passed",
    ),
    (
        1,
        "a scenario failed or errored, or the gate is missed (it alone decides when set), or a limit (a "
        "budget halt or cap, `--gaia2-token-halt`, `--gaia2-max-errors`) stopped a run without a gate short "
        "of its plan; `--gaia2-preflight-only`: a check failed",
    ),
    (2, "interrupted: Ctrl-C, SIGTERM, or a collection error (pytest's own)"),
    (3, "pytest's internal error: a bug, never a refusal of the plugin (pytest's own)"),
    (
        4,
        "a usage error, before any container and before any run folder: a bad option or ini value, a "
        "`--gaia2-scenarios` path that does not exist, a `-m` or `-k` that selects no scenario, a sample "
        "larger than its pool; one `ERROR:` line on stderr, the same serially and under `-n`",
    ),
    (5, "no test was collected (pytest's own)"),
    (
        EXIT_REFUSED,
        "pre-flight refused the run, before any container and before any run folder: the engine "
        "does not answer, the image is missing or broken, a model endpoint is not ready, the model gateway "
        "cannot listen or no container reaches it, the run to resume was made with other settings, the run "
        "folder is in use or cannot be created; plain lines saying "
        "why and what to do, the same serially and under `-n`",
    ),
)
"""Every exit status of a pytest run with the plugin, and what it means (docs/reference/exit-codes.md)."""


class RunStopped(Exception):
    """The run ends before any scenario starts: ``lines`` say why, ``code`` is its exit status.
    The plugin prints the lines as they are (never pytest's ``Exit`` form) and runs no test."""

    def __init__(self, lines: list[str], code: int = EXIT_REFUSED) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.code = code


class RunExit(Exception):
    """The run ends at once with exit status ``code``, ``message`` said as pytest says its own exits."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


@dataclass(frozen=True)
class Invocation:
    """What the run needs of the process it runs in, as plain values the plugin reads from pytest."""

    base: Path
    """The folder the defaults live in (scenarios/, gaia2-results/, .env): pytest's rootdir."""
    worker_input: Mapping[str, Any] = field(default_factory=dict)
    """What the xdist controller handed this worker; empty on the controller or the only process."""
    processes: int | None = None
    """``-n``: the number of xdist workers asked for (None: no xdist)."""
    explicit_test_paths: bool = False
    """Test paths were given (``pytest tests/unit``): then no scenario runs by default."""
    config_file: str | None = None
    """``--gaia2-config``, anchored where it was written."""
    command: str = ""
    collect_only: bool = False
    markexpr: str | None = None
    keyword: str | None = None
    alluredir: Path | None = None
