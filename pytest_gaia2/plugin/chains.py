"""One worker per chain (``--gaia2-sequence`` with ``-n``): pytest-xdist's scope scheduling
with each chain as one scope, so a chain's scenarios run on one worker, in chain order, while
other chains run on other workers.

Not the ``xdist_group`` mark with ``--dist loadgroup``: pytest-xdist 3.8 groups by rewriting
``item._nodeid``, which pytest 9 no longer reads, so the groups silently fall apart.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling


class ChainScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist ships no type information
    """Scope scheduling whose scope of a node id is its chain (any other test: itself)."""

    def __init__(self, config: pytest.Config, log: Any, scope_of: Callable[[str], str]) -> None:
        super().__init__(config, log)
        self.scope_of = scope_of

    def _split_scope(self, nodeid: str) -> str:
        return self.scope_of(nodeid)
