"""Provider trouble read from an attempt's files (trace.jsonl, else the agent's logs), its verdict,
and the run's pacer: halved after a storm, recovered additively, shared through the run folder."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from gaia2_testing import examples
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.run import provider
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.run.pacer import PACER_FILE, Pacer, PacerState, read_state
from pytest_gaia2.run.scenario_runs import backoff
from pytest_gaia2.run.verdict import Fault, decide


def _read(folder: Path) -> provider.ProviderTrouble:
    """What the attempt's one pass over its files says of its provider."""
    return Evidence.read(folder).provider


def _trace(folder: Path, *calls: tuple[Any, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [{"type": "llm_call", "http_status": status, "raw_response": body} for status, body in calls]
    (folder / "trace.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return folder


def test_the_trace_names_the_trouble_the_agent_ended_on(tmp_path: Path) -> None:
    ok = '{"choices": []}'
    ended = _read(_trace(tmp_path / "a", (200, ok), (429, '{"error": "slow down"}')))
    assert (ended.failed_calls, ended.last, ended.status) == (1, "provider_rate_limit", 429)
    assert "HTTP 429" in ended.message and "slow down" not in ended.message
    recovered = _read(_trace(tmp_path / "b", (503, ""), (200, ok)))
    assert (recovered.failed_calls, recovered.last) == (1, None)
    overloaded = _read(
        _trace(tmp_path / "c", (None, '{"type": "error", "error": {"type": "overloaded_error"}}'))
    )
    assert (overloaded.last, overloaded.status) == ("provider_error", None)
    assert _read(_trace(tmp_path / "d", (400, "rate limit"), (200, ok))).failed_calls == 1
    assert _read(_trace(tmp_path / "e", (200, "we hit a rate limit in the story"))).failed_calls == 0


def test_without_a_trace_the_agent_log_tail_is_read(tmp_path: Path) -> None:
    (tmp_path / "adapter.log").write_text(
        "x" * 200_000 + "\nstep 3\nopenai.RateLimitError: Error code: 429 - too many requests\n", encoding="utf-8"
    )
    seen = _read(tmp_path)
    assert (seen.last, seen.source) == ("provider_rate_limit", "adapter.log")
    (tmp_path / "adapter.log").write_text("anthropic: Overloaded\n" + "fine\n" * 30, encoding="utf-8")
    assert _read(tmp_path).last is None  # not among the last lines: the agent went on
    (tmp_path / "adapter.log").write_text("HTTP 503 Service Unavailable\n", encoding="utf-8")
    assert _read(tmp_path).last == "provider_error"


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(), st.text(max_size=30), st.booleans(), st.floats()), max_size=8))
def test_any_trace_reads_to_a_bounded_answer(statuses: list[Any]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as raw:
        seen = _read(_trace(Path(raw), *((status, "x") for status in statuses)))
    assert 0 <= seen.failed_calls <= len(statuses)
    assert seen.last in (None, *provider.CATEGORIES)
    assert seen.status is None or 400 <= seen.status <= 599


def test_provider_trouble_outranks_a_loop_and_idleness_but_not_a_judgment_or_a_budget_cap() -> None:
    """The provider evidence is the agent's own trace: it explains an unjudged end, but a judged
    failure stands (else an agent could write 429 lines to turn its failures into errors)."""
    trouble = Fault("provider_rate_limit", "429")
    judged = {"status": "complete", "judgment": {"success": False, "failure_reason": "missing"}}
    failed = decide(judged, timed_out=False, timeout_seconds=9, duration=None, provider=trouble)
    assert (failed.outcome, failed.category, failed.failure_reason) == ("failed", None, "missing")
    passed = {"status": "complete", "judgment": {"success": True}}
    assert decide(passed, timed_out=False, timeout_seconds=9, duration=None, provider=trouble).outcome == "passed"
    looping = decide(
        {"status": "error"},
        timed_out=False,
        timeout_seconds=9,
        duration=None,
        loop_calls=9,
        stuck_loop_min_calls=3,
        provider=trouble,
    )
    assert (looping.outcome, looping.category) == ("error", "provider_rate_limit")
    idle = Fault("idle_timeout", "idle")
    assert decide(None, timed_out=False, timeout_seconds=9, duration=None, fault=idle, provider=trouble).category == (
        "provider_rate_limit"
    )
    cap = Fault("budget_cap", "cap")
    assert decide(None, timed_out=False, timeout_seconds=9, duration=None, fault=cap, provider=trouble).category == (
        "budget_cap"
    )
    # the judge's logged rejection under a status the agent rewrote to an unjudged 'error'
    hidden = decide(
        {"status": "error"}, timed_out=False, timeout_seconds=9, duration=None, provider=trouble, rejected=True
    )
    assert (hidden.outcome, hidden.category) == ("failed", None) and "says fail" in (hidden.failure_reason or "")


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    assert [backoff(tried, lambda: 1.0) for tried in (1, 2, 3)] == [2.0, 4.0, 8.0]
    assert backoff(1, lambda: 0.0) == 1.0
    assert backoff(30, lambda: 1.0) == 60.0


def test_the_pacer_halves_after_a_storm_and_recovers_additively() -> None:
    state = PacerState()
    for moment in (0.0, 0.5, 1.0, 1.5):  # four starts in two seconds: 120 a minute
        state = state.started(moment)
    assert state.interval == 0
    slow = state.ended(True, 2.0)
    assert (slow.rate, slow.recover_at, slow.slowdowns, slow.interval) == (60.0, 120.0, 1, 1.0)
    same_storm = slow.ended(True, 3.0)
    assert (same_storm.rate, same_storm.slowdowns, same_storm.provider_errors) == (60.0, 1, 2)
    deeper = same_storm.ended(True, 20.0)
    assert deeper.rate == 30.0 and deeper.recover_at == 120.0
    rates = []
    state = deeper
    while state.rate is not None:
        state = state.ended(False, 30.0)
        rates.append(state.rate)
    assert rates == [45.0, 60.0, 75.0, 90.0, 105.0, None]
    assert (state.recoveries, [entry["event"] for entry in state.history][-2:]) == (1, "faster recovered".split())


def test_the_ceiling_caps_starts_and_bounds_the_recovery() -> None:
    state = PacerState(ceiling=6.0)
    assert state.interval == 10.0
    assert state.started(100.0).next_start == 110.0
    slow = state.ended(True, 1.0)
    assert (slow.rate, slow.interval) == (3.0, 20.0)
    assert slow.ended(False, 2.0).rate == 4.0  # at least one start a minute more
    assert PacerState(rate=5.9, recover_at=50.0, ceiling=6.0).ended(False, 0).rate is None


def test_workers_share_the_pacer_through_the_run_folder(tmp_path: Path) -> None:
    clock = [1000.0]
    slept: list[float] = []
    one = Pacer(tmp_path, 60.0, clock=lambda: clock[0], sleep=slept.append)
    two = Pacer(tmp_path, 60.0, clock=lambda: clock[0], sleep=slept.append)
    threads = [threading.Thread(target=pacer.wait_turn) for pacer in (one, two, one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(slept) == [1.0, 2.0, 3.0]  # one start a second, whoever asks
    two.ended(True)
    assert read_state(tmp_path).rate == 30.0
    later = Pacer(tmp_path, None, clock=lambda: clock[0] + 100, sleep=slept.append)  # a resumed session
    later.wait_turn()
    assert read_state(tmp_path, clock[0] + 100).starts[-1] == clock[0] + 100
    assert read_state(tmp_path).shown(clock[0])["paced"] is True


def test_the_horizon_leaves_an_honest_queue_of_workers_alone(tmp_path: Path) -> None:
    """Two workers at one start a minute: the slot a worker takes while the other waits for its own
    lies two minutes ahead, inside the horizon (one longest interval per worker), so it is kept."""
    clock = [1000.0]
    slept: list[float] = []
    one, two = (Pacer(tmp_path, 1.0, workers=2, clock=lambda: clock[0], sleep=slept.append) for _ in range(2))
    one.wait_turn()
    two.wait_turn()
    clock[0] += 1
    one.wait_turn()
    assert slept == [60.0, 119.0]


@settings(max_examples=examples(80), deadline=None)
@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=10)),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
        max_leaves=30,
    ),
    st.fixed_dictionaries(
        {},
        optional={
            key: st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.none())
            for key in ("rate", "recover_at", "ceiling", "next_start", "slowdowns")
        },
    ),
)
@example(None, {"rate": 5e-324})  # a denormal rate once gave an infinite interval
def test_a_damaged_pacer_file_reads_to_a_sane_state(junk: Any, fields: dict[str, Any]) -> None:
    for data in (junk, fields):
        state = PacerState.from_json(data, 5000.0)
        for rate in (state.rate, state.recover_at, state.ceiling):
            assert rate is None or 0 < rate <= 100_000
        assert 0 <= state.next_start <= 5000.0 + 86_400 and state.slowdowns >= 0
        assert 0 <= state.interval < float("inf")
        json.dumps(state.to_json(), allow_nan=False)


def test_an_unreadable_pacer_file_does_not_stop_a_start(tmp_path: Path) -> None:
    (tmp_path / PACER_FILE).write_bytes(b"\x00" * 100_000)
    assert Pacer(tmp_path, None, sleep=lambda _: None).wait_turn() == 0
    assert read_state(tmp_path).starts  # written afresh


def test_with_the_pacing_off_provider_errors_are_counted_but_never_slow_the_starts(tmp_path: Path) -> None:
    """--gaia2-pacing off: a storm is counted, no start waits; the ceiling still applies, and a
    session with the pacing on again paces from the shared file as before."""
    clock = [1000.0]
    slept: list[float] = []
    off = Pacer(tmp_path, None, adaptive=False, clock=lambda: clock[0], sleep=slept.append)
    for _ in range(4):
        off.wait_turn()
        off.ended(True)
    shown = read_state(tmp_path).shown(clock[0])
    assert (shown["pacing"], shown["paced"], shown["slowdowns"], shown["provider_errors"]) == ("off", False, 0, 4)
    assert slept == [] and shown["starts_per_minute"] is None
    capped = Pacer(tmp_path, 30.0, adaptive=False, clock=lambda: clock[0], sleep=slept.append)
    capped.wait_turn()
    capped.wait_turn()
    assert slept == [2.0]
    on = Pacer(tmp_path, None, clock=lambda: clock[0], sleep=slept.append)
    on.ended(True)
    assert read_state(tmp_path).shown(clock[0])["pacing"] == "adaptive" and read_state(tmp_path).rate is not None
