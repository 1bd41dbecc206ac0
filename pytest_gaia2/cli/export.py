"""``pytest-gaia2 export RUN --format are-leaderboard --output DIR``, and ``export --check DIR``.

Writes what Meta's Gaia2 leaderboard takes from the legacy ``are-benchmark gaia2-run
--hf_upload`` path (:mod:`leaderboard`), laid out as that path pushes it to a dataset repository:
``DIR/<config>/<split>-00000-of-00001.parquet`` (JSON lines, ``.jsonl``, when pyarrow is missing
or asked for), one config per Gaia2 split, one row per scenario run; ``DIR/computed_stats.json``;
and ``DIR/README.md``, the dataset card whose front matter declares the configs. Then it checks
what it wrote with the validator that ``--check`` runs on any export before upload (upstream's
own included): every row's fields and types, and every statistic recomputed from the rows.
:mod:`pytest_gaia2.report.export` builds and checks; this module parses, writes the new files
and prints.

A run with planned scenarios that never ran (a Ctrl-C, a halt, a decided stop) is refused unless
``--allow-partial``: its rates would be over what happened to run. A partial export says how many
are missing, on the terminal and in ``computed_stats.json``'s metadata.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

from pytest_gaia2.report import leaderboard
from pytest_gaia2.report.export import (
    FORMAT,
    MAX_PROBLEMS,
    build,
    check,
    encode_jsonl,
    encode_parquet,
    has_pyarrow,
    rows_file,
)
from pytest_gaia2.store import folder as store
from pytest_gaia2.store import redact
from pytest_gaia2.store.console import CommandError, check_new_place, create_file
from pytest_gaia2.store.redact import printable

SHOWN_PROBLEMS = 50
_SPLIT = re.compile(r"[A-Za-z0-9_-]{1,40}")


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
    encoded = {
        config: (encode_parquet if parquet else encode_jsonl)(config_rows) for config, config_rows in rows.items()
    }
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
