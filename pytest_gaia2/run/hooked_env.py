"""A scenario's container environment after the ``pytest_gaia2_container_env`` hook.

The run context hands the hook in as ``config.hook.pytest_gaia2_container_env`` (pytest's API,
not the plugin room). Whatever a hook does, the engine only sees an environment it takes, with
the adapter's port unchanged; a secret-looking value a hook set is masked from then on, in
everything this process writes or prints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from pytest_gaia2.run.verdict import Gaia2InfraError
from pytest_gaia2.store.redact import MIN_SECRET_LENGTH, Redactor, looks_secret, printable

if TYPE_CHECKING:
    from pytest_gaia2.plan.scenarios import Scenario

ADAPTER_PORT_VARIABLE = "GAIA2_ADAPTER_PORT"
"""The port the plugin polls: a hook may not move it."""
SHOWN_NAME = 100
"""Characters of a bad variable name quoted in the error."""
SHOWN_ERROR = 500
"""Characters of a hook's exception quoted in the error."""


class LearningRedactor(Redactor):
    """A run's redactor that can learn a secret while the run goes on (one a hook put in a
    container's environment): rebuilt in place, so every holder masks it from then on."""

    def learn(self, values: Iterable[str]) -> None:
        new = {value for value in values if len(value) >= MIN_SECRET_LENGTH} - set(self.values)
        if new:
            super().__init__((*self.values, *new))


def _problem(env: dict[Any, Any], before: dict[str, str]) -> str | None:
    """What makes ``env`` unfit for the engine or the plugin, naming the variable, never its value."""
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            return f"{str(name)[:SHOWN_NAME]!r} is not a variable name"
        if not isinstance(value, str) or "\0" in value:
            return f"{name[:SHOWN_NAME]}: the value must be a string without NUL, got {type(value).__name__}"
    if env.get(ADAPTER_PORT_VARIABLE) != before.get(ADAPTER_PORT_VARIABLE):
        return f"{ADAPTER_PORT_VARIABLE} may not change: the plugin polls port {before.get(ADAPTER_PORT_VARIABLE)}"
    return None


def adjust(hook: Callable[..., Any], redactor: LearningRedactor, scenario: Scenario, env: dict[str, str]) -> None:
    """Let ``hook`` change ``env`` in place, then check it; a hook that raised or left a broken
    environment ends the attempt as a ``harness_error``, with a masked, printable message."""
    before = dict(env)
    try:
        hook(scenario=scenario, env=env)
        problem = _problem(env, before)
    except Exception as exc:  # noqa: BLE001 - a user's hook: any failure is this attempt's error
        problem = f"raised {type(exc).__name__}: {str(exc)[:SHOWN_ERROR]}"
    redactor.learn(
        value
        for name, value in env.items()
        if isinstance(name, str) and isinstance(value, str) and looks_secret(name) and before.get(name) != value
    )
    if problem is not None:
        raise Gaia2InfraError("harness_error", printable(redactor.redact(f"pytest_gaia2_container_env: {problem}")))
