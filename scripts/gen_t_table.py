"""Write ``pytest_gaia2/report/t_table.py``: Student's t quantiles at 97.5% (the two-sided 95%
intervals every summary shows) for 1 to 1,024 degrees of freedom, from scipy.

Loading ``scipy.special`` costs about half a second of CPU and 50 MB in every run that writes a
summary (the controller, at the end, while the xdist workers still live); the table answers the
intervals of runs up to 1,025 scenarios without it. ``tests/unit/report/test_t_table.py`` compares
the table with scipy's ``stdtrit`` and fails when they differ. ``--check`` only compares.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from scipy.special import stdtrit

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "pytest_gaia2" / "report" / "t_table.py"
LARGEST_DF = 1024
HEADER = '''"""Student's t quantiles at 97.5% for 1 to {largest} degrees of freedom, written by
``scripts/gen_t_table.py`` from scipy's ``stdtrit`` (run it, never edit by hand): the intervals of
a summary without loading scipy."""

T_975 = (
'''


def render() -> str:
    """The module's text: one value per line, ``repr`` (exact round trip)."""
    values = "".join(f"    {float(stdtrit(df, 0.975))!r},\n" for df in range(1, LARGEST_DF + 1))
    return HEADER.format(largest=LARGEST_DF) + values + ")\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the table differs")
    text = render()
    if parser.parse_args().check:
        same = TARGET.read_text(encoding="utf-8") == text
        print(f"{TARGET.relative_to(ROOT)}: {'up to date' if same else 'differs: run scripts/gen_t_table.py'}")
        return 0 if same else 1
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
