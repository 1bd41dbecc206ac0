"""The spend ledger and the budget's decisions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_gaia2.budget import Budget, Ledger, entry_of


def test_entries_are_per_attempt_and_never_counted_twice(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    assert ledger.total() == 0.0
    assert ledger.add(entry_of("search/a", 1), 0.25) == 0.25
    assert ledger.add(entry_of("search/a", 1), 0.25) == 0.25  # the same attempt again
    assert ledger.add(entry_of("search/a", 2), 0.5) == 0.75
    assert Ledger(tmp_path).total() == 0.75  # what a resumed session reads


def test_workers_adding_at_once_lose_nothing(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from pytest_gaia2.budget import Ledger\n"
            "ledger = Ledger(Path(sys.argv[1]))\n"
            "for n in range(25): ledger.add(f'{sys.argv[2]}/{n}#1', 0.01)\n")
    workers = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), f"gw{n}"]) for n in range(4)]
    assert all(worker.wait(60) == 0 for worker in workers)
    assert Ledger(tmp_path).total() == 1.0


def test_halt_and_cap() -> None:
    budget = Budget(halt=50.0, cap=80.0)
    assert budget.halted(49.99) is None and "halt is $50.00" in (budget.halted(50.0) or "")
    assert budget.capped(80.0) is None and "passed its cap $80.00" in (budget.capped(80.01) or "")
    assert Budget(cap=10.0).halted(10.0) is not None  # a cap alone also stops new starts
    assert Budget().halted(10**6) is None and Budget().capped(10**6) is None
