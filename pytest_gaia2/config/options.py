"""Every ``--gaia2-*`` option, its ``gaia2_*`` ini key and how its value is parsed.

One table keeps the command line, the ini file, the upstream TOML mapping and the
README in step: an option exists exactly once, here. The parsers it names are in
:mod:`~pytest_gaia2.config.values`; registering and reading them with pytest is
:mod:`pytest_gaia2.plugin.pytest_options`, and reading ``--gaia2-x VALUE`` as
``--gaia2-x=VALUE`` is :mod:`pytest_gaia2.plugin.joined_values`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_gaia2.config.values import (
    FALSE_WORDS,
    TRUE_WORDS,
    OptionError,
    Shard,
    boolean,
    copy_pair,
    engine_url,
    env_name,
    env_pair,
    fraction,
    image_reference,
    in_flight,
    language_code,
    level,
    non_negative_float,
    non_negative_int,
    parse_shard,
    port_range,
    positive_float,
    positive_int,
    resume_target,
    revision,
    size,
    size_or_zero,
    stripped_text,
    usd,
)

if TYPE_CHECKING:
    from pytest_gaia2.engine.spec import EngineSpec

GROUP = "gaia2"


@dataclass(frozen=True)
class Option:
    """One plugin option: ``--gaia2-<name>`` on the command line, ``gaia2_<key>`` in the ini file."""

    name: str
    help: str
    default: Any = None
    parse: Callable[[str, Any], Any] = stripped_text
    choices: Sequence[str] | None = None
    flag: bool = False
    multiple: bool = False
    bare: bool = False
    """Also valid without a value (argparse's ``nargs='?'``); given bare it reads as True."""
    path: bool = False
    """A filesystem path: ``read`` anchors a relative value to the folder it was written for."""

    @property
    def key(self) -> str:
        """The attribute and ini key suffix: ``judge-model`` becomes ``judge_model``."""
        return self.name.replace("-", "_")

    @property
    def cli(self) -> str:
        return f"--gaia2-{self.name}"

    @property
    def ini(self) -> str:
        return f"gaia2_{self.key}"


OPTIONS: tuple[Option, ...] = (
    # Where scenarios come from and which run.
    Option(
        "scenarios",
        "Scenario directories or files (<root>/<split>/<scenario_id>.json). Default: scenarios/ at the rootdir.",
        multiple=True,
        path=True,
    ),
    Option(
        "dataset",
        "Hugging Face dataset ORG/NAME to materialise and run (e.g. meta-agents-research-environments/gaia2-cli).",
    ),
    Option(
        "language",
        "With --gaia2-dataset: a language_Script code (spa_Latn, cmn_Hans, ...) selecting the dataset's "
        "per-language configs <language>_<split>, as upstream's [target].language (e.g. facebook/omnilingual-gaia2; "
        "its translated splits are execution, search, adaptability and ambiguity).",
        parse=language_code,
    ),
    Option(
        "dataset-revision",
        "With --gaia2-dataset: the dataset revision (branch, tag or commit) to load; a cached split made "
        "from another revision is loaded again. Recorded in run_config.json.",
        parse=revision,
    ),
    Option("splits", "Comma-separated split names, or 'all'."),
    Option("subset", 'Subset manifest in upstream\'s format: {"splits": {name: [scenario ids]}}.', path=True),
    Option("ids-file", "Plain text file of scenario ids to run, one per line.", path=True),
    Option("sample", "Run a seeded sample of N scenarios, stratified by split and universe.", parse=positive_int),
    Option("seed", "Seed for --gaia2-sample (default 0).", default=0, parse=non_negative_int),
    Option("first-n", "Run the first N scenarios in file order (biased towards few universes).", parse=positive_int),
    Option(
        "order",
        "Start order: 'interleaved' (default) starts scenarios in a seeded order interleaved across split, "
        "universe and repeat, so a run stopped early (budget, Ctrl-C, time) ran a stratified sample; "
        "'file' keeps the files' order.",
        default="interleaved",
        choices=("interleaved", "file"),
    ),
    Option("name", "A name for the run, kept in run_config.json and shown in every report and list."),
    Option("tag", "A tag for the run (repeatable), kept in run_config.json and shown like the name.", multiple=True),
    Option(
        "shard",
        "Run only shard K of N (K/N, 1-based) of the selection: a stable partition "
        "stratified by split and universe, taken after -k, -m and the sample.",
        parse=parse_shard,
    ),
    Option("repeat", "Run each scenario K times (pass@k), as run_1..run_K.", default=1, parse=positive_int),
    Option(
        "sequence",
        'Sequence file in upstream\'s format (one chain per line: {"universe_id", "cap", "scenarios": '
        '[{"scenario_id"}]}): run only those scenarios, each chain in order on one worker, '
        "carrying the agent's home and app state container to container.",
        path=True,
    ),
    Option(
        "resume",
        "Continue a run folder: bare, the latest under --gaia2-output; =PATH, that "
        "folder. Stored pass/fail verdicts are reused; only what is missing or errored runs.",
        default=False,
        bare=True,
        parse=resume_target,
        path=True,
    ),
    Option(
        "resume-mismatch",
        "What --gaia2-resume does when the run it continues was made with "
        "other settings (image, model, judge, ...): refuse, or warn and continue.",
        default="refuse",
        choices=("refuse", "warn"),
    ),
    Option(
        "retries",
        "Re-run a scenario whose outcome is an infrastructure error up to N times (judge failures are never retried).",
        default=0,
        parse=non_negative_int,
    ),
    Option(
        "config", "gaia2-runner TOML config ([target], [agent], [judge], [run]); command-line options win.", path=True
    ),
    # The container.
    Option("image", "Runtime image (default: the reference oracle image, built on first use).", parse=image_reference),
    Option(
        "engine",
        "Docker engine URL[#N[,api|ports]] (repeatable): unix:///path.sock, tcp://host:port "
        "(TLS from DOCKER_TLS_VERIFY/DOCKER_CERT_PATH) or ssh://[user@]host[:port]; N scenarios at a time "
        "(default 1); xdist workers are spread over the engines by N. A remote engine's adapter is reached "
        "through the engine API (api), a local one's through its published port (ports). "
        "Default: DOCKER_HOST or the default socket.",
        multiple=True,
        parse=engine_url,
    ),
    Option(
        "network",
        "Network mode: bridge (engine-assigned 127.0.0.1 port) or host.",
        default="bridge",
        choices=("bridge", "host"),
    ),
    Option(
        "port-range",
        "Host-network mode: ports to hand out, partitioned per xdist worker.",
        default=(20000, 29999),
        parse=port_range,
    ),
    Option("env", "Extra KEY=VALUE passed into every container (repeatable).", multiple=True, parse=env_pair),
    Option("env-file", "dotenv file with API keys (default: .env at the rootdir when present).", path=True),
    Option(
        "copy-in",
        "Copy HOST_PATH into every container at /container/path before it starts (repeatable).",
        multiple=True,
        parse=copy_pair,
    ),
    Option("time-speed", "GAIA2_TIME_SPEED for the in-container daemon (> 0).", parse=positive_float),
    Option(
        "notification-mode", "Notification mode passed to the daemon.", default="message", choices=("message", "native")
    ),
    # Agent and judge.
    Option("provider", "Agent LLM provider (anthropic, openai, google, openrouter, openai-compat, ...)."),
    Option("model", "Agent model name."),
    Option("base-url", "Agent model base URL (host services: http://host.docker.internal:PORT)."),
    Option("api-key-env", "NAME of the environment variable holding the agent API key.", parse=env_name),
    Option("thinking", "Agent thinking level.", default="low", choices=("off", "low", "medium", "high")),
    Option("judge-provider", "In-container judge provider."),
    Option("judge-model", "In-container judge model."),
    Option("judge-base-url", "In-container judge base URL."),
    Option("judge-api-key-env", "NAME of the environment variable holding the judge API key.", parse=env_name),
    Option(
        "gateway",
        "The host-side model gateway: 'on' gives containers the gateway's URL and a per-scenario token "
        "instead of the provider keys, and measures usage and money on the wire; 'off' passes the keys "
        "into containers as environment variables (upstream's behaviour). Default: on whenever a provider "
        "key is configured and its upstream URL is known.",
        choices=("on", "off"),
    ),
    # Time limits.
    Option(
        "timeout",
        "Per-scenario timeout in seconds; the effective timeout is the larger of this and the scenario's "
        "declared duration + --gaia2-duration-slack.",
        default=600.0,
        parse=positive_float,
    ),
    Option(
        "duration-slack",
        "Seconds a scenario that declares a duration may run past it before it fails as too slow "
        "(upstream's rule is 60).",
        default=60.0,
        parse=non_negative_float,
    ),
    Option("health-timeout", "Seconds to wait for the adapter's /health.", default=120.0, parse=positive_float),
    Option(
        "judge-grace",
        "Seconds to wait for a judgment after a terminal status without one.",
        default=15.0,
        parse=non_negative_float,
    ),
    Option("stop-timeout", "Seconds docker stop waits before SIGKILL.", default=5.0, parse=non_negative_float),
    Option(
        "reap-grace",
        "Age in seconds before another run's orphaned containers are reaped.",
        default=120.0,
        parse=non_negative_float,
    ),
    # Container limits.
    Option(
        "max-file-size",
        "Largest file copied out of a container, in bytes or with K, M, G "
        "(KiB-based); a larger file is skipped and listed in result.json. Also the largest "
        "--gaia2-copy-in source (a larger one, or one that is not a regular file, is refused).",
        default=256 * 1024**2,
        parse=size,
    ),
    Option(
        "max-collect-size",
        "Most bytes copied out of one scenario's container (K, M, G as "
        "above); files past the budget are skipped and listed.",
        default=1024**3,
        parse=size,
    ),
    Option(
        "memory",
        "Memory limit of each container (K, M, G as above); 0 for no limit.",
        default=4 * 1024**3,
        parse=size_or_zero,
    ),
    Option("pids-limit", "Most processes in each container; 0 for no limit.", default=4096, parse=non_negative_int),
    Option(
        "keep",
        "Stop each container gracefully (docker stop) at teardown, for debugging; "
        "by default the disposable container is killed.",
        default=False,
        flag=True,
        parse=boolean,
    ),
    # Output and the gate.
    Option(
        "output",
        "Folder of run folders: each pytest run writes its own <UTC time>-<run id> folder "
        "in it, and latest points at the newest.",
        default="gaia2-results",
        path=True,
    ),
    Option("min-pass-rate", "Gate: the run passes when the chosen rate reaches R (0..1).", parse=fraction),
    Option("rate", "Gate: which rate to compare.", default="strict", choices=("strict", "judged")),
    Option(
        "gate-on",
        "Gate: compare the rate itself or the lower end of its 95% interval.",
        default="point",
        choices=("point", "lower-bound"),
    ),
    Option("max-error-rate", "Gate: the run fails when infrastructure errors exceed E (0..1).", parse=fraction),
    Option(
        "allow-incomplete",
        "Gate: do not fail the run only because some planned scenarios "
        "did not run (they still count as not passed in the strict rate).",
        default=False,
        flag=True,
        parse=boolean,
    ),
    Option(
        "stop-when-decided",
        "A run folder of an earlier run (or an output folder: its latest run), the baseline: "
        "no new scenario starts once a sequential test on the pairs judged in both runs decides "
        "this run is better or worse (the rest are skipped, reason decided; the run is incomplete). "
        "With --gaia2-repeat the scenario is the unit: one pair per scenario, once its last run is in.",
        path=True,
    ),
    Option(
        "decision-level",
        "--gaia2-stop-when-decided: the chance (0..1) of deciding a difference when there is "
        "none, however often the test looks.",
        default=0.05,
        parse=level,
    ),
    Option(
        "require-isolation",
        "Refuse an image whose agent could read the scenario, write the judge's state or signal the "
        "judge (pre-flight asks a throwaway container of it as user agent); without it such a run "
        "goes ahead and says its verdicts are not tamper-proof.",
        default=False,
        flag=True,
        parse=boolean,
    ),
    Option(
        "preflight-only",
        "Run the pre-flight checks, print the report and stop.",
        default=False,
        flag=True,
        parse=boolean,
    ),
    # Not paying for waste: endpoints that cannot answer, agents that stopped acting or loop.
    Option(
        "skip-endpoint-check",
        "Do not ask the agent's and judge's model endpoints for a one-token completion before the run.",
        default=False,
        flag=True,
        parse=boolean,
    ),
    Option(
        "idle-timeout",
        "Seconds without a new daemon event (turn, event count or status) before a scenario is "
        "ended as error idle_timeout, its files kept; 0: no idle limit (upstream's [run].idle_timeout).",
        default=0.0,
        parse=non_negative_float,
    ),
    Option(
        "smoke",
        "Run the midsmoke rung on the current settings: a seeded sample of 32 scenarios stratified "
        "by split and universe (all, if fewer), judged on errors only (--gaia2-smoke-max-errors).",
        default=False,
        flag=True,
        parse=boolean,
    ),
    Option(
        "smoke-max-errors",
        "With --gaia2-smoke: the run passes only with at most this many errors (failures do not count).",
        default=1,
        parse=non_negative_int,
    ),
    Option(
        "max-starts-per-minute",
        "Start at most N scenario attempts per minute, across all workers and the sessions of a "
        "resume; the run's pacer also slows starts after provider errors (429, 5xx) and recovers.",
        parse=positive_float,
    ),
    Option(
        "pacing",
        "The run's pacer: 'adaptive' (default) halves the rate of starts after provider errors "
        "(429, 5xx) and recovers; 'off' never slows down (it still counts them in progress.json), "
        "for a comparison or a provider paced elsewhere. --gaia2-max-starts-per-minute applies either way.",
        default="adaptive",
        choices=("adaptive", "off"),
    ),
    Option(
        "in-flight",
        "Scenarios each pytest process keeps in flight (default 1): with K, a process (serially, or each "
        "xdist worker) starts the containers of its next items while pytest waits for the current one; "
        "verdicts, records and reports stay in pytest's order. Not with --gaia2-sequence.",
        default=1,
        parse=in_flight,
    ),
    Option(
        "stuck-loop-min-calls",
        "A daemon that ends in error after the agent made N or more model calls since its last "
        "turn boundary is a failure (agent_loop), not an error; 0 disables.",
        default=3,
        parse=non_negative_int,
    ),
    Option(
        "progress-interval",
        "Seconds between progress lines when the output is not a terminal "
        "(CI logs); 0: none. On a terminal the status updates in place; -q shows none. "
        "progress.json in the run folder is kept current either way.",
        default=60.0,
        parse=non_negative_float,
    ),
    Option(
        "report",
        "Write report.md and report.html (with plots) into the run folder at the end "
        "of the run; with --alluredir, attach them to Allure too (needs pytest-gaia2[analysis]).",
        default=False,
        flag=True,
        parse=boolean,
    ),
    # Cost and budget.
    Option(
        "price-file",
        "JSON or TOML prices per model, per million tokens ({model: {input, output, "
        "cached_input}}); wins over the genai-prices data.",
        path=True,
    ),
    Option(
        "budget-halt",
        "USD: once the run's spend reaches it, no new scenario starts (the rest "
        "are skipped, reason budget; the run is incomplete).",
        parse=usd,
    ),
    Option(
        "budget-cap",
        "USD: once the run's spend passes it, running scenarios are stopped too (error budget_cap, their files kept); "
        "with the gateway on, model calls past it are refused as they are made.",
        parse=usd,
    ),
    Option(
        "scenario-cap",
        "USD: with the gateway on, a scenario whose model calls reach it is stopped at once (error "
        "scenario_cap, not retried; its further calls are refused).",
        parse=usd,
    ),
    Option(
        "scenario-token-cap",
        "Tokens (input and output): with the gateway on, a scenario whose model calls used this many is stopped "
        "at once, as with --gaia2-scenario-cap; for models whose price is 0 or unknown (vLLM, Ollama).",
        parse=positive_int,
    ),
    Option(
        "token-halt",
        "Tokens (input and output, every attempt of the run): once the run has used this many, no new scenario "
        "starts, as with --gaia2-budget-halt; for models whose price is 0 or unknown (vLLM, Ollama).",
        parse=positive_int,
    ),
    Option(
        "max-errors",
        "Stop paying for a broken setup: once N scenarios of this session (every worker's) have ended in an "
        "infrastructure error, after their --gaia2-retries, no new scenario starts, as with --gaia2-budget-halt. "
        "Broken scenario files, the budget cap's stops and interruptions do not count.",
        parse=positive_int,
    ),
    Option(
        "probe",
        "Run a stratified, seeded sample of K scenarios first and project the whole run's cost and time from them.",
        parse=positive_int,
    ),
    Option(
        "probe-only",
        "Stop after the --gaia2-probe scenarios and their projection.",
        default=False,
        flag=True,
        parse=boolean,
    ),
)

BY_KEY: dict[str, Option] = {option.key: option for option in OPTIONS}


@dataclass(frozen=True)
class Options:
    """Every option's value for one run, parsed: one field per row of ``OPTIONS``, typed from the
    row's kind (a test keeps the two in step), so a misspelt name is a type error, not a
    ``KeyError`` in the middle of a paid run."""

    scenarios: tuple[str, ...]
    dataset: str | None
    language: str | None
    dataset_revision: str | None
    splits: str | None
    subset: str | None
    ids_file: str | None
    sample: int | None
    seed: int
    first_n: int | None
    order: Literal["interleaved", "file"]
    name: str | None
    tag: tuple[str, ...]
    shard: Shard | None
    repeat: int
    sequence: str | None
    resume: bool | str
    resume_mismatch: Literal["refuse", "warn"]
    retries: int
    config: str | None
    image: str | None
    engine: tuple[EngineSpec, ...]
    network: Literal["bridge", "host"]
    port_range: tuple[int, int]
    env: tuple[tuple[str, str], ...]
    env_file: str | None
    copy_in: tuple[tuple[str, str], ...]
    time_speed: float | None
    notification_mode: Literal["message", "native"]
    provider: str | None
    model: str | None
    base_url: str | None
    api_key_env: str | None
    thinking: Literal["off", "low", "medium", "high"]
    judge_provider: str | None
    judge_model: str | None
    judge_base_url: str | None
    judge_api_key_env: str | None
    gateway: Literal["on", "off"] | None
    timeout: float
    duration_slack: float
    health_timeout: float
    judge_grace: float
    stop_timeout: float
    reap_grace: float
    max_file_size: int
    max_collect_size: int
    memory: int
    pids_limit: int
    keep: bool
    output: str
    min_pass_rate: float | None
    rate: Literal["strict", "judged"]
    gate_on: Literal["point", "lower-bound"]
    max_error_rate: float | None
    allow_incomplete: bool
    stop_when_decided: str | None
    decision_level: float
    require_isolation: bool
    preflight_only: bool
    skip_endpoint_check: bool
    idle_timeout: float
    smoke: bool
    smoke_max_errors: int
    max_starts_per_minute: float | None
    pacing: Literal["adaptive", "off"]
    in_flight: int
    stuck_loop_min_calls: int
    progress_interval: float
    report: bool
    price_file: str | None
    budget_halt: float | None
    budget_cap: float | None
    scenario_cap: float | None
    scenario_token_cap: int | None
    token_halt: int | None
    max_errors: int | None
    probe: int | None
    probe_only: bool


def _convert(option: Option, raw: object) -> Any:
    if option.multiple:
        items = raw if isinstance(raw, (list, tuple)) else [raw]
        return tuple(option.parse(option.name, str(item)) for item in items)
    if option.flag:
        return boolean(option.name, raw)
    if option.choices is not None:
        value = str(raw).strip()
        if value not in option.choices:
            raise OptionError(f"{option.cli}: expected one of {', '.join(option.choices)}, got {raw!r}")
        return value
    return option.parse(option.name, raw if isinstance(raw, str) else str(raw))


def resolve(cli: Mapping[str, Any], toml: Mapping[str, Any], ini: Mapping[str, Any]) -> Options:
    """Merge the sources (command line > TOML config > ini > default) and parse every value.

    Each mapping is keyed by ``Option.key``; missing or ``None``/empty values fall through.
    """
    values: dict[str, Any] = {}
    for option in OPTIONS:
        raw: Any = None
        for source in (cli, toml, ini):
            candidate = source.get(option.key)
            if candidate is not None and candidate != [] and candidate != ():
                raw = candidate
                break
        if raw is None:
            values[option.key] = () if option.multiple else option.default
            continue
        values[option.key] = _convert(option, raw)
    return Options(**values)


def anchored(option: Option, raw: object, folder: Path) -> Any:
    """A path option's raw value(s) joined to ``folder`` when relative (``~`` expanded); else ``raw``."""
    if not option.path or raw is None:
        return raw
    if isinstance(raw, (list, tuple)):
        return [anchored(option, item, folder) for item in raw]
    if not isinstance(raw, str) or (option.bare and raw.strip().lower() in TRUE_WORDS | FALSE_WORDS):
        return raw  # a bare --gaia2-resume, or its ini key's yes/no
    return os.path.normpath(folder / os.path.expanduser(raw.strip()))
