"""Host-network ports: per-worker slices and leases that stay distinct across processes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_gaia2.engine.ports import PortLeases, PortsExhausted, worker_slice

# Below the kernel's ephemeral range and outside the ranges the integration tests use.
LOW, HIGH = 12000, 12999


@pytest.mark.parametrize("workers", [1, 2, 3, 4, 7, 8])
def test_worker_slices_are_disjoint_and_inside_the_range(workers: int) -> None:
    slices = [worker_slice(LOW, HIGH, index, workers) for index in range(workers)]
    ports = [port for part in slices for port in part]
    assert len(ports) == len(set(ports))
    assert min(ports) == LOW and max(ports) <= HIGH
    assert all(len(part) == (HIGH - LOW + 1) // workers for part in slices)


def test_a_replacement_worker_wraps_onto_an_existing_slice() -> None:
    """xdist names the worker that replaces a crashed one gw2 of two: still inside the range."""
    assert worker_slice(LOW, HIGH, 2, 2) == worker_slice(LOW, HIGH, 0, 2)
    assert worker_slice(LOW, HIGH, 5, 2) == worker_slice(LOW, HIGH, 1, 2)


def test_a_range_too_small_for_the_workers_is_refused() -> None:
    with pytest.raises(PortsExhausted, match="12000-12002 is too small for 2 workers"):
        worker_slice(12000, 12002, 0, 2)


def _free_ports(leases: PortLeases, count: int) -> list[int]:
    """What a fresh lease file hands out here (some ports may be in use on this machine)."""
    ports = leases.acquire(count)
    leases.release(ports)
    return ports


def test_acquire_hands_out_distinct_ports_until_released(tmp_path: Path) -> None:
    leases = PortLeases(tmp_path, range(LOW, LOW + 50))
    first = leases.acquire(2)
    second = leases.acquire(2)
    assert len(set(first + second)) == 4
    assert all(port in range(LOW, LOW + 50) for port in first + second)
    leases.release(first)
    assert leases.acquire(2) == first  # released ports are handed out again, lowest first


def test_a_port_something_listens_on_is_skipped(tmp_path: Path) -> None:
    leases = PortLeases(tmp_path, range(LOW + 100, LOW + 150))
    busy = _free_ports(leases, 1)[0]
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", busy))  # any address: the container listens on all of them
        listener.listen()
        assert busy not in leases.acquire(5)


def test_leases_of_live_processes_are_kept_and_of_dead_ones_freed(tmp_path: Path) -> None:
    leases = PortLeases(tmp_path, range(LOW + 200, LOW + 250))
    held, stale = _free_ports(leases, 2)
    finished = subprocess.Popen(["true"])
    finished.wait()
    (tmp_path / "host-ports.json").write_text(json.dumps({str(held): 1, str(stale): finished.pid}))
    chosen = leases.acquire(2)
    assert held not in chosen and stale in chosen


def test_exhaustion_names_the_option_to_widen(tmp_path: Path) -> None:
    leases = PortLeases(tmp_path, range(LOW + 300, LOW + 303))
    leases.acquire(1)
    with pytest.raises(PortsExhausted, match="widen --gaia2-port-range"):
        leases.acquire(3)


HOLDER = """
import sys
from pathlib import Path
from pytest_gaia2.engine.ports import PortLeases
leases = PortLeases(Path(sys.argv[1]), range(int(sys.argv[2]), int(sys.argv[3])))
print(" ".join(map(str, leases.acquire(5))), flush=True)
sys.stdin.read()  # hold the lease until the test is done
"""


def test_processes_sharing_the_lease_file_never_get_the_same_port(tmp_path: Path) -> None:
    """Four processes lease at the same moment from one range: the file lock keeps them apart."""
    args = [sys.executable, "-c", HOLDER, str(tmp_path), str(LOW + 400), str(LOW + 450)]
    holders = [subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(4)]
    try:
        leased = [port for holder in holders for port in map(int, holder.stdout.readline().split())]
    finally:
        for holder in holders:
            holder.communicate("", timeout=30)
    assert len(leased) == 20 and len(set(leased)) == 20
