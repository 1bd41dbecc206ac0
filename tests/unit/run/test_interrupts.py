"""The run's signal handling: the first Ctrl-C ends the run, a second one waits for its files, a
third ends the wind-down; the handlers from before the run come back afterwards; the controller
forwards its signal to its own workers only."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gaia2.engine.container import ENGINE_LOG_FILES, LaunchSpec
from pytest_gaia2.run import interrupts
from pytest_gaia2.store.phases import PID_MAX, busy_pids


def test_the_second_signal_is_only_counted_and_the_third_raises() -> None:
    before = signal.getsignal(signal.SIGINT)
    wind_down = interrupts.WindDown.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)  # the double Ctrl-C: the run's files are still written
        assert wind_down.count == 2
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
    finally:
        wind_down.uninstall()
    assert signal.getsignal(signal.SIGINT) is before


def test_a_signal_held_during_a_write_is_counted_once_the_run_is_ending() -> None:
    wind_down = interrupts.WindDown.install()
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        with interrupts.held():
            os.kill(os.getpid(), signal.SIGINT)
        assert wind_down.count == 2  # delivered after the block, then only counted
    finally:
        wind_down.uninstall()


def test_the_engine_log_is_rotated_within_the_cap() -> None:
    spec = LaunchSpec(image="x", name="n", env={}, labels={}, adapter_port=8090, log_max_bytes=1 << 20)
    config = spec.log_config()
    assert config == {"type": "json-file", "config": {"max-size": str((1 << 20) // ENGINE_LOG_FILES),
                                                      "max-file": str(ENGINE_LOG_FILES)}}
    assert spec.log_file_bytes * ENGINE_LOG_FILES <= spec.log_max_bytes


def test_an_xdist_workers_echo_of_the_same_press_is_not_a_second_signal() -> None:
    """A Ctrl-C signals the whole group and the controller forwards it too: the worker counts one."""
    wind_down = interrupts.WindDown.install(echo=interrupts.FORWARD_ECHO)
    try:
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGINT)  # the controller's forward
        assert (wind_down.count, wind_down.first) == (1, signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)  # a real second signal: only counted
        assert wind_down.count == 2
    finally:
        wind_down.uninstall()


def _board(run: Path, worker: str, pid: object) -> None:
    entry = {"key": f"search/{worker}", "worker": worker, "phase": "healthy", "attempt": 1, "started": 0}
    data = {"worker": worker, "pid": pid, "running": [entry]}
    (run / f"progress.{worker}.json").write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="the parent check needs Linux's /proc")
def test_only_this_processs_children_named_by_a_board_get_the_forwarded_signal(tmp_path: Path) -> None:
    """A forged board names a process that is not this process's child (a sleep whose parent is
    a shell) next to this process's own child: only the child is signalled. Without the parent
    check the forged one, harmless, would end, and with it the shell waiting for it."""
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE)
    child = subprocess.Popen(["sleep", "60"])
    grandchild = None
    try:
        assert shell.stdout is not None
        grandchild = int(shell.stdout.readline())
        assert interrupts.parent_of(grandchild) == shell.pid
        _board(tmp_path, "gw0", grandchild)
        _board(tmp_path, "gw1", child.pid)
        _board(tmp_path, "gw2", os.getpid())  # this process itself: never
        _board(tmp_path, "gw3", True)  # not a pid
        assert busy_pids(tmp_path) == {grandchild, child.pid, os.getpid()}
        assert interrupts.forward(signal.SIGTERM, busy_pids(tmp_path)) == [child.pid]
        assert child.wait(10) == -signal.SIGTERM
        time.sleep(0.3)
        assert shell.poll() is None and interrupts.parent_of(grandchild) == shell.pid, "the forged pid was signalled"
    finally:
        if grandchild is not None and interrupts.parent_of(grandchild) == shell.pid:
            os.kill(grandchild, signal.SIGKILL)
        for process in (shell, child):
            process.kill()
            process.wait()


SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)


@settings(max_examples=examples(50), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pid=SCALARS, running=st.lists(st.dictionaries(st.text(max_size=4), SCALARS, max_size=2), max_size=2) | SCALARS)
def test_a_boards_pid_is_a_pid_in_range_or_nothing(tmp_path: Path, pid: object, running: object) -> None:
    board = tmp_path / "progress.gw0.json"
    board.write_text(json.dumps({"worker": "gw0", "pid": pid, "running": running}), encoding="utf-8")
    found = busy_pids(tmp_path)
    expected = isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= PID_MAX and bool(running)
    assert found == ({pid} if expected else set())
