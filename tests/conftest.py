"""Shared test helpers: pytester, the shipped scenarios, and the run's containers on the real engine."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "scenarios"
DATA = REPO / "tests" / "data"


def gaia2_containers(run_id: str | None = None) -> list[Any]:
    """Containers on the engine carrying pytest-gaia2's run label (all runs, or one)."""
    import docker

    client = docker.from_env()
    label = f"org.pytest-gaia2.run={run_id}" if run_id else "org.pytest-gaia2.run"
    try:
        return client.containers.list(all=True, filters={"label": label})
    finally:
        client.close()


def run_id_of(output: Path) -> str:
    return json.loads((output / "run_config.json").read_text(encoding="utf-8"))["run_id"]


def results_of(output: Path) -> list[dict[str, Any]]:
    lines = (output / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture
def run_gaia2(pytester: pytest.Pytester):
    """Run pytest with the plugin in a subprocess, output into the pytester folder."""

    def run(*args: str, output: str = "out") -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--gaia2-output={output}", *args)

    return run
