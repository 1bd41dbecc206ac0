"""The options table: values refused at start-up, sizes, --gaia2-resume's forms, --help."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plugin import pytest_options

MiB = 1024**2
GiB = 1024**3


def value(key: str, raw: Any) -> Any:
    return getattr(options.resolve({key: raw}, {}, {}), key)


# --- numbers ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["timeout", "health-timeout", "judge-grace", "stop-timeout", "reap-grace",
                                  "time-speed"])
@pytest.mark.parametrize("raw", ["inf", "-inf", "nan", "1e999", "Infinity"])
def test_time_options_refuse_what_is_not_a_finite_number(name: str, raw: str) -> None:
    with pytest.raises(OptionError, match=f"^--gaia2-{name}: expected a finite number, got '{raw}'$"):
        value(name.replace("-", "_"), raw)


@pytest.mark.parametrize("raw", ["inf", "nan", "1e999", "1.5", "-0.1"])
def test_rates_refuse_what_is_not_a_fraction(raw: str) -> None:
    with pytest.raises(OptionError, match="^--gaia2-min-pass-rate: expected a fraction from 0 to 1"):
        value("min_pass_rate", raw)


def test_finite_times_are_kept() -> None:
    assert value("timeout", "1e3") == 1000.0
    assert value("judge_grace", "0") == 0.0


# --- sizes and container limits ---------------------------------------------------------

@pytest.mark.parametrize(("raw", "size"), [
    ("1", 1), ("4096", 4096), ("256K", 256 * 1024), ("64M", 64 * MiB), ("64m", 64 * MiB), ("2G", 2 * GiB),
    (" 3 g ", 3 * GiB),
])
def test_sizes_in_bytes_or_binary_units(raw: str, size: int) -> None:
    assert value("max_file_size", raw) == size
    assert value("max_collect_size", raw) == size
    assert value("memory", raw) == size


@pytest.mark.parametrize("raw", ["0", "-1", "1.5G", "64MB", "64 MiB", "", "lots", "1T"])
def test_file_caps_refuse_what_is_not_a_positive_size(raw: str) -> None:
    with pytest.raises(OptionError, match="^--gaia2-max-file-size: "):
        value("max_file_size", raw)


def test_zero_means_no_container_limit() -> None:
    assert value("memory", "0") == 0
    assert value("pids_limit", "0") == 0


def test_limit_defaults() -> None:
    values = options.resolve({}, {}, {})
    assert (values.max_file_size, values.max_collect_size) == (256 * MiB, GiB)
    assert (values.memory, values.pids_limit, values.keep) == (4 * GiB, 4096, False)
    assert (values.allow_incomplete, values.resume, values.resume_mismatch) == (False, False, "refuse")


def test_resume_mismatch_choices() -> None:
    assert value("resume_mismatch", "warn") == "warn"
    with pytest.raises(OptionError, match="^--gaia2-resume-mismatch: expected one of refuse, warn"):
        value("resume_mismatch", "ignore")


# --- --gaia2-resume[=PATH] and paths, on the command line and in the ini file ------------

@pytest.mark.parametrize(("args", "resume", "output"), [
    ((), False, "gaia2-results"),
    (("--gaia2-resume",), True, "gaia2-results"),
    (("--gaia2-resume=runs/one",), "{here}/runs/one", "gaia2-results"),
    (("--gaia2-resume", "runs/one"), "{here}/runs/one", "gaia2-results"),
    (("--gaia2-resume", "--gaia2-output", "out"), True, "{here}/out"),
    (("--gaia2-output=out", "--gaia2-resume"), True, "{here}/out"),
    (("--gaia2-resume=/abs/run", "--gaia2-output=~/out"), "/abs/run", "{home}/out"),
])
def test_resume_forms(pytester: pytest.Pytester, args: tuple[str, ...], resume: Any, output: str) -> None:
    values = pytest_options.read(pytester.parseconfig(*args))
    here = str(pytester.path)
    assert values.resume == (resume.format(here=here) if isinstance(resume, str) else resume)
    assert type(values.resume) is type(resume)
    assert values.output == output.format(here=here, home=os.path.expanduser("~"))


@pytest.mark.parametrize(("ini", "resume"), [("true", True), ("no", False), ("runs/one", "{here}/runs/one")])
def test_resume_in_the_ini_file(pytester: pytest.Pytester, ini: str, resume: Any) -> None:
    pytester.makeini(f"[pytest]\ngaia2_resume = {ini}\n")
    expected = resume.format(here=pytester.path) if isinstance(resume, str) else resume
    assert pytest_options.read(pytester.parseconfig()).resume == expected


def test_command_line_resume_wins_over_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ngaia2_resume = runs/old\n")
    assert pytest_options.read(pytester.parseconfig("--gaia2-resume=/runs/new")).resume == "/runs/new"


def test_relative_paths_are_anchored_where_they_were_written(pytester: pytest.Pytester,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The command line's to the folder pytest starts in, the ini file's to the ini file's folder."""
    pytester.makeini("[pytest]\ngaia2_output = results\ngaia2_env_file = keys/.env\n")
    monkeypatch.chdir(pytester.mkdir("sub"))
    config = pytester.parseconfig("--gaia2-scenarios=../data", "--gaia2-scenarios", "more",
                                  "--gaia2-subset=s.json")
    values = pytest_options.read(config)
    assert config.rootpath == pytester.path
    assert values.scenarios == (str(pytester.path / "data"), str(pytester.path / "sub" / "more"))
    assert values.subset == str(pytester.path / "sub" / "s.json")
    assert (values.output, values.env_file) == (str(pytester.path / "results"),
                                                      str(pytester.path / "keys" / ".env"))
    assert pytest_options.config_file(config) is None
    toml = pytest_options.config_file(pytester.parseconfig("--gaia2-config=run.toml"))
    assert toml == str(pytester.path / "sub" / "run.toml")


def test_base_dir_and_explicit_test_paths(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--gaia2-output", "out")
    assert pytest_options.base_dir(config) == pytester.path
    assert not pytest_options.explicit_test_paths(config)  # "out" is the option's value, not a test path
    assert pytest_options.explicit_test_paths(pytester.parseconfig("--gaia2-output=out", "."))


def test_new_flags_on_the_command_line(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--gaia2-keep", "--gaia2-allow-incomplete", "--gaia2-memory=512M",
                                  "--gaia2-pids-limit=0", "--gaia2-resume-mismatch=warn")
    values = pytest_options.read(config)
    assert (values.keep, values.allow_incomplete) == (True, True)
    assert (values.memory, values.pids_limit, values.resume_mismatch) == (512 * MiB, 0, "warn")


@pytest.mark.parametrize("name", ["max-errors", "token-halt"])
@pytest.mark.parametrize("raw", ["0", "-1", "1.5", "lots", "1e3"])
def test_the_stops_refuse_what_is_not_a_positive_count(name: str, raw: str) -> None:
    with pytest.raises(OptionError, match=f"^--gaia2-{name}: "):
        value(name.replace("-", "_"), raw)


def test_the_stops_on_the_command_line_and_in_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ngaia2_max_errors = 3\ngaia2_token_halt = 5000000\n")
    values = pytest_options.read(pytester.parseconfig())
    assert (values.max_errors, values.token_halt) == (3, 5_000_000)
    values = pytest_options.read(pytester.parseconfig("--gaia2-max-errors=1", "--gaia2-token-halt=10"))
    assert (values.max_errors, values.token_halt) == (1, 10)


# --- help --------------------------------------------------------------------------------

def test_help_formats_every_option(tmp_path: Path) -> None:
    """argparse %-formats help texts: "95% interval" once crashed ``pytest --help``."""
    done = subprocess.run([sys.executable, "-m", "pytest", "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "95%" in done.stdout and "%%" not in done.stdout
    assert all(option.cli in done.stdout and option.ini in done.stdout for option in options.OPTIONS)
