"""One run folder from several pieces (shards, resumed pieces, runs on other machines), for ``pytest-gaia2 merge``.

The pieces are only read: each chosen scenario folder is copied (never moved) into a hidden
folder next to OUT, which becomes OUT by one rename once every file is written, so a failed merge
(or a signal) leaves no half-made OUT. One verdict per key: a judged verdict wins over an error,
and two different judged verdicts for the same key stop the merge unless a preferred piece says
which wins. Every piece's run_config (its provenance) is kept in OUT's run_config.json under
``merged_from``. The merged folder is built under its own name, so every page it writes
(index.html) carries OUT's name.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import re
import shutil
import signal
import stat
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from pytest_gaia2.plan import selection
from pytest_gaia2.report import settings_diff
from pytest_gaia2.report.book import ResultBook
from pytest_gaia2.report.gate import Gate
from pytest_gaia2.report.rows import natural_key, planned_keys
from pytest_gaia2.report.runs import latest_plan, read_run_config
from pytest_gaia2.report.trace_page import write_index
from pytest_gaia2.run import interrupts
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError, enclosing_run
from pytest_gaia2.store.record import AttemptRecord, is_judged

_SHARD = re.compile(r"([1-9][0-9]{0,5})/([1-9][0-9]{0,5})")
SHARDS_SHOWN = 20
"""Missing shards named in the refusal; a forged ``1/999999`` is not a megabyte of error."""
HOW_IT_RAN = ("provenance.", "settings.")
"""Settings merge holds the pieces to (what ran, the selection, may differ between pieces)."""


@dataclass(frozen=True)
class Piece:
    """One run folder being merged: its run_config, records by key, and what it planned (its
    latest session's plan, as its pages count it: a resumed piece planned more than run_config.json says)."""

    index: int
    folder: store.RunFolder
    config: dict[str, Any]
    records: dict[str, AttemptRecord]
    planned: list[str]

    @property
    def name(self) -> str:
        return str(self.folder.path)


def load_piece(index: int, path: str) -> Piece:
    folder = store.RunFolder(store.RunFolder.existing(path).path.resolve())
    config, _ = read_run_config(folder)
    records = list(folder.records(strict=True))
    planned = latest_plan(folder, config, records)
    return Piece(index, folder, config, {record.key: record for record in records}, planned)


def check_places(out: Path, pieces: Sequence[Piece]) -> None:
    """OUT is new or an empty folder (so no piece is OUT or inside it), OUT is in no piece, no piece twice."""
    if os.path.lexists(out) and (out.is_symlink() or not out.is_dir() or any(out.iterdir())):
        raise CommandError(f"OUT {out} exists and is not an empty folder; merge never writes into an existing run")
    if (run := enclosing_run(out.parent)) is not None:
        raise CommandError(f"OUT {out} is inside run folder {run}; merge never writes into a run folder")
    seen: dict[Path, int] = {}
    for piece in pieces:
        path = piece.folder.path
        if out.is_relative_to(path):
            raise CommandError(f"OUT {out} is inside RUN {path}; merge never writes into a run folder")
        if path in seen:
            raise CommandError(f"RUN {path} is given twice")
        seen[path] = piece.index


def missing_shards(pieces: Sequence[Piece]) -> str | None:
    """What is wrong with the pieces as shards of one plan (a shard missing, plans of different
    sizes), or None when no piece is a shard or every shard is there."""
    found: dict[int, set[int]] = {}
    for piece in pieces:
        block = piece.config.get("provenance")
        shard = block.get("shard") if isinstance(block, dict) else None
        match = _SHARD.fullmatch(shard) if isinstance(shard, str) else None
        if match and int(match[1]) <= int(match[2]):
            found.setdefault(int(match[2]), set()).add(int(match[1]))
    if len(found) > 1:
        return (
            "the pieces are shards of plans of different sizes (" + ", ".join(f"N = {n}" for n in sorted(found)) + ")"
        )
    for count, present in found.items():
        missing = sorted(set(range(1, count + 1)) - present)
        if missing:
            shown = ", ".join(f"{k}/{count}" for k in missing[:SHARDS_SHOWN])
            more = f" and {len(missing) - SHARDS_SHOWN} more" if len(missing) > SHARDS_SHOWN else ""
            return f"missing shard{'s' if len(missing) > 1 else ''} {shown}{more}"
    return None


def mixed_settings(pieces: Sequence[Piece]) -> list[str]:
    """Each setting of how the pieces ran (provenance and settings of run_config.json) that differs."""
    rows = settings_diff.differences(
        [(piece.name, piece.config) for piece in pieces], settings_diff.IGNORED | settings_diff.PIECE_KEYS
    )
    return settings_diff.lines([(name, values) for name, values in rows if name.startswith(HOW_IT_RAN)])


def _newest(candidates: Sequence[tuple[Piece, AttemptRecord]]) -> tuple[Piece, AttemptRecord]:
    """The record that ended last; on a tie (or no times), the piece named last."""
    return max(candidates, key=lambda pair: (pair[1].ended_at or "", pair[0].index))


def choose(
    pieces: Sequence[Piece], prefer: Piece | str | None
) -> tuple[dict[str, tuple[Piece, AttemptRecord]], list[str]]:
    """One (piece, record) per key, and a note for each key that had to be decided.

    A judged verdict beats an error; among records of equal standing ``prefer``'s piece wins, else
    the newest. Two different judged verdicts need ``prefer``: without it the merge is refused.
    """
    by_key: dict[str, list[tuple[Piece, AttemptRecord]]] = {}
    for piece in pieces:
        for key, record in piece.records.items():
            by_key.setdefault(key, []).append((piece, record))
    chosen: dict[str, tuple[Piece, AttemptRecord]] = {}
    notes: list[str] = []
    for key in sorted(by_key, key=natural_key):
        candidates = by_key[key]
        judged = [pair for pair in candidates if is_judged(pair[1])]
        pool = judged or candidates
        verdicts = sorted({f"{pair[1].outcome} in {pair[0].name}" for pair in judged})
        conflict = len({pair[1].success for pair in judged}) > 1
        if conflict and prefer is None:
            raise CommandError(f"{key}: {' but '.join(verdicts)}; pass --prefer RUN or --prefer newest to choose")
        preferred = [pair for pair in pool if pair[0] is prefer]
        chosen[key] = preferred[0] if preferred else _newest(pool)
        winner = chosen[key][0].name
        if conflict:
            notes.append(f"{key}: {' and '.join(verdicts)}: kept {chosen[key][1].outcome} from {winner} (--prefer)")
        elif judged and len(judged) < len(candidates):
            notes.append(
                f"{key}: the verdict from {winner} wins over the error in "
                + ", ".join(p.name for p, r in candidates if not is_judged(r))
            )
    return chosen, notes


def _common_provenance(pieces: Sequence[Piece]) -> dict[str, Any]:
    """The provenance every piece shares (a resumed merged run is checked against it)."""
    blocks: list[dict[str, Any]] = [
        block if isinstance(block := piece.config.get("provenance"), dict) else {} for piece in pieces
    ]
    return {
        key: value
        for key, value in blocks[0].items()
        if key not in ("run_id", "session_id") and all(block.get(key) == value for block in blocks[1:])
    }


def run_config(
    pieces: Sequence[Piece], planned: list[str], taken: Counter[int], run_id: str, command: str
) -> dict[str, Any]:
    """The first piece's run_config (gaia2-runner's keys), with the merged plan and every piece's own."""
    starts = [str(piece.config["started_at"]) for piece in pieces if piece.config.get("started_at")]
    return {
        **pieces[0].config,
        "command": command,
        "started_at": min(starts) if starts else None,
        "merged_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "run_id": run_id,
        "session_id": None,
        "num_scenarios": len({key.split("/run_")[0] for key in planned}),
        "planned": planned,
        "provenance": {**_common_provenance(pieces), "run_id": run_id},
        "merged_from": [
            {
                "path": piece.name,
                "keys_taken": taken[piece.index],
                "planned_count": len(piece.planned),
                "run_config": {key: value for key, value in piece.config.items() if key != "planned"},
            }
            for piece in pieces
        ],
    }


def _plain(path: str) -> bool:
    """A folder or regular file itself, not a link to one."""
    mode = os.lstat(path).st_mode
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode)


def _copy_scenarios(target: store.RunFolder, chosen: dict[str, tuple[Piece, AttemptRecord]]) -> list[str]:
    """Each chosen key's scenario folder (every attempt in it) copied to the same place: folders and
    regular files only. Links (which may point anywhere on this host), FIFOs, sockets and devices
    are not copied; their paths are returned."""
    skipped: list[str] = []

    def special(folder: str, names: list[str]) -> set[str]:
        left_out = {name for name in names if not _plain(os.path.join(folder, name))}
        skipped.extend(os.path.join(folder, name) for name in sorted(left_out))
        return left_out

    for piece, record in chosen.values():
        source = piece.folder.scenario_dir(record.split, record.scenario_id, record.repeat, record.repeats)
        if source.is_dir() and not source.is_symlink():
            destination = target.scenario_dir(record.split, record.scenario_id, record.repeat, record.repeats)
            try:
                shutil.copytree(source, destination, ignore=special)
            except (OSError, shutil.Error) as exc:
                raise store.StoreError(f"cannot copy {source} to {destination}: {exc}") from None
    return skipped


def _session_lines(pieces: Sequence[Piece]) -> str:
    return "".join(
        json.dumps({**line, "piece": piece.name}, ensure_ascii=False, default=str) + "\n"
        for piece in pieces
        for line in store.read_jsonl(piece.folder.file(store.SESSIONS_FILE))
    )


class Stopped(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived during the merge: the half-made folder is removed, the exit status is 128+signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped(signum)


@contextlib.contextmanager
def stoppable() -> Iterator[None]:
    """SIGINT and SIGTERM raise :class:`Stopped` inside the block, so its clean-up runs."""
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def write(
    out: Path, pieces: Sequence[Piece], chosen: dict[str, tuple[Piece, AttemptRecord]], command: str
) -> tuple[ResultBook, list[str]]:
    """Build the merged folder beside OUT, then rename it to OUT; on failure or a signal nothing
    is left. Returns the book and the paths of the links and special files not copied."""
    planned = list(dict.fromkeys([key for piece in pieces for key in piece.planned] + list(chosen)))
    taken = Counter(piece.index for piece, _ in chosen.values())
    run_id = uuid.uuid4().hex
    holder = out.parent / f".{out.name}.merging-{os.getpid()}"
    building = holder / out.name  # OUT's own name, which the pages it writes show
    target = store.RunFolder(building)
    book = ResultBook(Gate(), allow_incomplete=True)
    book.planned, book.records = planned, {key: record for key, (_, record) in chosen.items()}
    made = False
    try:
        with interrupts.held():  # a signal waits until the folder is known to be this merge's own
            try:
                out.parent.mkdir(parents=True, exist_ok=True)
                holder.mkdir()
                building.mkdir()
            except OSError as exc:
                raise store.StoreError(f"cannot create {building}: {exc.strerror or exc}") from None
            made = True
        skipped = _copy_scenarios(target, chosen)
        store.write_json(target.file(store.RUN_CONFIG_FILE), run_config(pieces, planned, taken, run_id, command))
        store.write_text(target.file(store.SESSIONS_FILE), _session_lines(pieces))
        selection.write_manifest(
            target.file(store.MANIFEST_FILE), {(split, scenario_id) for split, scenario_id, _ in planned_keys(planned)}
        )
        book.folder = target
        book.write(
            {
                "run_id": run_id,
                "session_id": None,
                "plugin_version": pieces[0].config.get("plugin_version"),
                "merged_from": [piece.name for piece in pieces],
            }
        )
        write_index(target.path)
        try:
            os.rename(building, out)  # onto a missing or empty OUT only
        except OSError as exc:
            raise store.StoreError(f"cannot rename {building} to OUT {out}: {exc.strerror or exc}") from None
        holder.rmdir()
    except BaseException:
        if made:  # only this merge's own folder: one of the same name it could not create is not its own
            with interrupts.held(), contextlib.suppress(OSError):  # a second signal waits for the clean-up
                shutil.rmtree(holder)
        raise
    book.folder = store.RunFolder(out)
    return book, skipped
