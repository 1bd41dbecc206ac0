"""``pytest_gaia2``'s public names: each resolves to what its room defines, and importing the
package loads no container engine client (the names are imported when first used)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from types import ModuleType

import pytest

import pytest_gaia2

HEAVY = ("docker", "requests", "pytest_gaia2.engine.client", "pytest_gaia2.run.context")


@pytest.mark.parametrize("name", pytest_gaia2.__all__)
def test_every_public_name_resolves_to_its_definition(name: str) -> None:
    value = getattr(pytest_gaia2, name)
    if isinstance(value, ModuleType):
        assert value.__name__.startswith("pytest_gaia2.") and value.__name__.endswith(f".{name}")
    elif name == "__version__":
        assert isinstance(value, str) and value
    elif name == "CATEGORIES":
        from pytest_gaia2.store import record

        assert value is record.CATEGORIES
    else:
        assert value.__name__ == name and getattr(sys.modules[value.__module__], name) is value


@pytest.mark.parametrize(("fixture", "public"), [("gaia2_scenario", "Scenario"), ("gaia2_result", "ScenarioResult")])
def test_a_public_fixture_is_annotated_with_a_public_type(fixture: str, public: str) -> None:
    """Editors and type checkers read a fixture's type from its return annotation: it names the
    type ``pytest_gaia2`` exports, which a user's test can import to annotate its argument."""
    from pytest_gaia2.plugin import hooks

    annotation = inspect.signature(getattr(hooks, fixture).__wrapped__).return_annotation
    exported = {name: getattr(pytest_gaia2, name) for name in pytest_gaia2.__all__}
    assert eval(annotation, exported) is getattr(pytest_gaia2, public)


def test_a_private_name_is_not_served() -> None:
    with pytest.raises(AttributeError, match="no attribute 'RunContext'"):
        pytest_gaia2.RunContext  # noqa: B018 - the access is the test


def test_importing_the_package_loads_no_engine_client() -> None:
    code = (
        "import json, sys; import pytest_gaia2; "
        f"print(json.dumps([name for name in {list(HEAVY)!r} if name in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []


def test_the_hook_specs_are_public_without_an_engine_client() -> None:
    """A conftest that type-hints its hooks imports ``pytest_gaia2.newhooks`` and the types it names."""
    code = (
        "import json, sys; from pytest_gaia2 import AttemptRecord, Scenario, newhooks; "
        f"print(json.dumps([name for name in {list(HEAVY)!r} if name in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
