"""Fixtures for the test suite, and the ``docker`` marker: tests that need a container engine
skip with the reason when none answers, instead of failing."""

from __future__ import annotations

import importlib
import os
import pkgutil
import signal
import subprocess
import sys
import sysconfig
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gaia2_testing import (
    HOST_SETTINGS,
    BackgroundRun,
    engine_answers,
    gaia2_containers,
    http_server,
    process_state,
    record_engine_events,
    run_folder,
    run_id_of,
    session_folder,
)
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

import pytest_gaia2

pytest_plugins = ["pytester"]
TESTS = Path(__file__).resolve().parent
ENGINE_RUNS = {"run_gaia2", "run_gaia2_inprocess", "start_gaia2"}
"""Fixtures that run the plugin past collection: pre-flight needs the engine."""


def _cache_bytecode() -> None:
    """With PYTHONDONTWRITEBYTECODE set (as on the CI machine), every pytest the suite starts
    (pytester subprocesses, xdist workers, background runs) compiled the plugin and its
    dependencies and rewrote their asserts again: about a second of CPU each, hundreds of times.
    Their bytecode goes to a cache of the user's own instead, never into the source tree."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-gaia2-tests" / "pycache"
    try:
        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return  # no cache of one's own: compile as before
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    os.environ["PYTHONPYCACHEPREFIX"] = str(cache)
    sys.pycache_prefix, sys.dont_write_bytecode = str(cache), False


_cache_bytecode()

hypothesis_settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
"""CI's: every example drawn from the test itself (its code's digest), so a clean clone of a commit
draws the same examples each run, red only when the code is (no check that times a busy
machine); what one found is kept as @example."""
hypothesis_settings.register_profile("matrix", hypothesis_settings.get_profile("ci"), max_examples=10)
"""The other supported Pythons' (.ci/run's matrix): CI's, with a tenth of the examples (and
``gaia2_testing.examples`` scales the tests that set their own): on those Pythons the lane proves
the code runs; the inputs are explored on the main one."""
hypothesis_settings.register_profile("dev")
"""A developer's: new random examples each run (and the failures found before, from .hypothesis/)."""
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))

CHILD_ADDOPTS = ("-p no:hypothesispytest -p no:anyio -p no:platformdirs -p no:xdist.looponfail "
                 "-p no:allure_pytest -p no:rerunfailures")
"""Plugins no pytest this suite starts uses: Hypothesis's imports all of Hypothesis at the end of
every session (about 0.9 s of CPU) and anyio's imports trio (about 0.3 s), in each of the hundreds
of runs the engine tests start and in their xdist workers, on a 2-core machine already busy with
containers. A bare child pytest costs 0.4 s of CPU instead of 1.5 s; platformdirs' fixtures and
xdist's ``--looponfail`` mode take another 0.035 s (0.465 -> 0.430 s for a collection), and
allure-pytest's and pytest-rerunfailures' 0.075 s more (the latter starts a socket server in every
session when xdist is installed): a test of either asks for it with ``-p`` (``WITH_ALLURE``,
``-p rerunfailures``), as a run without them is what the others are about."""


def _quiet_children(config: pytest.Config) -> None:
    """Every pytest started from here on gets CHILD_ADDOPTS, except this session's own xdist
    workers (started after this hook by the controller, and running the Hypothesis tests)."""
    if config.getoption("numprocesses", None) and not hasattr(config, "workerinput"):
        return
    os.environ["PYTEST_ADDOPTS"] = f"{os.environ.get('PYTEST_ADDOPTS', '')} {CHILD_ADDOPTS}".strip()


class SlowFirstInEachBlock:
    """Under ``--dist worksteal`` each xdist worker starts on one contiguous block of the
    collection (xdist splits it evenly) and idle workers steal from the end of the others'
    blocks. The slow tests are dealt out in turn to the head of each block, so every worker
    starts on its share of them and what is left at the end is short. (Sorting them all first
    put them in the first worker's block, run one after another: a 90-second tail on one worker
    while the others were done.)"""

    @pytest.hookimpl(trylast=True)  # after -m and -k have deselected
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        slow = [item for item in items if item.get_closest_marker("slow")]
        rest = [item for item in items if not item.get_closest_marker("slow")]
        ordered: list[pytest.Item] = []
        left = len(items)
        for index in range(workers):
            size = left // (workers - index)  # xdist's even split of what is left
            head = slow[index::workers]
            take = max(0, size - len(head))
            ordered += head + rest[:take]
            rest = rest[take:]
            left -= size
        items[:] = ordered + rest


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(SlowFirstInEachBlock(), "gaia2-suite-slow-first")
    config.addinivalue_line("markers", "docker: needs a running container engine (skipped with the reason otherwise)")
    config.addinivalue_line(
        "markers", "slow: about half a minute or more on the CI machine (waiting on containers by design, or several runs); "
        "such tests start first, so none is left running alone at the end (see SlowFirstInEachBlock)"
    )
    config.addinivalue_line(
        "markers", "main_lane: a claim proven by volume (a simulation's thousands of draws, a 64 MiB file), run on CI's "
        "main Python only: the other Pythons' share (.ci/run) runs the same code through the other unit tests"
    )
    _quiet_children(config)
    _load_the_plugin()


IN_CONTAINERS = "pytest_gaia2.reference.gaia2_ref_"
"""The reference image's own programs (they import each other as top-level modules, inside it)."""
NOT_INSTALLED = {"pytest_gaia2.run.judges.gaia2_cli_rejudge": "gaia2_cli"}
"""Modules whose library only an image has, and that library's name."""


def _load_the_plugin() -> None:
    """Every module of the plugin, imported before any test: pytester's in-process runs drop the
    modules a run imported (its snapshot of ``sys.modules``), so each run imported about fifty of
    them again, 0.1 s of CPU of the 0.15 a usage error costs, hundreds of times. Loaded up front,
    not on first use: a module loaded after an in-process run had imported and dropped it is a
    second copy, and the plugin already registered holds the first (a -k/-m sample in a later run
    came out unsampled: test_selection_plugin.py, in file order). Runs in one process also share
    the modules' state from here on, as two ``pytest.main`` calls in one program do."""
    for module in pkgutil.walk_packages(pytest_gaia2.__path__, "pytest_gaia2."):
        if module.name.startswith(IN_CONTAINERS) or module.name.endswith(".__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except ModuleNotFoundError as exc:
            if NOT_INSTALLED.get(module.name) != exc.name:
                raise


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
             tmp_path_factory: pytest.TempPathFactory) -> pytest.Pytester:
    """pytester's own, with CHILD_ADDOPTS back for its runs (it clears PYTEST_ADDOPTS and puts
    the earlier value back at its teardown), and one pytest-gaia2 cache for the session's runs:
    pytester's HOME is the test's folder, so each run probed the image in two helper containers
    again (a test about that cache sets XDG_CACHE_HOME of its own)."""
    os.environ["PYTEST_ADDOPTS"] = CHILD_ADDOPTS
    monkeypatch.setenv("XDG_CACHE_HOME", str(session_folder(tmp_path_factory, "xdg-cache")))
    return pytester


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Integration and hostile-container tests need the engine; so do tests marked ``docker`` and
    tests that run the plugin past collection (``run_gaia2``, ``run_gaia2_inprocess``,
    ``start_gaia2``): its pre-flight asks the engine, even when every verdict is stored."""
    for item in items:
        if (
            "integration" in item.path.parts
            or "hostile" in item.path.parts
            or ENGINE_RUNS & set(getattr(item, "fixturenames", ()))
        ):
            item.add_marker(pytest.mark.docker)
    needing = [item for item in items if item.get_closest_marker("docker")]
    for item in needing:
        if "unit" in item.path.relative_to(TESTS).parts[:1]:
            raise pytest.UsageError(f"{item.nodeid} needs the engine: tests/unit is the engine-free lane (CI's engine "
                                    "tests collect only tests/integration, tests/hostile and tests/plugin)")
    if needing:
        problem = engine_answers()
        if problem:
            for item in needing:
                item.add_marker(pytest.mark.skip(reason=f"no container engine: {problem}"))
        else:
            record_engine_events()


@pytest.fixture
def run_gaia2(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """Run pytest with the plugin in a subprocess, output into the pytester folder."""

    def run(*args: str, output: str = "out") -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", f"--gaia2-output={output}", *args)

    return run


@pytest.fixture
def run_gaia2_inprocess(pytester: pytest.Pytester, loaded_once: None) -> Callable[..., pytest.RunResult]:
    """``run_gaia2`` in this process (under ``-n`` its xdist controller), for runs that start no
    scenario container (stored verdicts reported again, a refusal at pre-flight): a child pytest
    costs about 0.4 s of CPU just to start. A run that is interrupted, or one whose point is a
    process of its own (signals, exit code, environment, terminal bytes), takes ``run_gaia2``.
    ``cwd``: a folder to run in other than the pytester folder (a project of the test's own)."""

    def run(*args: str, output: str = "out", cwd: Path | None = None) -> pytest.RunResult:
        watch, before = NewLibraries(), process_state()
        with pytest.MonkeyPatch.context() as patch:
            patch.chdir(cwd or pytester.path)
            result = pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--basetemp={pytester.path / 'basetemp'}",
                                                  f"--gaia2-output={output}", *args, plugins=[watch])
        assert not watch.new, f"the run imported {sorted(watch.new)}: add them to LOADED_ONCE (tests/conftest.py)"
        assert process_state() == before, "the run left its process changed (signal handlers, secrets, logging)"
        return result

    return run


LOADED_ONCE = (
    "filelock", "jinja2", "numpy", "scipy.special", "xdist.dsession",
    "matplotlib.backends.backend_agg", "matplotlib.figure", "matplotlib.ticker",
    "PIL.BmpImagePlugin", "PIL.GifImagePlugin", "PIL.JpegImagePlugin", "PIL.PpmImagePlugin",  # saving a PNG
)
"""The libraries a run imports on first use, imported in this process before pytester's
snapshot of ``sys.modules`` (an in-process run drops every module it imported): a second import
fails (numpy's core, Cython's modules), registers its fork handlers again (filelock) or splits its
classes from those of the modules kept (docker's from requests'). The plugin's own modules are
loaded at the session's start (:func:`_load_the_plugin`)."""


@pytest.fixture(scope="session")
def loaded_once() -> None:
    """:data:`LOADED_ONCE`, once per process (a session fixture is set up before ``pytester``)."""
    for name in LOADED_ONCE:
        importlib.import_module(name)


class NewLibraries:
    """The installed libraries (site-packages) a run imported that this process had not."""

    def __init__(self) -> None:
        self.before = set(sys.modules)
        self.new: set[str] = set()

    def pytest_unconfigure(self) -> None:
        libraries = {sysconfig.get_paths()[key] for key in ("purelib", "platlib")}
        self.new = {name for name in set(sys.modules) - self.before
                    if str(getattr(sys.modules[name], "__file__", None) or "").startswith(tuple(libraries))}


@pytest.fixture
def check_gaia2(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """Run pytest with the plugin in this process, for runs that end at option parsing or
    collection (no pre-flight, no engine): a subprocess would only add a second of start-up."""

    def run(*args: str, output: str = "out") -> pytest.RunResult:
        return pytester.runpytest_inprocess("-p", "no:cacheprovider", f"--gaia2-output={output}", *args)

    return run


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """No key, judge or proxy setting of the developer's shell reaches the runs a test starts."""
    for name in HOST_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def host_server() -> Iterator[tuple[int, str]]:
    """An HTTP server on every host interface, as a local model proxy would be: (port, the
    token every GET answers), so a container can prove it reached this very server."""
    token = uuid.uuid4().hex
    with http_server("0.0.0.0", token.encode()) as port:
        yield port, token


@pytest.fixture
def start_gaia2(pytester: pytest.Pytester) -> Iterator[Callable[..., BackgroundRun]]:
    """Start pytest with the plugin in the background; whatever a failed test leaves running
    is killed at teardown and its containers removed, so no test leaks into the next."""
    runs: list[BackgroundRun] = []

    def start(*args: str, output: str = "out") -> BackgroundRun:
        log = pytester.path / f"{output}.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--gaia2-output={output}", *args],
                cwd=pytester.path, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, env={**os.environ, "PYTHONFAULTHANDLER": "1"},
            )
        runs.append(BackgroundRun(process, pytester.path / output, log))
        return runs[-1]

    yield start
    for run in runs:
        if run.process.poll() is None:
            os.killpg(run.process.pid, signal.SIGKILL)
            run.process.wait()
        if (run_folder(run.output) / "run_config.json").is_file():
            for container in gaia2_containers(run_id_of(run.output)):
                container.remove(force=True)
