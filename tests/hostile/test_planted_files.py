"""Nothing from a container that a later tool would obey: an image built FROM the reference image
whose agent (given the judge's uid, so it can write the state folder too) plants pytest's
configuration under today's names and under names no pytest reads yet, a conftest.py, a test
module and a README.md doctest, in its home and in the state folder, in a two-scenario chain.

No such file is anywhere in the run folder: the container's files are members of one archive
per attempt and per chain checkpoint, only the evidence files the harness reads are files, and
the second scenario still receives the planted home, streamed from the first one's checkpoint
archive. A plain ``pytest`` started in the run folder, in an attempt folder, or given the run
folder with the planted ``--doctest-glob=*.md``, runs nothing of theirs, and the verdict is the
judge's own.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from adapter_proxy import run_measured
from gaia2_testing import SHIPPED, derived_image, results_of, run_folders, scenario_variant

from pytest_gaia2.store import names
from pytest_gaia2.store.kept import CONTAINER_FILES

SOURCE = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
IDS = ("planted_first", "planted_second")
MARK = "PWNED"
PLANTED = {
    "pytest.toml": b'[pytest]\naddopts = ["-p", "no:gaia2", "--doctest-glob=*.md"]\n',
    ".pytestrc.toml": b'[pytest]\naddopts = ["-p", "no:gaia2", "--doctest-glob=*.md"]\n',
    "pytest.yaml": b"addopts: -p no:gaia2 --doctest-glob=*.md\n",
    "conftest.py": f'open("{MARK}-conftest", "w").close()\n'.encode(),
    "test_planted.py": f'def test_planted():\n    open("{MARK}-test", "w").close()\n'.encode(),
    "README.md": f'>>> open("{MARK}-doctest", "w").close()\n'.encode(),
    "deep/er/pytest.toml": b"[pytest]\n",
}
"""Planted files by path below the home and the state folder."""

AGENT = r'''
"""A hostile agent: says what it was carried, plants files a later tool would obey, answers wrongly."""
import json, os, signal, sys, time
sys.path.insert(0, "/opt")
from gaia2_ref_tools import ToolClient, socket_path

PLANTED = json.loads(os.environ["PLANTED"])
tools = ToolClient(socket_path())
while tools.status().get("status") == "waiting":
    time.sleep(0.05)
for name in sorted(PLANTED):
    carried = os.path.isfile(f"/home/agent/{name}")
    print(f"planter: carried /home/agent/{name}: {'yes' if carried else 'no'}", file=sys.stderr, flush=True)
for top in ("/home/agent", "/var/gaia2/state"):
    for name, content in PLANTED.items():
        path = f"{top}/{name}"
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(content)
            print(f"planter: planted {path}", file=sys.stderr, flush=True)
        except OSError as exc:
            print(f"planter: refused {path}: {type(exc).__name__}", file=sys.stderr, flush=True)
tools.act("AgentUserInterface", "send_message_to_user", {"content": "a wrong answer"}, True, None)
signal.pause()
'''


@pytest.fixture(scope="module")
def planter_image() -> str:
    """The agent's user shares the judge's uid, so it can write the state folder as well."""
    digest = hashlib.sha256(AGENT.encode()).hexdigest()[:12]
    tag = f"pytest-gaia2-test/planter-oracle:{digest}"  # an oracle image: no model settings asked
    derived_image(tag, "COPY planter.py /opt/gaia2_ref_agent.py", 'RUN usermod -o -u "$(id -u gaia2)" agent',
                  files={"planter.py": AGENT.encode()})
    return tag


def members(archive: Path) -> set[str]:
    with tarfile.open(archive) as kept:
        assert all(member.isreg() for member in kept.getmembers())
        return set(kept.getnames())


def later_pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A person's plain pytest afterwards (the plugin installed, as in this environment)."""
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.slow
@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_planted_files_are_members_of_archives_never_files_and_no_later_pytest_obeys_them(
        tmp_path: Path, planter_image: str, workers: tuple[str, ...]) -> None:
    root = tmp_path / "scenarios"
    for scenario_id in IDS:
        scenario_variant(root, SOURCE, scenario_id=scenario_id, duration=180.0)
    sequence = tmp_path / "sequence.jsonl"
    chain = {"universe_id": "21", "cap": "search", "scenarios": [{"scenario_id": sid} for sid in IDS]}
    sequence.write_text(json.dumps(chain) + "\n", encoding="utf-8")
    planted = json.dumps({name: content.decode() for name, content in PLANTED.items()})
    run = run_measured(tmp_path, f"--gaia2-scenarios={root}", f"--gaia2-sequence={sequence}",
                       f"--gaia2-image={planter_image}", f"--gaia2-env=PLANTED={planted}", "--gaia2-timeout=90", *workers)

    # The verdict and the record are the judge's, as without the planted files.
    assert (tmp_path / "out").is_dir(), run.done.stdout[-3000:] + run.done.stderr[-3000:]
    records = {record["scenario_id"]: record for record in results_of(tmp_path / "out")}
    assert {sid: (r["outcome"], r["judged_in_container"]) for sid, r in records.items()} == {
        sid: ("failed", True) for sid in IDS}, run.done.stdout[-3000:]
    assert "2 failed" in run.done.stdout and run.done.returncode == 1, run.done.stdout[-3000:]
    planted_names = {name.rsplit("/", 1)[-1] for name in PLANTED}
    for record in records.values():
        assert not [entry for entry in record["skipped_files"] if entry["path"].rsplit("/", 1)[-1] in planted_names]

    [folder] = run_folders(tmp_path / "out")
    logs = {sid: (folder / "search" / sid / "entrypoint.log").read_text(encoding="utf-8") for sid in IDS}
    assert "planter: planted /var/gaia2/state/pytest.toml" in logs[IDS[0]]  # the open image lets it
    assert "planter: carried /home/agent/pytest.toml: no" in logs[IDS[0]]
    for name in PLANTED:  # the second container received the home, streamed from checkpoint 0000's archive
        assert f"planter: carried /home/agent/{name}: yes" in logs[IDS[1]], logs[IDS[1]][-2000:]

    # No file named like a pytest or tool configuration anywhere in the run folder (walked whole).
    everything = [path.relative_to(folder) for path in folder.rglob("*")]
    assert not [path for path in everything if path.name in planted_names], everything
    from_containers = [path for path in everything if path.parts[0] in ("search", "chains")]
    assert not [path for path in from_containers if any(names.hazard(part) for part in path.parts)]

    # ... because each is a member of an archive: the attempts' and the chain checkpoints'.
    for sid in IDS:
        kept = members(folder / "search" / sid / CONTAINER_FILES)
        assert {f"var/gaia2/state/{name}" for name in PLANTED} <= kept, sorted(kept)
    checkpoints = folder / "chains" / "search_universe_21"
    for position in ("0000", "0001"):
        assert [path.name for path in (checkpoints / position).iterdir()] == [CONTAINER_FILES]
        assert {f"home/{name}" for name in PLANTED} <= members(checkpoints / position / CONTAINER_FILES)

    # A person's plain pytest afterwards runs nothing of the container's.
    for cwd, args in ((folder, ()), (folder / "search" / IDS[0], ()), (tmp_path, (str(folder), "--doctest-glob=*.md"))):
        later = later_pytest(cwd, *args)
        assert later.returncode == 5, later.stdout[-2000:]  # no tests collected
    assert not [path for path in tmp_path.rglob(f"{MARK}-*")], list(tmp_path.rglob(f"{MARK}-*"))
