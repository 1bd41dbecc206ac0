"""The host contacts nothing but the adapter it started, and no answer exhausts it: a proxy in
front of the real adapter (built FROM the reference image, :mod:`adapter_proxy`) answers /status
with a redirect to a host-loopback-only service, a 4 GiB Content-Length, an endless chunked
body, one byte a second, headers that never end, JSON nested 300,000 deep, or fields of the
wrong type. Each is just "no hint": the verdict comes from the judge's record in the container,
within a bounded time and memory, one record, and pytest says what results.jsonl says.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from adapter_proxy import PEAK_RSS_MB, only_record, proxy_image, pytest_says, run_measured
from gaia2_testing import SHIPPED, http_server

from pytest_gaia2.store.limits import ADAPTER_TIMEOUT

ONE = "scenario_universe_21_7kww6e"
WALL_BOUND = 60.0
"""Seconds a scenario may take whatever /status does: its verdict exists within a few seconds,
and each /status call gives up after ADAPTER_TIMEOUT (four failures before the file is read)."""
ENGINE = "unix:///var/run/docker.sock"


@pytest.fixture(scope="module")
def image() -> str:
    return proxy_image()


@pytest.fixture
def loopback_service() -> Iterator[tuple[int, list[str]]]:
    """A service on the host's loopback only (the redirect's target): (port, paths it was asked)."""
    asked: list[str] = []
    body = b'{"status": "complete", "judgment": {"success": true, "failure_reason": ""}}'
    with http_server("127.0.0.1", body, asked) as port:
        yield port, asked


def _passes_within_bounds(tmp_path: Path, image: str, mode: str, *extra: str) -> dict[str, Any]:
    run = run_measured(tmp_path, f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={image}",
                       f"--gaia2-env=HOSTILE={mode}", *extra)
    record = only_record(tmp_path, "search", ONE)
    assert (record["outcome"], record["error_category"]) == ("passed", None), (record, run.text)
    assert record["daemon_status"]["judgment"]["success"] is True  # from the judge's record
    assert pytest_says(run, "passed"), run.text
    assert "INTERNALERROR" not in run.text
    assert record["wall_time_s"] < WALL_BOUND and run.seconds < WALL_BOUND + 30, (record["wall_time_s"], run.seconds)
    assert run.peak_mb < PEAK_RSS_MB, run.peak_mb
    return record


@pytest.mark.parametrize("mode", ["huge", "chunked", "drip", "slow_headers", "nested", "wrong_types"])
def test_a_hostile_status_answer_is_no_hint_and_costs_bounded_time_and_memory(
        tmp_path: Path, image: str, mode: str) -> None:
    _passes_within_bounds(tmp_path, image, mode)


@pytest.mark.parametrize("reach", ["ports", "api"])
def test_a_redirect_is_never_followed(tmp_path: Path, image: str, loopback_service: tuple[int, list[str]],
                                      reach: str) -> None:
    """/status answers 307 to a service on the host's loopback: neither the published-port client
    nor curl inside the container (the engine-API path) follows it."""
    port, asked = loopback_service
    extra = [f"--gaia2-engine={ENGINE}#1,api"] if reach == "api" else []
    _passes_within_bounds(tmp_path, image, "redirect", f"--gaia2-env=HOSTILE_TARGET={port}", *extra)
    assert asked == []


def test_the_bound_is_the_clients_timeout_not_pytest_timeouts(tmp_path: Path, image: str) -> None:
    """A drip far slower than the whole bound: the scenario still ends within a few client timeouts
    of its verdict (not the 340 s until pytest-timeout that an unbounded read would take)."""
    record = _passes_within_bounds(tmp_path, image, "drip", "--gaia2-timeout=600")
    assert record["wall_time_s"] < 6 * ADAPTER_TIMEOUT + 10, record["wall_time_s"]
