"""Real model calls of the reference agent (``GAIA2_REF_AGENT_LLM=1``), for provider-trouble tests.

With the switch set, the agent asks the model at ``$BASE_URL/chat/completions`` (model
``$MODEL``, key ``$API_KEY``) once before each action it takes, and writes that call's real
Format A ``llm_call`` line (``http_status``, ``raw_response``) to ``$GAIA2_TRACE_FILE`` (default
/tmp/trace.jsonl). A call the provider refuses (any status but 200, or no answer) ends the
agent's work as a real agent's would when its LLM client raises after its own retries: it
answers nobody and the daemon ends the run unjudged (status ``error``), so the host names the
provider from the trace. The reply's content is not used: the actions are still the oracle's
or the script's.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from gaia2_ref_trace import DEFAULT_TRACE_FILE, iso_timestamp

SWITCH = "GAIA2_REF_AGENT_LLM"
TIMEOUT_S = 20.0
BODY_KEPT = 4096
"""Bytes of a response body kept in the trace line."""


class ProviderRefused(Exception):
    """The model provider refused or failed a call; the agent stops."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"the model provider answered {f'HTTP {status}' if status else detail}")
        self.status = status


class ModelCaller:
    """Asks the model once per action and writes the call's trace line."""

    def __init__(self, base_url: str, model: str, api_key: str, trace: Path) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self._key = api_key
        self.trace = trace
        self.seq = 0
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ModelCaller | None:
        """The caller the switch asks for (None when off); ValueError without a base URL."""
        if env.get(SWITCH, "").strip().lower() not in ("1", "true", "yes", "on"):
            return None
        base_url = env.get("BASE_URL", "").strip()
        if not base_url:
            raise ValueError(f"{SWITCH} is set but BASE_URL is not")
        trace = Path(env.get("GAIA2_TRACE_FILE", "").strip() or DEFAULT_TRACE_FILE)
        return cls(base_url, env.get("MODEL", "").strip() or "gaia2-reference", env.get("API_KEY", ""), trace)

    def call(self, app: str, fn: str) -> None:
        """One chat completion choosing ``app.fn``; ProviderRefused unless the answer is HTTP 200."""
        # Imported here: urllib.request (with http.client and ssl) costs every agent start more
        # CPU than the rest of it, and only agents with the switch set call a model.
        import urllib.error
        import urllib.request

        body = {"model": self.model, "messages": [{"role": "user", "content": f"next action: {app}.{fn}"}]}
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        started = time.time()
        status, raw, error = 0, "", ""
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                status, raw = response.status, response.read(BODY_KEPT).decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read(BODY_KEPT).decode("utf-8", "replace")
        except (urllib.error.URLError, OSError) as exc:
            error = f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}"
        with self._lock:
            self.seq += 1
            line = {
                "seq": self.seq,
                "timestamp": iso_timestamp(started),
                "type": "llm_call",
                "url": self.url,
                "latency_ms": round((time.time() - started) * 1000),
                "http_status": status or None,
                "request": body,
                "raw_response": raw,
                **({"error": error} if error else {}),
            }
            self.trace.parent.mkdir(parents=True, exist_ok=True)
            with open(self.trace, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(line) + "\n")
        if status != 200:
            raise ProviderRefused(status, error)
