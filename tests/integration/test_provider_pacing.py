"""Provider trouble on the real engine and reference image, with the run's pacer and without.

The agent (GAIA2_REF_AGENT_LLM) makes one model call per search scenario to a scripted server
on this host: a storm that begins at the second call, which is refused, and goes on refusing
any call within LOCKOUT_S of the call before it, answered or refused (one call per window, and
a caller that keeps calling keeps itself locked out). Both runs start at most
STARTS_PER_MINUTE attempts a minute at -n 4, one start every 4 s. Either way no scenario is
blamed on the agent: the refused attempts are errors provider_rate_limit, retried with
backoff, each named by its trace; adaptive, the pacer slows at the storm and speeds up once
calls pass; off, it only counts. That paced a storm costs fewer refusals than unpaced is
shown by simulation (tests/unit/run/test_pacing_simulation.py): here the containers' boot
times, which a loaded machine spreads by more than a start interval, decide the counts."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of

STARTS_PER_MINUTE = 15
LOCKOUT_S = 6.0
"""Between one start interval (4 s) and two (8 s): paced at half the rate, calls pass again."""


@pytest.fixture
def limited_server() -> Iterator[tuple[int, list[int]]]:
    """An OpenAI-compatible server for containers (every interface); (port, statuses answered)."""
    answered: list[int] = []
    last: list[float] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                now = time.monotonic()
                limited = len(last) == 1 or (bool(last) and now - last[-1] < LOCKOUT_S)
                last.append(now)
                answered.append(429 if limited else 200)
            body: dict[str, Any] = (
                {"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached"}}
                if limited
                else {
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
                    ],
                    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
                }
            )
            data = json.dumps(body).encode()
            self.send_response(429 if limited else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        yield server.server_address[1], answered
    finally:
        server.shutdown()
        server.server_close()


def refused_attempts(folder: Path) -> list[dict[str, Any]]:
    """The run's attempts refused by the provider, each checked: an error named by its trace."""
    attempts = [json.loads(p.read_text(encoding="utf-8")) for p in folder.rglob("result.json")]
    refused = [a for a in attempts if a["error_category"] == "provider_rate_limit"]
    for attempt in refused:
        assert attempt["outcome"] == "error" and "HTTP 429" in attempt["error"]
        trace = (folder / attempt["folder"] / "trace.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(trace[-1])["http_status"] == 429
    return refused


@pytest.mark.slow
def test_a_429_storm_is_the_providers_is_retried_and_paced_and_unpaced_only_counted(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    limited_server: tuple[int, list[int]],
    clean_env: pytest.MonkeyPatch,
) -> None:
    port, answered = limited_server
    pacers: dict[str, dict[str, Any]] = {}
    for pacing in ("adaptive", "off"):
        answered.clear()
        result = run_gaia2(
            "-n",
            "4",
            f"--gaia2-scenarios={SHIPPED / 'search'}",  # one model call each
            f"--gaia2-env=BASE_URL=http://host.docker.internal:{port}/v1",  # the oracle profile passes no model settings
            "--gaia2-env=GAIA2_REF_AGENT_LLM=1",
            "--gaia2-retries=2",
            f"--gaia2-max-starts-per-minute={STARTS_PER_MINUTE}",
            f"--gaia2-pacing={pacing}",
            "--gaia2-skip-endpoint-check",
            output=pacing,
        )
        output = pytester.path / pacing
        folder = run_folder(output)
        records = results_of(output)
        assert len(records) == 4, result.stdout.str()[-3000:]
        assert [r for r in records if r["outcome"] == "failed"] == []  # nobody blamed on the agent
        assert {r["error_category"] for r in records if r["outcome"] == "error"} <= {"provider_rate_limit"}
        passed = sum(r["outcome"] == "passed" for r in records)
        result.assert_outcomes(passed=passed, errors=len(records) - passed)
        refused = refused_attempts(folder)
        assert len(refused) == answered.count(429) >= 1, answered  # one call an attempt
        pacers[pacing] = json.loads((folder / "progress.json").read_text(encoding="utf-8"))["pacer"]
        assert pacers[pacing]["pacing"] == pacing and pacers[pacing]["provider_errors"] == len(refused)
        assert gaia2_containers(run_id_of(output)) == []
    paced, unpaced = pacers["adaptive"], pacers["off"]
    events = [entry["event"] for entry in paced["history"]]
    assert paced["slowdowns"] >= 1 and "faster" in events[events.index("slower") :], paced  # slowed, then sped up
    assert (unpaced["slowdowns"], unpaced["history"], unpaced["paced"]) == (0, [], False), unpaced
