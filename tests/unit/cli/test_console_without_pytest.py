"""The console command reads run folders without loading pytest: only the plugin room imports it
(the import-linter contract in pyproject.toml); here the modules a real process loads are counted."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from test_compare import write_run

PYTEST_MODULES = ("pytest", "_pytest", "xdist")


def _loaded(stderr: str) -> list[str]:
    """Top-level modules in ``-X importtime`` output that are pytest's or xdist's."""
    names = (line.rpartition("|")[2].strip() for line in stderr.splitlines() if line.startswith("import time:"))
    return sorted({name for name in names if name.split(".")[0] in PYTEST_MODULES})


def test_importing_the_console_loads_no_pytest() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "import json, sys, pytest_gaia2.cli.main; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    loaded = json.loads(done.stdout)
    assert "pytest_gaia2.cli.main" in loaded
    assert not [name for name in loaded if name.split(".")[0] in PYTEST_MODULES]


def test_report_help_and_a_report_run_without_pytest(tmp_path: Path) -> None:
    """``pytest-gaia2 report --help`` and a report of a run folder, as the installed command runs them."""
    command = shutil.which("pytest-gaia2", path=str(Path(sys.executable).parent)) or "pytest-gaia2"
    folder = write_run(tmp_path, {"a": "P", "b": "F"})
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    for args in (["report", "--help"], ["report", str(folder)]):
        # A bound for a hang only: a fresh interpreter's first report builds matplotlib's font
        # cache, and CI runs this lane niced beside the engine tests (it once took over 120 s).
        done = subprocess.run([command, *args], capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "import time:" in done.stderr and "pytest_gaia2.cli.main" in done.stderr
        assert _loaded(done.stderr) == [], f"pytest-gaia2 {' '.join(args)} loaded {_loaded(done.stderr)}"
