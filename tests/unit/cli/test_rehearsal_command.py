"""``pytest-gaia2 rehearsal OUT``: the pool, its price file and README, and one clear error for
each bad argument, with nothing written anywhere and nothing already there touched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from gaia2_testing import file_sums

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cost.prices import read_price_file
from pytest_gaia2.plan import rehearsal
from pytest_gaia2.store.folder import RUN_CONFIG_FILE
from pytest_gaia2.store.names import SPLITS


def rehearse(capsys: pytest.CaptureFixture[str], *args: object) -> tuple[int, str, str]:
    code = cli.main(["rehearsal", *map(str, args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_it_writes_the_pool_its_prices_and_the_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pool"
    code, stdout, err = rehearse(capsys, out, "--count", 40, "--seed", 5)
    assert (code, err) == (0, "")
    assert sorted(p.name for p in out.iterdir()) == sorted([*SPLITS, "README.md", "prices.toml"])
    assert {split: len(list((out / split).glob("*.json"))) for split in SPLITS} == dict.fromkeys(SPLITS, 8)
    expected = {built.scenario_id for _, built in rehearsal.pool(40, 5)}
    assert {path.stem for path in out.rglob("*.json")} == expected
    prices = read_price_file(out / "prices.toml")
    assert set(prices) == {rehearsal.MODEL} and prices[rehearsal.MODEL].input == rehearsal.PRICES["input"]
    assert f"wrote 40 scenarios to {out}" in stdout
    rehearsal_lines = [line.strip() for line in stdout.splitlines() if line.strip().startswith("pytest -n 2")]
    first, resumed = rehearsal_lines
    assert "--gaia2-sample 40 --gaia2-budget-halt 3" in first and f"--gaia2-scenarios {out}" in first
    assert "--gaia2-sample 40 --gaia2-budget-halt 30 --gaia2-resume" in resumed  # a pool of 40 holds no 160
    assert all(line in (out / "README.md").read_text() for line in rehearsal_lines)


def test_an_empty_folder_is_taken(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pool").mkdir()
    assert rehearse(capsys, tmp_path / "pool", "--count", 5)[0] == 0
    assert len(list((tmp_path / "pool").rglob("*.json"))) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--count", 0], "--count 0: expected 1 to 800 (Gaia2 holds 800: 160 per split)"),
        (["--count", 801], "--count 801: expected 1 to 800"),
        (["--seed", -1], "--seed -1: expected a whole number of 0 or more"),
    ],
)
def test_bad_numbers_are_one_error_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[object], message: str
) -> None:
    code, stdout, err = rehearse(capsys, tmp_path / "pool", *args)
    assert code == 2 and stdout == ""
    assert err.startswith(f"pytest-gaia2 rehearsal: {message}") and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_a_count_that_is_no_number_is_argparses_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["rehearsal", str(tmp_path / "pool"), "--count", "many"])
    assert exited.value.code == 2 and list(tmp_path.iterdir()) == []


def test_a_folder_with_anything_in_it_is_left_as_it_was(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "pool"
    assert rehearse(capsys, out, "--count", 10)[0] == 0
    before = file_sums(out)
    code, _, err = rehearse(capsys, out, "--count", 10, "--seed", 1)
    assert code == 2 and "pool: not empty; rehearsal never writes over files" in err
    assert file_sums(out) == before
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / ".keep").write_text("")
    assert "not empty" in rehearse(capsys, tmp_path / "other")[2]


def test_links_files_missing_parents_and_run_folders_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    os.symlink(tmp_path / "empty", tmp_path / "link")
    (tmp_path / "file").write_text("mine")
    run = tmp_path / "results" / "run1"
    run.mkdir(parents=True)
    (run / RUN_CONFIG_FILE).write_text("{}")
    cases = {
        tmp_path / "link": "is a link; give the folder itself",
        tmp_path / "file": "exists and is not a folder",
        tmp_path / "no" / "pool": f"its parent folder {tmp_path / 'no'} does not exist",
        run / "pool": f"inside run folder {run}",
    }
    for out, message in cases.items():
        code, _, err = rehearse(capsys, out, "--count", 3)
        assert code == 2 and message in err, (out, err)
    assert list((tmp_path / "empty").iterdir()) == [] and (tmp_path / "file").read_text() == "mine"
    assert not (run / "pool").exists() and not (tmp_path / "no").exists()
