"""What one reference-image container costs in CPU, side by side: this checkout's reference image
against another revision's, each built from its own revision's files, in one run.

Each side's image is built by its own revision's ``python -m pytest_gaia2.reference.build`` (that
revision's package exported with ``git archive`` and put first on ``PYTHONPATH``), so it is tagged
by its own content hash; an image already built is reused. Every round runs pytest-gaia2 (this
checkout's plugin) once per image on the same scenarios, serially, one container per scenario as
a real run starts them, with which image goes first alternating round by round.

A container's CPU is its own cgroup's (``cpuacct.usage`` on cgroup v1, ``usage_usec`` of
``cpu.stat`` on v2): everything its processes used, from ``runc init`` to the end; the host's
processes, dockerd and containerd are not counted. The plugin removes a container with SIGKILL
once its files are collected, and the cgroup goes with the task soon after, so the counter is read
when the engine reports the ``kill`` (the processes are dead then, the cgroup not yet gone), and
every 20 ms besides in case the event comes late; the largest reading counts (the counter only
grows). Only the containers of the pytest run the benchmark started count (the engine is shared:
they carry its pid as a label), not those of its pre-flight helpers (the isolation probe). The
last line says how many were read at their kill and how many were gone unread. The figure is the
median over every container of an image; the wall is one whole pytest run's.

    .venv/bin/python benchmarks/reference_container.py [--against main] [--runs 5] [--scenarios FILE ...]

Against the same image (e.g. a branch that does not touch pytest_gaia2/reference/) the ratio
shows the noise of the machine.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import side_by_side  # this folder's: the script's own folder is first on sys.path

from pytest_gaia2.engine.client import HELPER_ID, PID_LABEL, SCENARIO_LABEL, connect

REPO = side_by_side.REPO
SEARCH = sorted((REPO / "scenarios" / "search").glob("*.json"))
SAMPLE_EVERY = 0.02


def _in_package(package_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` with the package under ``package_root`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    return subprocess.run([sys.executable, *args], cwd=package_root, env=env, capture_output=True, text=True)


def built(package_root: Path) -> str:
    """The reference image of the package under ``package_root``, built by that package's own
    build module (reused when built already): its name."""
    build = _in_package(package_root, "-m", "pytest_gaia2.reference.build")
    name = _in_package(package_root, "-c", "from pytest_gaia2.reference.build import image_name; print(image_name())")
    if build.returncode != 0 or name.returncode != 0:
        problem = (build.stderr + name.stderr)[-3000:]
        raise SystemExit(f"benchmark: the reference image of {package_root} was not built:\n{problem}")
    return name.stdout.strip()


def cgroup_cpu(container_id: str) -> float | None:
    """CPU seconds the container's cgroup has used, None once it is gone (or not found)."""
    try:
        return int(Path(f"/sys/fs/cgroup/cpuacct/docker/{container_id}/cpuacct.usage").read_text()) / 1e9
    except (OSError, ValueError):
        pass
    for stat in (
        Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/cpu.stat"),
        Path(f"/sys/fs/cgroup/docker/{container_id}/cpu.stat"),
    ):
        try:
            fields = dict(line.split() for line in stat.read_text().splitlines())
            return int(fields["usage_usec"]) / 1e6
        except (OSError, ValueError, KeyError):
            continue
    return None


class ContainerCPU:
    """The CPU of every scenario container of the given images the engine starts while it watches."""

    def __init__(self, images: set[str]) -> None:
        self.images = images
        self.owner = ""
        """The pid of the pytest run whose containers count (the engine is shared with other runs)."""
        self.stream: Any = connect().events(
            decode=True, filters={"type": "container", "event": ["start", "kill"], "label": [SCENARIO_LABEL]}
        )
        self.lock = threading.Lock()
        self.watched: set[str] = set()
        """The containers counted since the last :meth:`taken`."""
        self.cpu: dict[str, float] = {}
        self.gone: set[str] = set()
        self.read_at_kill: set[str] = set()
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self._events, daemon=True), threading.Thread(target=self._sample)]
        for thread in self.threads:
            thread.start()

    def _read(self, container_id: str) -> bool:
        cpu = cgroup_cpu(container_id)
        with self.lock:
            if cpu is None:
                self.gone.add(container_id)
                return False
            self.cpu[container_id] = max(cpu, self.cpu.get(container_id, 0.0))
            return True

    def _events(self) -> None:
        for event in self.stream:
            attributes = event.get("Actor", {}).get("Attributes", {})
            container_id = event.get("id", "")
            if event.get("Action") == "start":
                if (
                    attributes.get("image") in self.images
                    and attributes.get(SCENARIO_LABEL) != HELPER_ID
                    and attributes.get(PID_LABEL) == self.owner
                ):
                    with self.lock:
                        self.watched.add(container_id)
                    self._read(container_id)
            elif event.get("Action") == "kill" and container_id in self.watched and self._read(container_id):
                with self.lock:
                    self.read_at_kill.add(container_id)

    def _sample(self) -> None:
        while not self.done.wait(SAMPLE_EVERY):
            with self.lock:
                watched = self.watched - self.gone
            for container_id in watched:
                self._read(container_id)

    def taken(self) -> tuple[list[tuple[float, bool]], int]:
        """The containers started since the last call, forgotten: the CPU seconds of each one read
        and whether it was read at its kill, and how many were gone before any reading."""
        with self.lock:
            read = [(self.cpu[cid], cid in self.read_at_kill) for cid in self.watched if cid in self.cpu]
            unread = len(self.watched) - len(read)
            self.watched.clear()
        return read, unread

    def close(self) -> None:
        self.done.set()
        self.stream.close()
        self.threads[1].join()


def run_once(image: str, scenarios: Path, output: Path, watcher: ContainerCPU) -> float:
    """One pytest-gaia2 run of the scenarios on ``image``, its containers watched: its wall
    seconds; a failed run stops the benchmark."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = [
        *(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q"),
        f"--gaia2-scenarios={scenarios.name}",
        f"--gaia2-image={image}",
        f"--gaia2-output={output}",
        "--gaia2-judge-provider=none",
        "--gaia2-judge-model=none",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=scenarios.parent, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    watcher.owner = str(process.pid)  # the run labels its containers with its pid, long before the first starts
    output_text, _ = process.communicate()
    if process.returncode != 0:
        tail = "\n".join(output_text.splitlines()[-30:])
        raise SystemExit(f"benchmark: pytest-gaia2 on {image} exited {process.returncode}:\n{tail}")
    return time.perf_counter() - started


def main() -> None:
    parser = side_by_side.parser(__doc__, runs=5)  # a run: one pytest run per image
    parser.add_argument(
        "--scenarios", nargs="+", type=Path, default=SEARCH, help="scenario files (default: scenarios/search/*.json)"
    )
    args = parser.parse_args()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gaia2-refbench-") as tmp:
        work = Path(tmp)
        scenarios = work / "run" / "scenarios"  # pytest runs in work/run, apart from the exported package
        for path in args.scenarios:
            (scenarios / path.resolve().parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy(path, scenarios / path.resolve().parent.name / path.name)
        images = {"against": built(side_by_side.exported(args.against, work / "against")), "this": built(REPO)}
        watcher = ContainerCPU(set(images.values()))
        cpu: dict[str, list[float]] = {side: [] for side in images}
        walls: dict[str, list[float]] = {side: [] for side in images}
        at_kill, lost = 0, 0
        try:
            for run_ in range(args.runs):
                order = ["against", "this"] if run_ % 2 == 0 else ["this", "against"]
                for side in order:
                    walls[side].append(
                        run_once(images[side], scenarios, work / "run" / "out" / f"{run_}-{side}", watcher)
                    )
                    time.sleep(0.2)  # the last container's cgroup is read before it is counted
                    read, unread = watcher.taken()
                    cpu[side] += [seconds for seconds, _ in read]
                    at_kill += sum(killed for _, killed in read)
                    lost += unread
        finally:
            watcher.close()
    label = args.against
    width = max(len(label), len("this"), 10)
    print(f"reference image CPU per container: {len(args.scenarios)} scenarios x {args.runs} rounds per image")
    print(f"  {args.against}: {images['against']}\n  this: {images['this']}")
    print(f"{'':<26}  {label:>{width}}  {'this':>{width}}  this / {label}")
    print(f"{'containers':<26}  {len(cpu['against']):>{width}}  {len(cpu['this']):>{width}}")
    a, b = statistics.median(cpu["against"]), statistics.median(cpu["this"])
    print(f"{'CPU s per container':<26}  {a:>{width}.3f}  {b:>{width}.3f}  {b / a:.2f}x")
    a, b = statistics.median(walls["against"]), statistics.median(walls["this"])
    print(f"{'wall s per pytest run':<26}  {a:>{width}.2f}  {b:>{width}.2f}  {b / a:.2f}x")
    total = len(cpu["against"]) + len(cpu["this"])
    print(f"read at their kill: {at_kill} of {total}; never read: {lost}; wall {time.perf_counter() - began:.0f} s")


if __name__ == "__main__":
    main()
