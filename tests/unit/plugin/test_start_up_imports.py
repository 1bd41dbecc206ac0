"""What every pytest process of a run imports at configure (the controller module and the
reference image's name): each module is paid for in CPU by every run and every xdist worker, so
the engine's SDK, the gateway's server, the run's book and pages load only where they are used."""

from __future__ import annotations

import json
import subprocess
import sys

NOT_AT_START = (
    "docker",
    "requests",
    "asyncio",
    "aiohttp",
    "jinja2",
    "filelock",
    "urllib.request",
    "tomllib",
    "pytest_gaia2.engine.client",
    "pytest_gaia2.report.book",
    "pytest_gaia2.report.pages",
    "pytest_gaia2.report.run_facts",
    "pytest_gaia2.run.run_end",
    "pytest_gaia2.run.isolation",
)


def test_configure_imports_no_engine_client_gateway_server_book_or_pages() -> None:
    code = (
        "import json, sys; import pytest_gaia2.plugin.hooks, pytest_gaia2.plugin.controller; "
        "from pytest_gaia2.reference import build; build.image_name(); "
        f"print(json.dumps([name for name in {list(NOT_AT_START)!r} if name in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == []
