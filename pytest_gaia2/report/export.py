"""An export of a run as Meta's Gaia2 leaderboard takes it, and the check of any export folder.

The rows, ``computed_stats.json`` and the dataset card are :mod:`leaderboard`'s; this module builds
them from a run folder, encodes the rows (parquet as upstream uploads them, or JSON lines) and
reads an export folder back, bounded, to check every row's fields and types and every statistic
recomputed from the rows (``pytest-gaia2 export`` and ``export --check``).
"""

from __future__ import annotations

import datetime as _dt
import io
import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_gaia2.report import leaderboard, run_facts
from pytest_gaia2.report.rows import natural_key
from pytest_gaia2.report.runs import latest_plan, read_run_config
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.record import AttemptRecord
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
ROW_SUFFIXES = (".parquet", ".jsonl")


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


def encode_jsonl(rows: Sequence[Mapping[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def encode_parquet(rows: Sequence[Mapping[str, Any]]) -> bytes:
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
