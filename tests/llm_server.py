"""A local model server for tests: scripted replies, every request recorded.

OpenAI-compatible ``/chat/completions`` and Anthropic-shaped ``/messages``, each plain or
streamed (``"stream": true``: server-sent events; an OpenAI stream reports usage in a last
chunk only when ``stream_options.include_usage`` asks for it, as OpenAI does). Bound on every
host interface, so a container reaches it through ``host.docker.internal``.
``reply(model, prompt)`` decides each answer: a string becomes the assistant message, an
int an HTTP error status with no completion. Every answer reports ``ChatServer.usage``.
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
    api_key: str = ""
    """Anthropic's ``x-api-key`` header."""

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
    usage: tuple[int, int] = (10, 5)
    """(input, output) tokens every answer reports."""

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
            request = Request(
                self.path, self.headers.get("Authorization") or "", body, self.headers.get("x-api-key") or ""
            )
            anthropic = self.path.endswith("/messages")
            with lock:
                state.requests.append(request)
                known = anthropic or self.path.endswith("/chat/completions")
                answer = reply(request.model, request.prompt) if known else 404
            if isinstance(answer, int):
                self._send(answer, {"error": {"message": "scripted failure"}})
                return
            given, made = state.usage
            stream = body.get("stream") is True
            if anthropic:
                self._anthropic(request.model, answer, given, made, stream)
                return
            usage = {"prompt_tokens": given, "completion_tokens": made, "total_tokens": given + made}
            if stream:
                chunk = {"id": "chatcmpl-s", "object": "chat.completion.chunk", "model": request.model}
                events = [{**chunk, "choices": [{"index": 0, "delta": {"content": answer}, "finish_reason": "stop"}]}]
                if (body.get("stream_options") or {}).get("include_usage"):
                    events.append({**chunk, "choices": [], "usage": usage})
                self._events([(None, event) for event in events], done=True)
                return
            self._send(
                200,
                {
                    "id": f"chatcmpl-{len(state.requests)}",
                    "object": "chat.completion",
                    "model": request.model,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}
                    ],
                    "usage": usage,
                },
            )

        def _anthropic(self, model: str, answer: str, given: int, made: int, stream: bool) -> None:
            message = {"id": "msg_1", "type": "message", "role": "assistant", "model": model}
            if not stream:
                self._send(
                    200,
                    {
                        **message,
                        "content": [{"type": "text", "text": answer}],
                        "stop_reason": "end_turn",
                        "usage": {"input_tokens": given, "output_tokens": made},
                    },
                )
                return
            self._events(
                [
                    (
                        "message_start",
                        {
                            "type": "message_start",
                            "message": {**message, "content": [], "usage": {"input_tokens": given, "output_tokens": 1}},
                        },
                    ),
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": answer}},
                    ),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": "end_turn"},
                            "usage": {"output_tokens": made},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ],
                done=False,
            )

        def _events(self, events: list[tuple[str | None, dict[str, Any]]], *, done: bool) -> None:
            lines = [(f"event: {name}\n" if name else "") + f"data: {json.dumps(event)}\n\n" for name, event in events]
            data = ("".join(lines) + ("data: [DONE]\n\n" if done else "")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            if 300 <= status < 400:  # a redirect that would lead the key elsewhere if followed
                self.send_header("Location", "http://127.0.0.1:9/elsewhere")
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
