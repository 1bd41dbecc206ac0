"""The hooks pytest-gaia2 declares: implement them in a ``conftest.py`` or a plugin.

Registered by the plugin's ``pytest_addhooks``, as pytest-xdist registers its own; each is
called with keyword arguments, so an implementation takes only the ones it needs::

    def pytest_gaia2_container_env(scenario, env):
        env["MY_SERVICE_URL"] = "http://host.docker.internal:9000"

Nothing here is imported at run time: the types are for readers and type checkers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_gaia2.plan.scenarios import Scenario
    from pytest_gaia2.store.record import AttemptRecord


@pytest.hookspec
def pytest_gaia2_container_env(scenario: Scenario, env: dict[str, str]) -> None:
    """Adjust a scenario's container environment before its container starts.

    Called for every attempt (a retry calls it again), in the process that starts the
    container (an xdist worker under ``-n``), after ``--gaia2-env`` and the run's settings
    are in ``env``. Change ``env`` in place; names and values must be strings (no ``=`` in a
    name, no NUL anywhere), and ``GAIA2_ADAPTER_PORT`` must stay as it is: the plugin polls
    that port. A broken environment or an exception raised here ends the attempt with a
    ``harness_error`` record, as any other infrastructure error.

    Secrets: a value set here is masked in every file, report and log line of the run when
    its variable's name looks secret (contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or
    CREDENTIAL, in any case), exactly as ``--gaia2-env`` values are. A secret under any
    other name is *not* masked: give it such a name.

    :param scenario: The scenario about to run (``scenario_id``, ``split``, ``path``, ...);
        read-only.
    :param env: The container's environment, name -> value; mutable.
    """


@pytest.hookspec
def pytest_gaia2_record(record: AttemptRecord, folder: Path) -> None:
    """See each scenario's final record as the run writes it to ``results.jsonl``.

    Called on the controller (the only process without ``-n``), once per scenario and repeat,
    right after its line is appended, whatever the outcome: passed, failed, error, or a
    verdict reused from an earlier session. ``results.jsonl`` is written before the hook
    runs, so the record is safe whatever the hook does; an exception raised here is shown as
    a warning line and the run goes on.

    :param record: The :class:`pytest_gaia2.AttemptRecord`, frozen (read-only); its
        ``to_json()`` is the line written.
    :param folder: The run folder; the attempt's files are in ``folder / record.folder``.
    """


@pytest.hookspec
def pytest_gaia2_summary(summary: Mapping[str, Any], lines: list[str]) -> None:
    """Add lines to the gaia2 part of the terminal summary.

    Called on the controller at the end of a run that wrote records, after ``summary.json``
    is written. Lines appended to ``lines`` are printed below the plugin's own summary, with
    secrets masked and control characters escaped. An exception raised here is shown as a
    warning line.

    :param summary: What ``summary.json`` holds (pass rates, counts, errors, cost, the
        gate's decision); read-only, empty when the file could not be written.
    :param lines: Append the lines to print.
    """
