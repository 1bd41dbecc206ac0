"""``pytest-gaia2 rejudge RUN --judge SPEC [--judge SPEC ...]``: the image's own judge on a
finished run's saved events, without running the agent again.

Judges drift (a model update, a stricter setting); re-judging what a run saved measures it
without paying for the agent. For each judge, one container per image judges every judged
scenario of the run (the scenario file and the saved events.jsonl copied in, the image's
offline judge run, its verdicts copied out, masked, into ``<run>/rejudge/<NNN>-<time>/<judge>/``);
the run's own files are never touched. Each re-judge writes a folder of its own, numbered after
the ones before it, so a later re-judge never overwrites an earlier (paid-for) one. Several judges
are compared in that folder's ``summary.json``; ``--judge-name`` names each judge's folder.

Each model judge's endpoint is asked for one token first, as a run's pre-flight asks (an
unreachable one refuses the re-judge, naming the judge and the endpoint, before any container
starts); a judge that gave no verdict on a scenario is never counted as agreeing: agreement is
over the scenarios it decided, and any scenario without a verdict makes the exit status 1.

Only images that carry a judge can do it (:mod:`.rejudge_images`): pytest-gaia2's reference
image (and images built from it) have ``/opt/gaia2_ref_rejudge.py``; Meta's gaia2-cli images
judge only inside ``gaia2-eventd``, so pytest-gaia2 copies in a script that drives that daemon's
own judge code over the saved events, run with the Python of the image's ``gaia2-eventd``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_gaia2.cli.main import CommandError
from pytest_gaia2.cli.rejudge_images import OfflineJudge, offline_judge_of
from pytest_gaia2.config.container_env import extra_hosts
from pytest_gaia2.config.settings import REFERENCE_JUDGE_PLACEHOLDER, resolve_judge_key
from pytest_gaia2.engine import client as engine_mod
from pytest_gaia2.engine.container import Container, LaunchSpec
from pytest_gaia2.engine.errors import EngineError
from pytest_gaia2.plan.scenarios import MAX_SCENARIO_BYTES
from pytest_gaia2.report.rates import Rate, counted, percent
from pytest_gaia2.report.rejudged import NUMBER_MAX, REJUDGE_DIR, REJUDGMENTS_FILE, number_of
from pytest_gaia2.run.endpoints import Endpoint, ping
from pytest_gaia2.run.evidence import agent_actions
from pytest_gaia2.store.folder import (
    RUN_CONFIG_FILE,
    RunFolder,
    StoreError,
    inside,
    read_json,
    write_json,
    write_text,
)
from pytest_gaia2.store.names import RULES
from pytest_gaia2.store.names import problem as folder_name_problem
from pytest_gaia2.store.record import AttemptRecord, is_judged
from pytest_gaia2.store.redact import Redactor, printable, secret_values
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
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
REASON_CHARS = 300
"""Characters kept of why a judge gave no verdict (the container's words), in the summary and on the terminal."""
JUDGE_NAME_MAX = 64


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


def parse_judge(raw: str, common: Sequence[tuple[str, str]] = ()) -> JudgeSpec:
    """``reference`` or ``PROVIDER/MODEL``, then ``,NAME=VALUE`` settings of this judge alone."""
    text, *own = raw.split(",")
    try:
        settings = tuple(sorted(dict([*common, *(env_setting(item) for item in own)]).items()))
    except argparse.ArgumentTypeError as exc:
        raise CommandError(f"--judge {raw!r}: {exc}") from None
    text = text.strip()
    if text == REFERENCE:
        return JudgeSpec(REFERENCE_JUDGE_PLACEHOLDER, REFERENCE_JUDGE_PLACEHOLDER, settings)
    provider, sep, model = text.partition("/")
    if not sep or not provider.strip() or not model.strip():
        raise CommandError(f"--judge: expected {REFERENCE} or PROVIDER/MODEL, got {raw!r}")
    return JudgeSpec(provider.strip(), model.strip(), settings)


def env_setting(raw: str) -> tuple[str, str]:
    name, sep, value = raw.partition("=")
    if not sep or not _ENV_NAME.fullmatch(name.strip()):
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {raw!r}")
    return name.strip(), value


def extra_body(raw: str) -> str:
    """``--judge-extra-body``: a JSON object, passed on in one canonical form."""
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, got {type(value).__name__}")
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def upstream_settings(args: argparse.Namespace) -> list[tuple[str, str]]:
    """Upstream's judge options as the container settings the TOML's [judge] keys become."""
    found = [("GAIA2_JUDGE_PROMPT_VERSION", (args.judge_prompt_version or "").strip())]
    found.append(("GAIA2_JUDGE_EXTRA_BODY", args.judge_extra_body or ""))
    return [(name, value) for name, value in found if value]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", help="run folder (or an output folder: its latest run)")
    parser.add_argument(
        "--judge",
        action="append",
        required=True,
        metavar="SPEC",
        help=f"'{REFERENCE}' (the image's judge, no model) or PROVIDER/MODEL, then ,NAME=VALUE "
        "settings of this judge (e.g. reference,GAIA2_REF_JUDGE_EXACT=1); repeat to compare",
    )
    parser.add_argument(
        "--judge-base-url",
        default=os.environ.get("GAIA2_JUDGE_BASE_URL") or None,
        help="OpenAI-compatible endpoint of model judges, as the container reaches it "
        "(host.docker.internal for the host); default GAIA2_JUDGE_BASE_URL",
    )
    parser.add_argument(
        "--judge-api-key-env",
        metavar="NAME",
        help="variable holding the judge key (default: GAIA2_JUDGE_API_KEY, the provider's, API_KEY)",
    )
    parser.add_argument(
        "--judge-env",
        action="append",
        type=env_setting,
        default=[],
        metavar="NAME=VALUE",
        help="a judge setting for every judge's container, e.g. GAIA2_REF_JUDGE_EXACT=1",
    )
    parser.add_argument(
        "--judge-prompt-version",
        metavar="NAME",
        help="the judge's prompt set for every model judge, as upstream's rejudge and [judge].prompt_version "
        "(e.g. omnilingual-gaia2); passed to the judge's container as GAIA2_JUDGE_PROMPT_VERSION",
    )
    parser.add_argument(
        "--judge-extra-body",
        type=extra_body,
        metavar="JSON",
        help="a JSON object forwarded to every model judge's completion call, as upstream's rejudge and "
        '[judge].extra_body (e.g. \'{"reasoning_effort": "low"}\'); passed as GAIA2_JUDGE_EXTRA_BODY',
    )
    parser.add_argument(
        "--judge-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a name for each --judge, in order (letters, digits, _ . -): its folder and its name in the summary",
    )
    parser.add_argument("--retries", type=int, default=2, help="re-asks of a judge that errored (default 2)")
    parser.add_argument(
        "--scenarios",
        action="append",
        type=Path,
        default=[],
        metavar="PATH",
        required=True,
        help="the scenario files the run used (a file or a folder searched for *.json; repeat "
        "for several): each record's scenario is the one whose sha256 the record holds",
    )
    parser.add_argument(
        "--image",
        metavar="IMAGE",
        help="the image whose judge re-judges (default: the run's image from run_config.json, "
        "refused when its tag now names another image id than the run used)",
    )


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
            print(f"rejudge: {spec.name}: some files were not copied: {report.notes + report.skipped}")
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


# -- comparing judges (pure) ---------------------------------------------------------------------


def aggregate(
    in_container: Mapping[str, bool],
    verdicts: Mapping[str, Mapping[str, bool | None]],
    reasons: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Each judge (by folder name) against the in-container verdicts and, with several judges, against each other.

    ``verdicts`` maps judge -> key -> True/False, None when the judge gave no verdict (which
    counts as not passed in rates, and as no vote in agreement: agreement is over the scenarios
    the judge decided, its n); ``reasons`` maps judge -> key -> why it gave none.
    """
    keys = sorted(in_container)
    n = len(keys)
    out: dict[str, Any] = {
        "scenarios": n,
        "in_container": Rate.of(sum(in_container[k] for k in keys), n).to_dict(),
        "judges": {},
    }
    for judge, by_key in verdicts.items():
        judged = [k for k in keys if by_key.get(k) is not None]
        agree = sum(by_key[k] == in_container[k] for k in judged)
        out["judges"][judge] = {
            "passed": sum(by_key.get(k) is True for k in keys),
            "failed": sum(by_key.get(k) is False for k in keys),
            "errors": n - len(judged),
            "pass_rate": Rate.of(sum(by_key.get(k) is True for k in keys), n).to_dict(),
            "agreement_with_in_container": Rate.of(agree, len(judged)).to_dict(),
            "flipped_to_fail": [k for k in judged if in_container[k] and not by_key[k]],
            "flipped_to_pass": [k for k in judged if not in_container[k] and by_key[k]],
            "error_ids": [k for k in keys if by_key.get(k) is None],
            "error_reasons": {
                k: why for k in keys if by_key.get(k) is None and (why := (reasons or {}).get(judge, {}).get(k))
            },
        }
    out["disagree_with_in_container"] = {
        k: sorted(j for j, by_key in verdicts.items() if by_key.get(k) is not None and by_key[k] != in_container[k])
        for k in keys
    }
    out["disagree_with_in_container"] = {k: v for k, v in out["disagree_with_in_container"].items() if v}
    judges = list(verdicts)
    if len(judges) > 1:
        votes = {k: [verdicts[j].get(k) for j in judges] for k in keys}
        pairs = [(a, b) for i, a in enumerate(judges) for b in judges[i + 1 :]]
        both = [
            (verdicts[a][k], verdicts[b][k])
            for a, b in pairs
            for k in keys
            if verdicts[a].get(k) is not None and verdicts[b].get(k) is not None
        ]
        out["strict_all"] = Rate.of(sum(all(v is True for v in vs) for vs in votes.values()), n).to_dict()
        out["majority"] = Rate.of(
            sum(2 * sum(v is True for v in vs) > len(judges) for vs in votes.values()), n
        ).to_dict()
        out["agreement"] = Rate.of(sum(a == b for a, b in both), len(both)).to_dict()
        out["unanimity"] = Rate.of(sum(None not in vs and len(set(vs)) == 1 for vs in votes.values()), n).to_dict()
        out["disagreeing_judges"] = sorted(k for k, vs in votes.items() if len({v for v in vs if v is not None}) > 1)
    return out


def _shown(rate: Mapping[str, Any]) -> str:
    if rate["value"] is None:
        return "n/a (0 scenarios)"
    return f"{percent(rate['value'])} ({rate['successes']}/{rate['n']}; 95% CI {percent(rate['low'])}-{percent(rate['high'])})"


def _agreement(row: Mapping[str, Any]) -> str:
    """Agreement over the scenarios the judge decided, with that n: a scenario without its
    verdict is no agreement (and not in the n)."""
    rate = row["agreement_with_in_container"]
    if rate["value"] is None:
        return "agrees on nothing: it decided no scenario"
    return (
        f"agrees with the in-container verdict on {rate['successes']} of the {rate['n']} it decided "
        f"({percent(rate['value'])}; 95% CI {percent(rate['low'])}-{percent(rate['high'])})"
    )


def summary_lines(summary: Mapping[str, Any]) -> list[str]:
    lines = [f"in-container: {_shown(summary['in_container'])} passed"]
    for judge, row in summary["judges"].items():
        lines.append(
            f"{judge}: {row['passed']} passed, {row['failed']} failed, {counted(row['errors'], 'error')} "
            f"(no verdict); pass rate {_shown(row['pass_rate'])}; {_agreement(row)}"
        )
        lines += [
            f"  {label}: {', '.join(row[key])}"
            for key, label in (("flipped_to_fail", "pass -> fail"), ("flipped_to_pass", "fail -> pass"))
            if row[key]
        ]
        reasons = row.get("error_reasons") or {}
        lines += [
            f"  no verdict: {key}" + (f" ({printable(reasons[key])})" if reasons.get(key) else "")
            for key in row["error_ids"]
        ]
    for key in ("strict_all", "majority", "agreement", "unanimity"):
        if key in summary:
            lines.append(f"{key.replace('_', '-')}: {_shown(summary[key])}")
    lines += [
        f"disagrees with the in-container verdict: {key} ({', '.join(judges)})"
        for key, judges in summary["disagree_with_in_container"].items()
    ]
    return lines


def verdict_line(summary: Mapping[str, Any]) -> str:
    """The command's last line: FAIL when a judge left scenarios without a verdict (naming each
    such judge and how many), else each judge's agreement with its n."""
    n = summary["scenarios"]
    missing = {judge: row["errors"] for judge, row in summary["judges"].items() if row["errors"]}
    if missing:
        named = "; ".join(f"{judge} gave no verdict on {errors} of {n}" for judge, errors in missing.items())
        return f"rejudge: FAIL: {named} (the reasons: 'no verdict' above and rejudgments.jsonl)"
    agreement = ", ".join(
        f"{judge} {row['agreement_with_in_container']['successes']}/{row['agreement_with_in_container']['n']}"
        for judge, row in summary["judges"].items()
    )
    return (
        f"rejudge: done: every judge gave a verdict on all {n}; agreement with the in-container verdicts: {agreement}"
    )


# -- the command ------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> int:
    folder = RunFolder.existing(args.run)
    if args.retries < 0:
        raise CommandError(f"--retries: must not be negative, got {args.retries}")
    specs = [parse_judge(raw, [*upstream_settings(args), *args.judge_env]) for raw in args.judge]
    if args.judge_name:
        if len(args.judge_name) != len(specs):
            raise CommandError(f"--judge-name: one name per --judge ({len(specs)}), got {len(args.judge_name)}")
        for name in args.judge_name:  # a folder on every system: no CON, no trailing dot
            problem = folder_name_problem(name, JUDGE_NAME_MAX)
            if problem:
                raise CommandError(f"--judge-name: {problem} ({RULES})")
        specs = [replace(spec, label=name) for spec, name in zip(specs, args.judge_name, strict=True)]
    if len({spec.slug for spec in specs}) < len(specs):
        raise CommandError(f"--judge: the same judge twice: {', '.join(args.judge)}")
    records = list(folder.records(strict=True))
    scenarios = scenario_files(args.scenarios)
    jobs = [load_job(folder, record, scenarios) for record in records if is_judged(record)]
    if not jobs:
        raise CommandError(f"{folder.results}: no judged scenario to re-judge")

    def lookup(name: str) -> str:
        return os.environ.get(name, "").strip()

    resolved = {
        spec.name: resolve_judge_key(args.judge_api_key_env, spec.provider, lookup, "", None)
        for spec in specs
        if spec.name != REFERENCE
    }
    keys = {name: key for name, (key, _) in resolved.items()}
    redactor = Redactor(set(keys.values()) | secret_values(os.environ) | secret_values(dict(args.judge_env)))
    envs = {spec.slug: judge_env(spec, args.judge_base_url, keys.get(spec.name, "")) for spec in specs}
    for line in check_endpoints(specs, envs, {name: source for name, (_, source) in resolved.items()}):
        print(f"rejudge: {redactor.redact(line)}")
    verdicts: dict[str, dict[str, bool | None]] = {}
    reasons: dict[str, dict[str, str]] = {}
    try:
        client = engine_mod.connect()
    except EngineError as exc:
        raise CommandError(str(exc)) from None
    engine = engine_mod.Engine(client, run_id=f"rejudge-{uuid.uuid4().hex}", worker="rejudge", owner_pid=os.getpid())
    try:
        image = run_image(folder, engine, args.image)
        judge = offline_judge_of(engine, image, INBOX)
        root = new_rejudge_folder(folder)
        for spec in specs:
            dest = _own_folder(folder, REJUDGE_DIR, root.name, spec.slug)
            passes = judge_image(engine, spec, image, judge, jobs, dest, envs[spec.slug], args.retries, redactor)
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
        "run": str(folder.path),
        "image": image,
        "skipped_without_verdict": len(records) - len(jobs),
        "judge_settings": redactor.redact_obj(
            {
                spec.slug: {
                    "judge": spec.name,
                    **({"name": spec.label} if spec.label else {}),
                    "settings": dict(spec.settings),
                }
                for spec in specs
            }
        ),
        **summary,
    }
    write_json(root / "summary.json", summary)
    print(
        f"rejudge: {len(jobs)} judged scenarios of {folder.path} "
        f"({len(records) - len(jobs)} without an in-container verdict skipped)"
    )
    for line in summary_lines(summary):
        print(redactor.redact(line))
    print(f"rejudge: results in {root}")
    print(redactor.redact(verdict_line(summary)))
    return 1 if any(row["errors"] for row in summary["judges"].values()) else 0
