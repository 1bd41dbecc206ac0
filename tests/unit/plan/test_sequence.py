"""Sequence files (--gaia2-sequence) read into chains, and the carried state's checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED
from hypothesis import given
from hypothesis import strategies as st

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.engine.archive import Keeper
from pytest_gaia2.plan import items as plan
from pytest_gaia2.plan import sequence
from pytest_gaia2.plan.scenarios import load_scenario
from pytest_gaia2.run import chain
from pytest_gaia2.store.kept import CONTAINER_FILES

SEARCH = sorted((SHIPPED / "search").glob("*.json"))


def line(universe: object = "21", cap: object = "execution", ids: object = ("a", "b")) -> str:
    return json.dumps({"universe_id": universe, "cap": cap, "scenarios": [{"scenario_id": i} for i in ids]})


def test_each_line_is_a_chain_in_file_order() -> None:
    chains = sequence.parse("\n".join([line(ids=("a", "b")), "", line("7", None, ("c",))]), "seq.jsonl")
    assert [(c.key, c.universe_id, c.cap, c.scenario_ids) for c in chains] == [
        ("execution_universe_21", "21", "execution", ("a", "b")),
        ("universe_7", "7", None, ("c",)),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "seq.jsonl:1: invalid JSON"),
        ("[1]", "seq.jsonl:1: expected a JSON object"),
        (line(universe=""), "seq.jsonl:1: expected a 'universe_id' and a non-empty 'scenarios' list"),
        (line(ids=()), "seq.jsonl:1: expected a 'universe_id' and a non-empty 'scenarios' list"),
        (line(ids=("a", "")), "seq.jsonl:1: every entry of 'scenarios' needs a non-empty 'scenario_id' string"),
        (line(cap=3), "seq.jsonl:1: 'cap' must be a string"),
        (line(ids=("a", "a")), "seq.jsonl:1: scenarios listed more than once: a"),
        (line() + "\n" + line(), "seq.jsonl:2: chain execution_universe_21 is listed twice"),
        (line() + "\n" + line("22", ids=("b",)), "seq.jsonl:2: scenarios listed more than once: b"),
        ("\n \n", "seq.jsonl: lists no chains"),
    ],
)
def test_a_bad_sequence_file_is_refused_naming_its_line(text: str, message: str) -> None:
    with pytest.raises(OptionError, match="^--gaia2-sequence " + message.replace("(", r"\(").replace(")", r"\)")):
        sequence.parse(text, "seq.jsonl")


@given(st.text(max_size=400))
def test_any_text_is_chains_or_an_option_error(text: str) -> None:
    try:
        chains = sequence.parse(text, "seq.jsonl")
    except OptionError as exc:
        assert str(exc).startswith("--gaia2-sequence seq.jsonl")
    else:
        assert chains and all(c.scenario_ids and "/" not in c.key for c in chains)


def test_a_file_too_large_or_not_regular_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b" " * (sequence.MAX_FILE_BYTES + 1))
    with pytest.raises(OptionError, match="larger than"):
        sequence.load(big)
    with pytest.raises(OptionError, match="--gaia2-sequence .*directory"):
        sequence.load(tmp_path)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # the universe markers are the run's to register
def test_chained_items_follow_the_chains_and_carry_their_position() -> None:
    scenarios = [load_scenario(path, "search") for path in SEARCH]
    ids = [s.scenario_id for s in scenarios]
    chains = sequence.parse(line(ids=(ids[2], ids[0])) + "\n" + line("24", ids=(ids[1],)), "seq.jsonl")
    built = plan.build(scenarios, [], repeats=1, limits=None, attempts=1, chains=chains)
    assert [(i.name, i.chain, i.position) for i in built] == [
        (ids[2], "execution_universe_21", 0),
        (ids[0], "execution_universe_21", 1),
        (ids[1], "execution_universe_24", 0),
    ]


def test_a_listed_scenario_that_is_not_selected_is_named() -> None:
    scenarios = [load_scenario(SEARCH[0], "search")]
    chains = sequence.parse(line(ids=(scenarios[0].scenario_id, "gone")), "seq.jsonl")
    with pytest.raises(OptionError, match="1 scenario.* not among the selected scenarios: gone"):
        sequence.chained(chains, scenarios)


def test_a_scenario_starts_from_the_latest_checkpoint_before_it(tmp_path: Path) -> None:
    """An errored scenario writes no checkpoint: the one after it starts from the one before."""
    for position, members in ((0, [("home/notes/n.txt", b"after 0")]),
                              (1, [("home/notes/n.txt", b"after 1"), ("app_state/contacts.json", b"{}")])):
        folder = chain.checkpoint_dir(tmp_path, "universe_21", position)
        folder.mkdir(parents=True)
        with Keeper(folder / CONTAINER_FILES) as keep:
            for name, content in members:
                keep.add(name.split("/"), [content])
    assert chain.latest(tmp_path, "universe_21", 0) is None
    assert chain.latest(tmp_path, "universe_21", 2) == chain.checkpoint_dir(tmp_path, "universe_21", 1)
    assert chain.latest(tmp_path, "universe_21", 4) == chain.checkpoint_dir(tmp_path, "universe_21", 1)
    found = chain.latest(tmp_path, "universe_21", 1)
    assert found == chain.checkpoint_dir(tmp_path, "universe_21", 0)
    assert [path for path, _, _ in chain.carried_files(found, 1000, 1000)] == ["/home/agent/notes/n.txt"]
    later = chain.carried_files(chain.checkpoint_dir(tmp_path, "universe_21", 1), 1000, 1000)
    assert [path for path, _, _ in later] == ["/home/agent/notes/n.txt", "/var/gaia2/carried_state/contacts.json"]
    assert chain.carried_files(found, 1000, 3) == []  # over the total: nothing more is carried


def test_a_scenario_run_again_makes_the_later_verdicts_of_its_chain_stale(tmp_path: Path) -> None:
    """Positions 0 and 2 judged, 1 errored (no checkpoint): 2's verdict came from 0's state.
    Once 1 runs again, 2's checkpoint goes and 2 is no longer intact, so it runs again too."""
    for position in (0, 2):
        chain.checkpoint_dir(tmp_path, "universe_21", position).mkdir(parents=True)
    partial = chain.checkpoint_dir(tmp_path, "universe_21", 3).with_name("0003.partial")
    partial.mkdir()
    assert chain.intact(tmp_path, "universe_21", 0)
    assert not chain.intact(tmp_path, "universe_21", 1)
    assert not chain.intact(tmp_path, "universe_21", 2)
    chain.forget_after(tmp_path, "universe_21", 1)
    assert sorted(p.name for p in (tmp_path / "chains" / "universe_21").iterdir()) == ["0000"]
    chain.checkpoint_dir(tmp_path, "universe_21", 1).mkdir()  # 1 judged this time
    assert chain.intact(tmp_path, "universe_21", 1)
    assert not chain.intact(tmp_path, "universe_21", 2)  # 2 has no checkpoint of the new state yet
    chain.forget_after(tmp_path, "nothing_ran_yet", 0)  # no folder: nothing to forget
