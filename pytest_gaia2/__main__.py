"""``python -m pytest_gaia2``: the same as the ``pytest-gaia2`` command."""

from pytest_gaia2.cli import main

raise SystemExit(main())
