"""gaia2-runner run-config files mapped onto plugin options."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.options import OptionError
from pytest_gaia2.config.upstream_config import AGENT_KEY_VAR, JUDGE_KEY_VAR, documented_keys, load
from pytest_gaia2.store.redact import looks_secret

REPO = Path(__file__).resolve().parents[3]


def write_config(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "eval.toml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def dataset_root(tmp_path: Path) -> Path:
    root = tmp_path / "conf" / "data"
    (root / "search").mkdir(parents=True)
    return root


def test_a_full_config_maps_to_option_keys(tmp_path: Path, dataset_root: Path, monkeypatch) -> None:
    (tmp_path / "conf" / "subset.json").write_text('{"splits": {}}', encoding="utf-8")
    path = write_config(tmp_path / "conf", """
        [target]
        dataset_root = "data"
        splits = ["search", "Time"]
        subset_manifest = "subset.json"

        [agent]
        image = "localhost/gaia2-hermes:latest"
        provider = "openai-compat"
        model = "qwen3"
        api_key_env = "LITELLM_KEY"
        base_url = "http://host.docker.internal:4000/v1"
        thinking = "high"

        [judge]
        provider = "anthropic"
        model = "claude-sonnet-4-6"
        base_url = "https://judge.example/v1"
        api_key_env = "ANTHROPIC_API_KEY"

        [run]
        timeout = 1800
        health_timeout = 180
        pass_at = 3
        retry = true
        output_dir = "runs/qwen"
        notification_mode = "native"
        time_speed = 5
    """)
    monkeypatch.chdir(tmp_path)  # relative paths follow the TOML file, not the working directory

    config = load(path, {})

    conf = (tmp_path / "conf").resolve()
    assert config.options == {
        "scenarios": [str(dataset_root.resolve())],
        "splits": "search,time",
        "subset": str(conf / "subset.json"),
        "image": "localhost/gaia2-hermes:latest",
        "provider": "openai-compat",
        "model": "qwen3",
        "api_key_env": "LITELLM_KEY",
        "base_url": "http://host.docker.internal:4000/v1",
        "thinking": "high",
        "judge_provider": "anthropic",
        "judge_model": "claude-sonnet-4-6",
        "judge_base_url": "https://judge.example/v1",
        "judge_api_key_env": "ANTHROPIC_API_KEY",
        "timeout": "1800.0",
        "health_timeout": "180.0",
        "repeat": "3",
        "resume": "true",
        "output": str(conf / "runs" / "qwen"),
        "notification_mode": "native",
        "time_speed": "5.0",
    }
    assert config.notes == []
    assert config.secrets == {}
    assert set(config.options) <= set(options.BY_KEY)


def test_options_are_ready_for_resolve_and_the_command_line_wins(tmp_path: Path) -> None:
    path = write_config(tmp_path, """
        [target]
        dataset = "meta-agents-research-environments/gaia2-cli"
        splits = "all"
        limit = 20
        [run]
        timeout = 900
        pass_at = 2
    """)
    toml = load(path, {}).options
    values = options.resolve({"timeout": "120"}, toml, {"timeout": "300", "seed": "4"})
    assert values.dataset == "meta-agents-research-environments/gaia2-cli"
    assert values.splits == "all"
    assert values.first_n == 20
    assert values.repeat == 2
    assert values.timeout == 120.0
    assert values.seed == 4


def test_limit_becomes_first_n_with_a_note(tmp_path: Path) -> None:
    config = load(write_config(tmp_path, "[target]\ndataset = 'org/name'\nlimit = 20\n"), {})
    assert config.options["first_n"] == "20"
    assert config.notes == ["[target].limit = 20 becomes --gaia2-first-n 20: a plain prefix, as in gaia2-runner"]


@pytest.mark.parametrize("reference", ["$DATA_HOME/sets", "${DATA_HOME}/sets", "${DATA_HOME}/x/../sets"])
def test_environment_variables_expand_in_paths(reference: str, tmp_path: Path) -> None:
    (tmp_path / "store" / "sets").mkdir(parents=True)
    path = write_config(tmp_path / "conf", f'[target]\ndataset_root = "{reference}"\n')
    (tmp_path / "store" / "x").mkdir()
    config = load(path, {"DATA_HOME": str(tmp_path / "store")})
    assert config.options["scenarios"] == [str((tmp_path / "store" / "sets").resolve())]


def test_tilde_uses_home_from_the_environment(tmp_path: Path) -> None:
    path = write_config(tmp_path / "conf", '[run]\noutput_dir = "~/gaia2/out"\n')
    assert load(path, {"HOME": str(tmp_path)}).options["output"] == str((tmp_path / "gaia2" / "out").resolve())


def test_absolute_paths_stay(tmp_path: Path) -> None:
    path = write_config(tmp_path / "conf", f'[run]\noutput_dir = "{tmp_path / "abs"}"\n')
    assert load(path, {}).options["output"] == str((tmp_path / "abs").resolve())


def test_an_unset_variable_is_named(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[run]\noutput_dir = "$RUNS/${RUN_NAME}/x"\n')
    unset = r"\[run\]\.output_dir: references unset environment variable\(s\): RUNS, RUN_NAME"
    with pytest.raises(OptionError, match=unset):
        load(path, {"HOME": "/root"})


@pytest.mark.parametrize(
    ("key", "text"),
    [
        ("[target].scenario", '[target]\nscenario = "missing.json"\n'),
        ("[target].dataset_root", '[target]\ndataset_root = "nowhere"\n'),
        ("[target].subset_manifest", '[target]\ndataset = "o/n"\nsubset_manifest = "subset.json"\n'),
    ],
)
def test_inputs_must_exist(key: str, text: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=rf"{re.escape(key)}: .* is not an existing"):
        load(write_config(tmp_path, text), {})


def test_a_single_scenario_target(tmp_path: Path) -> None:
    (tmp_path / "one.json").write_text("{}", encoding="utf-8")
    config = load(write_config(tmp_path, '[target]\nscenario = "one.json"\n'), {})
    assert config.options == {"scenarios": [str((tmp_path / "one.json").resolve())]}


def test_unknown_keys_are_refused_by_name_with_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, """
        [agent]
        image = "x"
        foo = 1
        [run]
        concurency = 4
        [target]
        subset = "s.json"
    """)
    with pytest.raises(OptionError) as info:
        load(path, {})
    message = str(info.value)
    assert message.startswith(f"{path.resolve()}: ")
    assert "[agent].foo: unknown key" in message
    assert "[run].concurrency" not in message.split("concurency")[0]
    assert "[run].concurency: unknown key" in message
    assert (
        "[target].subset: unknown key (gaia2-runner's [target] keys: scenario, dataset_root, dataset, "
        "language, splits, subset_manifest, sequences"
    ) in message


def test_unknown_sections_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"\[judges\]: unknown section"):
        load(write_config(tmp_path, "[judges]\nmodel = 'x'\n"), {})
    with pytest.raises(OptionError, match=r"\[run\]: must be a TOML table"):
        load(write_config(tmp_path, "run = 3\n"), {})


@pytest.mark.parametrize(
    ("text", "hint"),
    [("[judge]\nendpoint = 'http://x'\n", r"\[judge\].base_url"), ("[run]\nsmart_pass_at = 3\n", r"\[run\].pass_at")],
)
def test_renamed_keys_point_to_their_successor(text: str, hint: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=f"has been removed from gaia2-runner; use {hint}"):
        load(write_config(tmp_path, text), {})


def test_upstream_only_keys_become_notes(tmp_path: Path) -> None:
    path = write_config(tmp_path, """
        [target]
        dataset = "org/name"
        recursive = false
        [agent]
        runtime = "docker"
        [run]
        concurrency = 20
        adapter_port = 8090
        log_level = "DEBUG"
        output = "out/results.jsonl"
        shard_id = 0
        num_shards = 1
    """)
    config = load(path, {})
    assert config.options == {"dataset": "org/name"}
    assert config.replaced == []
    assert config.notes == [
        "[target].recursive = false is ignored: scenario folders are always searched recursively",
        "[agent].runtime = 'docker' is ignored: pytest-gaia2 drives containers through the Docker API "
        "(for podman, point DOCKER_HOST at its socket)",
        "[run].concurrency = 20 is ignored: run scenarios in parallel with pytest-xdist (-n N)",
        "[run].adapter_port = 8090 is ignored: pytest-gaia2 assigns ports itself",
        "[run].log_level = 'DEBUG' is ignored: use pytest's --log-level / --log-cli-level",
        f"[run].output = '{(tmp_path / 'out' / 'results.jsonl').resolve()}' is ignored: results.jsonl is always "
        "written into the output folder ([run].output_dir)",
    ]


def test_an_apptainer_runtime_is_replaced_and_recorded(tmp_path: Path) -> None:
    path = write_config(tmp_path, """
        [agent]
        image = "localhost/gaia2-oc:latest"
        runtime = "apptainer"
        image_sif = "/scratch/gaia2-oc.sif"
    """)
    config = load(path, {})
    engine = "the container engine's API (Docker or Podman)"
    assert config.replaced == [
        {"key": "[agent].runtime", "configured": "apptainer", "used": engine},
        {
            "key": "[agent].image_sif",
            "configured": "/scratch/gaia2-oc.sif",
            "used": "[agent].image run through the container engine's API",
        },
    ]
    assert config.notes[0] == f"[agent].runtime = 'apptainer' is replaced: the run uses {engine}"
    assert config.options == {"image": "localhost/gaia2-oc:latest"}


def test_sequences_run_as_the_sequence_option(tmp_path: Path) -> None:
    sequences = tmp_path / "sequences" / "search.jsonl"
    sequences.parent.mkdir()
    sequences.write_text("", encoding="utf-8")
    path = write_config(tmp_path / "configs", """
        [target]
        dataset = "meta-agents-research-environments/gaia2-cli"
        splits = ["search"]
        sequences = "../sequences/search.jsonl"
    """)
    assert load(path, {}).options["sequence"] == str(sequences.resolve())
    sequences.unlink()
    with pytest.raises(OptionError, match=r"\[target\]\.sequences: .*search.jsonl is not an existing file"):
        load(path, {})


@pytest.mark.parametrize(("shard", "count", "expected"), [(0, 4, "1/4"), (3, 4, "4/4"), (1, 2, "2/2")])
def test_upstream_shards_become_one_based_shard_options(shard: int, count: int, expected: str, tmp_path: Path) -> None:
    config = load(write_config(tmp_path, f"[run]\nshard_id = {shard}\nnum_shards = {count}\n"), {})
    assert config.options == {"shard": expected}
    assert str(options.resolve({}, config.options, {}).shard) == expected
    assert "not gaia2-runner's round robin, so merge only shards run by pytest-gaia2" in config.notes[0]


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ("[run]\nshard_id = 4\nnum_shards = 4\n", "shard_id", r"must be from 0 to num_shards - 1 \(3\), got 4"),
        ("[run]\nshard_id = 1\n", "shard_id", r"must be from 0 to num_shards - 1 \(0\), got 1"),
        ("[run]\nnum_shards = 0\n", "num_shards", "must be at least 1, got 0"),
        ("[run]\nnum_shards = '2'\n", "num_shards", "must be an integer"),
    ],
)
def test_impossible_shards_are_refused_by_key(text: str, key: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=rf"\[run\]\.{key}: {problem}"):
        load(write_config(tmp_path, text), {})


def test_a_language_loads_the_translated_configs_of_a_dataset(tmp_path: Path) -> None:
    config = load(write_config(tmp_path, """
        [target]
        dataset = "facebook/omnilingual-gaia2"
        language = "spa_Latn"
    """), {})
    assert config.options == {
        "dataset": "facebook/omnilingual-gaia2",
        "language": "spa_Latn",
        "splits": "execution,search,adaptability,ambiguity",
    }
    chosen = load(write_config(tmp_path, """
        [target]
        dataset = "facebook/omnilingual-gaia2"
        language = "cmn_Hans"
        splits = ["Search", "execution"]
    """), {})
    assert chosen.options["splits"] == "search,execution"


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        (
            'dataset = "o/n"\nlanguage = "spa_Latn"\nsplits = ["time"]',
            r"\[target\]\.splits: split 'time' is not available in language 'spa_Latn': per-language datasets "
            "provide execution, search, adaptability, ambiguity",
        ),
        ('dataset_root = "."\nlanguage = "spa_Latn"', r"\[target\]\.language: cannot be used with \[target\]\.dataset_root"),
        ('scenario = "eval.toml"\nlanguage = "spa_Latn"', r"\[target\]\.language: cannot be used with \[target\]\.scenario"),
        ('dataset = "o/n"\nlanguage = "Spanish"', r"\[target\]\.language: .*expected a language_Script code"),
    ],
)
def test_a_language_that_cannot_be_loaded_is_refused_by_key(target: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=problem):
        load(write_config(tmp_path, f"[target]\n{target}\n"), {})


def test_every_option_the_key_table_names_exists() -> None:
    named = {flag for _, does in documented_keys() for flag in re.findall(r"--gaia2-[a-z-]+", does)}
    known = {option.cli for option in options.OPTIONS}
    assert named and named <= known, named - known


def test_newer_judge_and_daemon_settings_reach_the_container(tmp_path: Path) -> None:
    path = write_config(tmp_path, """
        [judge]
        prompt_version = "omnilingual-gaia2"
        extra_body = { chat_template_kwargs = { enable_thinking = true } }
        [run]
        idle_timeout = 600
        stuck_loop_min_tool_calls = 5
    """)
    config = load(path, {})
    assert config.options["env"] == [
        "GAIA2_JUDGE_PROMPT_VERSION=omnilingual-gaia2",
        'GAIA2_JUDGE_EXTRA_BODY={"chat_template_kwargs":{"enable_thinking":true}}',
    ]
    resolved = options.resolve({}, config.options, {})  # the runner's own watches, from the host
    assert (resolved.idle_timeout, resolved.stuck_loop_min_calls) == (600.0, 5)
    assert options.resolve({}, config.options, {}).env[1] == (
        "GAIA2_JUDGE_EXTRA_BODY", '{"chat_template_kwargs":{"enable_thinking":true}}'
    )
    assert len(config.notes) == 2 and all("passed into containers as GAIA2_" in n for n in config.notes)


def test_a_literal_api_key_stays_out_of_options_and_notes(tmp_path: Path) -> None:
    agent_key, judge_key = "sk-agent-0123456789abcdef", "sk-judge-fedcba9876543210"
    path = write_config(tmp_path, f"""
        [agent]
        provider = "openai"
        model = "gpt-5.4"
        api_key = "{agent_key}"
        [judge]
        provider = "openai"
        model = "gpt-oss-120b"
        api_key = "{judge_key}"
    """)
    config = load(path, {})

    assert config.options["api_key_env"] == AGENT_KEY_VAR
    assert config.options["judge_api_key_env"] == JUDGE_KEY_VAR
    assert config.secret_environ() == {AGENT_KEY_VAR: agent_key, JUDGE_KEY_VAR: judge_key}
    visible = json.dumps(config.options) + "\n".join(config.notes) + repr(config) + repr(config.secrets)
    assert agent_key not in visible and judge_key not in visible
    assert any(AGENT_KEY_VAR in note and "prefer api_key_env" in note for note in config.notes)
    # The redactor treats these names as secret, so the values are masked wherever they travel.
    assert looks_secret(AGENT_KEY_VAR) and looks_secret(JUDGE_KEY_VAR)


def test_api_key_and_api_key_env_together_are_refused(tmp_path: Path) -> None:
    path = write_config(tmp_path, "[judge]\napi_key = 'sk-abcdef123456'\napi_key_env = 'JUDGE_KEY'\n")
    with pytest.raises(OptionError, match=r"\[judge\]\.api_key: cannot be set together with api_key_env") as info:
        load(path, {})
    assert "sk-abcdef123456" not in str(info.value)


def test_a_malformed_literal_key_is_not_echoed(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=r"\[agent\]\.api_key: must be a string") as info:
        load(write_config(tmp_path, "[agent]\napi_key = ['sk-abcdef123456']\n"), {})
    assert "sk-abcdef123456" not in str(info.value)


def test_volumes_become_copies(tmp_path: Path) -> None:
    (tmp_path / "conf" / "fs").mkdir(parents=True)
    (tmp_path / "shared.json").write_text("{}", encoding="utf-8")
    path = write_config(tmp_path / "conf", """
        [agent]
        volumes = ["./fs:/opt/gaia2_filesystem:ro", "$SHARED:/home/agent/shared.json"]
    """)
    config = load(path, {"SHARED": str(tmp_path / "shared.json")})
    assert config.options["copy_in"] == [
        f"{(tmp_path / 'conf' / 'fs').resolve()}:/opt/gaia2_filesystem",
        f"{(tmp_path / 'shared.json').resolve()}:/home/agent/shared.json",
    ]
    assert options.resolve({}, config.options, {}).copy_in[0][1] == "/opt/gaia2_filesystem"
    assert config.notes == ["[agent].volumes are copied into each container before it starts "
                            "(--gaia2-copy-in), not mounted: changes made inside do not reach the host"]


@pytest.mark.parametrize(
    ("volume", "problem"),
    [("gaia2-cache:/cache", "names a volume"), ("/only/host/path", "expected HOST_PATH:/container/path"),
     ("missing:/x:ro", "names a volume"), ("./missing:/x", "does not exist")],
)
def test_volumes_that_cannot_be_copied_are_refused(volume: str, problem: str, tmp_path: Path) -> None:
    with pytest.raises(OptionError, match=rf"\[agent\]\.volumes: .*{problem}"):
        load(write_config(tmp_path, f'[agent]\nvolumes = ["{volume}"]\n'), {})


@pytest.mark.parametrize(
    ("text", "key", "problem"),
    [
        ('[run]\ntimeout = "600"\n', r"\[run\]\.timeout", "must be a number"),
        ("[run]\npass_at = 1.5\n", r"\[run\]\.pass_at", "must be an integer"),
        ("[run]\npass_at = 0\n", r"\[run\]\.pass_at", "--gaia2-repeat: must be at least 1"),
        ("[run]\ntime_speed = 0\n", r"\[run\]\.time_speed", "must be greater than 0"),
        ("[run]\nretry = 'yes'\n", r"\[run\]\.retry", "must be true or false"),
        ("[agent]\nthinking = 'max'\n", r"\[agent\]\.thinking", "expected one of off, low, medium, high"),
        ("[agent]\nimage = 'Not An Image!'\n", r"\[agent\]\.image", "not a valid image reference"),
        ("[agent]\napi_key_env = 'sk-live-123'\n", r"\[agent\]\.api_key_env", "NAME of an environment variable"),
        ("[agent]\nvolumes = 'a:/b'\n", r"\[agent\]\.volumes", "must be a list of strings"),
        ("[target]\nsplits = ['search', 'serach']\n", r"\[target\]\.splits", "unknown split 'serach'"),
        ("[target]\nsplits = ['all', 'search']\n", r"\[target\]\.splits", "'all' cannot be combined"),
        ("[target]\nsplits = 'search,time'\n", r"\[target\]\.splits", "unknown split 'search,time'"),
        ("[judge]\nextra_body = 'x'\n", r"\[judge\]\.extra_body", "must be a TOML table"),
    ],
)
def test_bad_values_name_the_file_and_key(text: str, key: str, problem: str, tmp_path: Path) -> None:
    path = write_config(tmp_path, text)
    with pytest.raises(OptionError, match=f"{key}: .*{problem}") as info:
        load(path, {})
    assert str(path.resolve()) in str(info.value)


def test_only_one_target(tmp_path: Path, dataset_root: Path) -> None:
    path = write_config(tmp_path / "conf", '[target]\ndataset = "org/name"\ndataset_root = "data"\n')
    with pytest.raises(OptionError, match=r"\[target\]\.dataset and \[target\]\.dataset_root: set only one"):
        load(path, {})


def test_empty_strings_count_as_unset(tmp_path: Path) -> None:
    path = write_config(tmp_path, '[agent]\nimage = ""\nprovider = " "\napi_key = ""\n[target]\ndataset = ""\n')
    assert load(path, {}).options == {}


def test_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="--gaia2-config: cannot read"):
        load(tmp_path / "absent.toml", {})
    with pytest.raises(OptionError, match="--gaia2-config: .* is not valid TOML"):
        load(write_config(tmp_path, "[run\n"), {})


def test_the_shipped_example_targets_the_shipped_scenarios() -> None:
    config = load(REPO / "examples" / "upstream-oracle.toml", {})
    assert config.options["scenarios"] == [str((REPO / "scenarios").resolve())]
    assert config.options["splits"] == "all"
    assert config.options["output"] == str((REPO / "gaia2-results" / "upstream-oracle").resolve())
    assert "image" not in config.options  # the reference oracle image
    assert config.secrets == {}
    values = options.resolve({}, config.options, {})
    assert values.repeat == 1 and values.timeout == 600.0


# Upstream's example configs by their keys and shapes (gaia2-cli/runner/examples/), written here
# with local paths and hosts: each loads, and each key lands where the key table says.
UPSTREAM_EXAMPLES = {
    "sequential search (OpenClaw)": (
        """
        [target]
        dataset = "meta-agents-research-environments/gaia2-cli"
        splits = ["search"]
        sequences = "sequences/search.jsonl"
        [agent]
        image = "localhost/gaia2-oc:latest"
        provider = "anthropic"
        model = "claude-sonnet-4-6"
        api_key_env = "ANTHROPIC_API_KEY"
        thinking = "high"
        [judge]
        provider = "anthropic"
        model = "claude-sonnet-4-6"
        api_key_env = "ANTHROPIC_API_KEY"
        [run]
        timeout = 900
        health_timeout = 180
        concurrency = 10
        pass_at = 1
        output_dir = "out"
        log_level = "INFO"
        """,
        {"splits": "search", "repeat": "1", "timeout": "900.0", "thinking": "high"},
    ),
    "apptainer, sharded (cluster)": (
        """
        [target]
        dataset_root = "data/eng_Latn/data"
        splits = ["execution", "search", "ambiguity", "adaptability"]
        [agent]
        image = "localhost/gaia2-oc:latest"
        runtime = "apptainer"
        image_sif = "/scratch/gaia2-oc.sif"
        provider = "openai-compat"
        model = "gemma-4-31b-it"
        api_key_env = "OPENAI_COMPAT_API_KEY"
        base_url = "http://127.0.0.1:8000/v1"
        thinking = "off"
        [judge]
        provider = "openai-compat"
        model = "gpt-oss-120b"
        api_key_env = "OPENAI_COMPAT_API_KEY"
        base_url = "http://127.0.0.1:8001/v1"
        prompt_version = "omnigaia"
        [run]
        timeout = 1200
        health_timeout = 180
        concurrency = 4
        pass_at = 1
        idle_timeout = 600.0
        output_dir = "$SCRATCH/omnigaia/p1"
        log_level = "INFO"
        shard_id = 2
        num_shards = 8
        """,
        {"shard": "3/8", "idle_timeout": "600.0", "env": ["GAIA2_JUDGE_PROMPT_VERSION=omnigaia"]},
    ),
    "omnilingual, pass@3 (local vLLM)": (
        """
        [target]
        dataset = "facebook/omnilingual-gaia2"
        language = "spa_Latn"
        splits = ["execution"]
        limit = 1
        [agent]
        image = "localhost/gaia2-oc:latest"
        provider = "openai-compat"
        model = "Qwen/Qwen3.6-27B"
        base_url = "http://localhost:8000/v1"
        api_key = "EMPTY"
        thinking = "high"
        [judge]
        provider = "openai-compat"
        model = "openai/openai/gpt-oss-120b"
        base_url = "http://localhost:8001/v1"
        api_key = "EMPTY"
        prompt_version = "omnilingual-gaia2"
        extra_body = { reasoning_effort = "low" }
        [run]
        timeout = 1200
        health_timeout = 180
        concurrency = 4
        idle_timeout = 600.0
        pass_at = 3
        output_dir = "$HOME/omnilingual_gaia2/results/spa_Latn"
        log_level = "INFO"
        """,
        {
            "language": "spa_Latn",
            "splits": "execution",
            "first_n": "1",
            "repeat": "3",
            "env": ["GAIA2_JUDGE_PROMPT_VERSION=omnilingual-gaia2", 'GAIA2_JUDGE_EXTRA_BODY={"reasoning_effort":"low"}'],
        },
    ),
    "TypeSafe Jev judge (Hermes quickstart)": (
        """
        [target]
        dataset = "meta-agents-research-environments/gaia2-cli"
        splits = ["search"]
        [agent]
        image = "localhost/gaia2-hermes:latest"
        provider = "anthropic"
        model = "claude-sonnet-4-6"
        api_key_env = "ANTHROPIC_API_KEY"
        [judge]
        provider = "typesafe"
        model = "jev-latest"
        api_key_env = "TYPESAFE_API_KEY"
        extra_body = { threshold = 0.5, timeout = 30.0 }
        [run]
        timeout = 900
        pass_at = 1
        """,
        {"judge_provider": "typesafe", "env": ['GAIA2_JUDGE_EXTRA_BODY={"threshold":0.5,"timeout":30.0}']},
    ),
}


@pytest.mark.parametrize("name", sorted(UPSTREAM_EXAMPLES))
def test_upstream_example_configs_load(name: str, tmp_path: Path) -> None:
    text, expected = UPSTREAM_EXAMPLES[name]
    (tmp_path / "sequences").mkdir()
    (tmp_path / "sequences" / "search.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "data" / "eng_Latn" / "data").mkdir(parents=True)
    config = load(write_config(tmp_path, text), {"SCRATCH": str(tmp_path / "scratch"), "HOME": str(tmp_path)})
    assert {key: config.options.get(key) for key in expected} == expected
    resolved = options.resolve({}, config.options, {})  # every value the options accept
    assert resolved.image.startswith("localhost/gaia2-")
    if "runtime" in text:
        assert [entry["key"] for entry in config.replaced] == ["[agent].runtime", "[agent].image_sif"]
