"""Host-network mode: distinct adapter and gateway ports for every container, across processes.

With ``--network=host`` the container binds the port itself, so the engine cannot pick
one. Each xdist worker takes ports from its own slice of the range, a file lock guards
the lease file shared by every process on the host, and a port that is already bound by
anything else is skipped.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from filelock import FileLock

from pytest_gaia2.engine.client import pid_alive
from pytest_gaia2.store.folder import write_text


class PortsExhausted(Exception):
    """No free port left in this worker's slice of the range."""


def worker_slice(low: int, high: int, worker_index: int, workers: int) -> range:
    """This worker's share of ``[low, high]``, so workers rarely contend for the lease file's ports.

    A worker xdist starts to replace a crashed one (``gw2`` of two) wraps around onto a
    running worker's slice; the leases still keep every port distinct.
    """
    workers = max(1, workers)
    size = (high - low + 1) // workers
    if size < 2:
        raise PortsExhausted(f"port range {low}-{high} is too small for {workers} workers")
    start = low + (worker_index % workers) * size
    return range(start, start + size)


def _bindable(port: int) -> bool:
    """Whether a server could listen on all interfaces at ``port``, as the container's adapter does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


class PortLeases:
    """Leases recorded in one JSON file (port -> owner pid) under a file lock."""

    def __init__(self, folder: Path, ports: range) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "host-ports.json"
        self.lock = FileLock(str(folder / "host-ports.lock"))
        self.ports = ports

    def _load(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return {port: pid for port, pid in data.items() if pid_alive(int(pid))}

    def _store(self, leases: dict[str, int]) -> None:
        write_text(self.path, json.dumps(leases))

    def acquire(self, count: int) -> list[int]:
        """``count`` distinct ports nobody holds and nothing is bound to."""
        with self.lock:
            leases = self._load()
            chosen: list[int] = []
            for port in self.ports:
                if str(port) in leases or not _bindable(port):
                    continue
                chosen.append(port)
                if len(chosen) == count:
                    break
            if len(chosen) < count:
                raise PortsExhausted(
                    f"no {count} free ports left in {self.ports.start}-{self.ports.stop - 1}; widen --gaia2-port-range"
                )
            for port in chosen:
                leases[str(port)] = os.getpid()
            self._store(leases)
            return chosen

    def release(self, ports: list[int]) -> None:
        with self.lock:
            leases = self._load()
            for port in ports:
                leases.pop(str(port), None)
            self._store(leases)
