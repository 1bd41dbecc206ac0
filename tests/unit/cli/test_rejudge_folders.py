"""rejudge: each re-judge in a folder of its own, numbered after the earlier ones; judges named
as the user chose. (The judging itself is tested against the real engine in tests/integration.)"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from test_compare import write_run

from pytest_gaia2.cli import main as cli
from pytest_gaia2.cli import rejudge
from pytest_gaia2.cli.rejudge import parse_judge
from pytest_gaia2.report import rejudged
from pytest_gaia2.report.rejudged import REJUDGE_DIR
from pytest_gaia2.run.rejudge import judge_env, new_rejudge_folder
from pytest_gaia2.store import folder as store
from pytest_gaia2.store.console import CommandError


def test_each_rejudge_gets_the_next_number_and_never_an_existing_folder(tmp_path: Path) -> None:
    run = store.RunFolder(write_run(tmp_path, {"s1": "P"}))
    first = new_rejudge_folder(run)
    (first / "summary.json").write_text("{}", encoding="utf-8")
    second = new_rejudge_folder(run)
    assert [first.name[:4], second.name[:4]] == ["001-", "002-"]
    assert (first / "summary.json").read_text(encoding="utf-8") == "{}"
    (run.path / REJUDGE_DIR / "009-by-hand").mkdir()
    (run.path / REJUDGE_DIR / "notes").mkdir()  # not a numbered re-judge: ignored
    assert new_rejudge_folder(run).name.startswith("010-")


def test_odd_or_forged_numbers_neither_overflow_nor_hide_the_next_rejudge(tmp_path: Path) -> None:
    """A folder numbered 999999999 would make the next re-judge ``1000000000-...``, a tenth digit
    no reader takes for a re-judge: it and every later one would be invisible to the report and to
    ``compare --judge``. Past the highest number the re-judge is refused, nothing written."""
    run = store.RunFolder(write_run(tmp_path, {"s1": "P"}))
    root = run.path / REJUDGE_DIR
    root.mkdir()
    for odd in ("1000000000-longer", "9" * 40 + "-huge", "\uff11\uff12\uff13-fullwidth", "12-short", "-007-"):
        (root / odd).mkdir()  # not a re-judge's number: ignored, never parsed into a larger one
    assert new_rejudge_folder(run).name.startswith("001-")
    (root / "999999998-forged").mkdir()
    newest = new_rejudge_folder(run)
    assert newest.name.startswith("999999999-") and rejudged._numbered(run.path)[-1] == newest.name
    before = sorted(entry.name for entry in root.iterdir())
    with pytest.raises(CommandError, match="numbered 999999999, the highest a re-judge can have"):
        new_rejudge_folder(run)
    assert sorted(entry.name for entry in root.iterdir()) == before


def test_a_chosen_name_is_the_judges_folder() -> None:
    spec = parse_judge("reference,GAIA2_REF_JUDGE_EXACT=1")
    assert spec.slug.startswith("reference+")
    assert spec.__class__(spec.provider, spec.model, spec.settings, "exact-ref").slug == "exact-ref"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--judge", "reference", "--judge", "openai/gpt", "--judge-name", "one"],
            "--judge-name: one name per --judge (2), got 1",
        ),
        (["--judge", "reference", "--judge-name", "../up"], "--judge-name: '../up' may only hold letters, digits"),
        (["--judge", "reference", "--judge-name", "CON"], "--judge-name: 'CON' is a Windows device name"),
        (["--judge", "reference", "--judge-name", "nul.judge"], "--judge-name: 'nul.judge' is a Windows device name"),
        (["--judge", "reference", "--judge-name", "judge."], "ends with '.', which Windows drops"),
        (["--judge", "reference", "--judge-name", "j" * 65], "is 65 characters long"),
        (
            ["--judge", "reference", "--judge", "reference,X=1", "--judge-name", "same", "--judge-name", "same"],
            "--judge: the same judge twice",
        ),
    ],
)
def test_bad_names_are_refused_before_any_container(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    run = write_run(tmp_path, {"s1": "P"})
    code = cli.main(["rejudge", str(run), "--scenarios", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err
    assert not (run / REJUDGE_DIR).exists()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("{not json", "--judge-extra-body: not valid JSON"),
        ("[1, 2]", "--judge-extra-body: must be a JSON object, got list"),
        ('{"x": NaN}', "--judge-extra-body: "),
    ],
)
def test_a_bad_extra_body_is_refused_before_any_container(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    run = write_run(tmp_path, {"s1": "P"})
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["rejudge", str(run), "--scenarios", str(tmp_path), "--judge", "o/m", "--judge-extra-body", value])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (run / REJUDGE_DIR).exists()


def test_upstream_judge_options_become_every_judges_settings() -> None:
    parser = argparse.ArgumentParser()
    rejudge.configure(parser)
    args = parser.parse_args(
        ["r", "--scenarios", "s", "--judge", "o/m", "--judge-prompt-version", " omnilingual-gaia2 ",
         "--judge-extra-body", '{"reasoning_effort": "low", "a": 1}', "--judge-env", "GAIA2_JUDGE_PROMPT_VERSION=x"]
    )
    settings = rejudge.upstream_settings(args)
    assert settings == [
        ("GAIA2_JUDGE_PROMPT_VERSION", "omnilingual-gaia2"),
        ("GAIA2_JUDGE_EXTRA_BODY", '{"a":1,"reasoning_effort":"low"}'),
    ]
    spec = rejudge.parse_judge("o/m,X=1", [*settings, *args.judge_env])
    assert dict(spec.settings) == {  # an explicit --judge-env wins, as a later setting
        "GAIA2_JUDGE_PROMPT_VERSION": "x",
        "GAIA2_JUDGE_EXTRA_BODY": '{"a":1,"reasoning_effort":"low"}',
        "X": "1",
    }
    assert judge_env(spec, None, "")["GAIA2_JUDGE_EXTRA_BODY"] == '{"a":1,"reasoning_effort":"low"}'
