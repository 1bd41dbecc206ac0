"""A local OpenAI-compatible chat server for tests: scripted replies, every request recorded.

Bound on every host interface, so a container reaches it through ``host.docker.internal``.
``reply(model, prompt)`` decides each answer: a string becomes the assistant message, an
int an HTTP error status with no completion.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[str, str], "str | int"]
PING = "ping"
"""The prompt of the endpoint check's one-token completion (pytest_gaia2.run.endpoints)."""


@dataclass
class Request:
    """One chat completion request as received."""

    path: str
    authorization: str
    body: dict[str, Any]

    @property
    def model(self) -> str:
        return str(self.body.get("model") or "")

    @property
    def prompt(self) -> str:
        """Every message's content, joined: what the judge was asked."""
        return "\n".join(str(m.get("content") or "") for m in self.body.get("messages") or [])


@dataclass
class ChatServer:
    port: int
    requests: list[Request] = field(default_factory=list)

    @property
    def questions(self) -> list[Request]:
        """The requests other than the endpoint check's one-token ``ping`` (a run's pre-flight, a re-judge's)."""
        return [r for r in self.requests if not (r.prompt == PING and r.body.get("max_tokens") == 1)]

    @property
    def container_url(self) -> str:
        """The base URL as a container sees it."""
        return f"http://host.docker.internal:{self.port}/v1"


@contextmanager
def chat_server(reply: Reply) -> Iterator[ChatServer]:
    """Serve ``POST /v1/chat/completions`` until the block ends."""
    state = ChatServer(0)
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                body = {}
            request = Request(self.path, self.headers.get("Authorization") or "", body)
            with lock:
                state.requests.append(request)
                answer = reply(request.model, request.prompt) if self.path.endswith("/chat/completions") else 404
            if isinstance(answer, int):
                self._send(answer, {"error": {"message": "scripted failure"}})
                return
            self._send(200, {
                "id": f"chatcmpl-{len(state.requests)}", "object": "chat.completion", "model": request.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            })

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    state.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
