"""The run's signal handling: the first Ctrl-C ends the run, a second one waits for its files, a
third ends the wind-down; the handlers from before the run come back afterwards."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_gaia2.engine.container import ENGINE_LOG_FILES, LaunchSpec
from pytest_gaia2.run import interrupts


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
