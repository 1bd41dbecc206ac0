"""Shared test helpers: pytester, the shipped scenarios, and the run's containers on the real engine."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Mapping

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


KEY_VARIABLES = (
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
    "OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY", "API_KEY", "GAIA2_JUDGE_API_KEY",
)
"""Every variable gaia2-cli reads a key from (contract section 1.3)."""
HOST_SETTINGS = (
    *KEY_VARIABLES, "GAIA2_JUDGE_PROVIDER", "GAIA2_JUDGE_MODEL", "GAIA2_JUDGE_BASE_URL", "BASE_URL",
    "GAIA2_CA_BUNDLE", "GAIA2_PROXY_RELAY_URL",
    "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY",
)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No key, judge or proxy setting of the developer's shell reaches the runs a test starts."""
    for name in HOST_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def derived_image(tag: str, *lines: str, files: Mapping[str, bytes] | None = None) -> str:
    """Build ``tag`` FROM the reference image (built first when needed) plus Dockerfile ``lines``.

    Built rather than tagged, so the image has its own id and a concurrent rebuild of the
    reference image cannot untag it mid-test; unchanged, it comes from the build cache.
    ``files`` (name -> bytes) are in the build context for ``COPY``.
    """
    import docker
    from filelock import FileLock

    from pytest_gaia2.engine import tar_files
    from pytest_gaia2.preflight import IMAGE_BUILD_LOCK
    from pytest_gaia2.reference import build

    dockerfile = "\n".join([f"FROM {build.image_name()}", f"LABEL org.pytest-gaia2-test.image={tag}", *lines])
    context = tar_files([("Dockerfile", f"{dockerfile}\n".encode(), 0o644),
                         *((name, content, 0o755) for name, content in (files or {}).items())])
    client = docker.from_env()
    try:
        with FileLock(str(IMAGE_BUILD_LOCK)):
            build.ensure_image(client, log=lambda line: None)
            image, _ = client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag,
                                           rm=True, forcerm=True, pull=False)
        return str(image.id)
    finally:
        client.close()
