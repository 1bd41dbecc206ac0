"""Provider trouble on the real engine and reference image: the agent (GAIA2_REF_AGENT_LLM) calls
a scripted model server on this host that answers HTTP 429 to a storm of first requests and then
to more than a few requests a second. At -n 2 no scenario is blamed on the agent: the refused
ones are errors provider_rate_limit, retried with backoff, and the run's pacer slows the starts
after the storm and recovers, as progress.json shows."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of

STORM = 3
"""The server's first STORM requests are refused (a 429 storm)."""
PER_SECOND = 4
"""After the storm, more than PER_SECOND requests within one second are refused too."""


@pytest.fixture
def limited_server() -> Iterator[tuple[int, list[int]]]:
    """An OpenAI-compatible server for containers (every interface); (port, statuses answered)."""
    answered: list[int] = []
    recent: deque[float] = deque()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                now = time.monotonic()
                while recent and now - recent[0] > 1.0:
                    recent.popleft()
                limited = len(answered) < STORM or len(recent) >= PER_SECOND
                if not limited:
                    recent.append(now)
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
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], answered
    server.shutdown()
    server.server_close()


def test_a_429_storm_is_the_providers_is_retried_and_paced(
    pytester: pytest.Pytester,
    run_gaia2: Callable[..., pytest.RunResult],
    limited_server: tuple[int, list[int]],
    clean_env: pytest.MonkeyPatch,
) -> None:
    port, answered = limited_server
    result = run_gaia2(
        "-n",
        "2",
        f"--gaia2-scenarios={SHIPPED / 'search'}",
        f"--gaia2-scenarios={SHIPPED / 'execution'}",
        f"--gaia2-env=BASE_URL=http://host.docker.internal:{port}/v1",  # the oracle profile passes no model settings
        "--gaia2-env=GAIA2_REF_AGENT_LLM=1",
        "--gaia2-retries=4",
        "--gaia2-skip-endpoint-check",
    )
    output = pytester.path / "out"
    folder = run_folder(output)
    records = results_of(output)
    assert len(records) == 6, result.stdout.str()[-3000:]
    assert [r for r in records if r["outcome"] == "failed"] == []  # nobody blamed on the agent
    assert {r["error_category"] for r in records if r["outcome"] == "error"} <= {"provider_rate_limit"}
    result.assert_outcomes(
        passed=sum(r["outcome"] == "passed" for r in records),
        errors=len(records) - sum(r["outcome"] == "passed" for r in records),
    )
    attempts = [json.loads(p.read_text(encoding="utf-8")) for p in folder.rglob("result.json")]
    refused = [a for a in attempts if a["error_category"] == "provider_rate_limit"]
    assert len(refused) >= 2 and answered.count(429) >= STORM
    for attempt in refused:
        assert attempt["outcome"] == "error" and "HTTP 429" in attempt["error"]
        trace = (folder / attempt["folder"] / "trace.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(trace[-1])["http_status"] == 429
    assert sum(r["outcome"] == "passed" for r in records) >= 5  # retried after the storm
    progress = json.loads((folder / "progress.json").read_text(encoding="utf-8"))
    pacer = progress["pacer"]
    events = [entry["event"] for entry in pacer["history"]]
    assert pacer["slowdowns"] >= 1 and pacer["provider_errors"] >= len(refused), pacer
    assert "slower" in events and events.index("slower") < len(events) - 1, pacer  # it slowed, then sped up
    assert pacer["recoveries"] >= 1 and pacer["paced"] is False and events[-1] == "recovered", pacer
    assert gaia2_containers(run_id_of(output)) == []
