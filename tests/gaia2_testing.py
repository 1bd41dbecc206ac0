"""Test helpers (importable: ``from gaia2_testing import ...``): paths, runs in subprocesses,
the run folder of an output, the run's containers on the real engine, derived images."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import docker  # imported before pytester snapshots sys.modules: a re-import would split requests' classes
import pytest

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "scenarios"
DATA = REPO / "tests" / "data"
SEARCH = ("-m", "search_split", f"--gaia2-scenarios={SHIPPED}")
"""The shipped search split's arguments: four scenarios, one model call each."""
WITH_ALLURE = ("-p", "allure_pytest")
"""allure-pytest's plugin for a pytest a test starts (tests/conftest.py's CHILD_ADDOPTS leaves it out)."""
SEARCH_IDS = sorted(p.stem for p in (SHIPPED / "search").glob("*.json"))
FIRST_OF_EACH_SPLIT = tuple(sorted(split.glob("*.json"))[0] for split in sorted(SHIPPED.iterdir()) if split.is_dir())
"""The first shipped scenario file of each split (five splits, four universes): a run that has
every split at less than half the containers of all the shipped scenarios."""

MATRIX_SHARE = 10
"""Under the ``matrix`` Hypothesis profile (the fast lane on the other supported Pythons), a
property test draws a tenth of its examples: that lane proves the code runs on each Python, and a
derandomized profile would draw the same inputs there as on the main one, where they are explored
in full."""


def examples(count: int) -> int:
    """A property test's ``max_examples``: ``count``, or its share under the ``matrix`` profile."""
    if os.environ.get("HYPOTHESIS_PROFILE") == "matrix":
        return max(5, count // MATRIX_SHARE)
    return count


def session_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A folder this test session's xdist workers share (the session's base temp folder when
    there are none): ``tmp_path_factory`` gives each worker a base of its own."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / name
    folder.mkdir(exist_ok=True)
    return folder


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """``make(folder)`` once per test session, whichever xdist worker asks first (under
    ``--dist worksteal`` a module's tests land on several workers, and a module-scoped run was
    made on each); every caller gets a copy of its own, so tests that write into it (a re-judge,
    a resume) never see each other's files. A ``make`` that raised is tried again by the next."""
    from filelock import FileLock

    shared = session_folder(tmp_path_factory, "made-once") / name
    with FileLock(f"{shared}.lock"):
        if not (shared / ".made").is_file():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            make(shared)
            (shared / ".made").touch()
    copy = tmp_path_factory.mktemp(name)
    shutil.copytree(shared, copy, symlinks=True, dirs_exist_ok=True)
    return copy


def gaia2_containers(run_id: str | None = None) -> list[Any]:
    """Containers on the engine carrying pytest-gaia2's run label (all runs, or one)."""
    client = docker.from_env()
    label = f"org.pytest-gaia2.run={run_id}" if run_id else "org.pytest-gaia2.run"
    try:
        return client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    finally:
        client.close()


def owned_containers(pid: int) -> list[Any]:
    """pytest-gaia2's containers whose owner is process ``pid`` (the engine's owner pid label):
    a command's own, not the other tests' on the same engine at the same time."""
    from pytest_gaia2.engine.client import PID_LABEL

    return [c for c in gaia2_containers() if (c.labels or {}).get(PID_LABEL) == str(pid)]


@dataclass
class Finished:
    """A finished command: its exit status and output, and its process id, which labels every
    container it started."""

    pid: int
    returncode: int
    stdout: str
    stderr: str


def run_command(argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float) -> Finished:
    """``subprocess.run`` that also keeps the process id, to find the command's own containers."""
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                          env=None if env is None else dict(env)) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    return Finished(process.pid, process.returncode, stdout, stderr)


def process_state() -> tuple[object, ...]:
    """What a run inside a process must leave as it found it: the SIGINT and SIGTERM handlers,
    the secrets the store masks, the root logger's handlers."""
    from pytest_gaia2.store import redact

    return (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM), redact.active().values,
            tuple(logging.getLogger().handlers))


NEW_PROCESS_WARNINGS = (("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                        ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                        ("ignore", ResourceWarning, ""))
"""A new interpreter's warning filters (the ``warnings`` module's defaults), which pytest's replace."""


def console(*args: object, cwd: Path | str | None = None, env: Mapping[str, str] | None = None,
            timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """``pytest-gaia2 ARGS`` in this process, as ``subprocess.run(..., capture_output=True,
    text=True)`` would see it, without a new interpreter's start (0.17 CPU-seconds a call).

    stdout is strict UTF-8 as a pipe is (a name no UTF-8 holds raises as it would there), stderr
    backslash-escaped as Python's is; ``sys.exit`` is the exit status; a warning, and a log line
    (no root handler: logging's last resort), land on stderr as in a new process; ``env`` is the whole
    environment and ``cwd`` the working folder of the call. An exception the command lets out
    fails the test with its traceback. A command still running after ``timeout`` seconds fails
    the test (SIGALRM: a read of a FIFO is interrupted). The process is checked left as found
    (signal handlers, working folder, environment, the root logger's handlers, masked secrets).
    Claims about a process (the installed executable, a signal's exit status, bytes on a real
    terminal, containers labelled with its pid) need ``pytest-gaia2`` itself. Inside a pytester
    test, a library the command imports on first use is dropped at the test's end (numpy cannot be
    imported twice): load it before pytester's snapshot (tests/conftest.py's LOADED_ONCE)."""
    from pytest_gaia2.cli.main import main

    argv = [str(arg) for arg in args]
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    root = logging.getLogger()
    before, handlers, environ, folder = process_state(), root.handlers[:], dict(os.environ), os.getcwd()

    def expired(signum: int, frame: object) -> None:
        pytest.fail(f"pytest-gaia2 {' '.join(argv)} still running after {timeout} s", pytrace=False)

    def shown(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: Any = None, line: str | None = None) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    alarm = signal.signal(signal.SIGALRM, expired)
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        os.chdir(folder if cwd is None else cwd)
        expected = (dict(os.environ), os.getcwd())
        root.handlers = []
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            warnings.resetwarnings()
            for action, category, module in reversed(NEW_PROCESS_WARNINGS):
                warnings.filterwarnings(action, category=category, module=module)
            warnings.showwarning = shown
            signal.setitimer(signal.ITIMER_REAL, timeout)
            try:
                code = main(argv)
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
                if isinstance(exit_.code, str):
                    print(exit_.code, file=sys.stderr)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        left = (dict(os.environ), os.getcwd(), root.handlers[:], signal.getsignal(signal.SIGALRM))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, alarm)
        root.handlers = handlers
        os.chdir(folder)
        os.environ.clear()
        os.environ.update(environ)
    assert left == (*expected, [], expired), "the command left its environment, cwd, logging or SIGALRM changed"
    assert process_state() == before, "the console command left its process changed (signal handlers, secrets, logging)"
    out.flush()
    err.flush()
    return subprocess.CompletedProcess(["pytest-gaia2", *argv], code, out.buffer.getvalue().decode("utf-8"),
                                       err.buffer.getvalue().decode("utf-8"))


def engine_answers() -> str | None:
    """None when a container engine answers, else why not (checked once per process)."""
    global _ENGINE_PROBLEM
    if _ENGINE_PROBLEM is None:
        try:
            client = docker.from_env(timeout=10)
            client.ping()
            client.close()
            _ENGINE_PROBLEM = ""
        except Exception as exc:  # noqa: BLE001 - any failure means: no engine to test against
            _ENGINE_PROBLEM = f"{type(exc).__name__}: {exc}"[:200]
    return _ENGINE_PROBLEM or None


_ENGINE_PROBLEM: str | None = None


def run_folder(output: Path) -> Path:
    """The run folder a run wrote under ``--gaia2-output`` (``latest`` points at the newest)."""
    latest = output / "latest"
    if latest.is_symlink():
        return output / os.readlink(latest)
    if latest.is_file():
        return output / latest.read_text(encoding="utf-8").strip()
    return output


def run_folders(output: Path) -> list[Path]:
    """Every run folder under ``output``, oldest first."""
    return sorted(path for path in output.iterdir() if (path / "run_config.json").is_file() and not path.is_symlink())


def session_prefix(text: str) -> str:
    """The 8-character session id a run prints in its header (``gaia2: session 1a2b3c4d, ...``)."""
    match = re.search(r"gaia2: session ([0-9a-f]{8})", text)
    assert match, f"no session in:\n{text}"
    return match.group(1)


def session_containers(prefix: str) -> list[Any]:
    """Containers whose run label (the session id) starts with ``prefix``."""
    return [c for c in gaia2_containers() if (c.labels or {}).get("org.pytest-gaia2.run", "").startswith(prefix)]


def run_id_of(output: Path) -> str:
    """The newest session's id in the newest run under ``output`` (its containers carry it as
    their run label); a resumed run adds a session each time."""
    lines = (run_folder(output) / "sessions.jsonl").read_text(encoding="utf-8").splitlines()
    return json.loads(lines[-1])["session_id"]


def file_sums(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root``: what a later run must leave exactly as it was."""
    import hashlib

    return {path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file() and not path.is_symlink()}


def results_of(output: Path) -> list[dict[str, Any]]:
    lines = (run_folder(output) / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def run_pytest(path: Path, *args: str, output: str = "out", timeout: float = 600.0) -> pytest.RunResult:
    """``run_gaia2`` in a folder of one's own, for a module-scoped run that several tests read."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--gaia2-output={output}", *args],
        cwd=path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout,
    )
    return pytest.RunResult(done.returncode, done.stdout.splitlines(), done.stderr.splitlines(),
                            time.monotonic() - started)


PEAK_RSS_PROBE = (
    "import pytest, re, resource, sys\n"
    "status = pytest.main(sys.argv[1:])\n"
    "try:\n"
    "    kib = int(re.search(r'VmHWM:\\s*(\\d+)', open('/proc/self/status').read()).group(1))\n"
    "except (OSError, AttributeError):\n"
    "    kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
    "print('PEAK_RSS_MB', kib // 1024)\n"
    "sys.exit(int(status))\n"
)
"""``python -c`` code running pytest, then printing its own peak RSS: VmHWM, the peak of this
process's own memory. ``ru_maxrss`` is not that on Linux: a child started by vfork inherits the
parent's high-water mark at exec, so a run started from a 500 MB xdist worker read 504 MB."""


def peak_rss_mb(stdout: str) -> int:
    """The peak a :data:`PEAK_RSS_PROBE` run printed."""
    assert "PEAK_RSS_MB" in stdout, stdout
    return int(stdout.rsplit("PEAK_RSS_MB", 1)[1].split()[0])


KEY_VARIABLES = (
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY",
    "OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY", "API_KEY", "GAIA2_JUDGE_API_KEY",
)
"""Every variable gaia2-cli reads a key from (contract section 1.3)."""
HOST_SETTINGS = (
    *KEY_VARIABLES, "GAIA2_JUDGE_PROVIDER", "GAIA2_JUDGE_MODEL", "GAIA2_JUDGE_BASE_URL", "BASE_URL",
    "GAIA2_CA_BUNDLE", "GAIA2_PROXY_RELAY_URL",
    "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY",
)


def derived_image(tag: str, *lines: str, files: Mapping[str, bytes] | None = None) -> str:
    """Build ``tag`` FROM the reference image (built first when needed) plus Dockerfile ``lines``.

    Built rather than tagged, so the image has its own id and a concurrent rebuild of the
    reference image cannot untag it mid-test; unchanged, it comes from the build cache.
    ``files`` (name -> bytes) are in the build context for ``COPY``.
    """
    from filelock import FileLock

    from pytest_gaia2.engine.archive import tar_files
    from pytest_gaia2.reference import build
    from pytest_gaia2.run.preflight import IMAGE_BUILD_LOCK

    dockerfile = "\n".join([f"FROM {build.image_name()}", f"LABEL org.pytest-gaia2-test.image={tag}", *lines])
    context = tar_files([("Dockerfile", f"{dockerfile}\n".encode(), 0o644),
                         *((name, content, 0o755) for name, content in (files or {}).items())])
    client = docker.from_env()
    try:
        with FileLock(str(IMAGE_BUILD_LOCK)):
            build.ensure_image(client, log=lambda line: None)
            image, _ = client.images.build(fileobj=io.BytesIO(context), custom_context=True, tag=tag,
                                           rm=True, forcerm=True, pull=False)
        return str(image.id)
    finally:
        client.close()


class _EventRecorder:
    """Every container event of the engine from a live stream, kept in this process: the engine
    itself keeps only its last 256 events, which the other xdist workers' runs push out within
    minutes, so a query after a long run missed the run's first events."""

    def __init__(self, engine: str | None) -> None:
        self.events: list[dict[str, Any]] = []
        self._client = _client_of(engine)
        self._stream = self._client.events(decode=True, filters={"type": "container"})
        self.started = time.time()  # the engine answered: subscribed
        threading.Thread(target=self._read, name="gaia2-test-engine-events", daemon=True).start()

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the engine went away: later queries ask it directly
            for event in self._stream:
                self.events.append(event)
        self.started = float("inf")

    def since(self, since: float, **filters: str) -> list[dict[str, Any]]:
        """The events from ``since`` until now matching ``filters`` as the engine matches them."""
        time.sleep(1)  # events of the last moment arrive
        return [event for event in list(self.events) if event.get("time", 0) >= int(since) and _matches(event, filters)]


def _matches(event: dict[str, Any], filters: Mapping[str, str]) -> bool:
    """The engine's filters ``label`` (key or key=value), ``event`` and ``container`` (id or name)."""
    actor = event.get("Actor") or {}
    attributes = actor.get("Attributes") or {}
    for name, wanted in filters.items():
        if name == "label":
            key, has_value, value = wanted.partition("=")
            matched = key in attributes and (not has_value or attributes[key] == value)
        elif name == "event":
            matched = str(event.get("Action", "")).split(":")[0] == wanted
        elif name == "container":
            matched = wanted in (actor.get("ID"), attributes.get("name"))
        else:
            raise ValueError(f"no such event filter here: {name}")
        if not matched:
            return False
    return True


_RECORDERS: dict[str | None, _EventRecorder] = {}
"""Each engine's recording by address (None: the environment's engine)."""


def _client_of(engine: str | None) -> docker.DockerClient:
    return docker.from_env() if engine is None else docker.DockerClient(base_url=engine)


def record_engine_events(engine: str | None = None) -> None:
    """Start keeping an engine's container events in this process (before any test starts a run
    on it); ``engine`` is its address, None the environment's."""
    if engine not in _RECORDERS:
        _RECORDERS[engine] = _EventRecorder(engine)


def engine_events(since: float, *, engine: str | None = None, **filters: str) -> list[dict[str, Any]]:
    """An engine's container events from ``since`` until now matching ``filters`` (``label=``,
    ``event=``, ``container=``): each names its container and carries every label,
    even after removal. From this process's recording when it covers ``since``, else the engine's."""
    recorder = _RECORDERS.get(engine)
    if recorder is not None and recorder.started <= since:
        return recorder.since(since, **filters)
    client = _client_of(engine)
    try:
        return list(client.events(since=int(since), until=int(time.time()) + 1, decode=True,
                                  filters={"type": "container", **filters}))
    finally:
        client.close()


REAPING_LOCK = Path(tempfile.gettempdir()) / "pytest-gaia2-tests-reaping.lock"
"""Held by tests whose runs reap with a short grace age and by the test that plants orphans,
so one never reaps the other's planted containers."""


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (xdist workers of a controller), from /proc."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text(encoding="utf-8", errors="replace").rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return sorted(children)


class BackgroundRun:
    """A pytest-gaia2 run in its own process group, so a test can signal it as a terminal would."""

    def __init__(self, process: subprocess.Popen[bytes], output: Path, log: Path) -> None:
        self.process = process
        self.output = output
        self.log = log

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def _until(self, what: str, timeout: float, check: Callable[[], Any]) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = check()
            if value:
                return value
            if self.process.poll() is not None:
                break
            time.sleep(0.3)
        raise AssertionError(f"gave up waiting for {what} (exit code {self.process.poll()}):\n{self.text()}")

    def run_id(self, timeout: float = 120.0) -> str:
        """The run id, once pre-flight has written run_config.json and the session's line."""
        return self._until("run_config.json and sessions.jsonl", timeout,
                           lambda: (run_folder(self.output) / "sessions.jsonl").is_file() and run_id_of(self.output))

    def wait_for_containers(self, count: int, timeout: float = 120.0) -> list[Any]:
        """The run's containers once at least ``count`` exist."""
        run_id = self.run_id(timeout)

        def enough() -> list[Any] | None:
            found = gaia2_containers(run_id)
            return found if len(found) >= count else None

        return self._until(f"{count} container(s)", timeout, enough)

    def results(self) -> list[dict[str, Any]]:
        """The records written so far (none before the first verdict)."""
        return results_of(self.output) if (run_folder(self.output) / "results.jsonl").is_file() else []

    def interrupt_when(self, what: str, ready: Callable[[], bool], timeout: float = 120.0) -> int:
        """Once ``ready()``, SIGINT to the process group (what a terminal's Ctrl-C does); the exit code."""
        self._until(what, timeout, ready)
        os.killpg(self.process.pid, signal.SIGINT)
        return self.wait(90)

    def wait(self, timeout: float = 180.0) -> int:
        """The exit code; a run still alive after ``timeout`` fails the test with its log and,
        from the faulthandler ``start_gaia2`` enables, where each of its threads was stuck."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGABRT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(10)
            raise AssertionError(f"the run did not end within {timeout:g} s:\n{self.text()}") from None


def make_dataset_repo(root: Path, configs: Mapping[str, list[tuple[object, object]]],
                      columns: tuple[str, str] = ("scenario_id", "scenario")) -> Path:
    """A Hugging Face dataset repository folder as the hub stores one (``<config>/test-*.parquet``
    and a README whose front matter declares the configs), for ``datasets.load_dataset(<folder>)``:
    these machines cannot reach the hub."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    front_matter = ["---", "configs:"]
    for config, rows in configs.items():
        (root / config).mkdir(parents=True)
        table = pa.table({columns[0]: [r[0] for r in rows], columns[1]: [r[1] for r in rows]})
        pq.write_table(table, root / config / "test-00000-of-00001.parquet")
        front_matter += [
            f"- config_name: {config}",
            "  data_files:",
            "  - split: test",
            f"    path: {config}/test-*.parquet",
        ]
    (root / "README.md").write_text("\n".join(front_matter + ["---", "# tiny gaia2", ""]), encoding="utf-8")
    return root


def scenario_variant(root: Path, source: Path, *, scenario_id: str, duration: float | None = None,
                     answer_after: float | None = None) -> Path:
    """A copy of ``source`` as ``<root>/search/<scenario_id>.json``: ``duration`` replaces the declared
    one (None: no duration at all); ``answer_after`` makes the oracle answer that many sim seconds late.
    Returns ``root``, the folder to pass to ``--gaia2-scenarios``."""
    data = json.loads(source.read_text(encoding="utf-8"))
    definition = data["metadata"]["definition"]
    definition["scenario_id"] = scenario_id
    definition.pop("duration", None)
    if duration is not None:
        definition["duration"] = duration
    if answer_after is not None:
        for event in data["events"]:
            if event["event_type"] == "AGENT":
                event["event_relative_time"] = answer_after
    path = root / "search" / f"{scenario_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return root


def module_from_file(path: Path) -> ModuleType:
    """A module loaded from its file (a script, a benchmark, a program of the reference image:
    none is in a package), registered under its file's stem so its own dataclasses and pickles
    find it; loaded once."""
    name = path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def reference_module(name: str) -> ModuleType:
    """A module of the reference image (standard library only), loaded from its file by name,
    as it is imported inside the container."""
    return module_from_file(REPO / "pytest_gaia2" / "reference" / f"{name}.py")


def judge_files(folder: Path, success: bool | None, actions: int = 1) -> None:
    """The judge's files of a judged attempt (an error: none), with ``actions`` agent actions."""
    folder.mkdir(parents=True, exist_ok=True)
    if success is None:
        return
    judgment = {"success": success, "failure_reason": "" if success else "stored failure"}
    status = {"status": "complete" if success else "stopped", "turn": 1, "nb_turns": 1, "judgment": judgment}
    answer = {"app": "AgentUserInterface", "fn": "send_message_to_user", "args": {"content": "stored"}}
    (folder / "daemon_status.json").write_text(json.dumps(status), encoding="utf-8")
    (folder / "daemon_judgments.jsonl").write_text(json.dumps({"turn": 0, **judgment}) + "\n", encoding="utf-8")
    (folder / "events.jsonl").write_text("".join(json.dumps(answer) + "\n" for _ in range(actions)), encoding="utf-8")


def attempt_record(scenario_id: str, success: bool | None, **fields: Any) -> Any:
    """An AttemptRecord of ``scenario_id`` with the fields a test does not care about filled in
    (a judged pass or fail, or an error), ``fields`` on top: one builder for tests and benchmarks."""
    from pytest_gaia2.store.record import AttemptRecord, outcome_of

    defaults: dict[str, Any] = {
        "reward": None, "num_agent_events": 0, "agent_response": "", "judged_in_container": success is not None,
        "timed_out": False, "timeout_seconds": 600.0, "daemon_status": None, "scenario_file": "",
        "failure_reasons": ["judge said no"] if success is False else [], "error": "boom" if success is None else None,
        "split": "search", "outcome": outcome_of(success),
    }
    return AttemptRecord(scenario_id=scenario_id, success=success, **{**defaults, **fields})


def stored_record(source: Path, success: bool, repeat: int = 1, repeats: int = 1) -> dict[str, Any]:
    """The result.json of a judged attempt at the scenario file ``source`` (search split), run
    ``repeat`` of ``repeats``, passed or failed: what :func:`stored_verdict` stores."""
    return {
        "scenario_id": source.stem,
        "split": "search",
        "run": repeat,
        "repeat": repeat,
        "repeats": repeats,
        "attempt": 1,
        "universe": re.search(r"universe_\d+", source.stem).group(0),  # type: ignore[union-attr]
        "success": success,
        "outcome": "passed" if success else "failed",
        "reused": False,
        "error": None,
        "error_category": None,
        "failure_reasons": [] if success else ["stored failure"],
        "wall_time_s": 3.0,
        "num_agent_events": 2,
    }


def stored_verdict(folder: Path, record: dict[str, Any]) -> None:
    """A judged attempt as a finished run leaves it: result.json and, beside it, the judge's files
    that say the same (resume reuses a verdict only when they do) and one agent action."""
    judge_files(folder, record.get("success") is True)
    (folder / "result.json").write_text(json.dumps(record), encoding="utf-8")


@contextmanager
def reference_tools(state: Path, faketime: Path, notified: bool = False) -> Iterator[Any]:
    """The reference adapter's tool socket over ``state`` (a thread here): the agent's client,
    until the block ends. The socket sits in a short folder of its own (AF_UNIX paths are short)."""
    tools = reference_module("gaia2_ref_tools")
    stop = threading.Event()
    flag = threading.Event()
    if notified:
        flag.set()
    with tempfile.TemporaryDirectory(prefix="g2t-", dir="/tmp") as folder:
        path = Path(folder) / "s"
        thread = threading.Thread(target=tools.ToolServer(state, faketime, flag).serve, args=(path, stop), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        try:
            yield tools.ToolClient(path)
        finally:
            stop.set()
            thread.join(10)


@contextmanager
def http_server(host: str, body: bytes, asked: list[str] | None = None) -> Iterator[int]:
    """A small HTTP server on ``host`` that answers every GET with ``body`` (and notes each path
    in ``asked``): the port, until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            if asked is not None:
                asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - keep test output clean
            pass

    server = ThreadingHTTPServer((host, 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def raw_controls(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey (C0 but newline and tab, DEL, C1)."""
    return [char for char in text if ord(char) < 32 and char not in "\n\t" or 0x7F <= ord(char) <= 0x9F]
