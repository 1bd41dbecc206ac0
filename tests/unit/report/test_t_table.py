"""The t table the summaries' 95% intervals read is scipy's, value for value, and is what
``scripts/gen_t_table.py`` writes."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.special import stdtrit

from pytest_gaia2.report.rates import t_quantile
from pytest_gaia2.report.t_table import T_975

ROOT = Path(__file__).resolve().parents[3]


def test_every_value_is_scipys() -> None:
    wrong = [df for df, value in enumerate(T_975, start=1) if not math.isclose(value, float(stdtrit(df, 0.975)), rel_tol=1e-12)]
    assert not wrong, f"the t table differs from scipy at df {wrong[:5]}: run scripts/gen_t_table.py"


def test_the_file_is_what_the_script_writes() -> None:
    done = subprocess.run([sys.executable, "scripts/gen_t_table.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(("probability", "df"), [(0.975, 1), (0.975, 40), (0.975, len(T_975)), (0.975, len(T_975) + 1),
                                                 (0.95, 3), (0.995, 700)])
def test_t_quantile_is_scipys_inside_and_outside_the_table(probability: float, df: int) -> None:
    assert math.isclose(t_quantile(probability, df), float(stdtrit(df, probability)), rel_tol=1e-12)


def test_a_summary_of_a_few_scenarios_loads_no_scipy() -> None:
    code = ("import sys; from pytest_gaia2.report.rates import clustered_wilson; "
            "clustered_wilson([[(1, 1)], [(0, 1)], [(1, 1)], [(1, 2)]]); print('scipy' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
