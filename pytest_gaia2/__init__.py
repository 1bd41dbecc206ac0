"""pytest-gaia2: every Gaia2 scenario is a pytest test that runs in its own container.

The names below are the public API (the record of an attempt, the run folder reader, the
``gaia2_result`` and ``gaia2_scenario`` fixtures' types, and ``newhooks``, the hooks a
``conftest.py`` may implement); everything else is private by room. The
rooms, top to bottom: ``plugin`` | ``cli``, ``run``, ``report``, ``cost``, ``plan``,
``config``, ``engine``, ``store`` (``reference`` is the in-container reference image).

PYTEST_DONT_REWRITE: pytest marks an installed plugin's package for assertion rewriting each
time a config is made; a second config in one process (``pytester``'s in-process runs, or a
tool that calls ``pytest.main`` twice) found this package imported already, from an editable
install not through pytest's import hook, and warned (PytestAssertRewriteWarning) in every such
run. This module holds no assert; its submodules are rewritten as before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_gaia2.store.version import PLUGIN_VERSION as __version__

if TYPE_CHECKING:
    from pytest_gaia2.plan.scenarios import Scenario
    from pytest_gaia2.plugin import newhooks
    from pytest_gaia2.run.evidence import ScenarioResult
    from pytest_gaia2.store.folder import ResultsError, RunFolder
    from pytest_gaia2.store.record import CATEGORIES, AttemptRecord, RecordError

__all__ = [
    "CATEGORIES",
    "AttemptRecord",
    "RecordError",
    "ResultsError",
    "RunFolder",
    "Scenario",
    "ScenarioResult",
    "__version__",
    "newhooks",
]

_PUBLIC = {
    "AttemptRecord": "pytest_gaia2.store.record",
    "RecordError": "pytest_gaia2.store.record",
    "CATEGORIES": "pytest_gaia2.store.record",
    "RunFolder": "pytest_gaia2.store.folder",
    "ResultsError": "pytest_gaia2.store.folder",
    "Scenario": "pytest_gaia2.plan.scenarios",
    "ScenarioResult": "pytest_gaia2.run.evidence",
}
_MODULES = {"newhooks": "pytest_gaia2.plugin.newhooks"}


def __getattr__(name: str) -> Any:
    """The public names, imported when first used: ``import pytest_gaia2`` loads no engine client."""
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    if name in _MODULES:
        return importlib.import_module(_MODULES[name])
    raise AttributeError(f"module 'pytest_gaia2' has no attribute {name!r}")
