"""The container work of ``pytest-gaia2 rejudge``: an image's own judge on a finished run's saved
events, without running the agent again.

For each judge, one container per image judges every judged scenario of the run (the scenario
file and the saved events.jsonl copied in, the image's offline judge run, its verdicts copied
out, masked, into ``<run>/rejudge/<NNN>-<time>/<judge>/``); the run's own files are never
touched. Each re-judge writes a folder of its own, numbered after the ones before it, so a later
re-judge never overwrites an earlier (paid-for) one. Each model judge's endpoint is asked for one
token first, as a run's pre-flight asks, before any container starts. Which images can judge
offline, and how, is :mod:`.rejudge_images`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_gaia2.config.container_env import extra_hosts
from pytest_gaia2.config.settings import REFERENCE_JUDGE_PLACEHOLDER, resolve_judge_key
from pytest_gaia2.engine import client as engine_mod
from pytest_gaia2.engine.container import Container, LaunchSpec
from pytest_gaia2.engine.errors import EngineError
from pytest_gaia2.plan.scenarios import MAX_SCENARIO_BYTES
from pytest_gaia2.report.rejudged import NUMBER_MAX, REJUDGE_DIR, REJUDGMENTS_FILE, aggregate, number_of
from pytest_gaia2.run.endpoints import Endpoint, ping
from pytest_gaia2.run.evidence import agent_actions
from pytest_gaia2.run.rejudge_images import OfflineJudge, offline_judge_of
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.folder import (
    RUN_CONFIG_FILE,
    RunFolder,
    StoreError,
    inside,
    read_json,
    write_json,
    write_text,
)
from pytest_gaia2.store.record import AttemptRecord, is_judged
from pytest_gaia2.store.redact import Redactor, secret_values
from pytest_gaia2.store.safejson import JsonReadError, read_regular_file

REFERENCE = "reference"
"""The judge spec of the image's own judge without a model (the in-container setting)."""
IDLE = ("-c", "exec sleep infinity")
"""The container only hosts the judge's exec: its init script would start the agent (a Hermes or
OpenClaw image's needs a key the re-judge does not have, and may end the container)."""
INBOX = "/tmp/gaia2-rejudge"
OUTBOX = "/tmp/gaia2-rejudge-out"
JUDGE_OUTPUTS = ("status.json", "judgments.jsonl")
"""What an offline judge writes per scenario folder of OUTBOX: the only files copied back."""
ADAPTER_PORT = 8090
MAX_FILE_BYTES = 64 << 20
MAX_TOTAL_BYTES = 1 << 30
PIDS_LIMIT = 4096
MEMORY_BYTES = 4 << 30
_SHA256 = re.compile(r"[0-9a-f]{64}")
REASON_CHARS = 300
"""Characters kept of why a judge gave no verdict (the container's words), in the summary and on the terminal."""


@dataclass(frozen=True)
class JudgeSpec:
    """``reference`` or ``PROVIDER/MODEL``, with the settings passed to its container."""

    provider: str
    model: str
    settings: tuple[tuple[str, str], ...] = ()
    label: str | None = None
    """The name the user chose (``--judge-name``), used for its folder and in the summary."""

    @property
    def name(self) -> str:
        return REFERENCE if self.provider == REFERENCE_JUDGE_PLACEHOLDER else f"{self.provider}/{self.model}"

    @property
    def slug(self) -> str:
        """The folder name: the chosen name, else the spec made safe plus a digest of its settings."""
        if self.label:
            return self.label
        base = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.name).strip("-.") or "judge"
        if not self.settings:
            return base
        return f"{base}+{hashlib.sha256(json.dumps(self.settings).encode()).hexdigest()[:8]}"


# -- the run's judged scenarios ----------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One judged record and the inputs its judge needs again (the user's details when saved)."""

    record: AttemptRecord
    scenario: bytes
    events: bytes
    user_details: bytes | None = None

    @property
    def folder(self) -> str:
        return self.record.folder or self.record.key


def _read(path: Path, what: str) -> bytes:
    """A regular file of the run folder, no link followed, bounded: one error naming it."""
    try:
        return read_regular_file(path, max_bytes=MAX_FILE_BYTES, follow_symlinks=False)
    except JsonReadError as exc:
        raise CommandError(f"{path}: {what} {exc}") from None


def scenario_files(paths: Sequence[Path]) -> dict[str, Path]:
    """The user's scenario files (``--scenarios``: files, or folders searched for ``*.json``) by sha256;
    only regular files up to the scenario size bound are hashed."""
    found: dict[str, Path] = {}
    for root in paths:
        if not root.exists():
            raise CommandError(f"--scenarios {root}: no such file or folder")
        for path in sorted(root.rglob("*.json")) if root.is_dir() else [root]:
            try:
                content = read_regular_file(path, max_bytes=MAX_SCENARIO_BYTES)
            except JsonReadError:
                continue
            found.setdefault(hashlib.sha256(content).hexdigest(), path)
    return found


def load_job(run: RunFolder, record: AttemptRecord, scenarios: Mapping[str, Path]) -> Job:
    """The record's saved events and user details (files of the run folder itself, never a link out
    of it) and its scenario: the user's file with the sha256 the record holds."""
    if not record.scenario_sha256 or not _SHA256.fullmatch(record.scenario_sha256):
        raise CommandError(
            f"{run.results}: {record.key}: field 'scenario_sha256' is {record.scenario_sha256!r}: "
            "without the run's hash no scenario file can be trusted to be the one judged"
        )
    found = scenarios.get(record.scenario_sha256)
    if found is None:
        raise CommandError(
            f"{record.key}: no file under --scenarios has the sha256 the run judged "
            f"({record.scenario_sha256[:12]}; the run's file was {record.scenario_file!r})"
        )
    try:
        events = inside(run.path, *(record.folder or record.key).split("/"), "events.jsonl")
    except StoreError as exc:
        raise CommandError(f"{run.results}: {record.key}: field 'folder': {exc}") from None
    details = events.with_name("user_details.json")
    user_details = _read(details, "(user details)") if os.path.lexists(details) else None
    content = read_regular_file(found, max_bytes=MAX_SCENARIO_BYTES)
    if hashlib.sha256(content).hexdigest() != record.scenario_sha256:
        raise CommandError(f"{found}: changed while the re-judge read it")
    return Job(record, content, _read(events, "(saved events)"), user_details)


def judged_jobs(run: RunFolder, scenario_paths: Sequence[Path]) -> tuple[list[AttemptRecord], list[Job]]:
    """The run's records, and a job for each one its judge decided: refused when there is none."""
    records = list(run.records(strict=True))
    scenarios = scenario_files(scenario_paths)
    jobs = [load_job(run, record, scenarios) for record in records if is_judged(record)]
    if not jobs:
        raise CommandError(f"{run.results}: no judged scenario to re-judge")
    return records, jobs


def run_image(folder: RunFolder, engine: engine_mod.Engine, given: str | None) -> str:
    """The image to re-judge with: ``--image``, else the run's own (run_config.json's provenance)
    when its tag still names the image id the run used; never an image named by a record."""
    if given:
        return given
    config = read_json(folder.file(RUN_CONFIG_FILE))
    provenance = config.get("provenance") if isinstance(config, dict) else None
    image, ran = (provenance.get("image"), provenance.get("image_id")) if isinstance(provenance, dict) else (None, None)
    if not isinstance(image, str) or not image:
        raise CommandError(f"{folder.file(RUN_CONFIG_FILE)}: names no image (provenance.image); pass --image IMAGE")
    now = engine.image_id(image)
    if not isinstance(ran, str) or now != ran:
        raise CommandError(
            f"{image} is now image {now or 'missing'}, the run used {ran or 'an unrecorded id'}: "
            "its judge may have changed since; pass --image IMAGE to re-judge with it anyway"
        )
    return image


# -- judging in containers -----------------------------------------------------------------------


def judge_env(spec: JudgeSpec, base_url: str | None, key: str) -> dict[str, str]:
    """The container environment of one judge, named as the plugin names the run's judge."""
    env = {"GAIA2_JUDGE_PROVIDER": spec.provider, "GAIA2_JUDGE_MODEL": spec.model, **dict(spec.settings)}
    if spec.name != REFERENCE:
        if base_url:
            env["GAIA2_JUDGE_BASE_URL"] = base_url
        if key:
            env["GAIA2_JUDGE_API_KEY"] = key
    return env


@dataclass(frozen=True)
class Judges:
    """The judges of one re-judge with what their containers get: the environment by folder name,
    where each model judge's key came from, and the redactor of every key and secret in sight."""

    specs: tuple[JudgeSpec, ...]
    envs: dict[str, dict[str, str]]
    key_sources: dict[str, str | None]
    redactor: Redactor


def judges(
    specs: Sequence[JudgeSpec], base_url: str | None, api_key_env: str | None, common: Sequence[tuple[str, str]]
) -> Judges:
    """Each model judge's key looked up as the plugin looks up the run's (``api_key_env`` first),
    and every judge's container environment; ``common`` are the settings given to every judge."""

    def lookup(name: str) -> str:
        return os.environ.get(name, "").strip()

    resolved = {
        spec.name: resolve_judge_key(api_key_env, spec.provider, lookup, "", None)
        for spec in specs
        if spec.name != REFERENCE
    }
    keys = {name: key for name, (key, _) in resolved.items()}
    redactor = Redactor(set(keys.values()) | secret_values(os.environ) | secret_values(dict(common)))
    envs = {spec.slug: judge_env(spec, base_url, keys.get(spec.name, "")) for spec in specs}
    return Judges(tuple(specs), envs, {name: source for name, (_, source) in resolved.items()}, redactor)


def check_endpoints(
    specs: Sequence[JudgeSpec], envs: Mapping[str, Mapping[str, str]], key_sources: Mapping[str, str | None]
) -> list[str]:
    """One real completion per model judge's endpoint, model and key (the run's own pre-flight
    ping), before any container: raises, naming the judge and the endpoint, when one cannot
    answer; the lines to show otherwise. A model judge with neither an endpoint nor a key would
    call the image's default provider without one: refused too."""
    lines: list[str] = []
    asked: set[tuple[str, str, str]] = set()
    for spec in specs:
        if spec.name == REFERENCE:
            continue
        env = envs[spec.slug]
        url, key = env.get("GAIA2_JUDGE_BASE_URL", ""), env.get("GAIA2_JUDGE_API_KEY", "")
        judge = f"judge {spec.label or spec.name}"
        if not url:
            if not key:
                raise CommandError(
                    f"{judge}: no --judge-base-url and no key (--judge-api-key-env NAME, GAIA2_JUDGE_API_KEY, the "
                    "provider's variable or API_KEY): its container would call the image's default endpoint "
                    "without one; nothing was judged"
                )
            lines.append(f"{judge}: not pinged (no --judge-base-url: the image's default endpoint)")
            continue
        key_option = key_sources.get(spec.name) or "--judge-api-key-env"
        endpoint = Endpoint(
            judge, url, spec.model, key, "--judge-base-url", f"--judge {spec.name}", key_option, spec.provider
        )
        if endpoint.cache_key in asked:
            continue
        asked.add(endpoint.cache_key)
        answer = ping(endpoint, proxy_env={}, ca_bundle=None)  # the judge's container gets no proxy either
        if not answer.ok and answer.fatal:
            raise CommandError(f"{answer.line}; nothing was judged")
        lines.append(answer.line if answer.ok else f"warning: {answer.line}")
    return lines


def inbox(jobs: Sequence[Job]) -> tuple[tuple[str, bytes, int], ...]:
    """The files copied in: the jobs list, and each job's scenario, events and user details by number."""
    files: list[tuple[str, bytes, int]] = []
    listed = []
    for number, job in enumerate(jobs):
        scenario, events = f"{INBOX}/{number}/scenario.json", f"{INBOX}/{number}/events.jsonl"
        files += [(scenario, job.scenario, 0o644), (events, job.events, 0o644)]
        listed.append({"folder": job.folder, "scenario": scenario, "events": events})
        if job.user_details is not None:
            files.append((f"{INBOX}/{number}/user_details.json", job.user_details, 0o644))
            listed[-1]["user_details"] = files[-1][0]
    return (f"{INBOX}/jobs.json", json.dumps(listed).encode(), 0o644), *files


def _own_folder(run: RunFolder, *names: str) -> Path:
    """A folder of the re-judge's own in the run folder, checked to resolve inside it (a link there
    to elsewhere is refused): the only place rejudge writes."""
    path = run.path.joinpath(*names)
    if not path.resolve().is_relative_to(run.path.resolve()):
        raise CommandError(f"{path} resolves outside the run folder {run.path}; nothing was written")
    return path


def new_rejudge_folder(run: RunFolder) -> Path:
    """``rejudge/<NNN>-<UTC time>``: the next number after every earlier re-judge's, created here
    (never an existing folder), so no re-judge overwrites another. Past :data:`NUMBER_MAX` (a
    forged folder took it) the re-judge is refused: a longer number would be no re-judge to the
    readers, and a smaller one would not be the newest."""
    root = _own_folder(run, REJUDGE_DIR)
    root.mkdir(exist_ok=True)
    taken = [number for entry in root.iterdir() if (number := number_of(entry.name)) is not None]
    number = max(taken, default=0) + 1
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    while True:
        if number > NUMBER_MAX:
            raise CommandError(
                f"{root} holds a re-judge numbered {NUMBER_MAX}, the highest a re-judge can have; "
                "rename or remove it to re-judge again; nothing was written"
            )
        path = _own_folder(run, REJUDGE_DIR, f"{number:03d}-{stamp}")
        try:
            path.mkdir()
            return path
        except FileExistsError:
            number += 1


def judge_image(
    engine: engine_mod.Engine,
    spec: JudgeSpec,
    image: str,
    judge: OfflineJudge,
    jobs: Sequence[Job],
    dest: Path,
    env: Mapping[str, str],
    retries: int,
    redactor: Redactor,
    say: Callable[[str], None],
) -> dict[str, int]:
    """Judge ``jobs`` in one container of ``image``; their files land under ``dest``; passes per folder."""
    name = f"gaia2-rejudge-{spec.slug[:40]}-{uuid.uuid4().hex[:8]}"
    container = engine.launch(
        LaunchSpec(
            image=image,
            name=re.sub(r"[^A-Za-z0-9_.-]", "-", name),
            env=dict(env),
            labels=engine.labels("rejudge"),
            adapter_port=ADAPTER_PORT,
            files=(*inbox(jobs), *judge.files),
            extra_hosts=extra_hosts(),
            pids_limit=PIDS_LIMIT,
            memory_bytes=MEMORY_BYTES,
            no_new_privileges=True,
            command=IDLE,
        )
    )
    passes: dict[str, int] = {}
    try:
        pending = [job.folder for job in jobs]
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(min(2.0 * attempt, 10.0))
            code, output = container.exec(
                [*judge.command, "--jobs", f"{INBOX}/jobs.json", "--out", OUTBOX, *pending], user="gaia2"
            )
            if code != 0:
                raise CommandError(
                    f"the offline judge of {image!r} failed (exit {code}): {redactor.redact(output.strip()[-500:])}"
                )
            for folder in pending:
                passes[folder] = attempt + 1
            pending = [folder for folder in pending if _retryable(container, folder)]
            if not pending:
                break
        # Only the files read back become files: nothing else of a container lands in a run folder.
        wanted = {f"{job.folder}/{name}": f"{job.folder}/{name}" for job in jobs for name in JUDGE_OUTPUTS}
        report = container.copy_out(
            OUTBOX,
            dest,
            max_file_bytes=MAX_FILE_BYTES,
            max_total_bytes=MAX_TOTAL_BYTES,
            rename=wanted,
            redactor=redactor,
        )
        if report.notes or report.skipped:
            say(f"rejudge: {spec.name}: some files were not copied: {report.notes + report.skipped}")
    finally:
        engine.remove(container)
    return passes


def _retryable(container: Container, folder: str) -> bool:
    content, _ = container.read_file(f"{OUTBOX}/{folder}/status.json", 1 << 20)
    try:
        return bool(json.loads(content or b"{}").get("retryable"))
    except ValueError:
        return False


NO_ACTIONS = "the saved events.jsonl holds no action of the agent: a pass with nothing done is a disagreement"


def verdict_row(job: Job, folder: Path, passes: int) -> dict[str, Any]:
    """What the judge said about one scenario, beside what the run's judge said."""
    status = read_json(folder / "status.json")
    status = status if isinstance(status, dict) else {"status": "error", "error": "no status.json was written"}
    judgment = status.get("judgment") if isinstance(status.get("judgment"), dict) else None
    success = judgment.get("success") if judgment else None
    if job.record.success is True and agent_actions(job.events) == 0:  # no judge passes nothing done
        judgment, success = {"failure_reason": NO_ACTIONS}, False
    return {
        "key": job.record.key,
        "scenario_id": job.record.scenario_id,
        "split": job.record.split,
        "folder": job.folder,
        "in_container": job.record.success,
        "success": success if isinstance(success, bool) else None,
        "failure_reason": (judgment or {}).get("failure_reason") or None,
        "error": None if judgment else str(status.get("error") or f"no judgment (status {status.get('status')})"),
        "passes": passes,
    }


@dataclass(frozen=True)
class Rejudged:
    """Where a re-judge wrote, and its summary.json."""

    root: Path
    summary: dict[str, Any]


def rejudge(
    run: RunFolder,
    records: Sequence[AttemptRecord],
    jobs: Sequence[Job],
    given: Judges,
    image: str | None,
    retries: int,
    say: Callable[[str], None],
) -> Rejudged:
    """Every judge on every job in containers of the run's image (or ``image``), each judge's verdicts
    written into its folder of a new ``rejudge/<NNN>-<time>/``, compared in its ``summary.json``;
    ``say`` gets the notes of files that were not copied."""
    redactor = given.redactor
    verdicts: dict[str, dict[str, bool | None]] = {}
    reasons: dict[str, dict[str, str]] = {}
    try:
        client = engine_mod.connect()
    except EngineError as exc:
        raise CommandError(str(exc)) from None
    engine = engine_mod.Engine(client, run_id=f"rejudge-{uuid.uuid4().hex}", worker="rejudge", owner_pid=os.getpid())
    try:
        image = run_image(run, engine, image)
        judge = offline_judge_of(engine, image, INBOX)
        root = new_rejudge_folder(run)
        for spec in given.specs:
            dest = _own_folder(run, REJUDGE_DIR, root.name, spec.slug)
            passes = judge_image(engine, spec, image, judge, jobs, dest, given.envs[spec.slug], retries, redactor, say)
            rows = [verdict_row(job, inside(dest, *job.folder.split("/")), passes.get(job.folder, 0)) for job in jobs]
            write_text(dest / REJUDGMENTS_FILE, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
            verdicts[spec.slug] = {row["key"]: row["success"] for row in rows}
            reasons[spec.slug] = {
                row["key"]: redactor.redact(row["error"])[:REASON_CHARS] for row in rows if row["error"]
            }
    except EngineError as exc:
        raise CommandError(redactor.redact(str(exc))) from None
    finally:
        engine.remove_run()
        client.close()
    summary = aggregate({job.record.key: bool(job.record.success) for job in jobs}, verdicts, reasons)
    summary = {
        "run": str(run.path),
        "image": image,
        "skipped_without_verdict": len(records) - len(jobs),
        "judge_settings": redactor.redact_obj(
            {
                spec.slug: {
                    "judge": spec.name,
                    **({"name": spec.label} if spec.label else {}),
                    "settings": dict(spec.settings),
                }
                for spec in given.specs
            }
        ),
        **summary,
    }
    write_json(root / "summary.json", summary)
    return Rejudged(root, summary)
