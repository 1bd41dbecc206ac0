"""The pages a finished run leaves in its folder: ``index.html`` always, and with
``--gaia2-report`` the report (report.md, report.html and its plots, in Allure too)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_gaia2.report.trace_page import write_index


def write_run_pages(folder: Path, *, report: bool, alluredir: Path | None, write: Callable[[str], None]) -> None:
    """Write the pages; a report that cannot be written is said in one line, the run's outcome stands."""
    write_index(folder)
    if not report:
        return
    from pytest_gaia2.report import document as run_report
    from pytest_gaia2.report.plots import MissingLibrary
    from pytest_gaia2.store import folder as store

    try:
        written = run_report.write_report(folder, alluredir)
    except (store.StoreError, MissingLibrary) as exc:
        write(f"gaia2: report not written: {exc}")
        return
    write(f"gaia2: report {next((path for path in written if path.suffix == '.html'), written[0])}")
