"""Every usage error of docs/reference/options.md, and the selection mistakes users make, end the
same way serially and at ``-n 2``: exit status 4, the same ``ERROR:`` lines naming the option, no
INTERNALERROR, no run folder. (Pre-flight refusals, exit 10, are tested against the engine in
test_preflight.py and tests/integration/test_refused_then_resume.py.)"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from fnmatch import fnmatch

import pytest
from gaia2_testing import SHIPPED

from pytest_gaia2.config.options import OPTIONS

BAD: dict[str, tuple[tuple[str, ...], str]] = {
    "scenarios": (("--gaia2-scenarios=nope",), "ERROR: --gaia2-scenarios: no such file or folder: */nope"),
    "dataset": (("--gaia2-dataset=nodataset",), "ERROR: --gaia2-dataset: expected a Hugging Face dataset id ORG/NAME*"),
    "splits": (("--gaia2-splits=serch",), "ERROR: --gaia2-splits: unknown split 'serch' *"),
    "subset": (("--gaia2-subset=nope.json",), "ERROR: --gaia2-subset: cannot read */nope.json*"),
    "ids-file": (("--gaia2-ids-file=nope.txt",), "ERROR: --gaia2-ids-file: cannot read */nope.txt*"),
    "sample": (("--gaia2-sample=0",), "ERROR: --gaia2-sample: must be at least 1, got '0'"),
    "seed": (("--gaia2-seed=-1",), "ERROR: --gaia2-seed: must not be negative, got '-1'"),
    "first-n": (
        ("--gaia2-sample=3", "--gaia2-first-n=2"),
        "ERROR: --gaia2-sample and --gaia2-first-n cannot be combined*",
    ),
    "order": (("--gaia2-order=random",), "*--gaia2-order: invalid choice: 'random'*"),
    "shard": (("--gaia2-shard=3/2",), "ERROR: --gaia2-shard: K must be between 1 and N in K/N, got '3/2'"),
    "repeat": (("--gaia2-repeat=0",), "ERROR: --gaia2-repeat: must be at least 1, got '0'"),
    "sequence": (
        ("--gaia2-sequence=nope.jsonl",),
        "ERROR: --gaia2-sequence */nope.jsonl: cannot be read (no such file)",
    ),
    "resume": (
        ("--gaia2-resume=nope",),
        "ERROR: --gaia2-resume=*/nope: */nope is not a run folder (no run_config.json)",
    ),
    "resume-mismatch": (("--gaia2-resume-mismatch=ignore",), "*--gaia2-resume-mismatch: invalid choice: 'ignore'*"),
    "retries": (("--gaia2-retries=-1",), "ERROR: --gaia2-retries: must not be negative, got '-1'"),
    "config": (("--gaia2-config=nope.toml",), "ERROR: --gaia2-config: cannot read */nope.toml*"),
    "image": (("--gaia2-image=Bad!",), "ERROR: --gaia2-image: 'Bad!' is not a valid image reference*"),
    "engine": (("--gaia2-engine=ftp://x",), "ERROR: --gaia2-engine 'ftp://x': expected unix:///path.sock, *"),
    "network": (("--gaia2-network=none",), "*--gaia2-network: invalid choice: 'none'*"),
    "port-range": (("--gaia2-port-range=9-1",), "ERROR: --gaia2-port-range: expected 1024 <= LOW < HIGH <= 65535*"),
    "env": (("--gaia2-env=NOEQUALS",), "ERROR: --gaia2-env: expected KEY=VALUE with a valid variable name*"),
    "env-file": (("--gaia2-env-file=nope.env",), "ERROR: pytest-gaia2 configuration:"),
    "copy-in": (("--gaia2-copy-in=nocolon",), "ERROR: --gaia2-copy-in: expected HOST_PATH:/container/path*"),
    "time-speed": (("--gaia2-time-speed=0",), "ERROR: --gaia2-time-speed: must be greater than 0, got '0'"),
    "notification-mode": (("--gaia2-notification-mode=email",), "*--gaia2-notification-mode: invalid choice*"),
    "base-url": (("--gaia2-base-url=ftp://host/x",), "ERROR: --gaia2-base-url: the scheme must be http or https*"),
    "api-key-env": (("--gaia2-api-key-env=1BAD",), "ERROR: --gaia2-api-key-env: expected the NAME of an environment*"),
    "thinking": (("--gaia2-thinking=max",), "*--gaia2-thinking: invalid choice: 'max'*"),
    "judge-provider": (("--gaia2-judge-provider=nosuch",), "ERROR: pytest-gaia2 configuration:"),
    "judge-base-url": (("--gaia2-judge-base-url=http://",), "ERROR: --gaia2-judge-base-url: the URL has no host"),
    "judge-api-key-env": (("--gaia2-judge-api-key-env=1BAD",), "ERROR: --gaia2-judge-api-key-env: expected the NAME*"),
    "timeout": (("--gaia2-timeout=0",), "ERROR: --gaia2-timeout: must be greater than 0, got '0'"),
    "duration-slack": (("--gaia2-duration-slack=-1",), "ERROR: --gaia2-duration-slack: must not be negative*"),
    "health-timeout": (("--gaia2-health-timeout=0",), "ERROR: --gaia2-health-timeout: must be greater than 0*"),
    "judge-grace": (("--gaia2-judge-grace=nan",), "ERROR: --gaia2-judge-grace: expected a finite number, got 'nan'"),
    "stop-timeout": (("--gaia2-stop-timeout=soon",), "ERROR: --gaia2-stop-timeout: expected a number of seconds*"),
    "reap-grace": (("--gaia2-reap-grace=-1",), "ERROR: --gaia2-reap-grace: must not be negative, got '-1'"),
    "max-file-size": (("--gaia2-max-file-size=0",), "ERROR: --gaia2-max-file-size: must be greater than 0*"),
    "max-collect-size": (("--gaia2-max-collect-size=lots",), "ERROR: --gaia2-max-collect-size: expected a size*"),
    "memory": (("--gaia2-memory=-1",), "ERROR: --gaia2-memory: expected a size in bytes*"),
    "pids-limit": (("--gaia2-pids-limit=-1",), "ERROR: --gaia2-pids-limit: must not be negative, got '-1'"),
    "keep": (("-o", "gaia2_keep=maybe"), "ERROR: gaia2_keep: invalid truth value 'maybe'"),
    "min-pass-rate": (("--gaia2-min-pass-rate=80",), "ERROR: --gaia2-min-pass-rate: expected a fraction from 0 to 1*"),
    "rate": (("--gaia2-rate=loose",), "*--gaia2-rate: invalid choice: 'loose'*"),
    "gate-on": (("--gaia2-gate-on=mean",), "*--gaia2-gate-on: invalid choice: 'mean'*"),
    "max-error-rate": (("--gaia2-max-error-rate=-0.1",), "ERROR: --gaia2-max-error-rate: expected a fraction*"),
    "allow-incomplete": (("-o", "gaia2_allow_incomplete=maybe"), "ERROR: gaia2_allow_incomplete: invalid truth*"),
    "stop-when-decided": (
        ("--gaia2-stop-when-decided=nope",),
        "ERROR: --gaia2-stop-when-decided: */nope is not a run*",
    ),
    "decision-level": (("--gaia2-decision-level=2",), "ERROR: --gaia2-decision-level: expected a fraction*"),
    "preflight-only": (("-o", "gaia2_preflight_only=maybe"), "ERROR: gaia2_preflight_only: invalid truth value*"),
    "skip-endpoint-check": (("-o", "gaia2_skip_endpoint_check=maybe"), "ERROR: gaia2_skip_endpoint_check: invalid*"),
    "idle-timeout": (("--gaia2-idle-timeout=-1",), "ERROR: --gaia2-idle-timeout: must not be negative, got '-1'"),
    "smoke": (("-o", "gaia2_smoke=maybe"), "ERROR: gaia2_smoke: invalid truth value 'maybe'"),
    "smoke-max-errors": (("--gaia2-smoke-max-errors=-1",), "ERROR: --gaia2-smoke-max-errors: must not be negative*"),
    "max-starts-per-minute": (("--gaia2-max-starts-per-minute=0",), "ERROR: --gaia2-max-starts-per-minute: must be*"),
    "pacing": (("--gaia2-pacing=fast",), "*--gaia2-pacing: invalid choice: 'fast'*"),
    "stuck-loop-min-calls": (("--gaia2-stuck-loop-min-calls=-1",), "ERROR: --gaia2-stuck-loop-min-calls: must not*"),
    "progress-interval": (("--gaia2-progress-interval=-1",), "ERROR: --gaia2-progress-interval: must not be negative*"),
    "report": (("-o", "gaia2_report=maybe"), "ERROR: gaia2_report: invalid truth value 'maybe'"),
    "price-file": (
        ("--gaia2-price-file=nope.json",),
        "ERROR: --gaia2-price-file: */nope.json: cannot be read (no such file)",
    ),
    "budget-halt": (("--gaia2-budget-halt=-1",), "ERROR: --gaia2-budget-halt: must not be negative, got '-1'"),
    "budget-cap": (("--gaia2-budget-cap=five",), "ERROR: --gaia2-budget-cap: expected an amount of US dollars*"),
    "probe": (("--gaia2-probe=0",), "ERROR: --gaia2-probe: must be at least 1, got '0'"),
    "probe-only": (("-o", "gaia2_probe_only=maybe"), "ERROR: gaia2_probe_only: invalid truth value 'maybe'"),
    "language": (("--gaia2-language=fr",), "ERROR: --gaia2-language: expected a language_Script code *, got 'fr'"),
    "dataset-revision": (
        ("--gaia2-dataset-revision=a/../b",),
        "ERROR: --gaia2-dataset-revision: expected a branch, tag or commit hash, got 'a/../b'",
    ),
    "token-halt": (("--gaia2-token-halt=0",), "ERROR: --gaia2-token-halt: must be at least 1, got '0'"),
    "max-errors": (("--gaia2-max-errors=0",), "ERROR: --gaia2-max-errors: must be at least 1, got '0'"),
    "in-flight": (("--gaia2-in-flight=65",), "ERROR: --gaia2-in-flight: must be from 1 to 64, got '65'"),
    "require-isolation": (
        ("-o", "gaia2_require_isolation=maybe"),
        "ERROR: gaia2_require_isolation: invalid truth value 'maybe'",
    ),
    "gateway": (("--gaia2-gateway=maybe",), "*--gaia2-gateway: invalid choice: 'maybe'*"),
    "scenario-cap": (("--gaia2-scenario-cap=-1",), "ERROR: --gaia2-scenario-cap: must not be negative, got '-1'"),
    "scenario-token-cap": (
        ("--gaia2-scenario-token-cap=0",),
        "ERROR: --gaia2-scenario-token-cap: must be at least 1, got '0'",
    ),
}
"""One value of each option that can never work, and the line that says so."""

ANY_VALUE = {
    "name": "free text",
    "tag": "free text",
    "provider": "any provider name; the image's profile decides which settings it needs",
    "model": "any model id; pre-flight asks the endpoint whether it serves it (exit 10)",
    "judge-model": "any model id; pre-flight asks the endpoint whether it serves it (exit 10)",
    "output": "any folder; one that cannot be created is a pre-flight refusal (exit 10, test_results_store.py)",
}
"""Options with no value that is wrong at start-up, and why."""

MISTAKES: dict[str, tuple[tuple[str, ...], str]] = {
    "sample-over-pool": (
        ("--gaia2-sample=40",),
        "ERROR: --gaia2-sample 40: the pool has only 12 scenarios (after the splits, subset, ids file, -k and -m); "
        "ask for at most 12, or leave --gaia2-sample out to run them all",
    ),
    "sample-after-k": (
        ("-k", "universe_21", "--gaia2-sample=3"),
        "ERROR: --gaia2-sample 3: the pool has only 2 scenarios *",
    ),
    "sample-with-shard": (
        ("--gaia2-sample=40", "--gaia2-shard=1/2"),
        "ERROR: --gaia2-sample 40: the pool has only 12 scenarios *",
    ),
    "marker-typo": (
        ("-m", "serch_split"),
        "ERROR: -m 'serch_split' selects no scenario. Markers: adaptability_split, *; nearest: 'serch_split' -> search_split",
    ),
    "keyword-of-nothing": (
        ("-k", "scenario_universe_99"),
        "ERROR: -k 'scenario_universe_99' selects no scenario. Markers: *; nearest: 'scenario_universe_99' -> *",
    ),
}
"""Selection mistakes users make, each found where the scenarios are collected (an xdist worker
under -n) and reported once by the process that owns the run."""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The shipped pool of 12 scenarios under scenarios/ (the default place)."""
    shutil.copytree(SHIPPED, pytester.path / "scenarios")
    return pytester


def error_lines(result: pytest.RunResult) -> list[str]:
    return [line for line in result.stderr.lines if line.startswith("ERROR") or "error:" in line]


def both_layouts(run: Callable[..., pytest.RunResult], pytester: pytest.Pytester, *args: str) -> list[str]:
    """The run serially and at -n 2: the same exit status (4), the same error lines, no
    INTERNALERROR, nothing written under the output folder; returns the lines."""
    serial, parallel = run(*args), run("-n", "2", *args)
    for result in (serial, parallel):
        assert result.ret == pytest.ExitCode.USAGE_ERROR, (args, result.stdout.str(), result.stderr.str())
        text = result.stdout.str() + result.stderr.str()
        assert "INTERNALERROR" not in text and "Traceback" not in text and "no scenario ran" not in text, text
    assert error_lines(serial) == error_lines(parallel) != [], (error_lines(serial), error_lines(parallel))
    assert not (pytester.path / "out").exists(), args
    return error_lines(serial)


def test_the_matrix_covers_every_option_of_the_reference() -> None:
    names = {option.name for option in OPTIONS}
    assert names == set(BAD) | set(ANY_VALUE) and not set(BAD) & set(ANY_VALUE)


@pytest.mark.parametrize("name", sorted(BAD))
def test_every_usage_error_of_the_reference_is_the_same_serially_and_at_n_2(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], name: str
) -> None:
    args, line = BAD[name]
    lines = both_layouts(check_gaia2, project, *args)
    assert any(fnmatch(shown, line) for shown in lines), (lines, line)


@pytest.mark.slow  # two xdist workers start and end for each
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_selection_mistake_is_the_same_serially_and_at_n_2(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult], name: str
) -> None:
    args, line = MISTAKES[name]
    lines = both_layouts(check_gaia2, project, *args)
    assert len(lines) == 1 and fnmatch(lines[0], line), (lines, line)


def test_a_collection_error_stops_before_any_run_folder(
    project: pytest.Pytester, check_gaia2: Callable[..., pytest.RunResult]
) -> None:
    """pytest stops at a test file that cannot be imported before running anything: no
    pre-flight and no run folder either (pytest-xdist runs the rest instead, as it always does)."""
    project.makepyfile(test_broken="import a_module_that_is_not_there")
    result = check_gaia2("-m", "search_split")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])
    assert not (project.path / "out").exists() and "gaia2: 4 planned" not in result.stdout.str()
