"""``pytest-gaia2 merge OUT RUN [RUN ...]``: one run folder from several pieces (shards, resumed
pieces, runs on other machines), with one results.jsonl, summary and manifest.

The pieces are only read: each chosen scenario folder is copied (never moved) into a hidden
folder next to OUT, which becomes OUT by one rename once every file is written, so a failed merge
leaves no half-made OUT. One verdict per key: a judged verdict wins over an error, and two
different judged verdicts for the same key stop the merge unless ``--prefer`` says which wins.
Every piece's run_config (its provenance) is kept in OUT's run_config.json under ``merged_from``.

A merge is refused, naming what is wrong, when the pieces are shards of a plan and some shard is
missing (``--allow-partial`` merges them anyway) or when they were run with different settings
(``--allow-mixed``): either would publish a run that no single command made. The merged folder is
built under its own name, so every page it writes (index.html) carries OUT's name.
:mod:`pytest_gaia2.run.merge` merges; this module parses, refuses and prints.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from pytest_gaia2.report.comparison import COMPARED_FIELDS, provenance_warnings
from pytest_gaia2.run.merge import (
    Piece,
    Stopped,
    check_places,
    choose,
    load_piece,
    missing_shards,
    mixed_settings,
    stoppable,
    write,
)
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError

NEWEST = "newest"


# -- the command ---------------------------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", metavar="OUT", help="the merged run folder to create (must not exist, or be empty)")
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run folders to merge (or output folders: their latest)")
    parser.add_argument(
        "--prefer",
        metavar="RUN|newest",
        help="which verdict wins when a key was judged differently in two pieces: that RUN's, "
        "or the newest (by end time); without it such a merge is refused",
    )
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="merge shards of a plan even when some shard is missing (the merged run is then incomplete)",
    )
    parser.add_argument(
        "--allow-mixed",
        action="store_true",
        help="merge pieces run with different settings (image, model, judge, env, limits...); they are listed",
    )


def _preferred(value: str | None, pieces: Sequence[Piece]) -> Piece | str | None:
    if value is None or value == NEWEST:
        return value
    try:
        path = store.RunFolder.existing(value).path.resolve()
    except store.StoreError:
        path = Path(value).resolve()
    for piece in pieces:
        if piece.folder.path == path:
            return piece
    raise CommandError(f"--prefer {value}: not one of the RUN folders being merged (or 'newest')")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out).resolve()
    pieces = [load_piece(index, path) for index, path in enumerate(args.runs)]
    check_places(out, pieces)
    gap = missing_shards(pieces)
    if gap and not args.allow_partial:
        raise CommandError(f"{gap}: the merged run would not be the whole plan; pass --allow-partial to merge anyway")
    mixed = mixed_settings(pieces)
    if mixed and not args.allow_mixed:
        raise CommandError(
            f"the pieces were run with different settings ({len(mixed)}): {' | '.join(mixed[:5])}"
            + (f" | and {len(mixed) - 5} more" if len(mixed) > 5 else "")
            + "; pass --allow-mixed to merge anyway"
        )
    chosen, notes = choose(pieces, _preferred(args.prefer, pieces))
    warnings = provenance_warnings([(piece.name, piece.records) for piece in pieces])
    busy = [piece.name for piece in pieces if (piece.folder.path / store.HOLDER_FILE).exists()]
    command = shlex.join(
        [
            "pytest-gaia2",
            "merge",
            args.out,
            *args.runs,
            *(["--prefer", args.prefer] if args.prefer else []),
            *(["--allow-partial"] if args.allow_partial else []),
            *(["--allow-mixed"] if args.allow_mixed else []),
        ]
    )
    try:
        with stoppable():
            book, skipped = write(out, pieces, chosen, command)
    except Stopped as stop:
        print(f"gaia2: merge stopped by signal {stop.signum}; OUT {out} was not made", file=sys.stderr)
        return 128 + stop.signum
    print(f"gaia2: merged {len(pieces)} run folders into {out}: {len(chosen)} results, {len(book.planned)} planned")
    for line in [
        *(f"warning: {w} (compared: {', '.join(COMPARED_FIELDS)})" for w in warnings),
        *(
            f"warning: {name} is in use by a run (or its run crashed): its unfinished scenarios are not run"
            for name in busy
        ),
        *([f"warning: {gap} (--allow-partial)"] if gap else []),
        *(f"warning: setting differs (--allow-mixed): {line}" for line in mixed),
        *notes,
        *(f"not copied (a link or special file, not a regular file): {path}" for path in skipped),
    ]:
        print(f"gaia2: {line}")
    print("\n".join(book.lines()))
    return 0
