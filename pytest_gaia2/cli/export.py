"""``pytest-gaia2 export RUN --format are-leaderboard --output DIR``, and ``export --check DIR``.

Writes what Meta's Gaia2 leaderboard takes from the legacy ``are-benchmark gaia2-run
--hf_upload`` path (:mod:`leaderboard`): ``DIR/<config>/<split>-00000-of-00001.jsonl``, one
config per Gaia2 split, one row per scenario run, and ``DIR/report.json`` with ``metadata`` and
``statistics``. Then it checks what it wrote with the validator that ``--check`` runs on any
export before upload: every row's fields and types, and every statistic recomputed from the rows.
Planned scenarios that never ran have no row, so an incomplete run (stopped by Ctrl-C, a budget
halt, a decision) is refused unless ``--allow-partial``: its judged-only rates would read as the
whole run's. A partial export says how many never ran, in its output and in ``report.json``'s
``metadata`` (``planned``, ``not_run``, ``complete``, ``stopped``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_gaia2.cli.compare import latest_plan, read_run_config
from pytest_gaia2.cli.main import CommandError, check_new_place, create_file
from pytest_gaia2.report import leaderboard, run_facts
from pytest_gaia2.report.rows import natural_key
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.redact import printable
from pytest_gaia2.store.safejson import JsonLimitError, JsonReadError, loads_bounded, read_regular_file
from pytest_gaia2.store.version import PLUGIN_VERSION

FORMAT = "are-leaderboard"
MAX_DATA_BYTES = 16 << 20
"""An attempt's events.jsonl larger than this is left out of its row's ``data`` (and said so)."""
MAX_EXPORT_FILE = 1 << 30
"""The largest file ``--check`` reads."""
MAX_PROBLEMS = 1000
"""``--check`` stops at this many problems: a file of a million bad fields would hold a million
messages (18 times the file's size in memory)."""
SHOWN_PROBLEMS = 50
_SPLIT = re.compile(r"[A-Za-z0-9_-]{1,40}")


def rows_file(out: Path, config: str, split: str) -> Path:
    """``<config>/<split>-00000-of-00001.jsonl``, the layout upstream's dataset card points at."""
    return store.inside(out, config, f"{split}-00000-of-00001.jsonl")


def _data(folder: store.RunFolder, relative: str) -> str | None:
    """The attempt's events.jsonl (a regular file inside the run folder, bounded), else None."""
    if not relative:
        return None
    try:
        path = store.inside(folder.path, *Path(relative).parts, "events.jsonl")
        return read_regular_file(path, max_bytes=MAX_DATA_BYTES, follow_symlinks=False).decode("utf-8", "replace")
    except (store.StoreError, JsonReadError, OSError, ValueError):
        return None


def build(
    folder: store.RunFolder, with_data: bool, allow_partial: bool = False
) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any]]:
    """The rows by config and the JSON report of one run folder; an incomplete run is refused
    (one error naming how many never ran and why) unless ``allow_partial``."""
    config, _ = read_run_config(folder)
    shown_config = json.dumps({key: value for key, value in config.items() if key != "planned"}, sort_keys=True)
    stored = list(folder.records(strict=True))
    planned = list(dict.fromkeys(latest_plan(folder, config, stored)))
    latest = {record.key: record for record in stored}
    not_run = [key for key in planned if key not in latest]
    stop = run_facts.read(folder.path, config).stop
    stopped = stop.reason if stop is not None and stop.reason else ("unknown" if not_run else None)
    if not_run and not allow_partial:
        raise CommandError(
            f"{folder.path}: incomplete run: {missing(len(not_run), len(planned))} (stopped: {stopped}); "
            "its rates would read as the whole run's; pass --allow-partial to export the "
            f"{len(planned) - len(not_run)} that ran"
        )
    rows: dict[str, list[dict[str, Any]]] = {}
    for key in sorted(latest, key=natural_key):
        record = latest[key]
        data = _data(folder, record.folder) if with_data else None
        rows.setdefault(leaderboard.config_name(record.split), []).append(leaderboard.row(record, shown_config, data))
    found = config.get("provenance")
    provenance: dict[str, Any] = found if isinstance(found, dict) else {}
    report = {
        "metadata": {
            "model": provenance.get("model") or config.get("model"),
            "model_provider": provenance.get("provider") or config.get("provider"),
            "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
            "exporter": f"pytest-gaia2 {PLUGIN_VERSION}",
            "run_id": config.get("run_id"),
            "rates": leaderboard.RATES_NOTE,
            "planned": len(planned),
            "not_run": len(not_run),
            "complete": not not_run,
            "stopped": stopped,
        },
        "statistics": leaderboard.statistics_of(rows),
    }
    return rows, report


def missing(not_run: int, planned: int) -> str:
    return f"{not_run} of {planned} planned scenario runs never ran"


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def check(directory: Path, split: str | None = None) -> list[str]:
    """Every problem of an export folder, each naming its file (and line) and field; [] when it is fine."""
    report_path = directory / leaderboard.REPORT_FILE
    try:
        report = loads_bounded(
            read_regular_file(report_path, max_bytes=MAX_EXPORT_FILE, follow_symlinks=False), max_bytes=MAX_EXPORT_FILE
        )
    except (JsonReadError, OSError) as exc:
        return [f"{leaderboard.REPORT_FILE}: cannot be read as JSON ({exc})"]
    problems: list[str] = []
    rows_by_config: dict[str, list[dict[str, Any]]] = {}
    files = sorted(p for p in directory.glob("*/*.jsonl") if split is None or p.name.startswith(f"{split}-"))
    if not files:
        return [f"{directory}: no <config>/<split>-*.jsonl file"]
    for path in files:
        if len(problems) >= MAX_PROBLEMS:
            break
        relative = path.relative_to(directory).as_posix()
        try:
            data = read_regular_file(path, max_bytes=MAX_EXPORT_FILE, follow_symlinks=False)
        except (JsonReadError, OSError) as exc:
            problems.append(f"{relative}: cannot be read ({exc})")
            continue
        for number, line in enumerate(data.splitlines(), start=1):
            if len(problems) >= MAX_PROBLEMS:
                break
            try:
                value = loads_bounded(line, max_bytes=MAX_EXPORT_FILE)
            except JsonLimitError as exc:
                problems.append(f"{relative}:{number}: {exc}")
                continue
            found = leaderboard.check_row(f"{relative}:{number}", value, path.parent.name)
            problems += found
            if not found:
                rows_by_config.setdefault(path.parent.name, []).append(value)
    if not problems:
        problems = leaderboard.check_report(report, rows_by_config)
    return problems[:MAX_PROBLEMS]


# -- the command ---------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN", help="run folder (or an output folder: its latest run)")
    parser.add_argument("--format", choices=(FORMAT,), default=FORMAT, help="what to export to (default %(default)s)")
    parser.add_argument("--output", metavar="DIR", help="a new folder outside every run folder")
    parser.add_argument("--split", default="validation", help="the dataset split the rows are (default %(default)s)")
    parser.add_argument("--with-data", action="store_true", help="put each attempt's events.jsonl in its row's data")
    parser.add_argument("--check", metavar="DIR", help="only check an export folder before upload")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="export a run that did not run every planned scenario (report.json's metadata says how many)",
    )


def run(args: argparse.Namespace) -> int:
    if args.check:
        problems = check(Path(args.check))
        for problem in problems[:SHOWN_PROBLEMS]:  # names and values from the folder: no escape reaches the terminal
            print(f"pytest-gaia2 export: {printable(problem)}")
        if len(problems) > SHOWN_PROBLEMS:
            stopped = f" (the check stops at {MAX_PROBLEMS})" if len(problems) >= MAX_PROBLEMS else ""
            print(f"pytest-gaia2 export: ... and {len(problems) - SHOWN_PROBLEMS} more{stopped}")
        print(f"pytest-gaia2 export: {args.check}: " + ("NOT valid" if problems else "valid"))
        return 1 if problems else 0
    if not args.run or not args.output:
        raise CommandError("export needs RUN and --output DIR (or --check DIR)")
    if not _SPLIT.fullmatch(args.split):
        raise CommandError(f"--split {args.split!r}: letters, digits, _ and - only")
    folder = store.RunFolder.existing(args.run)
    out = check_new_place("--output", Path(args.output), [folder.path.resolve()])
    rows, report = build(folder, args.with_data, args.allow_partial)
    try:
        os.makedirs(out)
    except OSError as exc:
        raise CommandError(f"--output {args.output}: cannot create it: {exc.strerror or exc}") from None
    for config, config_rows in rows.items():
        create_file("--output", rows_file(out, config, args.split), _jsonl(config_rows))
    create_file("--output", out / leaderboard.REPORT_FILE, json.dumps(report, indent=2).encode("utf-8") + b"\n")
    problems = check(out, args.split)
    if problems:
        raise CommandError(f"the export in {out} does not pass its own check: {problems[0]}")
    total = sum(len(config_rows) for config_rows in rows.values())
    print(
        f"pytest-gaia2 export: {out}: {total} rows in {len(rows)} configs ({', '.join(sorted(rows))}), "
        f"{leaderboard.REPORT_FILE}; checked: valid. {leaderboard.RATES_NOTE}"
    )
    metadata = report["metadata"]
    if metadata["not_run"]:  # the last line: what a CI log must not miss
        print(
            f"pytest-gaia2 export: PARTIAL: {missing(metadata['not_run'], metadata['planned'])}, no row for them "
            f"(stopped: {printable(str(metadata['stopped']))}; --allow-partial; report.json's metadata says so)"
        )
    return 0
