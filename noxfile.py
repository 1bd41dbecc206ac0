"""The fast lane (every test that needs no container engine) on each supported Python.

    .venv/bin/nox                      # 3.10, 3.11, 3.12 and 3.13
    .venv/bin/nox -s fast-3.12         # one of them
    .venv/bin/nox -s fast-3.13 -- tests/unit -x   # other pytest arguments

Interpreters are found on PATH and among pyenv's versions (``$PYENV_ROOT/versions/3.X.Y/bin``,
which pyenv's own shims hide unless selected); one that is absent is skipped with nox's message
(``Missing interpreters``), never an error. Each Python gets a virtualenv of its own under
``.nox/``, kept between runs, made with uv where it is installed (the test extra has it) (the package installed editable, so a second run only re-checks).
"""

from __future__ import annotations

import glob
import os

import nox

PYTHONS = ["3.10", "3.11", "3.12", "3.13"]
"""The supported versions: pyproject's requires-python and classifiers say the same."""
FAST_LANE = ["tests", "-m", "not docker", "-p", "no:cacheprovider"]

nox.options.sessions = ["fast"]
nox.options.error_on_missing_interpreters = False
nox.options.default_venv_backend = "uv|venv"  # uv installs in a fraction of pip's CPU
nox.options.reuse_venv = "yes"

_pyenv = os.path.join(os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv"), "versions")
_found = sorted(glob.glob(os.path.join(_pyenv, "3.*", "bin")), reverse=True)
os.environ["PATH"] = os.pathsep.join([*_found, os.environ.get("PATH", "")])


@nox.session(python=PYTHONS)
def fast(session: nox.Session) -> None:
    """``pytest tests -m "not docker"`` (or the arguments after ``--``) on one Python."""
    if session.venv_backend == "uv":
        session.install("-q", "-e", ".[test]")  # uv writes no bytecode unless asked
    else:
        session.install("-q", "--no-compile", "-e", ".[test]")  # bytecode as imported: less CPU in CI
    session.run("python", "-m", "pytest", *(session.posargs or FAST_LANE))
