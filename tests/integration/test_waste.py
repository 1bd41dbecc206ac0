"""Not paying for waste, on the real engine and reference image: an agent that goes idle after
turn 1 is ended by --gaia2-idle-timeout (error idle_timeout, files kept); an agent that loops on
tool calls until the daemon gives up is a failure (agent_loop), not an error, unless disabled; a
model endpoint that cannot serve the run stops it before any container starts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED, engine_events, gaia2_containers, results_of, run_folder, run_id_of, session_prefix

from pytest_gaia2.engine.client import RUN_LABEL
from pytest_gaia2.run.evidence import Evidence
from pytest_gaia2.run.terms import EXIT_REFUSED

ONE = "scenario_universe_21_7kww6e"  # one turn, one answer
TWO_TURNS = "scenario_universe_21_83x6ru"  # ambiguity: two turns


def _created(since: float, session: str) -> list[dict[str, Any]]:
    """Containers the session (its id starts with ``session``) created since ``since``: the
    other tests' runs on the same engine, at the same time, are not its."""
    events = engine_events(since, label=RUN_LABEL, event="create")
    return [event for event in events if event["Actor"]["Attributes"][RUN_LABEL].startswith(session)]


def _run(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult], split: str, scenario_id: str, *args: str
) -> tuple[pytest.RunResult, dict[str, Any], Path]:
    result = run_gaia2(f"--gaia2-scenarios={SHIPPED / split / f'{scenario_id}.json'}", *args)
    output = pytester.path / "out"
    folder = run_folder(output) / split / scenario_id
    record = json.loads((folder / "result.json").read_text(encoding="utf-8"))
    assert results_of(output) == [record]
    assert gaia2_containers(run_id_of(output)) == []
    return result, record, folder


def test_an_agent_idle_after_turn_one_ends_at_the_idle_timeout_with_its_files(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]
) -> None:
    result, record, folder = _run(
        pytester,
        run_gaia2,
        "ambiguity",
        TWO_TURNS,
        "--gaia2-env=GAIA2_FAULT_IDLE_AFTER_TURN=1",
        "--gaia2-idle-timeout=3",
    )
    result.assert_outcomes(errors=1)
    assert (record["outcome"], record["error_category"], record["success"]) == ("error", "idle_timeout", None)
    assert "no new daemon event for 3 s (last status: running, turn 1" in record["error"]
    assert record["wall_time_s"] < 60 and record["timed_out"] is False  # far before the 240 s timeout
    for name in ("events.jsonl", "eventd.log", "daemon_status.json", "container.log"):
        assert (folder / name).is_file(), name
    assert "FAULT GAIA2_FAULT_IDLE_AFTER_TURN" in (folder / "container.log").read_text(encoding="utf-8")
    assert json.loads((folder / "daemon_status.json").read_text(encoding="utf-8"))["status"] == "running"


def test_a_tool_loop_that_ends_in_a_daemon_error_is_the_agents_failure(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]
) -> None:
    result, record, folder = _run(pytester, run_gaia2, "search", ONE, "--gaia2-env=GAIA2_FAULT_TOOL_LOOP=5")
    result.assert_outcomes(failed=1)
    assert (record["outcome"], record["error_category"], record["success"]) == ("failed", "agent_loop", False)
    calls = Evidence.read(folder).loop_calls
    assert calls >= 5
    assert record["failure_reasons"][0].startswith(
        f"the daemon ended with status 'error' after the agent made {calls} model calls without answering"
    )
    assert "no turn boundary detected after 5 agent events" in (folder / "eventd.log").read_text(encoding="utf-8")


def test_with_the_loop_rule_off_the_same_daemon_error_stays_an_error(
    pytester: pytest.Pytester, run_gaia2: Callable[..., pytest.RunResult]
) -> None:
    result, record, _ = _run(
        pytester, run_gaia2, "search", ONE, "--gaia2-env=GAIA2_FAULT_TOOL_LOOP=5", "--gaia2-stuck-loop-min-calls=0"
    )
    result.assert_outcomes(errors=1)
    assert (record["outcome"], record["error_category"]) == ("error", "daemon_error")


@pytest.fixture
def model_server() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-compatible server on loopback that serves one model; (base URL, request paths)."""
    paths: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _answer(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - the http.server API
            paths.append(self.path)
            self._answer(200, {"data": [{"id": "judge-model-1"}]})

        def do_POST(self) -> None:  # noqa: N802
            paths.append(self.path)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if body["model"] == "judge-model-1":
                self._answer(200, {"choices": [{"message": {"content": "p"}}]})
            else:
                self._answer(404, {"error": "no such model"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", paths
    server.shutdown()
    server.server_close()


def test_a_wrong_judge_model_id_stops_the_run_before_any_container(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    model_server: tuple[str, list[str]],
    clean_env: pytest.MonkeyPatch,
) -> None:
    url, paths = model_server
    clean_env.setenv("MY_JUDGE_KEY", "sk-judge")
    since = time.time()
    judge = (f"--gaia2-judge-base-url={url}", "--gaia2-judge-provider=openai", "--gaia2-judge-api-key-env=MY_JUDGE_KEY")
    result = run_gaia2(
        f"--gaia2-scenarios={SHIPPED / 'search' / f'{ONE}.json'}", *judge, "--gaia2-judge-model=judge-model"
    )
    assert result.ret == EXIT_REFUSED
    result.stdout.fnmatch_lines(
        [
            "pytest-gaia2: a model endpoint is not ready:",
            "*judge endpoint 127.0.0.1:* (model 'judge-model'): the server does not serve this model id (HTTP 404); "
            "it lists: judge-model-1; set --gaia2-judge-model to one of them exactly*",
        ]
    )
    assert paths == ["/v1/chat/completions", "/v1/models"]
    assert not (pytester.path / "out").exists() or not list((pytester.path / "out").iterdir())
    assert _created(since, session_prefix(result.stdout.str())) == []

    skipped = run_gaia2(
        f"--gaia2-scenarios={SHIPPED / 'search' / f'{ONE}.json'}",
        *judge,
        "--gaia2-judge-model=judge-model",
        "--gaia2-skip-endpoint-check",
    )
    skipped.assert_outcomes(passed=1)
    assert paths == ["/v1/chat/completions", "/v1/models"]  # not asked again
