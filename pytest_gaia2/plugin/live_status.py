"""The live status of a run on the controller: ``progress.json`` rewritten on every change,
and on the terminal an updating status (rich) on a TTY, or a plain line every
``--gaia2-progress-interval`` seconds otherwise (CI logs); nothing extra with ``-q``.

A thread refreshes it, so a scenario on its third turn for twenty minutes still shows. It
writes to its own copy of the terminal's file descriptor: in a serial run pytest captures
file descriptor 1 while a test runs, and the status must reach the terminal, not the
test's captured output. On a TTY pytest's own output is routed through rich, so its lines
print above the status instead of through it (pytest's terminal writer is reached only
through :mod:`.private_api`).
"""

from __future__ import annotations

import io
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

import pytest

from pytest_gaia2.cost.budget import Ledger
from pytest_gaia2.plugin import private_api
from pytest_gaia2.report import progress
from pytest_gaia2.run import pacer
from pytest_gaia2.store import folder as store
from pytest_gaia2.store import phases

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live

    from pytest_gaia2.report.book import ResultBook

Mode = Literal["tty", "plain", "off"]
TICK = 1.0
"""Seconds between refreshes of the status and checks for a changed progress.json."""
REWRITE_AT_LEAST = 10.0
"""progress.json is rewritten this often even when nothing changed, so its ETA stays fresh."""
RUNNING_ROWS = 8
"""Running scenarios shown under the status line on a TTY."""

log = logging.getLogger("pytest_gaia2")


class _LiveLines(io.TextIOBase):
    """pytest's terminal output, printed above rich's live status one whole line at a time."""

    def __init__(self, console: Console, original: TextIO) -> None:
        self.console, self.original, self.buffer_text = console, original, ""

    def write(self, text: str) -> int:
        lines = (self.buffer_text + text).split("\n")
        self.buffer_text = lines.pop()
        for line in lines:
            self._print(line)
        return len(text)

    def _print(self, text: str) -> None:
        """As pytest wrote it: its colours kept, nothing read as rich markup."""
        from rich.text import Text

        self.console.print(Text.from_ansi(text), soft_wrap=True)

    def flush(self) -> None:
        """Partial lines (pytest's progress dots) wait for their line's end: the status holds the
        bottom of the screen, so nothing may end a line early."""

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.original.fileno()


def _own_copy(file: TextIO) -> TextIO:
    """A new file object on a duplicate of ``file``'s descriptor (unaffected by fd capture)."""
    try:
        return open(
            os.dup(file.fileno()),
            "w",
            encoding=getattr(file, "encoding", None) or "utf-8",
            errors="replace",
            buffering=1,
        )
    except (AttributeError, OSError, io.UnsupportedOperation, ValueError):
        return file  # pytester's in-process runs: a file without a descriptor


class LiveStatus:
    """Registered as a plugin on the controller once the run folder exists."""

    def __init__(self, folder: Path, book: ResultBook, terminal: Any, *, mode: Mode, interval: float) -> None:
        self.folder, self.book, self.terminal = folder, book, terminal
        self.mode, self.interval = mode, interval
        self.started = time.time()
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.out: TextIO | None = None
        self.original: Any = None
        self.live: Live | None = None
        self.lines: _LiveLines | None = None
        self.written: tuple[Any, ...] | None = None
        self.written_at = 0.0
        self.printed_at = time.monotonic()

    # -- lifetime --------------------------------------------------------------------------

    def start(self) -> None:
        file = private_api.terminal_file(self.terminal)
        if self.mode != "off" and file is not None:
            self.out = _own_copy(file)
            if self.mode == "tty":
                self._start_live(file)
        self.refresh()
        self.thread = threading.Thread(target=self._loop, name="gaia2-live-status", daemon=True)
        self.thread.start()

    def _start_live(self, file: TextIO) -> None:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.out, force_terminal=True)
        self.live = Live(
            console=console, auto_refresh=False, transient=True, redirect_stdout=False, redirect_stderr=False
        )
        self.live.start()
        self.lines = _LiveLines(console, file)
        self.original = file
        private_api.route_terminal(self.terminal, self.lines)

    def stop(self) -> None:
        """The last progress.json (finished) and the terminal as pytest left it."""
        if self.stopping.is_set():
            return
        self.stopping.set()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=5)
        self.refresh(finished=True)
        if self.live is not None and self.lines is not None:
            self.live.stop()  # clears the status: what pytest writes next starts where it stood
            private_api.route_terminal(self.terminal, self.original)
            self.original.write(self.lines.buffer_text)
        if self.out is not None and self.out is not private_api.terminal_file(self.terminal):
            try:
                self.out.close()
            except (OSError, ValueError):
                pass

    # -- hooks -----------------------------------------------------------------------------

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.wake.set()

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self) -> None:
        self.stop()

    def pytest_unconfigure(self) -> None:
        self.stop()

    # -- the refresh -----------------------------------------------------------------------

    def _loop(self) -> None:
        while not self.stopping.is_set():
            self.wake.wait(TICK)
            self.wake.clear()
            if self.stopping.is_set():
                return
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 - a view must never end the run
                log.debug("gaia2: live status refresh failed", exc_info=True)

    def snapshot(self, finished: bool = False) -> progress.Snapshot:
        records = list(self.book.records.values())
        budget = self.book.budget
        limit = min((value for value in (budget.halt, budget.cap) if value is not None), default=None)
        if limit is not None:
            spent: float | None = Ledger(self.folder).total()
        else:
            costs = [record.cost_usd for record in records if record.cost_usd is not None]
            spent = sum(costs) if costs else None
        return progress.snapshot(
            records,
            self.book.planned,
            phases.running(self.folder),
            started=self.started,
            now=time.time(),
            spend_usd=spent,
            budget_usd=limit,
            finished=finished,
            pacer=pacer.shown(self.folder),
        )

    def refresh(self, finished: bool = False) -> None:
        snap = self.snapshot(finished)
        state = (
            snap.passed,
            snap.failed,
            snap.errors,
            snap.finished,
            tuple((entry["key"], entry["phase"], entry.get("attempt")) for entry in snap.running),
            tuple((snap.pacer or {}).get("history") or ()),
        )
        now = time.monotonic()
        if state != self.written or now - self.written_at >= REWRITE_AT_LEAST:
            try:
                store.write_json(self.folder / progress.PROGRESS_FILE, snap.to_json())
            except OSError:
                pass
            self.written, self.written_at = state, now
        if self.live is not None and not finished:
            self.live.update(self._renderable(snap), refresh=True)
        elif (
            self.mode == "plain" and self.out is not None and not finished and (now - self.printed_at >= self.interval)
        ):
            self.printed_at = now
            self._print_plain(snap.line())

    def _print_plain(self, line: str) -> None:
        self.terminal.flush()
        self.out.write(("\n" if private_api.mid_line(self.terminal) else "") + line + "\n")  # type: ignore[union-attr]
        self.out.flush()  # type: ignore[union-attr]

    @staticmethod
    def _renderable(snap: progress.Snapshot) -> Any:
        from rich.console import Group
        from rich.text import Text

        rows = [Text(snap.headline(), style="bold")]
        for text in snap.running_texts()[:RUNNING_ROWS]:
            rows.append(Text(f"  running {text}", style="cyan"))
        if len(snap.running) > RUNNING_ROWS:
            rows.append(Text(f"  ... and {len(snap.running) - RUNNING_ROWS} more running"))
        return Group(*rows)


def start_live_status(config: pytest.Config, folder: Path, book: ResultBook, interval: float) -> LiveStatus:
    """The controller's live status, registered as a plugin and running."""
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    mode: Mode = "off"
    if terminal is not None and config.option.verbose >= 0:
        mode = "tty" if bool(terminal.isatty) else ("plain" if interval > 0 else "off")
    live = LiveStatus(folder, book, terminal, mode=mode, interval=interval)
    config.pluginmanager.register(live, "gaia2-live-status")
    live.start()
    return live
