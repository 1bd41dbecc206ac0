"""A soak of a full Gaia2-sized run: N scenarios of the reference image, stratified over the five
splits and ten universes, each holding its verdict for a realistic wait, at ``-n K``.

What a run of 800 must show, and this prints:

- throughput against ideal (K scenarios at a time, each taking only its wait);
- host CPU (user + sys) of pytest and its workers, per scenario;
- the controller's and the workers' memory and open file descriptors over time (flat, not growing;
  every sample in ``samples.csv`` of the work folder, kept with ``--keep``);
- the run folder's size and file count per scenario;
- records = planned (results.jsonl and summary.json), and no container left on the engine.

    .venv/bin/python benchmarks/soak.py [-N 800] [-n 4] [--wait 5] [--image IMAGE]

The figures are printed and appended, with the machine's description, to benchmarks/RESULTS.md.
The process exits 1 when records differ from planned or a container is left.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness_overhead import REPO, SPLITS, copies, machine

SAMPLE_EVERY = 5.0
"""Seconds between samples of memory and file descriptors."""


@dataclass
class Sample:
    at: float
    controller_mb: float
    workers_mb: list[float]
    controller_fds: int
    workers_fds: list[int]


@dataclass
class Sampler:
    """Memory and open descriptors of one pytest process and its children, every SAMPLE_EVERY s."""

    pid: int
    records: Path
    """results.jsonl: sampling starts with the first record (steady state, start-up left out)."""
    started: float = field(default_factory=time.monotonic)
    samples: list[Sample] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_EVERY):
            if not self.records.is_file():
                continue
            workers = _children(self.pid)
            rss = _rss_mb(self.pid)
            if rss is None:
                return
            self.samples.append(
                Sample(
                    time.monotonic() - self.started,
                    rss,
                    [mb for mb in map(_rss_mb, workers) if mb is not None],
                    _fds(self.pid),
                    [_fds(worker) for worker in workers],
                )
            )


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


def scenarios(root: Path, count: int) -> None:
    """``count`` copies of the quick scenario, as many in each split (ids distinct per split)."""
    for index, split in enumerate(SPLITS):
        share = count // len(SPLITS) + (index < count % len(SPLITS))
        if share:
            copies(root / split, split[:2], share)


def containers_left(run_id: str) -> int:
    from pytest_gaia2.engine.client import RUN_LABEL

    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={RUN_LABEL}={run_id}"], capture_output=True, text=True, check=True
    )
    return len(listed.stdout.split())


def folder_of(output: Path) -> Path:
    latest = output / "latest"
    return output / (os.readlink(latest) if latest.is_symlink() else latest.read_text(encoding="utf-8").strip())


def over_time(values: list[tuple[float, float]]) -> str:
    """First, middle and last of a series, its peak, and the change from the first to the last quarter."""
    if not values:
        return "no samples"
    points = [value for _, value in values]
    quarter = max(1, len(points) // 4)
    drift = statistics.mean(points[-quarter:]) - statistics.mean(points[:quarter])
    return (
        f"{points[0]:.0f} -> {points[len(points) // 2]:.0f} -> {points[-1]:.0f} (peak {max(points):.0f}, "
        f"last quarter vs first {drift:+.1f})"
    )


def soak(count: int, workers: int, wait: float, image: str, work: Path) -> tuple[list[tuple[str, str]], bool]:
    scenarios(work / "soak", count)
    args = [
        "--gaia2-scenarios=soak",
        f"--gaia2-image={image}",
        "--gaia2-output=out",
        f"--gaia2-env=GAIA2_FAULT_JUDGE_DELAY={wait}",
        "--gaia2-judge-provider=none",
        "--gaia2-judge-model=none",
        *(["-n", str(workers)] if workers > 1 else []),
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with (work / "soak.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
            cwd=work,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
        sampler = Sampler(process.pid, work / "out" / "latest" / "results.jsonl")
        thread = threading.Thread(target=sampler.run, daemon=True)
        thread.start()
        code = process.wait()
    seconds = time.monotonic() - started
    sampler.stop.set()
    thread.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    folder = folder_of(work / "out")
    records = [line for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    outcomes = [json.loads(line).get("outcome") for line in records]
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    run_id = json.loads((folder / "sessions.jsonl").read_text(encoding="utf-8").splitlines()[-1])["session_id"]
    left = containers_left(run_id)
    files = [path for path in folder.rglob("*") if path.is_file() and not path.is_symlink()]
    size = sum(path.stat().st_size for path in files)
    rate = count / seconds * 60
    ideal = workers * 60 / wait
    samples = sampler.samples
    with (work / "samples.csv").open("w", encoding="utf-8") as table:
        table.write("seconds,controller_mb,largest_worker_mb,controller_fds,largest_worker_fds\n")
        for s in samples:
            table.write(
                f"{s.at:.0f},{s.controller_mb:.1f},{max(s.workers_mb, default=0.0):.1f},"
                f"{s.controller_fds},{max(s.workers_fds, default=0)}\n"
            )
    working = [s for s in samples if s.workers_mb]  # the workers' series ends when they do
    worst_worker = [(s.at, max(s.workers_mb)) for s in working]
    worker_fds = [(s.at, float(max(s.workers_fds))) for s in working]
    ok = len(records) == summary.get("planned") == count and left == 0
    rows = [
        (f"{count} scenarios, -n {workers}, {wait:g} s wait each: wall", f"{seconds / 60:.1f} min (exit {code})"),
        (
            "throughput vs ideal (K at a time, each only its wait)",
            f"{rate:.1f}/min vs {ideal:.1f}/min = {rate / ideal:.2f}",
        ),
        ("host CPU of pytest and its workers (user + sys) per scenario", f"{cpu / count:.3f} s ({cpu:.0f} s in all)"),
        ("controller RSS over time, MB", over_time([(s.at, s.controller_mb) for s in samples])),
        ("largest worker RSS over time, MB", over_time(worst_worker) if workers > 1 else "(serial: the controller)"),
        ("controller open fds over time", over_time([(s.at, float(s.controller_fds)) for s in samples])),
        ("largest worker open fds over time", over_time(worker_fds) if workers > 1 else "(serial: the controller)"),
        ("run folder per scenario", f"{size / count / 1024:.1f} KiB, {len(files) / count:.1f} files"),
        ("run folder in all", f"{size / 2**20:.1f} MiB in {len(files)} files"),
        (
            "records = planned",
            f"{len(records)} records, summary planned {summary.get('planned')}, selected {count}: "
            f"{'yes' if len(records) == summary.get('planned') == count else 'NO'}",
        ),
        ("outcomes", ", ".join(f"{outcomes.count(o)} {o}" for o in sorted(set(map(str, outcomes))))),
        ("containers left on the engine", f"{left}"),
        (
            f"800 x 3 (pass@3) at this rate, -n {workers}",
            f"{800 * 3 / rate / 60:.1f} h at {wait:g} s per scenario; with real scenarios of m minutes, "
            f"about 2,400 x m / {workers} minutes",
        ),
    ]
    return rows, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-N", "--scenarios", type=int, default=800, help="scenarios, stratified over the splits")
    parser.add_argument("-n", "--workers", type=int, default=4, help="xdist workers (1: serial)")
    parser.add_argument("--wait", type=float, default=5.0, help="seconds each scenario's daemon holds its verdict")
    parser.add_argument("--image", help="runtime image (default: the reference image, built when missing)")
    parser.add_argument("--keep", type=Path, help="run in this new folder and keep it (default: a temporary one)")
    options = parser.parse_args()
    image = options.image
    if image is None:
        from pytest_gaia2.engine.client import connect
        from pytest_gaia2.reference import build

        image = build.image_name()
        build.ensure_image(connect())
    if options.keep:
        options.keep.mkdir(parents=True)
        rows, ok = soak(options.scenarios, options.workers, options.wait, image, options.keep)
    else:
        with tempfile.TemporaryDirectory(prefix="gaia2-soak-") as tmp:
            rows, ok = soak(options.scenarios, options.workers, options.wait, image, Path(tmp))
    width = max(len(label) for label, _ in rows)
    table = "\n".join(f"{label.ljust(width)}  {value}" for label, value in rows)
    print(table)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with open(REPO / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as results:
        results.write(f"\n## soak {stamp} — {machine()}\n\nimage `{image}`\n\n```\n{table}\n```\n")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
