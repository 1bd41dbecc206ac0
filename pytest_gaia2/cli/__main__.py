"""``python -m pytest_gaia2.cli``: the same as the ``pytest-gaia2`` command."""

from pytest_gaia2.cli.main import main

raise SystemExit(main())
