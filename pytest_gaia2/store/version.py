"""The plugin's version, from the installed distribution (``pyproject.toml`` is its one source)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    PLUGIN_VERSION = version("pytest-gaia2")
except PackageNotFoundError:  # a source tree on sys.path without an install
    PLUGIN_VERSION = "0+unknown"
