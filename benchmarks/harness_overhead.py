"""What the harness costs over the container's own work, measured side by side in one run.

These machines are noisy, so every figure is a median of whole processes measured in the same
run as its reference, and the goals are ratios:

- per scenario, serial: pytest-gaia2 running N scenarios in one process vs N cycles of the floor
  (create, copy the scenario in, start, poll /status until terminal, remove) with the docker CLI
  for the same image and scenario (goal <= 1.15x);
- throughput of waiting-bound scenarios at -n 1, 2, 4, 8 (scenarios per minute, vs ideal scaling);
- collection of 800 real-sized scenario files (2.5 MB each): the whole pytest start, warm, serial
  (goal <= 2 s); selecting 2 of the 800 with -k under -n 2 and -n 4 vs the same 2 in a folder of
  their own (goal <= 1.2x); peak RSS per process (goal <= 100 MB per worker);
- the plugin idle (a project that never uses it) vs bare pytest start-up (goal <= 1.05x);
- with ``--vs-runner``: 2 scenarios serial, pytest-gaia2 vs Meta's gaia2-runner on the same image,
  whole processes, alternating runs: wall (goal <= 0.7x), host CPU user + sys (goal <= 1.0x) and
  peak RSS (goal <= 1.2x). gaia2-runner is installed from upstream's source (``$PYTEST_GAIA2_UPSTREAM_GIT``,
  a git repository of facebookresearch/meta-agents-research-environments, else a clone from GitHub)
  into a venv of its own with Python >= 3.12 (``$PYTEST_GAIA2_RUNNER_PYTHON``, else python3.12/3.13
  on PATH), or ``$PYTEST_GAIA2_RUNNER`` names its command installed that way; when it cannot be,
  the comparison is skipped with the reason. Both sides run as an
  install would: bytecode cached (in a cache of the benchmark's own), and pytest with only the
  plugins pytest-gaia2 depends on (xdist, timeout), not a developer's test extras;
- with ``--vs-runner --concurrency K [K ...]``: instead, N scenarios (``--vs-scenarios``) K at a
  time, ``-n K`` (with ``--workers W [W ...]``: ``-n W --gaia2-in-flight K/W``, once per W) vs
  ``--concurrency K``, rounds alternating (and which tool goes first), whole
  process trees: wall (goal <= 0.9x), the CPU of every process the command started (goal <= 1.0x)
  and the peak of the tree's summed PSS sampled every 0.1 s (goal <= 1.5x), with where each
  tree's CPU and memory went by kind of process (main process, xdist workers, docker CLI calls).

    .venv/bin/python benchmarks/harness_overhead.py [--image IMAGE] [--runs 5] [--files 800] [--vs-runner]
    .venv/bin/python benchmarks/harness_overhead.py --skip scenario throughput collection idle \\
        --vs-runner --concurrency 4 8 --vs-scenarios 8 --runs 3 [--workers 1 2]

The table is printed and appended, with the machine's description, to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
SCENARIO = REPO / "scenarios" / "search" / "scenario_universe_21_7kww6e.json"
SPLITS = ("execution", "search", "adaptability", "time", "ambiguity")
RSS_PROBE = (
    "import pytest, resource, sys\n"
    "code = pytest.main(sys.argv[1:])\n"
    "sys.stderr.write(f'PEAK_RSS_KB {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}\\n')\n"
    "sys.stderr.write(f'WORKER_RSS_KB {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n')\n"
    "sys.exit(int(code))\n"
)


def timed(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Wall time of one whole process, and its combined output; a run that failed measures
    nothing (scenarios that error at once would pass for a fast harness), so it stops the benchmark."""
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    seconds, output = time.perf_counter() - started, done.stdout + done.stderr
    if done.returncode != 0:
        raise SystemExit(
            f"benchmark: {' '.join(command[3:])} exited {done.returncode}; nothing recorded:\n"
            + "\n".join(output.splitlines()[-30:])
        )
    return seconds, output


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-c", RSS_PROBE, "-p", "no:cacheprovider", "-q", *args]


def peak_rss_mb(output: str, which: str = "PEAK_RSS_KB") -> float:
    """The peak RSS the probe printed: the controller's (``PEAK_RSS_KB``) or its workers' (``WORKER_RSS_KB``)."""
    values = [int(line.split()[1]) for line in output.splitlines() if line.startswith(which)]
    return max(values, default=0) / 1024


def median_of(runs: int, measure: Callable[[], float]) -> float:
    return statistics.median(measure() for _ in range(runs))


def copies(folder: Path, tag: str, count: int) -> list[Path]:
    """``count`` copies of the quick scenario under new ids, spread over ten universes."""
    folder.mkdir(parents=True)
    data = json.loads(SCENARIO.read_text(encoding="utf-8"))
    for index in range(count):
        data["metadata"]["definition"]["scenario_id"] = f"scenario_universe_{21 + index % 10}_{tag}{index:04d}"
        (folder / f"{tag}{index:04d}.json").write_text(json.dumps(data), encoding="utf-8")
    return sorted(folder.glob("*.json"))


# -- per scenario ---------------------------------------------------------------------------------


def floor_once(image: str, scenario: Path) -> float:
    """The container's own work, driven by the docker CLI: nothing a harness could skip."""
    name = f"gaia2-bench-floor-{uuid.uuid4().hex[:8]}"
    started = time.perf_counter()
    subprocess.run(
        [
            "docker",
            "create",
            "--name",
            name,
            "-p",
            "127.0.0.1::8090",
            "--entrypoint",
            "bash",
            "-e",
            "GAIA2_JUDGE_PROVIDER=none",
            "-e",
            "GAIA2_JUDGE_MODEL=none",
            image,
            "/opt/gaia2-init-entrypoint.sh",
        ],
        check=True,
        capture_output=True,
    )
    try:
        subprocess.run(
            ["docker", "cp", str(scenario), f"{name}:/var/gaia2/custom_scenario.json"], check=True, capture_output=True
        )
        subprocess.run(["docker", "start", name], check=True, capture_output=True)
        port = (
            subprocess.run(["docker", "port", name, "8090/tcp"], check=True, capture_output=True, text=True)
            .stdout.split(":")[-1]
            .strip()
        )
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=2) as answer:
                    if json.load(answer).get("status") in {"complete", "stopped", "error"}:
                        break
            except OSError:
                pass
            time.sleep(0.1)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    return time.perf_counter() - started


def per_scenario(image: str, runs: int, count: int, work: Path) -> list[tuple[str, str]]:
    """``count`` scenarios one after another: the floor's cycles vs one serial pytest-gaia2 run
    (pytest's own start-up included, spread over the scenarios as a real run spreads it)."""
    files = copies(work / "serial" / "search", "s", count)
    floor = median_of(runs, lambda: sum(floor_once(image, path) for path in files))
    harness_args = (
        "--gaia2-scenarios=serial",
        f"--gaia2-image={image}",
        "--gaia2-output=out",
        "--gaia2-judge-provider=none",
        "--gaia2-judge-model=none",
    )
    timed(pytest_command(*harness_args), work)  # warm: image checks cached, scenario index written
    serial = median_of(runs, lambda: timed(pytest_command(*harness_args), work)[0])
    return [
        (f"floor: {count} scenarios one after another, docker CLI (median)", f"{floor:.2f} s"),
        (f"pytest-gaia2 serial, the same {count} scenarios, whole process (median)", f"{serial:.2f} s"),
        ("per-scenario ratio (goal <= 1.15)", f"{serial / floor:.2f} x"),
    ]


# -- throughput -----------------------------------------------------------------------------------


def throughput(image: str, count: int, delay: float, work: Path) -> list[tuple[str, str]]:
    """Waiting-bound scenarios (the daemon holds its verdict ``delay`` s): scenarios per minute."""
    copies(work / "wait" / "search", "w", count)
    rows, base = [], 0.0
    for workers in (1, 2, 4, 8):
        args = [
            "--gaia2-scenarios=wait",
            f"--gaia2-image={image}",
            "--gaia2-output=out",
            f"--gaia2-env=GAIA2_FAULT_JUDGE_DELAY={delay}",
            "--gaia2-judge-provider=none",
            "--gaia2-judge-model=none",
            *(["-n", str(workers)] if workers > 1 else []),
        ]
        seconds, _ = timed(pytest_command(*args), work)
        rate = count / seconds * 60
        base = base or rate
        rows.append(
            (
                f"throughput -n {workers} ({count} scenarios, {delay:g} s wait each)",
                f"{rate:.1f}/min, {rate / (base * workers):.2f} of ideal",
            )
        )
    return rows


# -- collection -----------------------------------------------------------------------------------


def real_sized(template: dict, size_mb: float) -> str:
    """A scenario padded with app state to a real export's size (the universe's data)."""
    padded = dict(template)
    apps = list(padded.get("apps") or [])
    filler = {
        "name": "Padding",
        "class_name": "Padding",
        "app_state": {
            "rows": [{"id": i, "text": "lorem ipsum dolor sit amet " * 4} for i in range(int(size_mb * 2**20 / 130))]
        },
    }
    padded["apps"] = [*apps, filler]
    return json.dumps(padded)


def collection(files: int, size_mb: float, runs: int, work: Path) -> list[tuple[str, str]]:
    template = json.loads(SCENARIO.read_text(encoding="utf-8"))
    many, two = work / "many", work / "two"
    chosen = []
    for index in range(files):
        split = SPLITS[index % len(SPLITS)]
        sid = f"scenario_universe_{21 + index % 10}_c{index:05d}"
        template["metadata"]["definition"]["scenario_id"] = sid
        text = real_sized(template, size_mb)
        (many / split).mkdir(parents=True, exist_ok=True)
        (many / split / f"{sid}.json").write_text(text, encoding="utf-8")
        if index < 2:
            (two / split).mkdir(parents=True, exist_ok=True)
            (two / split / f"{sid}.json").write_text(text, encoding="utf-8")
            chosen.append(sid)
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache")}
    cold, _ = timed(pytest_command("--gaia2-scenarios=many", "--co"), work, env)
    warm = median_of(runs, lambda: timed(pytest_command("--gaia2-scenarios=many", "--co"), work, env)[0])
    rows = [
        (f"collection of {files} x {size_mb:g} MB, serial, cold (first run builds the index)", f"{cold:.2f} s"),
        (f"collection of {files} x {size_mb:g} MB, serial, warm (goal <= 2 s)", f"{warm:.2f} s"),
    ]
    for workers in (2, 4):
        # --co does not start xdist workers: a run whose items are all deselected does.
        pick = ["-k", " or ".join(chosen), "-n", str(workers), "--gaia2-output=out", "-p", "no:randomly"]
        skip = ["-p", "bench_skip"]
        (work / "bench_skip.py").write_text(
            "import pytest\n@pytest.hookimpl(tryfirst=True)\ndef pytest_runtest_setup(item):\n"
            "    pytest.skip('collection only')\n",
            encoding="utf-8",
        )
        penv = {**env, "PYTHONPATH": str(work)}
        many, two = (
            pytest_command("--gaia2-scenarios=many", *pick, *skip),
            pytest_command("--gaia2-scenarios=two", *pick, *skip),
        )
        big = median_of(runs, lambda: timed(many, work, penv)[0])  # noqa: B023 - used at once, in this iteration
        small = median_of(runs, lambda: timed(two, work, penv)[0])  # noqa: B023
        _, output = timed(many, work, penv)
        rows.append(
            (
                f"2 of {files} vs the same 2 alone, -n {workers} (goal <= 1.2)",
                f"{big:.2f} s vs {small:.2f} s = {big / small:.2f} x",
            )
        )
        rows.append(
            (
                f"peak RSS, -n {workers} with {files} files: controller / largest worker (goal <= 100 MB)",
                f"{peak_rss_mb(output):.0f} MB / {peak_rss_mb(output, 'WORKER_RSS_KB'):.0f} MB",
            )
        )
    return rows


# -- vs gaia2-runner ------------------------------------------------------------------------------

UPSTREAM = "https://github.com/facebookresearch/meta-agents-research-environments"
UPSTREAM_ENV = "PYTEST_GAIA2_UPSTREAM_GIT"
RUNNER_PYTHON_ENV = "PYTEST_GAIA2_RUNNER_PYTHON"
RUNNER_ENV = "PYTEST_GAIA2_RUNNER"
RUNNER_SOURCES = ("gaia2-cli/core", "gaia2-cli/cli", "gaia2-cli/runner")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-gaia2-bench"
GAIA2_PLUGINS = ("-p", "pytest_gaia2.plugin.hooks", "-p", "xdist.plugin", "-p", "pytest_timeout")
"""What an install of pytest-gaia2 loads: the plugin and the two plugins it depends on."""


class Skip(Exception):
    """The comparison cannot be made here; the message says why."""


def install_runner() -> Path:
    """gaia2-runner from upstream's source in a venv of its own (cached by commit): its command;
    ``$PYTEST_GAIA2_RUNNER`` names one already installed the same way."""
    installed = os.environ.get(RUNNER_ENV, "").strip()
    if installed:
        if not Path(installed).is_file():
            raise Skip(f"{RUNNER_ENV}={installed} is not a file")
        return Path(installed)
    repo = os.environ.get(UPSTREAM_ENV, "").strip()
    if not repo:
        repo = str(CACHE / "upstream.git")
        if not Path(repo).is_dir():
            done = subprocess.run(
                ["git", "clone", "--quiet", "--bare", "--depth", "1", UPSTREAM, repo],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode:
                raise Skip(
                    f"upstream's source cannot be fetched ({done.stderr.strip()[-200:]}); "
                    f"set {UPSTREAM_ENV} to a git repository of it"
                )
    try:
        commit = subprocess.run(
            ["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except subprocess.CalledProcessError as exc:
        raise Skip(f"{repo} is not a git repository of upstream: {exc.stderr.strip()[-200:]}") from None
    venv = CACHE / f"gaia2-runner-{commit[:12]}"
    command = venv / "bin" / "gaia2-runner"
    if command.is_file():
        return command
    python = os.environ.get(RUNNER_PYTHON_ENV) or shutil.which("python3.12") or shutil.which("python3.13")
    if not python:
        raise Skip(f"gaia2-runner needs Python >= 3.12: none on PATH; set {RUNNER_PYTHON_ENV}")
    source = CACHE / f"source-{commit[:12]}"
    source.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", repo, "archive", "--format=tar", "HEAD", *RUNNER_SOURCES], capture_output=True, check=False
    )
    if archive.returncode:
        raise Skip(f"upstream's runner source is not in {repo}: {archive.stderr.decode(errors='replace')[-200:]}")
    subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    steps = (
        [python, "-m", "venv", str(venv)],
        [
            str(venv / "bin" / "pip"),
            "install",
            "-q",
            str(source / "gaia2-cli/core"),
            f"{source / 'gaia2-cli/cli'}[judge]",
            str(source / "gaia2-cli/runner"),
        ],
    )
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode:
            shutil.rmtree(venv, ignore_errors=True)
            raise Skip(f"gaia2-runner could not be installed ({' '.join(step[:3])}): {done.stderr.strip()[-300:]}")
    return command


def whole_process(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, host CPU seconds (user + sys, its children included) and peak RSS in MB of
    one whole process; one that failed measures nothing."""
    tree = whole_tree(command, cwd, env, sample=False)
    return tree.wall, tree.cpu, tree.root_rss_mb


class Tree(NamedTuple):
    """One command's process tree, measured whole."""

    wall: float
    cpu: float
    """User + sys of every process it started (each reaped by its parent, so counted by wait4)."""
    root_rss_mb: float
    pss_mb: float
    """Peak of the tree's summed PSS, sampled every ``SAMPLE_EVERY`` s."""
    rss_mb: float
    """Peak of the tree's summed RSS, at the same samples."""
    roles: dict[str, tuple[int, float, float]]
    """Per kind of process: how many, their CPU seconds as last sampled, the largest one's peak PSS in MB."""


SAMPLE_EVERY = 0.1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_table() -> dict[int, tuple[int, float]]:
    """Every process: its parent and its own CPU seconds (user + sys, children not included)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
    return table


def _memory_kb(pid: int) -> tuple[int, int]:
    """PSS and RSS of one process in kB (0, 0 once it is gone)."""
    pss = rss = 0
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                pss = int(line.split()[1])
            elif line.startswith("Rss:"):
                rss = int(line.split()[1])
    except OSError:
        pass
    return pss, rss


def _role(pid: int, root: int) -> str:
    """What a process of the tree is: the command itself, an xdist worker, a docker CLI call, else its program."""
    if pid == root:
        return "main process"
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "other"
    text = b" ".join(argv).decode(errors="replace")
    if "exec(eval(sys.stdin.readline()))" in text:
        return "xdist worker"
    return Path(argv[0].decode(errors="replace")).name or "other"


class TreeSampler(threading.Thread):
    """Samples a process tree every ``SAMPLE_EVERY`` s: summed PSS and RSS, and each process's CPU."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.stop = root, threading.Event()
        self.pss = self.rss = 0
        self.cpu: dict[int, float] = {}
        self.peak_pss: dict[int, int] = {}
        self.role: dict[int, str] = {}

    def run(self) -> None:
        while not self.stop.wait(SAMPLE_EVERY):
            table = _proc_table()
            tree, frontier = {self.root}, [self.root]
            children: dict[int, list[int]] = {}
            for pid, (parent, _) in table.items():
                children.setdefault(parent, []).append(pid)
            while frontier:
                for child in children.get(frontier.pop(), []):
                    tree.add(child)
                    frontier.append(child)
            pss = rss = 0
            for pid in tree & table.keys():
                one_pss, one_rss = _memory_kb(pid)
                pss, rss = pss + one_pss, rss + one_rss
                self.cpu[pid] = table[pid][1]
                self.peak_pss[pid] = max(self.peak_pss.get(pid, 0), one_pss)
                if pid not in self.role:
                    self.role[pid] = _role(pid, self.root)
            self.pss, self.rss = max(self.pss, pss), max(self.rss, rss)

    def roles(self) -> dict[str, tuple[int, float, float]]:
        grouped: dict[str, tuple[int, float, float]] = {}
        for pid, role in self.role.items():
            count, cpu, peak = grouped.get(role, (0, 0.0, 0.0))
            grouped[role] = (count + 1, cpu + self.cpu.get(pid, 0.0), max(peak, self.peak_pss.get(pid, 0) / 1024))
        return grouped


def whole_tree(command: list[str], cwd: Path, env: dict[str, str], sample: bool = True) -> Tree:
    """One command's whole tree measured: wall, CPU of every process (wait4 counts each child its
    parent reaped), and, sampled, the peak of the tree's summed PSS; one that failed measures nothing."""
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
    )
    sampler = TreeSampler(process.pid)
    if sample:
        sampler.start()
    output = process.stdout.read() if process.stdout else b""
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    sampler.stop.set()
    if sample:
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(
            f"benchmark: {command[0]} exited {process.returncode}; nothing recorded:\n"
            + "\n".join(output.decode(errors="replace").splitlines()[-30:])
        )
    return Tree(
        seconds,
        usage.ru_utime + usage.ru_stime,
        usage.ru_maxrss / 1024,
        sampler.pss / 1024,
        sampler.rss / 1024,
        sampler.roles(),
    )


def commands(
    runner: Path, image: str, scenarios: Path, work: Path, concurrency: int, workers: int | None = None
) -> tuple[list[str], list[str]]:
    """pytest-gaia2 and gaia2-runner on the same scenarios, ``concurrency`` at a time: pytest-gaia2
    as ``-n K``, or with ``workers`` W as ``-n W --gaia2-in-flight K/W``."""
    workers = workers or concurrency
    in_flight = max(1, concurrency // workers)
    ours = [
        sys.executable,
        "-m",
        "pytest",
        *GAIA2_PLUGINS,
        "-p",
        "no:cacheprovider",
        "-q",
        f"--gaia2-scenarios={scenarios.parent.name}",
        f"--gaia2-image={image}",
        "--gaia2-output=out",
        "--gaia2-judge-provider=none",
        "--gaia2-judge-model=none",
        *(["-n", str(workers)] if workers > 1 else []),
        *([f"--gaia2-in-flight={in_flight}"] if in_flight > 1 else []),
    ]
    theirs = [
        str(runner),
        "run-dataset",
        "--dataset",
        str(scenarios),
        "--image",
        image,
        "--runtime",
        "docker",
        "--judge-provider",
        "none",
        "--judge-model",
        "none",
        "--output-dir",
        str(work / "runner-out"),
        *(["--concurrency", str(concurrency)] if concurrency > 1 else []),
    ]
    return ours, theirs


def runner_env() -> dict[str, str]:
    """Both tools as installed: bytecode cached, pytest with only the plugins pytest-gaia2 depends on."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPYCACHEPREFIX=str(CACHE / "pycache"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    return env


def vs_runner(image: str, runs: int, work: Path) -> list[tuple[str, str]]:
    """2 scenarios serial: pytest-gaia2 and gaia2-runner, alternating, medians of whole processes."""
    try:
        runner = install_runner()
    except Skip as exc:
        print(f"benchmark: --vs-runner skipped: {exc}", file=sys.stderr)
        return [("vs gaia2-runner", f"skipped: {exc}")]
    files = copies(work / "vs" / "search", "v", 2)
    env = runner_env()
    ours, theirs = commands(runner, image, files[0].parent, work, 1)
    whole_process(ours, work, env)  # warm: bytecode, image checks, the scenario index
    whole_process(theirs, work, env)
    measured: dict[str, list[tuple[float, float, float]]] = {"ours": [], "theirs": []}
    for _ in range(runs):
        measured["ours"].append(whole_process(ours, work, env))
        shutil.rmtree(work / "runner-out", ignore_errors=True)
        measured["theirs"].append(whole_process(theirs, work, env))
    rows = []
    for index, (what, goal) in enumerate((("wall", 0.7), ("host CPU, user + sys", 1.0), ("peak RSS", 1.2))):
        a = statistics.median(m[index] for m in measured["ours"])
        b = statistics.median(m[index] for m in measured["theirs"])
        unit = "MB" if index == 2 else "s"
        rows.append(
            (
                f"2 scenarios serial, {what}: pytest-gaia2 / gaia2-runner (goal <= {goal})",
                f"{a:.2f} {unit} / {b:.2f} {unit} = {a / b:.2f} x",
            )
        )
    return rows


CONCURRENT_GOALS = {"wall": 0.9, "tree CPU": 1.0, "tree PSS": 1.5, "tree RSS": None}
LONG_RUN_CPU_GOAL = (40, 0.7)
"""From this many scenarios the start-up is spread thinner, and the CPU goal is tighter."""


def ours_name(level: int, workers: int) -> str:
    in_flight = max(1, level // workers)
    processes = f" -n {workers}" if workers > 1 else " (no xdist)"
    return "pytest-gaia2" + processes + (f" --gaia2-in-flight {in_flight}" if in_flight > 1 else "")


def vs_runner_concurrent(
    image: str, runs: int, count: int, levels: list[int], work: Path, workers: list[int] | None = None
) -> list[tuple[str, str]]:
    """``count`` scenarios ``K`` at a time under both tools, side by side, rounds alternating
    (which tool goes first rotates too); medians, the range, and where each tree's CPU and
    memory went by kind of process. ``workers``: pytest-gaia2 once per W, as ``-n W
    --gaia2-in-flight K/W`` (W = K is ``-n K``); by default only ``-n K``."""
    try:
        runner = install_runner()
    except Skip as exc:
        print(f"benchmark: --vs-runner skipped: {exc}", file=sys.stderr)
        return [("vs gaia2-runner", f"skipped: {exc}")]
    files = copies(work / "conc" / "search", "k", count)
    env = runner_env()
    rows: list[tuple[str, str]] = []
    for level in levels:
        variants = {
            ours_name(level, width): commands(runner, image, files[0].parent, work, level, width)[0]
            for width in (workers or [level])
        }
        theirs = commands(runner, image, files[0].parent, work, level)[1]
        for ours in variants.values():
            whole_process(ours, work, env)  # warm: bytecode, image checks, the scenario index
        shutil.rmtree(work / "runner-out", ignore_errors=True)
        whole_process(theirs, work, env)
        order = [*variants.items(), ("gaia2-runner", theirs)]
        measured: dict[str, list[Tree]] = {tool: [] for tool, _ in order}
        for round_ in range(runs):
            shift = round_ % len(order)
            for tool, command in order[shift:] + order[:shift]:
                shutil.rmtree(work / "runner-out", ignore_errors=True)
                measured[tool].append(whole_tree(command, work, env))
                print(f"benchmark: K={level} {tool}: {measured[tool][-1]}", file=sys.stderr)
        label = f"{count} scenarios, K={level}"
        for what, goal in CONCURRENT_GOALS.items():
            if what == "tree CPU" and count >= LONG_RUN_CPU_GOAL[0]:
                goal = LONG_RUN_CPU_GOAL[1]
            field = {"wall": "wall", "tree CPU": "cpu", "tree PSS": "pss_mb", "tree RSS": "rss_mb"}[what]
            unit = "s" if field in ("wall", "cpu") else "MB"
            b = [getattr(tree, field) for tree in measured["gaia2-runner"]]
            for tool in variants:
                a = [getattr(tree, field) for tree in measured[tool]]
                ratio = statistics.median(a) / statistics.median(b)
                name = "pytest-gaia2" if workers is None else tool
                rows.append(
                    (
                        f"{label}, {what}: {name} / gaia2-runner" + (f" (goal <= {goal})" if goal else ""),
                        f"{statistics.median(a):.2f} {unit} ({min(a):.2f}-{max(a):.2f}) / "
                        f"{statistics.median(b):.2f} {unit} ({min(b):.2f}-{max(b):.2f}) = {ratio:.2f} x",
                    )
                )
        for tool, trees in measured.items():
            roles = trees[len(trees) // 2].roles
            text = "; ".join(
                f"{role} x{n}: {cpu:.2f} s CPU, largest {peak:.0f} MB PSS"
                for role, (n, cpu, peak) in sorted(roles.items(), key=lambda kv: -kv[1][1])
            )
            rows.append((f"{label}, {tool} by process (a middle round)", text))
    return rows


# -- idle -----------------------------------------------------------------------------------------


def idle(runs: int, work: Path) -> list[tuple[str, str]]:
    """A project that never uses the plugin: pytest start-up with and without it loaded."""
    project = work / "idle"
    project.mkdir()
    (project / "test_plain.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    with_plugin = median_of(
        runs, lambda: timed([sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"], project)[0]
    )
    without = median_of(
        runs,
        lambda: timed(
            [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "-p", "no:gaia2"], project
        )[0],
    )
    return [
        (
            "idle: pytest --co with the plugin / without (goal <= 1.05)",
            f"{with_plugin:.3f} s / {without:.3f} s = {with_plugin / without:.2f} x",
        )
    ]


def machine() -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return (
        f"{platform.node()}: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load {load} at the end"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image", help="runtime image (default: the reference image, built when missing)")
    parser.add_argument("--runs", type=int, default=5, help="runs per median")
    parser.add_argument("--files", type=int, default=800, help="scenario files for the collection figures")
    parser.add_argument("--size-mb", type=float, default=2.5, help="size of each of those files")
    parser.add_argument("--serial-scenarios", type=int, default=5, help="scenarios in the per-scenario figure")
    parser.add_argument("--throughput-scenarios", type=int, default=16)
    parser.add_argument("--wait", type=float, default=5.0, help="seconds each throughput scenario waits")
    parser.add_argument("--skip", nargs="*", default=[], choices=("scenario", "throughput", "collection", "idle"))
    parser.add_argument("--vs-runner", action="store_true", help="also compare with Meta's gaia2-runner (see above)")
    parser.add_argument(
        "--concurrency",
        type=int,
        nargs="+",
        default=[],
        metavar="K",
        help="with --vs-runner: instead of 2 serial, N scenarios K at a time under both tools",
    )
    parser.add_argument("--vs-scenarios", type=int, default=8, metavar="N", help="scenarios for --concurrency")
    parser.add_argument(
        "--workers",
        type=int,
        nargs="+",
        default=None,
        metavar="W",
        help="with --concurrency K: pytest-gaia2 as -n W --gaia2-in-flight K/W, once per W (W = K: -n K)",
    )
    options = parser.parse_args()
    image = options.image
    if image is None:
        from pytest_gaia2.engine.client import connect
        from pytest_gaia2.reference import build

        image = build.image_name()
        build.ensure_image(connect())
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="gaia2-bench-") as tmp:
        work = Path(tmp)
        if "idle" not in options.skip:
            rows += idle(options.runs, work)
        if "scenario" not in options.skip:
            rows += per_scenario(image, options.runs, options.serial_scenarios, work)
        if "collection" not in options.skip:
            rows += collection(options.files, options.size_mb, options.runs, work)
        if "throughput" not in options.skip:
            rows += throughput(image, options.throughput_scenarios, options.wait, work)
        if options.vs_runner and options.concurrency:
            rows += vs_runner_concurrent(
                image, options.runs, options.vs_scenarios, options.concurrency, work, options.workers
            )
        elif options.vs_runner:
            rows += vs_runner(image, options.runs, work)
    width = max(len(label) for label, _ in rows)
    table = "\n".join(f"{label.ljust(width)}  {value}" for label, value in rows)
    print(table)
    stamp = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    with open(REPO / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as results:
        results.write(
            f"\n## {stamp} — {machine()}\n\nimage `{image}`, medians of {options.runs}\n\n```\n{table}\n```\n"
        )


if __name__ == "__main__":
    main()
