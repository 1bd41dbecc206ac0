"""The environment real containers get, per runtime profile, against the contract's tables.

Each run starts one container from a small image built FROM the reference image (so the
run completes whatever the profile) and named so its profile is hermes, openclaw, oracle
or default (contract section 1.1). A user test in the pytester folder records what the
engine started (``Config.Env``, ``ExtraHosts``) and what the container reaches on the host.
The keys are fake values made for these tests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import pytest
from gaia2_testing import SHIPPED, derived_image, gaia2_containers, run_id_of

SCENARIO = SHIPPED / "search" / "scenario_universe_21_7kww6e.json"
PROBE = '''
import json
import os
from pathlib import Path


def test_env_probe(gaia2_container):
    """Record the started container's environment and host mapping, and what it reaches on the host."""
    handle = gaia2_container.container.handle
    probe = {"env": handle.attrs["Config"]["Env"], "extra_hosts": handle.attrs["HostConfig"]["ExtraHosts"],
             "ca_bundle": gaia2_container.container.exec(["cat", "/etc/ssl/certs/gaia2-host-ca-bundle.crt"])}
    if os.environ.get("PROBE_URL"):
        probe["host_reply"] = gaia2_container.container.exec(
            ["curl", "-s", "-m", "5", "--noproxy", "*", os.environ["PROBE_URL"]])
    Path("probe.json").write_text(json.dumps(probe))
'''

CONTRACT_VARS = frozenset({
    "PROVIDER", "API_KEY", "MODEL", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY",
    "GOOGLE_API_KEY", "OPENROUTER_API_KEY", "OPENAI_COMPAT_API_KEY", "OPENAI_COMPLETIONS_API_KEY",
    "OPENCLAW_FORCE_RECONFIG", "OPENCLAW_GATEWAY_PORT", "OPENCLAW_GATEWAY_URL", "BASE_URL",
    "OPENROUTER_BASE_URL", "THINKING", "GAIA2_JUDGE_PROVIDER", "GAIA2_JUDGE_MODEL",
    "GAIA2_JUDGE_API_KEY", "GAIA2_JUDGE_BASE_URL", "GAIA2_JUDGE_FINAL_TURN", "FAKETIME",
    "GAIA2_ADAPTER_PORT", "GAIA2_TRACE_FILE", "GAIA2_NOTIFICATION_MODE", "GAIA2_TIME_SPEED",
    "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY",
    "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "GAIA2_CA_BUNDLE", "GAIA2_PROXY_RELAY_URL",
})
"""Every variable the runner may inject (contract section 1.3), and the host-only ones:
checked for presence AND absence."""
CA_PATH = "/etc/ssl/certs/gaia2-host-ca-bundle.crt"
CA_PEM = "-----BEGIN CERTIFICATE-----\nprobe-ca\n-----END CERTIFICATE-----\n"


def _faketime() -> str:
    start = json.loads(SCENARIO.read_text(encoding="utf-8"))["metadata"]["definition"]["start_time"]
    return datetime.fromtimestamp(start, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def always(thinking: str = "low") -> dict[str, str]:
    """What every profile gets from this scenario on the bridge network."""
    return {"THINKING": thinking, "GAIA2_JUDGE_FINAL_TURN": "1", "FAKETIME": _faketime(),
            "GAIA2_ADAPTER_PORT": "8090", "GAIA2_TRACE_FILE": "/tmp/trace.jsonl"}


def probe_run(run_gaia2: Any, pytester: pytest.Pytester, *args: str, gateway: str = "off") -> dict[str, Any]:
    """One container started for the probe test; what it recorded, the env as a dict. The model
    gateway is off unless asked for: the contract's tables are upstream's, keys in the environment."""
    pytester.makepyfile(test_probe=PROBE)
    # The cases name model endpoints that do not exist: only the container's environment is tested.
    result = run_gaia2(
        "-k", "env_probe", f"--gaia2-scenarios={SCENARIO}", "--gaia2-skip-endpoint-check", f"--gaia2-gateway={gateway}",
        *args,
    )
    result.assert_outcomes(passed=1)
    assert gaia2_containers(run_id_of(pytester.path / "out")) == []
    probe = json.loads((pytester.path / "probe.json").read_text(encoding="utf-8"))
    probe["env"] = dict(entry.split("=", 1) for entry in probe["env"])
    probe["stdout"] = result.stdout.str()
    return probe


def injected(env: dict[str, str], *extra: str) -> dict[str, str]:
    """The part of a container's env the plugin decides (image ENV lines such as PATH aside)."""
    return {key: value for key, value in env.items() if key in CONTRACT_VARS or key in extra}


@dataclass(frozen=True)
class Case:
    image: str
    environ: dict[str, str]
    args: tuple[str, ...]
    expected: dict[str, str]
    extra: tuple[str, ...] = ()  # --gaia2-env names expected beside the contract's variables


ANT, OAI, GEM, GOO, JUDGE, TEAM = ("ant-key-0001", "oai-key-0002", "gem-key-0003", "goo-key-0004",
                                   "judge-key-0005", "team-judge-key-0006")
CASES = {
    # Hermes: the provider's key is exported beside API_KEY; base URL in BASE_URL only; the
    # explicit judge key wins; repeated --gaia2-env entries all arrive.
    "hermes": Case(
        "pytest-gaia2-test/gaia2-hermes-envprobe:1",
        {"ANTHROPIC_API_KEY": ANT, "OPENAI_API_KEY": OAI, "GAIA2_JUDGE_API_KEY": JUDGE},
        ("--gaia2-provider=anthropic", "--gaia2-model=claude-x", "--gaia2-thinking=high",
         "--gaia2-base-url=http://host.docker.internal:4000/v1", "--gaia2-judge-provider=openai",
         "--gaia2-judge-model=gpt-j", "--gaia2-judge-base-url=http://judge.example:9/v1",
         "--gaia2-env=VARIANT=fast", "--gaia2-env=FEATURE_FLAGS=a,b"),
        {**always("high"), "PROVIDER": "anthropic", "API_KEY": ANT, "MODEL": "claude-x",
         "ANTHROPIC_API_KEY": ANT, "BASE_URL": "http://host.docker.internal:4000/v1",
         "GAIA2_JUDGE_PROVIDER": "openai", "GAIA2_JUDGE_MODEL": "gpt-j", "GAIA2_JUDGE_API_KEY": JUDGE,
         "GAIA2_JUDGE_BASE_URL": "http://judge.example:9/v1", "VARIANT": "fast", "FEATURE_FLAGS": "a,b"},
        extra=("VARIANT", "FEATURE_FLAGS"),
    ),
    # OpenClaw: the reconfigure flag, both base-URL keys, both Google keys mirroring the first
    # one set; the judge comes from the host environment and reads the judge provider's key.
    "openclaw": Case(
        "pytest-gaia2-test/gaia2-oc-envprobe:1",
        {"GEMINI_API_KEY": GEM, "GOOGLE_API_KEY": GOO, "GAIA2_JUDGE_PROVIDER": "google",
         "GAIA2_JUDGE_MODEL": "gemini-j"},
        ("--gaia2-provider=google", "--gaia2-model=gemini-x", "--gaia2-base-url=http://proxy.example:4000"),
        {**always(), "PROVIDER": "google", "API_KEY": GEM, "MODEL": "gemini-x", "GEMINI_API_KEY": GEM,
         "GOOGLE_API_KEY": GEM, "OPENCLAW_FORCE_RECONFIG": "1", "BASE_URL": "http://proxy.example:4000",
         "OPENROUTER_BASE_URL": "http://proxy.example:4000", "GAIA2_JUDGE_PROVIDER": "google",
         "GAIA2_JUDGE_MODEL": "gemini-j", "GAIA2_JUDGE_API_KEY": GEM},
    ),
    # A team's own image (default profile) behind an OpenAI-compatible endpoint and a
    # corporate proxy: the key is read from OPENAI_API_KEY but exported as the two compat
    # names; the judge's key comes from the variable named with --gaia2-judge-api-key-env,
    # which itself stays outside, as does GAIA2_CA_BUNDLE (its file is copied in instead).
    "custom": Case(
        "pytest-gaia2-test/custom-agent-envprobe:1",
        {"OPENAI_API_KEY": OAI, "TEAM_JUDGE_KEY": TEAM, "HTTPS_PROXY": "http://proxy.example:3128",
         "NO_PROXY": "localhost,127.0.0.1", "GAIA2_CA_BUNDLE": "ca.pem"},
        ("--gaia2-provider=openai-compat", "--gaia2-model=llama-x",
         "--gaia2-base-url=http://host.docker.internal:11434/v1", "--gaia2-judge-provider=openai-compat",
         "--gaia2-judge-model=llama-j", "--gaia2-judge-api-key-env=TEAM_JUDGE_KEY"),
        {**always(), "PROVIDER": "openai-compat", "API_KEY": OAI, "MODEL": "llama-x",
         "OPENAI_COMPAT_API_KEY": OAI, "OPENAI_COMPLETIONS_API_KEY": OAI,
         "BASE_URL": "http://host.docker.internal:11434/v1", "GAIA2_JUDGE_PROVIDER": "openai-compat",
         "GAIA2_JUDGE_MODEL": "llama-j", "GAIA2_JUDGE_API_KEY": TEAM,
         "HTTPS_PROXY": "http://proxy.example:3128", "NO_PROXY": "localhost,127.0.0.1,host.docker.internal",
         "no_proxy": "host.docker.internal",  # behind a proxy the model host is reached directly
         "NODE_EXTRA_CA_CERTS": CA_PATH, "REQUESTS_CA_BUNDLE": CA_PATH, "SSL_CERT_FILE": CA_PATH},
    ),
    # An oracle image gets no agent variables even when a provider and keys are at hand; the
    # host's BASE_URL is copied in anyway (upstream), and its judge still needs settings.
    "oracle": Case(
        "pytest-gaia2-test/gaia2-oracle-envprobe:1",
        {"ANTHROPIC_API_KEY": ANT, "BASE_URL": "http://host-env.example:1/v1"},
        ("--gaia2-provider=anthropic", "--gaia2-model=claude-x", "--gaia2-judge-provider=anthropic",
         "--gaia2-judge-model=claude-j"),
        {**always(), "BASE_URL": "http://host-env.example:1/v1", "GAIA2_JUDGE_PROVIDER": "anthropic",
         "GAIA2_JUDGE_MODEL": "claude-j", "GAIA2_JUDGE_API_KEY": ANT},
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_profile_env_matches_the_contract(
    name: str, pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch
) -> None:
    case = CASES[name]
    for key, value in case.environ.items():
        clean_env.setenv(key, value)
    (pytester.path / "ca.pem").write_text(CA_PEM, encoding="utf-8")
    derived_image(case.image)
    probe = probe_run(run_gaia2, pytester, f"--gaia2-image={case.image}", *case.args)
    env = probe["env"]
    assert injected(env, *case.extra) == case.expected
    if "GAIA2_CA_BUNDLE" in case.environ:
        assert probe["ca_bundle"] == [0, CA_PEM]
    keys = {value for key, value in case.environ.items() if key.endswith("_KEY")}
    stray = {key for key, value in env.items() if value in keys and key not in case.expected}
    assert not stray, f"key values in variables the contract does not set: {sorted(stray)}"


@pytest.mark.parametrize("explicit_file", [False, True], ids=["rootdir-dotenv", "env-file-option"])
def test_dotenv_fills_gaps_environment_wins_judge_settings_ignored(
    explicit_file: bool, pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch
) -> None:
    dotenv = (f"ANTHROPIC_API_KEY={ANT}\nOPENAI_API_KEY=oai-from-dotenv-0007\n"
              "GAIA2_JUDGE_MODEL=judge-from-dotenv\nGAIA2_JUDGE_API_KEY=judge-from-dotenv-0008\n")
    args = [f"--gaia2-image={CASES['hermes'].image}", "--gaia2-provider=anthropic", "--gaia2-model=m"]
    if explicit_file:
        (pytester.path / "config").mkdir()
        (pytester.path / "config" / "team.env").write_text(dotenv, encoding="utf-8")
        (pytester.path / ".env").write_text("ANTHROPIC_API_KEY=decoy-not-read-0009\n")  # not read
        args.append("--gaia2-env-file=config/team.env")
    else:
        (pytester.path / ".env").write_text(dotenv, encoding="utf-8")
    clean_env.setenv("OPENAI_API_KEY", OAI)
    clean_env.setenv("GAIA2_JUDGE_PROVIDER", "openai")
    clean_env.setenv("GAIA2_JUDGE_MODEL", "judge-from-env")
    derived_image(CASES["hermes"].image)
    probe = probe_run(run_gaia2, pytester, *args)
    env = probe["env"]
    assert (env["API_KEY"], env["ANTHROPIC_API_KEY"]) == (ANT, ANT)  # the file fills what is unset
    assert env["GAIA2_JUDGE_MODEL"] == "judge-from-env"  # judge settings in the file are ignored,
    assert env["GAIA2_JUDGE_API_KEY"] == OAI  # so the judge key is the environment's OpenAI key
    assert "OPENAI_API_KEY" not in env and "oai-from-dotenv-0007" not in env.values()
    file = "config/team.env" if explicit_file else ".env"
    assert f"gaia2: Ignoring judge settings in {pytester.path / file}" in probe["stdout"]
    assert "GAIA2_JUDGE_API_KEY, GAIA2_JUDGE_MODEL" in probe["stdout"]


def test_reference_image_ini_env_list_and_host_mapping(
    pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch, host_server: tuple[int, str]
) -> None:
    """The reference image (the default) needs nothing: its placeholder judge calls no model,
    so no key goes in; the ini list's entries do, and the host is reachable by name."""
    port, token = host_server
    pytester.makefile(".ini", pytest="[pytest]\ngaia2_env =\n    VARIANT=ini-fast\n    PROBE_FLAG=on=1\n")
    clean_env.setenv("ANTHROPIC_API_KEY", ANT)
    clean_env.setenv("PROBE_URL", f"http://host.docker.internal:{port}/")
    probe = probe_run(run_gaia2, pytester)
    assert injected(probe["env"], "VARIANT", "PROBE_FLAG") == {
        **always(), "GAIA2_JUDGE_PROVIDER": "none", "GAIA2_JUDGE_MODEL": "none",
        "VARIANT": "ini-fast", "PROBE_FLAG": "on=1"}
    assert ANT not in probe["env"].values()
    assert "host.docker.internal:host-gateway" in probe["extra_hosts"]
    assert probe["host_reply"] == [0, token]


def test_host_network_reaches_the_host_by_name_too(
    pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch, host_server: tuple[int, str]
) -> None:
    """Upstream's default network: the same base URL must work, and ports come from the range."""
    port, token = host_server
    clean_env.setenv("PROBE_URL", f"http://host.docker.internal:{port}/")
    probe = probe_run(run_gaia2, pytester, "--gaia2-network=host", "--gaia2-port-range=31000-31999")
    env = probe["env"]
    assert 31000 <= int(env["GAIA2_ADAPTER_PORT"]) <= 31999 and 31000 <= int(env["OPENCLAW_GATEWAY_PORT"]) <= 31999
    assert env["OPENCLAW_GATEWAY_URL"] == f"ws://127.0.0.1:{env['OPENCLAW_GATEWAY_PORT']}"
    assert probe["host_reply"] == [0, token]


def test_with_the_gateway_on_no_key_enters_the_container_and_the_base_urls_are_the_gateways(
    pytester: pytest.Pytester, run_gaia2: Any, clean_env: pytest.MonkeyPatch
) -> None:
    """The Hermes case with the gateway on (its default with keys configured): the engine's own record of
    the container's environment holds the gateway's URLs and one token where the keys were, and no key."""
    case = CASES["hermes"]
    for key, value in case.environ.items():
        clean_env.setenv(key, value)
    derived_image(case.image)
    probe = probe_run(run_gaia2, pytester, f"--gaia2-image={case.image}", *case.args, gateway="on")
    env = probe["env"]
    keys = {value for key, value in case.environ.items() if key.endswith("_KEY")}
    assert not [name for name, value in env.items() if any(key in value for key in keys)]
    token = env["API_KEY"]
    assert token.startswith("gaia2-gw-")
    assert env["ANTHROPIC_API_KEY"] == env["GAIA2_JUDGE_API_KEY"] == token
    host, port = env["BASE_URL"].removeprefix("http://").split("/")[0].split(":")
    assert host == "host.docker.internal" and env["BASE_URL"].endswith(f":{port}/agent")
    assert env["GAIA2_JUDGE_BASE_URL"] == f"http://host.docker.internal:{port}/judge"
    assert (env["PROVIDER"], env["MODEL"], env["VARIANT"]) == ("anthropic", "claude-x", "fast")
    assert "model gateway on at" in probe["stdout"]
