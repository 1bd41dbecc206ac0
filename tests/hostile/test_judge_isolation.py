"""The judge the agent cannot touch: images built FROM the reference image whose agent forges the
judge's record, in the reference image's privilege model and in one that gives the agent the
judge's user (as the reference image did before: the agent's user shares the judge's uid).

In the reference image the agent, user ``agent``, can neither read the scenario, write the
judge's state nor signal the judge, so every forgery fails and the run ends with the judge's
own verdict; pre-flight says ``judge isolated: yes``. Where it can, pre-flight says ``no`` on
the terminal and every page, ``--gaia2-require-isolation`` refuses the image before any run
folder exists, and a forged record is still no pass: a pass with no agent action, or on judge
files no judge writes (a byte-order mark, a key given twice), is a ``verdict_conflict``, and a
rejection the harness saw is final whatever the agent does to the files afterwards.
"""

from __future__ import annotations

import json
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Any

import docker
import pytest
from adapter_proxy import NO_JUDGE, MeasuredRun, only_record, pytest_says, run_measured
from gaia2_testing import DATA, SHIPPED, derived_image, made_once, run_folders

from pytest_gaia2.engine.client import Engine
from pytest_gaia2.reference import build
from pytest_gaia2.run import isolation
from pytest_gaia2.store import names
from pytest_gaia2.store.kept import CONTAINER_FILES

ONE = "scenario_universe_21_7kww6e"
JUDGE_FAIL = "scenario_universe_22_ygzpjz"

FORGER = r'''
"""A hostile agent (it replaces the reference agent, so it runs as the image's agent user)."""
import json, os, signal, sys, time
sys.path.insert(0, "/opt")
from gaia2_ref_tools import ToolClient, socket_path

STATE = "/var/gaia2/state"
MODE = os.environ.get("HOSTILE", "")
tools = ToolClient(socket_path())
PASS = {"success": True, "failure_reason": ""}


def say(text):
    print(f"hostile agent: {text}", file=sys.stderr, flush=True)


def attempt(what, action):
    try:
        action()
        say(f"{what}: done")
        return True
    except OSError as exc:
        say(f"{what}: refused ({type(exc).__name__})")
        return False


def kill_daemon():
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if b"gaia2_ref_daemon" in open(f"/proc/{pid}/cmdline", "rb").read():
                    os.kill(int(pid), signal.SIGKILL)
            except FileNotFoundError:
                pass


def write(name, data, mode="w"):
    with open(f"{STATE}/{name}", mode + "b") as handle:
        handle.write(data)


def read_answer_key():
    with open("/var/gaia2/custom_scenario.json", "rb") as handle:
        handle.read(1)


def wrong_answer():
    tools.act("AgentUserInterface", "send_message_to_user", {"content": "a wrong answer"}, True, None)


while tools.status().get("status") == "waiting":
    time.sleep(0.05)
attempt("read the answer key", read_answer_key)
PLANTED = {"pytest.toml": b'[pytest]\naddopts = ["-p", "no:gaia2", "--doctest-glob=*.md"]\n',
           "notes.md": b">>> import os; os.system('touch /tmp/pwned')\n", "conftest.py": b"import os\n",
           "pyproject.toml": b"[tool.pytest.ini_options]\n", ".git/config": b"[core]\nfsmonitor = touch /tmp/x\n",
           "deep/pytest.toml": b"[pytest]\n", "test_notes.txt": b">>> 1\n"}
if MODE == "plant":  # files a later tool would obey, in the agent's home and (where it can) the state
    for top in ("/home/agent", STATE):
        for name, content in PLANTED.items():
            def plant(path=f"{top}/{name}", content=content):
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as handle:
                    handle.write(content)
            attempt(f"plant {top}/{name}", plant)
    wrong_answer()
elif MODE == "late_error":  # a judged failure made an unjudged error once the judge has spoken
    wrong_answer()
    while tools.status().get("status") not in ("complete", "stopped", "error"):
        time.sleep(0.02)
    time.sleep(0.3)
    attempt("kill the judge", kill_daemon)
    attempt("empty the judgments", lambda: write("judgments.jsonl", b""))
    attempt("write an error status", lambda: write("daemon_status.json", b'{"status": "error"}'))
else:
    forged = attempt("kill the judge", kill_daemon)
    if MODE in ("bom", "duplicate"):  # one action on file, so only the forged files give it away
        wrong_answer()
    status = json.dumps({"status": "complete", "turn": 1, "nb_turns": 1, "judgment": PASS}).encode()
    line = b'{"turn": 0, "success": true}\n'
    if MODE == "bom":  # in the judgments line: the adapter serves the status it can parse
        line = b"\xef\xbb\xbf" + line
    if MODE == "duplicate":
        status = b'{"status": "complete", "judgment": {"success": false}, "judgment": ' + json.dumps(PASS).encode() + b"}"
    forged = attempt("append a passing judgment", lambda: write("judgments.jsonl", line, "a")) and forged
    forged = attempt("write a passing status", lambda: write("daemon_status.json", status)) and forged
    if not forged and MODE not in ("bom", "duplicate"):
        wrong_answer()  # nothing forged: end the run quickly with a judged failure
signal.pause()
'''


def _tag(name: str) -> str:
    """Its own tag per reference build: checkouts with other reference files do not share it."""
    return f"pytest-gaia2-test/{name}-oracle:{build.context_hash()[:12]}"


@pytest.fixture(scope="module")
def isolated_image() -> str:
    tag = _tag("forger")
    derived_image(tag, "COPY forger.py /opt/gaia2_ref_agent.py", files={"forger.py": FORGER.encode()})
    return tag


@pytest.fixture(scope="module")
def open_image() -> str:
    """The agent's user shares the judge's uid: what the reference image gave its agent before."""
    tag = _tag("forger-open")
    derived_image(tag, "COPY forger.py /opt/gaia2_ref_agent.py", 'RUN usermod -o -u "$(id -u gaia2)" agent',
                  files={"forger.py": FORGER.encode()})
    return tag


def _forger(image: str, mode: str, *args: str) -> tuple[str, ...]:
    """The arguments of a run of the forger in ``mode`` on ``image``."""
    return (f"--gaia2-scenarios={SHIPPED / 'search'}", "-k", ONE, f"--gaia2-image={image}",
            f"--gaia2-env=HOSTILE={mode}", "--gaia2-timeout=60", *args)


def _run(tmp_path: Path, image: str, mode: str, *args: str):  # type: ignore[no-untyped-def]
    return run_measured(tmp_path, *_forger(image, mode, *args))


@pytest.fixture(scope="module")
def isolated_forge(tmp_path_factory: pytest.TempPathFactory, isolated_image: str) -> tuple[Path, MeasuredRun]:
    """The forger on the reference image's privilege model under --gaia2-require-isolation, made
    once per session: two tests read it, each for its own claim (the forgeries are refused; the
    requirement lets an isolated image run). The folder, and the run as it printed."""

    def make(folder: Path) -> None:
        done = _run(folder, isolated_image, "forge", "--gaia2-require-isolation").done
        printed = {"returncode": done.returncode, "stdout": done.stdout, "stderr": done.stderr}
        (folder / "printed.json").write_text(json.dumps(printed), encoding="utf-8")

    folder = made_once(tmp_path_factory, "isolated-forge", make)
    printed = json.loads((folder / "printed.json").read_text(encoding="utf-8"))
    done = subprocess.CompletedProcess(["pytest"], printed["returncode"], printed["stdout"], printed["stderr"])
    return folder, MeasuredRun(done, 0, 0.0)


def _pages(tmp_path: Path) -> dict[str, str]:
    [run] = run_folders(tmp_path / "out")
    return {name: (run / name).read_text(encoding="utf-8")
            for name in ("index.html", f"search/{ONE}/trace.html")}


def test_the_agents_user_in_the_reference_image_cannot_read_the_scenario_nor_write_the_state() -> None:
    """Meta's privilege model, asked directly of a running reference container as user agent."""
    client = docker.from_env()
    try:
        build.ensure_image(client, log=lambda line: None)
        engine = Engine(client, run_id="isolation-test", worker="main", owner_pid=0)
        scenario = (SHIPPED / "search" / f"{ONE}.json").read_bytes()
        container = client.containers.create(build.image_name(), entrypoint=["bash"],
                                             command=["/opt/gaia2-init-entrypoint.sh"],
                                             labels=engine.labels("isolation-test"))
        try:
            from pytest_gaia2.engine.archive import tar_files

            container.put_archive("/", tar_files([("var/gaia2/custom_scenario.json", scenario, 0o644)]))
            container.start()
            deadline = time.monotonic() + 30
            while container.exec_run(["test", "-s", "/var/gaia2/state/daemon_status.json"]).exit_code != 0:
                assert time.monotonic() < deadline, "the judge never started"
                time.sleep(0.2)

            def as_agent(*cmd: str) -> int:
                return container.exec_run(list(cmd), user="agent").exit_code

            assert as_agent("cat", "/var/gaia2/custom_scenario.json") != 0
            assert as_agent("ls", "/var/gaia2") != 0
            assert as_agent("touch", "/var/gaia2/state/forged.json") != 0
            assert as_agent("sh", "-c", ": >> /var/gaia2/state/daemon_status.json") != 0
            find = "import os; print(*[p for p in os.listdir('/proc') if p.isdigit() and b'gaia2_ref_daemon' in open(f'/proc/{p}/cmdline', 'rb').read()])"
            daemon = container.exec_run(["python3", "-c", find]).output.split()
            assert daemon, "no judge process"
            assert as_agent("kill", "-0", daemon[0].decode()) != 0
            assert container.exec_run(["cat", "/var/gaia2/custom_scenario.json"]).exit_code == 0  # root still can
        finally:
            container.remove(force=True)
        found = isolation.probe(engine, build.image_name(), scenario)
        assert found.isolated and found.line() == "judge isolated: yes", found
    finally:
        client.close()


def test_the_probe_says_what_an_open_image_lets_its_agent_do(open_image: str) -> None:
    client = docker.from_env()
    try:
        engine = Engine(client, run_id="isolation-test", worker="main", owner_pid=0)
        found = isolation.probe(engine, open_image, (SHIPPED / "search" / f"{ONE}.json").read_bytes())
    finally:
        client.close()
    assert (found.reads_scenario, found.writes_state, found.signals_judge) == (True, True, True), found
    assert not found.isolated and "not tamper-proof" in found.line()


def test_every_forgery_fails_in_the_reference_images_privilege_model(isolated_forge: tuple[Path, MeasuredRun]) -> None:
    tmp_path, run = isolated_forge
    record = only_record(tmp_path, "search", ONE)
    assert record["outcome"] == "failed", record  # the judge's own verdict on the agent's wrong answer
    assert pytest_says(run, "failed"), run.text
    assert "gaia2: judge isolated: yes" in run.done.stdout
    logs = (run_folders(tmp_path / "out")[0] / "search" / ONE / "entrypoint.log").read_text(encoding="utf-8")
    for what in ("read the answer key", "kill the judge", "append a passing judgment", "write a passing status"):
        assert f"hostile agent: {what}: refused" in logs, logs
    assert all('id="isolation">judge isolated: yes' in page for page in _pages(tmp_path).values())


@pytest.mark.parametrize(("mode", "why"), [
    ("forge", "the agent wrote no action"),  # the forger's case: 0 events, a self-consistent record
    ("bom", "byte-order mark"),
    ("duplicate", "'judgment'"),
])
def test_a_forged_record_where_the_agent_can_write_it_is_no_pass(tmp_path: Path, open_image: str, mode: str,
                                                                 why: str) -> None:
    run = _run(tmp_path, open_image, mode)
    record = only_record(tmp_path, "search", ONE)
    assert (record["outcome"], record["error_category"]) == ("error", "verdict_conflict"), record
    assert why in record["error"]
    assert pytest_says(run, "error") and "PASSED" not in run.text, run.text
    assert "gaia2: judge isolated: no (the agent can read the scenario file" in run.done.stdout
    assert "its verdicts are not tamper-proof" in run.done.stdout
    assert all("NOT TAMPER-PROOF" in page for page in _pages(tmp_path).values())
    [folder] = run_folders(tmp_path / "out")
    config = json.loads((folder / "run_config.json").read_text(encoding="utf-8"))
    assert config["judge_isolation"]["isolated"] is False


def test_a_rejection_seen_stays_a_failure_when_the_agent_then_rewrites_the_files(tmp_path: Path,
                                                                                   open_image: str) -> None:
    """The agent answers wrongly, waits for the judge's rejection, kills the judge, empties the
    judgments file and writes an error status: not a retried error, the judge's failure."""
    run = _run(tmp_path, open_image, "late_error", "--gaia2-retries=2")
    record = only_record(tmp_path, "search", ONE)
    assert (record["outcome"], record["attempt"]) == ("failed", 1), record
    assert pytest_says(run, "failed"), run.text


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_require_isolation_refuses_an_open_image_before_any_run_folder(
        pytester: pytest.Pytester, run_gaia2_inprocess: Any, open_image: str, workers: tuple[str, ...]) -> None:
    # Refused at pre-flight, before any scenario container: in this process.
    run = run_gaia2_inprocess(*NO_JUDGE, *_forger(open_image, "forge", "--gaia2-require-isolation", *workers))
    text = run.stdout.str() + run.stderr.str()
    assert run.ret == 4, text
    assert "--gaia2-require-isolation" in text and "judge isolated: no" in text
    assert not (pytester.path / "out").exists() or run_folders(pytester.path / "out") == []


def test_require_isolation_lets_the_reference_images_model_run(isolated_forge: tuple[Path, MeasuredRun]) -> None:
    tmp_path, run = isolated_forge
    assert only_record(tmp_path, "search", ONE)["outcome"] == "failed"
    assert pytest_says(run, "failed"), run.text


def test_nothing_a_later_tool_would_obey_reaches_the_run_folder(tmp_path: Path, open_image: str) -> None:
    """The agent plants pytest.toml (pytest 9 reads it), conftest.py, pyproject.toml, .git/config
    and doctest files in its home and in the state folder; a one-scenario chain checkpoints the
    home. None of them is written anywhere in the run folder: each is a member of the attempt's
    or the checkpoint's archive (tests/hostile/test_planted_files.py goes further)."""
    sequence = tmp_path / "sequence.jsonl"
    chain = {"universe_id": "21", "cap": "search", "scenarios": [{"scenario_id": ONE}]}
    sequence.write_text(json.dumps(chain) + "\n", encoding="utf-8")
    run = _run(tmp_path, open_image, "plant", f"--gaia2-sequence={sequence}")
    record = only_record(tmp_path, "search", ONE)
    assert record["outcome"] == "failed", record
    logs = (run_folders(tmp_path / "out")[0] / "search" / ONE / "entrypoint.log").read_text(encoding="utf-8")
    assert "hostile agent: plant /var/gaia2/state/pytest.toml: done" in logs  # the open image lets it
    [folder] = run_folders(tmp_path / "out")
    with tarfile.open(folder / "chains" / "search_universe_21" / "0000" / CONTAINER_FILES) as checkpoint:
        assert "home/pytest.toml" in checkpoint.getnames(), "no chain checkpoint of the home"
    # everything copied out of the container (the harness's own files, such as .gaia2.lock, aside)
    written = [path.relative_to(folder) for top in ("search", "chains") for path in (folder / top).rglob("*")]
    obeyed = [path for path in written if any(names.hazard(part) for part in path.parts)]
    assert obeyed == [], obeyed
    assert not any(path.name in ("pytest.toml", "test_notes.txt") for path in written)
    with tarfile.open(folder / "search" / ONE / CONTAINER_FILES) as attempt:
        kept = {name.rsplit("/", 1)[-1] for name in attempt.getnames()}
    assert {"pytest.toml", "conftest.py", "pyproject.toml", "test_notes.txt"} <= kept, kept
    assert pytest_says(run, "failed"), run.text


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_a_verdict_edited_to_passed_is_not_reused_on_resume(tmp_path: Path, workers: tuple[str, ...]) -> None:
    """result.json and results.jsonl edited to a pass beside the judge's recorded rejection:
    resume says verdict_conflict and runs the scenario again, which the judge fails again."""
    args = (f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}", *workers)
    first = run_measured(tmp_path, *args)
    assert pytest_says(first, "failed"), first.text
    [folder] = run_folders(tmp_path / "out")
    stored = folder / "search" / JUDGE_FAIL / "result.json"
    record = json.loads(stored.read_text(encoding="utf-8"))
    edited = {**record, "success": True, "outcome": "passed", "reward": 1.0, "failure_reasons": []}
    stored.write_text(json.dumps(edited), encoding="utf-8")
    (folder / "results.jsonl").write_text(json.dumps(edited) + "\n", encoding="utf-8")
    resumed = run_measured(tmp_path, *args, "--gaia2-resume")
    assert f"{JUDGE_FAIL}: verdict_conflict: the stored verdict is not reused" in resumed.text
    assert "it says passed, daemon_status.json beside it says fail" in resumed.text
    assert pytest_says(resumed, "failed") and "PASSED" not in resumed.text, resumed.text
    [again] = [r for r in map(json.loads, (folder / "results.jsonl").read_text().splitlines())]
    assert (again["outcome"], again["attempt"]) == ("failed", 2)
