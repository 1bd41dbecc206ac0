"""A command that must print is asked again while it printed nothing (a busy engine can lose a
short exec's output), so a lost answer never reads as a missing judge's state or a dead adapter."""

from __future__ import annotations

import pytest

from pytest_gaia2.engine import container as container_mod
from pytest_gaia2.engine.container import EXEC_ASKS, Container
from pytest_gaia2.run import isolation


class Answers:
    """Stands in for a container's exec only: the listed answers in turn (the last from then on)."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[list[str], str]] = []

    def exec(self, cmd: list[str], user: str = "") -> tuple[int, str]:
        self.asked.append((cmd, user))
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]

    answer = Container.answer


@pytest.fixture(autouse=True)
def no_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(container_mod.time, "sleep", lambda seconds: None)


def test_an_answer_lost_twice_is_asked_for_again() -> None:
    container = Answers((0, ""), (-1, " \n"), (0, "1001\n"))
    assert container.answer(["stat"], user="agent") == (0, "1001\n")
    assert container.asked == [(["stat"], "agent")] * 3


def test_a_first_answer_is_asked_once() -> None:
    container = Answers((1, "isolation read=no write=no signal=no"))
    assert container.answer(["probe"]) == (1, "isolation read=no write=no signal=no")
    assert len(container.asked) == 1


def test_silence_is_asked_a_bounded_number_of_times_and_then_reported() -> None:
    container = Answers((0, ""))
    assert container.answer(["stat"]) == (0, "")
    assert len(container.asked) == EXEC_ASKS


def test_the_probe_line_parsed_from_a_late_answer() -> None:
    container = Answers((0, ""), (0, "noise\nisolation read=yes write=no signal=yes\n"))
    found = isolation.parse(container.answer(["probe"])[1])
    assert (found.reads_scenario, found.writes_state, found.signals_judge) == (True, False, True)
