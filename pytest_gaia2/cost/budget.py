"""The run's spend and its limits: an append-only ledger in the run folder that every xdist
worker and every resumed session adds to (under a file lock), and the halt and cap decisions
read from it.

Each attempt is one line of ``spend.jsonl``, ``{"entry": "<key>#<attempt>", "usd": ..., "tokens": ...,
"at": ...}``, appended (and synced) before the attempt's result.json is written, whatever ended the
attempt. ``tokens`` (input and output, for ``--gaia2-token-halt``) is left out when the attempt
reported no usage; ``usd`` is null when its usage has no price (a local model that nobody prices).
Lines are never rewritten: an entry already in the ledger with the same amount is not added
again (a reused verdict, a retried write), so an attempt's spend counts once; an entry's spend is
the largest of its lines, so a line written ahead of it (``usd: 0``) cannot hide it. A damaged
line (a torn write, garbage) costs only itself: it is reported with the lines that were kept,
and the rest still count. The ledger is checked against the records it pays for (results.jsonl):
an entry below the cost its attempt's record carries is named, and the record's cost counts, so
an edited ledger cannot switch a budget off. An attempt whose usage was refused as out of range
is marked ``{"entry": ..., "unknown": true}``: a budget counts it at the priced attempts' mean.
The ledger of earlier versions, ``spend.json``, is still read (never rewritten) on resume.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
import os
import re
import stat
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_gaia2.cost.prices import ATTEMPT_USD_MAX
from pytest_gaia2.cost.usage import shown_names, usd_amount
from pytest_gaia2.store.folder import RunFolder, StoreError, numbered_lines
from pytest_gaia2.store.record import AttemptRecord, RecordError
from pytest_gaia2.store.safejson import JsonLimitError, JsonReadError, loads_bounded, read_regular_file

LEDGER_FILE = "spend.jsonl"
LEGACY_LEDGER_FILE = "spend.json"
"""The ledger's older form (one JSON object, rewritten on every add), still read so that a run
folder written in it resumes with its spend."""
LEDGER_MAX_BYTES = 64 * 2**20
"""Half a million attempts' lines; a larger ledger is not one this harness wrote."""
LINE_MAX_BYTES = 4096
ENTRY_MAX = 1024
"""Characters of an entry (``<split>/<id>[/run_<k>]#<attempt>``, each part at most 128)."""
LINES_SHOWN = 10
TOKENS_MAX = 10**12
"""Tokens of one attempt: more than a year of a fast model's output, so more is not a count."""
STOPS = ("budget", "errors")
"""How the reasons of the run's own limits begin (money, tokens, errors): they name a stop."""
NOT_INFRASTRUCTURE = ("invalid_scenario", "budget_cap", "scenario_cap", "interrupted")
"""Error categories --gaia2-max-errors does not count: a broken scenario file costs nothing and
starts first, the caps' stops and an interruption are not the setup's doing."""
_APPEND_FLAGS = (
    os.O_RDWR
    | os.O_APPEND
    | os.O_CREAT
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)
# An entry of the legacy ledger: "<key>#<attempt>": <amount>. Found by pattern, so a torn
# spend.json still yields every entry written before the tear.
_LEGACY_ENTRY = re.compile(rb'"([^"\\\n]{1,%d}#\d+)"\s*:\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)' % ENTRY_MAX)

log = logging.getLogger("pytest_gaia2")


def usd_text(amount: float) -> str:
    """``$11.04``; a non-zero amount under a cent with two significant digits (``$0.0060``),
    never ``$0.00``."""
    if amount == 0 or not math.isfinite(amount) or abs(amount) >= 0.01:
        return f"${amount:.2f}"
    return f"${amount:.{min(1 - math.floor(math.log10(abs(amount))), 12)}f}"


@dataclass(frozen=True)
class Budget:
    """The run's limits. ``--gaia2-budget-halt``: no new scenario starts once the spend reaches it;
    ``--gaia2-budget-cap``: running scenarios stop too once passed (USD, None when unset);
    ``--gaia2-token-halt``: no new start once the run's tokens reach it (a model priced at 0);
    ``--gaia2-max-errors``: no new start once this session had that many infrastructure errors."""

    halt: float | None = None
    cap: float | None = None
    token_halt: int | None = None
    max_errors: int | None = None

    @property
    def limited(self) -> bool:
        """Whether a limit is read from the ledger (money or tokens)."""
        return self.halt is not None or self.cap is not None or self.token_halt is not None

    def halted(self, spent: float, tokens: int = 0) -> str | None:
        """Why no new scenario may start, or None."""
        limit = min((value for value in (self.halt, self.cap) if value is not None), default=None)
        if limit is not None and spent >= limit:
            which = "halt" if limit == self.halt else "cap"
            return (
                f"budget: the run has spent {usd_text(spent)}, its {which} is {usd_text(limit)}; no new scenario starts"
            )
        if self.token_halt is not None and tokens >= self.token_halt:
            return (
                f"budget: the run has used {tokens:,} tokens, its token halt is {self.token_halt:,}; "
                "no new scenario starts"
            )
        return None

    def errors_reached(self, categories: list[str]) -> str | None:
        """Why no new scenario may start after this session's infrastructure errors (their
        categories, one per error), or None."""
        if self.max_errors is None or len(categories) < self.max_errors:
            return None
        counted = ", ".join(f"{name} {count}" for name, count in sorted(Counter(categories).items()))
        return (
            f"errors: {len(categories)} infrastructure error(s) in this session ({counted}) reached "
            f"--gaia2-max-errors {self.max_errors}; no new scenario starts"
        )

    def capped(self, spent: float) -> str | None:
        """Why a running scenario must stop, or None."""
        if self.cap is None or spent <= self.cap:
            return None
        return f"the run's spend {usd_text(spent)} passed its cap {usd_text(self.cap)}; stopped before a verdict"


@dataclass(frozen=True)
class LedgerRead:
    """What the ledger holds: each entry's spend, what was wrong with it, and whether every
    file of it could be read at all (``complete``; a damaged line does not make it incomplete)."""

    entries: dict[str, float]
    problems: tuple[str, ...] = ()
    complete: bool = True
    tokens: dict[str, int] = field(default_factory=dict)
    """Each entry's tokens, for the entries that reported usage."""
    unknown: tuple[str, ...] = ()
    """Entries of attempts whose cost is unknown (their usage was refused as out of range)."""

    @property
    def total(self) -> float:
        return round(math.fsum(self.entries.values()), 6)

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens.values())

    def stand_in(self) -> float | None:
        """What each attempt of unknown cost counts for a budget: the mean of the priced
        attempts (the probe's among them); None when there is none to stand in."""
        known = [usd for usd in self.entries.values() if usd > 0]
        return math.fsum(known) / len(known) if known else None

    def for_budget(self) -> float | None:
        """The spend a budget decides on: the priced total plus each unknown attempt at the
        stand-in; None when an attempt's cost is unknown and nothing stands in for it."""
        if not self.unknown:
            return self.total
        each = self.stand_in()
        return None if each is None else round(self.total + each * len(self.unknown), 6)


def _keep(entries: dict[str, float], entry: str, usd: float) -> None:
    """An entry's spend is the largest amount any line gives it."""
    entries[entry] = max(usd, entries.get(entry, usd))


def unknown_lines(data: bytes) -> set[str]:
    """The entries ``spend.jsonl`` marks as of unknown cost (``{"entry": ..., "unknown": true}``)."""
    found = set()
    for line in data.split(b"\n"):
        if b'"unknown"' not in line:
            continue
        try:
            value = loads_bounded(line, max_bytes=LINE_MAX_BYTES)
        except JsonLimitError:
            continue
        if not isinstance(value, dict) or value.get("unknown") is not True:
            continue
        entry = value.get("entry")
        if isinstance(entry, str) and 0 < len(entry) <= ENTRY_MAX:
            found.add(entry)
    return found


def parse_lines(data: bytes) -> tuple[dict[str, float], list[int]]:
    """The entries of ``spend.jsonl``'s bytes (each the largest of its lines) and the numbers
    of the damaged lines. Never raises: any bytes are some entries and some damage."""
    entries, _tokens, damaged = parse_all(data)
    return entries, damaged


def parse_all(data: bytes) -> tuple[dict[str, float], dict[str, int], list[int]]:
    """:func:`parse_lines` with each entry's tokens too."""
    entries: dict[str, float] = {}
    tokens: dict[str, int] = {}
    damaged: list[int] = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip() or b'"unknown": true' in line:
            continue
        parsed = _entry(line)
        if parsed is None:
            damaged.append(number)
            continue
        entry, usd, used = parsed
        if usd is not None:
            _keep(entries, entry, usd)
        if used is not None:
            tokens[entry] = max(used, tokens.get(entry, used))
    return entries, tokens, damaged


def _entry(line: bytes) -> tuple[str, float | None, int | None] | None:
    """A line's entry, its USD and its tokens; None for a damaged line (neither amount valid)."""
    try:
        value = loads_bounded(line, max_bytes=LINE_MAX_BYTES)
    except JsonLimitError:
        return None
    if not isinstance(value, dict):
        return None
    entry, usd, used = value.get("entry"), usd_amount(value.get("usd"), ATTEMPT_USD_MAX), value.get("tokens")
    if not isinstance(used, int) or isinstance(used, bool) or not 0 <= used <= TOKENS_MAX:
        used = None
    if value.get("usd") is not None and usd is None:
        return None  # an amount that is no amount: the line is not to be trusted
    if not isinstance(entry, str) or not 0 < len(entry) <= ENTRY_MAX or (usd is None and used is None):
        return None
    return entry, usd, used


def parse_legacy(data: bytes) -> tuple[dict[str, float], bool]:
    """The entries of an earlier version's ``spend.json`` and whether it was whole. A torn or
    garbled file still gives every entry that can be recognised. Never raises."""
    entries: dict[str, float] = {}
    for key, amount in _LEGACY_ENTRY.findall(data):
        usd = usd_amount(float(amount), ATTEMPT_USD_MAX)
        if usd is not None:
            _keep(entries, key.decode("utf-8", "replace"), usd)
    try:
        whole = isinstance(loads_bounded(data, max_bytes=LEDGER_MAX_BYTES), dict)
    except JsonLimitError:
        whole = False
    return entries, whole


class Ledger:
    """Spend per attempt, in ``<run folder>/spend.jsonl`` (and an earlier version's ``spend.json``)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / LEDGER_FILE
        self.legacy = folder / LEGACY_LEDGER_FILE

    @property
    def present(self) -> bool:
        return self.path.exists() or self.legacy.exists()

    def read(self, records: bool = True) -> LedgerRead:
        """Every entry that can be read, bounded in size, raised to the cost its record carries
        (``records`` False: the ledger's own lines alone); never raises."""
        entries: dict[str, float] = {}
        tokens: dict[str, int] = {}
        problems: list[str] = []
        complete = True
        unknown: set[str] = set()
        for path, parse in ((self.legacy, self._legacy_entries), (self.path, self._line_entries)):
            if not path.exists() and not path.is_symlink():
                continue
            try:
                # The store writes no link: one here points outside the run folder, and is not read.
                data = read_regular_file(path, max_bytes=LEDGER_MAX_BYTES, follow_symlinks=False)
            except JsonReadError as exc:
                problems.append(f"{path}: {exc}; the spend it holds is not counted")
                complete = False
                continue
            found, used, problem = parse(path, data)
            unknown |= unknown_lines(data) if path == self.path else set()
            for entry, usd in found.items():
                _keep(entries, entry, usd)
            for entry, count in used.items():
                tokens[entry] = max(count, tokens.get(entry, count))
            problems += [problem] if problem else []
        problem = self._below_records(entries) if records else None
        problems += [problem] if problem else []
        return LedgerRead(entries, tuple(problems), complete, tokens, tuple(sorted(unknown - entries.keys())))

    def _below_records(self, entries: dict[str, float]) -> str | None:
        """Raise each entry to the cost its attempt's record carries (results.jsonl, read
        leniently); what was below, in words, or None."""
        owed: dict[str, float] = {}
        for record in _every_record(RunFolder(self.folder).results):
            if record.cost_usd is not None and record.cost_usd > 0:
                _keep(owed, entry_of(record.key, record.attempt), record.cost_usd)
        below = {entry: usd for entry, usd in owed.items() if entries.get(entry, 0.0) < usd - 1e-9}
        if not below:
            return None
        held = math.fsum(entries.get(entry, 0.0) for entry in below)
        entries.update(below)
        names = shown_names(sorted(below), LINES_SHOWN)
        return (
            f"{self.path}: {len(below)} entr{'y' if len(below) == 1 else 'ies'} below the cost their records carry "
            f"(ledger {usd_text(held)}, records {usd_text(math.fsum(below.values()))}): the records' cost counts "
            f"({names})"
        )

    @staticmethod
    def _line_entries(path: Path, data: bytes) -> tuple[dict[str, float], dict[str, int], str | None]:
        entries, tokens, damaged = parse_all(data)
        if not damaged:
            return entries, tokens, None
        lines = shown_names([str(number) for number in damaged], LINES_SHOWN)
        return (
            entries,
            tokens,
            (
                f"{path}: damaged line(s) {lines} skipped; kept {len(entries)} entries (${math.fsum(entries.values()):.2f})"
            ),
        )

    @staticmethod
    def _legacy_entries(path: Path, data: bytes) -> tuple[dict[str, float], dict[str, int], str | None]:
        entries, whole = parse_legacy(data)
        if whole:
            return entries, {}, None
        return (
            entries,
            {},
            (
                f"{path}: damaged (not whole JSON); recovered {len(entries)} entries (${math.fsum(entries.values()):.2f})"
            ),
        )

    def total(self) -> float:
        return self.read().total

    def add_unknown(self, entry: str) -> None:
        """Mark an attempt whose cost is unknown (its usage was refused), once; a budget counts
        it at :meth:`LedgerRead.stand_in`. Raises :class:`StoreError` as :meth:`add` does."""
        from filelock import FileLock

        if not 0 < len(entry) <= ENTRY_MAX:
            raise StoreError(f"{self.path}: {entry!r} is not a ledger entry")
        with FileLock(str(self.path) + ".lock"):
            if entry not in self.read(records=False).unknown:
                line = json.dumps({"entry": entry, "unknown": True, "at": _now()})
                _append_line(self.path, line.encode("utf-8"))

    def add(self, entry: str, usd: float | None, tokens: int | None = None) -> float:
        """Append an attempt's spend (and tokens) unless its entry is already there with that
        amount; the new total.

        Raises :class:`StoreError` naming the file when it cannot be written, or when an
        amount that is not a finite number of USD up to ``ATTEMPT_USD_MAX`` is given (None only
        with tokens: usage without a price), or tokens that are no count.
        """
        from filelock import FileLock

        amount = usd_amount(usd, ATTEMPT_USD_MAX) if usd is not None else None
        counted = isinstance(tokens, int) and not isinstance(tokens, bool) and 0 <= tokens <= TOKENS_MAX
        if (
            (usd is not None and amount is None)
            or (amount is None and tokens is None)
            or not 0 < len(entry) <= ENTRY_MAX
        ):
            raise StoreError(f"{self.path}: {entry!r}: {usd!r} is not an amount of USD for the ledger")
        if tokens is not None and not counted:
            raise StoreError(f"{self.path}: {entry!r}: {tokens!r} is not a count of tokens for the ledger")
        with FileLock(str(self.path) + ".lock"):
            held = self.read(records=False)
            same_usd = held.entries.get(entry) == (None if amount is None else round(amount, 6))
            if not (same_usd and held.tokens.get(entry) == tokens):
                fields: dict[str, object] = {"entry": entry, "usd": None if amount is None else round(amount, 6)}
                if tokens is not None:
                    fields["tokens"] = tokens
                line = json.dumps({**fields, "at": _now()}, allow_nan=False)
                _append_line(self.path, line.encode("utf-8"))
            return self.read().total


def _every_record(results: Path) -> Iterator[AttemptRecord]:
    """Every valid line of results.jsonl, each attempt's (a retried scenario has a line per
    attempt until the run's end tidies the file); a bad line or file gives nothing."""
    if not os.path.lexists(results):
        return
    try:
        for _, row in numbered_lines(results):
            try:
                if isinstance(row, dict):
                    yield AttemptRecord.from_json(row)
            except RecordError:
                continue
    except JsonReadError:
        return


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _append_line(path: Path, line: bytes) -> None:
    """``line`` as the file's new last line, synced; after a torn last line, on a line of its own.

    Only a regular file is appended to: never through a symbolic link (out of the run folder),
    never into a FIFO or device.
    """
    try:
        fd = os.open(path, _APPEND_FLAGS, 0o644)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise StoreError(f"cannot append to {path}: not a regular file")
        with os.fdopen(fd, "a+b") as handle:
            size = handle.seek(0, os.SEEK_END)
            torn = False
            if size:
                handle.seek(size - 1)
                torn = handle.read(1) != b"\n"
            handle.write((b"\n" if torn else b"") + line + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as exc:
        raise StoreError(f"cannot append to {path}: {exc.strerror or exc}") from None


def record_spend(
    run_folder: Path, key: str, attempt: int, usd: float | None, tokens: int | None = None, refused: bool = False
) -> None:
    """The attempt's ledger line, written before its result.json whatever ended it: its priced
    cost and the tokens it reported (with neither there is nothing to add), or (``refused``: its
    usage was out of range) a mark that its cost is unknown, which a budget counts at the priced
    attempts' mean. A ledger that cannot be written is a warning, never a lost record."""
    if usd is None and tokens is None and not refused:
        return
    try:
        if refused:
            Ledger(run_folder).add_unknown(entry_of(key, attempt))
        if usd is not None or tokens is not None:
            Ledger(run_folder).add(entry_of(key, attempt), usd, tokens)
    except StoreError as exc:
        log.warning("gaia2: warning: spend of %s not in the ledger: %s", entry_of(key, attempt), exc)


def entry_of(key: str, attempt: int) -> str:
    """One ledger entry per attempt of a scenario (and repeat)."""
    return f"{key}#{attempt}"
