"""``pytest-gaia2 rejudge RUN --judge SPEC [--judge SPEC ...]``: the image's own judge on a
finished run's saved events, without running the agent again.

Judges drift (a model update, a stricter setting); re-judging what a run saved measures it
without paying for the agent. This module reads the command line (the judges, their settings and
names) and prints; :mod:`pytest_gaia2.run.rejudge` judges in containers, each re-judge in a
folder of its own (``<run>/rejudge/<NNN>-<time>/<judge>/``), several judges compared in that
folder's ``summary.json``; ``--judge-name`` names each judge's folder.

A judge that gave no verdict on a scenario is never counted as agreeing: agreement is over the
scenarios it decided, and any scenario without a verdict makes the exit status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_gaia2.config.settings import REFERENCE_JUDGE_PLACEHOLDER
from pytest_gaia2.report.rates import counted, percent
from pytest_gaia2.run.rejudge import REFERENCE, JudgeSpec, check_endpoints, judged_jobs, judges, rejudge
from pytest_gaia2.store.console import CommandError
from pytest_gaia2.store.folder import RunFolder
from pytest_gaia2.store.names import RULES
from pytest_gaia2.store.names import problem as folder_name_problem
from pytest_gaia2.store.redact import printable

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
JUDGE_NAME_MAX = 64


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


# -- what the command prints ---------------------------------------------------------------------


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
    records, jobs = judged_jobs(folder, args.scenarios)
    given = judges(specs, args.judge_base_url, args.judge_api_key_env, args.judge_env)
    redactor = given.redactor
    for line in check_endpoints(given.specs, given.envs, given.key_sources):
        print(f"rejudge: {redactor.redact(line)}")
    done = rejudge(folder, records, jobs, given, args.image, args.retries, print)
    print(
        f"rejudge: {len(jobs)} judged scenarios of {folder.path} "
        f"({len(records) - len(jobs)} without an in-container verdict skipped)"
    )
    for line in summary_lines(done.summary):
        print(redactor.redact(line))
    print(f"rejudge: results in {done.root}")
    print(redactor.redact(verdict_line(done.summary)))
    return 1 if any(row["errors"] for row in done.summary["judges"].values()) else 0
