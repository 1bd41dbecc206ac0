"""``pytest-gaia2 export RUN --format are-leaderboard --output DIR``, and ``export --check DIR``.

Writes what Meta's Gaia2 leaderboard takes from the legacy ``are-benchmark gaia2-run
--hf_upload`` path (:mod:`leaderboard`), laid out as that path pushes it to a dataset repository:
``DIR/<config>/<split>-00000-of-00001.parquet`` (JSON lines, ``.jsonl``, when pyarrow is missing
or asked for), one config per Gaia2 split, one row per scenario run; ``DIR/computed_stats.json``;
and ``DIR/README.md``, the dataset card whose front matter declares the configs. Then it checks
what it wrote with the validator that ``--check`` runs on any export before upload (upstream's
own included): every row's fields and types, and every statistic recomputed from the rows.

A run with planned scenarios that never ran (a Ctrl-C, a halt, a decided stop) is refused unless
``--allow-partial``: its rates would be over what happened to run. A partial export says how many
are missing, on the terminal and in ``computed_stats.json``'s metadata.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import io
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_gaia2.report import leaderboard, run_facts
from pytest_gaia2.report.rows import natural_key
from pytest_gaia2.report.runs import latest_plan, read_run_config
from pytest_gaia2.store import folder as store
from pytest_gaia2.store import redact
from pytest_gaia2.store.console import CommandError, check_new_place, create_file
from pytest_gaia2.store.record import AttemptRecord
from pytest_gaia2.store.redact import printable
from pytest_gaia2.store.safejson import JsonLimitError, JsonReadError, loads_bounded, open_regular, read_regular_file
from pytest_gaia2.store.version import PLUGIN_VERSION

FORMAT = "are-leaderboard"
MAX_DATA_BYTES = 16 << 20
"""An attempt's events.jsonl larger than this is left out of its row's ``data`` (and said so)."""
MAX_EXPORT_FILE = 1 << 30
"""The largest file ``--check`` reads."""
MAX_EXPORT_TOTAL = 2 << 30
"""The most row bytes ``--check`` reads over all files (upstream's 17 configs of a full submission are far less)."""
MAX_EXPORT_FILES = 64
"""The most row files ``--check`` reads: 5 capabilities x 3 phases, the mini configs, and room."""
MAX_LINE = MAX_DATA_BYTES * 2
"""The longest JSON line ``--check`` reads: a row with the largest ``data`` the export writes, escaped."""
MAX_PROBLEMS = 1000
"""``--check`` stops at this many problems: a file of a million bad fields would hold a million
messages (18 times the file's size in memory)."""
SHOWN_PROBLEMS = 50
ROW_SUFFIXES = (".parquet", ".jsonl")
_SPLIT = re.compile(r"[A-Za-z0-9_-]{1,40}")


def rows_file(out: Path, config: str, split: str, suffix: str) -> Path:
    """``<config>/<split>-00000-of-00001<suffix>``, the layout the dataset card points at."""
    return store.inside(out, config, f"{split}-00000-of-00001{suffix}")


def _data(folder: store.RunFolder, relative: str) -> str | None:
    """The attempt's events.jsonl (a regular file inside the run folder, bounded), else None."""
    if not relative:
        return None
    try:
        path = store.inside(folder.path, *Path(relative).parts, "events.jsonl")
        return read_regular_file(path, max_bytes=MAX_DATA_BYTES, follow_symlinks=False).decode("utf-8", "replace")
    except (store.StoreError, JsonReadError, OSError, ValueError):
        return None


def _seconds(text: str | None) -> _dt.datetime | None:
    try:
        return _dt.datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def job_duration(records: Sequence[AttemptRecord]) -> float | None:
    """From the first attempt's start to the last one's end (upstream: the job's duration)."""
    starts = [t for r in records if (t := _seconds(r.started_at)) is not None]
    ends = [t for r in records if (t := _seconds(r.ended_at)) is not None]
    if not starts or not ends:
        return None
    try:
        return max(0.0, (max(ends) - min(starts)).total_seconds())
    except TypeError:  # naive and aware times mixed by a hand-edited record
        return None


def build(folder: store.RunFolder, with_data: bool) -> tuple[dict[str, list[dict[str, Any]]], dict[str, Any], int]:
    """The rows by config, computed_stats.json and how many planned scenario runs never ran."""
    config, _ = read_run_config(folder)
    shown_config = json.dumps({key: value for key, value in config.items() if key != "planned"}, sort_keys=True)
    stored = list(folder.records(strict=True))
    facts = run_facts.read(folder.path, config)
    planned = latest_plan(folder, config, stored)
    latest = {record.key: record for record in stored}
    rows: dict[str, list[dict[str, Any]]] = {}
    runs: list[leaderboard.Scored] = []
    for key in sorted(latest, key=natural_key):
        record = latest[key]
        data = _data(folder, record.folder) if with_data else None
        values = leaderboard.row(record, shown_config, data)
        rows.setdefault(values["config"], []).append(values)
        runs.append(leaderboard.Scored.of(values, record.wall_time_s))
    found = config.get("provenance")
    provenance: dict[str, Any] = found if isinstance(found, dict) else {}
    not_run = max(0, len(set(planned)) - len(latest))
    metadata = {
        "model": provenance.get("model") or config.get("model"),
        "model_provider": provenance.get("provider") or config.get("provider"),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "exporter": f"pytest-gaia2 {PLUGIN_VERSION}",
        "run_id": config.get("run_id"),
        "rates": leaderboard.RATES_NOTE,
        "phases": leaderboard.PHASES_NOTE,
        "planned": len(set(planned)),
        "not_run": not_run,
        "stopped": facts.stop.reason if facts.stop is not None and not_run else None,
    }
    return rows, leaderboard.stats_report(runs, metadata, job_duration(list(latest.values()))), not_run


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def _parquet(rows: Sequence[Mapping[str, Any]]) -> bytes:
    """The rows as one uncompressed parquet file with upstream's schema, so its final bytes can be
    checked for secrets like every other output (compressed pages would hide one)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    schema = pa.schema([(name, arrow[kinds[0]]) for name, kinds in leaderboard.ROW_FIELDS.items()])
    table = pa.Table.from_pylist([dict(r) for r in rows], schema=schema)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="NONE")
    return sink.getvalue()


def has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


# -- the check ------------------------------------------------------------------------------------


def _jsonl_rows(path: Path, relative: str) -> Iterator[tuple[str, Any]]:
    """(where, value) of each line, read a bounded line at a time; an unreadable line yields its problem."""
    with open_regular(path, max_bytes=MAX_EXPORT_FILE, follow_symlinks=False) as stream:
        number = 0
        while line := stream.readline(MAX_LINE + 1):
            number += 1
            where = f"{relative}:{number}"
            if len(line) > MAX_LINE:
                yield where, JsonLimitError(f"a line longer than {MAX_LINE} bytes")
                return
            if not line.strip():
                continue
            try:
                yield where, loads_bounded(line, max_bytes=MAX_LINE)
            except JsonLimitError as exc:
                yield where, exc


def _parquet_rows(path: Path, relative: str) -> Iterator[tuple[str, Any]]:
    """(where, row) of each parquet row, a batch at a time; nulls left out as upstream leaves them out."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        yield relative, JsonReadError("is parquet, and reading it needs pyarrow: pip install 'pytest-gaia2[export]'")
        return
    with open_regular(path, max_bytes=MAX_EXPORT_FILE, follow_symlinks=False) as stream:
        try:
            reader = pq.ParquetFile(stream)
            number = 0
            for batch in reader.iter_batches(batch_size=256):
                for values in batch.to_pylist():
                    number += 1
                    yield f"{relative}:{number}", {key: value for key, value in values.items() if value is not None}
        except Exception as exc:  # noqa: BLE001 - whatever pyarrow makes of a damaged file is one problem
            yield relative, JsonReadError(f"is not a readable parquet file ({type(exc).__name__}: {exc})")


def row_files(directory: Path, split: str | None = None) -> list[Path]:
    return sorted(
        p
        for p in directory.glob("*/*")
        if p.suffix in ROW_SUFFIXES and (split is None or p.name.startswith(f"{split}-"))
    )


def check(directory: Path, split: str | None = None) -> list[str]:
    """Every problem of an export folder, each naming its file (and row) and field; [] when it is fine."""
    stats_path = directory / leaderboard.STATS_FILE
    try:
        report = loads_bounded(
            read_regular_file(stats_path, max_bytes=MAX_EXPORT_FILE, follow_symlinks=False), max_bytes=MAX_EXPORT_FILE
        )
    except (JsonReadError, OSError) as exc:
        older = " (earlier exports wrote report.json: export again)" if (directory / "report.json").is_file() else ""
        return [f"{leaderboard.STATS_FILE}: cannot be read as JSON ({exc}){older}"]
    files = row_files(directory, split)
    if not files:
        return [f"{directory}: no <config>/<split>-*.parquet or .jsonl file"]
    if len(files) > MAX_EXPORT_FILES:
        return [f"{directory}: {len(files)} row files, more than the {MAX_EXPORT_FILES} a submission holds"]
    total = sum(p.lstat().st_size for p in files)
    if total > MAX_EXPORT_TOTAL:
        return [f"{directory}: {total} bytes of rows, more than the {MAX_EXPORT_TOTAL} allowed"]
    problems: list[str] = []
    runs: list[leaderboard.Scored] = []
    for path in files:
        relative = path.relative_to(directory).as_posix()
        reader = _parquet_rows if path.suffix == ".parquet" else _jsonl_rows
        try:
            for where, value in reader(path, relative):
                if len(problems) >= MAX_PROBLEMS:
                    return problems[:MAX_PROBLEMS]
                if isinstance(value, (JsonReadError, JsonLimitError)):
                    problems.append(f"{where}: {value}")
                    continue
                found = leaderboard.check_row(where, value, path.parent.name)
                problems += found
                if not found:
                    runs.append(leaderboard.Scored.of(value))
        except (JsonReadError, OSError) as exc:
            problems.append(f"{relative}: cannot be read ({exc})")
    if not problems:
        problems = leaderboard.check_report(report, runs)
    return problems[:MAX_PROBLEMS]


# -- the command ---------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", nargs="?", metavar="RUN", help="run folder (or an output folder: its latest run)")
    parser.add_argument("--format", choices=(FORMAT,), default=FORMAT, help="what to export to (default %(default)s)")
    parser.add_argument("--output", metavar="DIR", help="a new folder outside every run folder")
    parser.add_argument("--split", default="validation", help="the dataset split the rows are (default %(default)s)")
    parser.add_argument(
        "--rows",
        choices=("auto", "parquet", "jsonl"),
        default="auto",
        help="the row files: parquet as upstream uploads them (needs pyarrow: the 'export' extra) or JSON "
        "lines; auto: parquet when pyarrow is installed (default %(default)s)",
    )
    parser.add_argument("--with-data", action="store_true", help="put each attempt's events.jsonl in its row's data")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="export a run with planned scenarios that never ran (stopped, halted, interrupted); "
        "its rates are then over what ran",
    )
    parser.add_argument("--check", metavar="DIR", help="only check an export folder before upload")


def _print_check(directory: str) -> int:
    problems = check(Path(directory))
    for problem in problems[:SHOWN_PROBLEMS]:  # names and values from the folder: no escape reaches the terminal
        print(f"pytest-gaia2 export: {printable(problem)}")
    if len(problems) > SHOWN_PROBLEMS:
        stopped = f" (the check stops at {MAX_PROBLEMS})" if len(problems) >= MAX_PROBLEMS else ""
        print(f"pytest-gaia2 export: ... and {len(problems) - SHOWN_PROBLEMS} more{stopped}")
    print(f"pytest-gaia2 export: {printable(directory)}: " + ("NOT valid" if problems else "valid"))
    return 1 if problems else 0


def run(args: argparse.Namespace) -> int:
    if args.check:
        return _print_check(args.check)
    if not args.run or not args.output:
        raise CommandError("export needs RUN and --output DIR (or --check DIR)")
    if not _SPLIT.fullmatch(args.split):
        raise CommandError(f"--split {args.split!r}: letters, digits, _ and - only")
    parquet = args.rows == "parquet" or (args.rows == "auto" and has_pyarrow())
    if parquet and not has_pyarrow():
        raise CommandError("--rows parquet needs pyarrow: pip install 'pytest-gaia2[export]' (or --rows jsonl)")
    folder = store.RunFolder.existing(args.run)
    out = check_new_place("--output", Path(args.output), [folder.path.resolve()])
    rows, report, not_run = build(folder, args.with_data)
    planned = report["metadata"]["planned"]
    stopped = report["metadata"]["stopped"]
    if not_run and not args.allow_partial:
        raise CommandError(
            f"{folder.path}: {not_run} of {planned} planned scenario runs never ran "
            f"({printable(stopped) if stopped else 'the run stopped early'}): "
            "its rates would be over what happened to run; finish it with pytest --gaia2-resume, or export "
            "it as it is with --allow-partial"
        )
    rows = {config: redact.active().redact_obj(config_rows) for config, config_rows in rows.items()}
    encoded = {config: (_parquet if parquet else _jsonl)(config_rows) for config, config_rows in rows.items()}
    if any(redact.active().redact_bytes(data) != data for data in encoded.values()):
        raise CommandError("a secret survived in the rows' encoding; nothing was written")
    try:
        os.makedirs(out)
    except OSError as exc:
        raise CommandError(f"--output {args.output}: cannot create it: {exc.strerror or exc}") from None
    suffix = ".parquet" if parquet else ".jsonl"
    for config, data in encoded.items():
        create_file("--output", rows_file(out, config, args.split, suffix), data)
    create_file("--output", out / leaderboard.STATS_FILE, json.dumps(report, indent=2).encode("utf-8") + b"\n")
    card = leaderboard.dataset_card(sorted(rows), args.split, report["metadata"], report["statistics"])
    create_file("--output", out / leaderboard.CARD_FILE, card.encode("utf-8"))
    problems = check(out, args.split)
    if problems:
        raise CommandError(f"the export in {out} does not pass its own check: {problems[0]}")
    total = sum(len(config_rows) for config_rows in rows.values())
    print(
        f"pytest-gaia2 export: {out}: {total} rows ({suffix[1:]}) in {len(rows)} configs ({', '.join(sorted(rows))}), "
        f"{leaderboard.STATS_FILE}, {leaderboard.CARD_FILE}; checked: valid. {leaderboard.RATES_NOTE}"
    )
    print(f"pytest-gaia2 export: {leaderboard.PHASES_NOTE}")
    if not_run:
        print(
            f"pytest-gaia2 export: PARTIAL: {not_run} of {planned} planned scenario runs never ran and have "
            f"no row (computed_stats.json metadata.not_run){f'; stopped: {printable(stopped)}' if stopped else ''}"
        )
    return 0
