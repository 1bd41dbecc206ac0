"""The agent's only way into the judge's state: a Unix socket served by the adapter (user gaia2).

The agent runs as its own user (``agent``), which can neither read ``/var/gaia2`` (the
scenario, with the oracle's answers) nor write the state folder, nor signal the judge. Like
the setuid tool wrapper of Gaia2's agent images, this socket lets it do what an agent may:
log an action (the line, its time and sim time are made here, never an ``event_id``), read
what the state says (events, notifications, the daemon's status, or all three at once), learn
whether a task came over ``/notify``, and say that it stopped for good. One JSON request per
connection, one JSON answer back.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path
from typing import Any

from gaia2_ref_runtime import (
    AGENT_STOPPED,
    append_event,
    make_line,
    read_lines,
    read_sim_text,
    read_status,
    write_atomic,
)

MAX_REQUEST = 1 << 20
MAX_ANSWER = 8 << 20
TAILS = {"events": "events.jsonl", "notes": "notifications.jsonl"}


def socket_path() -> Path:
    return Path(os.environ.get("GAIA2_TOOLS_SOCKET") or "/tmp/gaia2-tools/agent.sock")


class ToolServer:
    """Answers the agent's requests with the adapter's rights (see the module docstring)."""

    def __init__(self, state: Path, faketime: Path, notified: threading.Event) -> None:
        self.state = state
        self.faketime = faketime
        self.notified = notified

    def answer(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict):
            return {"error": "not an object"}
        op = request.get("op")
        if op == "status":
            return {"status": read_status(self.state)}
        if op == "notified":
            return {"notified": self.notified.is_set()}
        if op == "tail" and request.get("name") in TAILS:
            return self._tail(request["name"], request.get("offset"))
        if op == "poll":  # a waiting agent's look around in one round trip: both tails and the status
            offsets = request.get("offsets") if isinstance(request.get("offsets"), dict) else {}
            tails = {name: self._tail(name, offsets.get(name)) for name in TAILS}
            return {"status": read_status(self.state), "tails": tails}
        if op == "act":
            args = request.get("args") if isinstance(request.get("args"), dict) else {}
            line = make_line(
                str(request.get("app")),
                str(request.get("fn")),
                args,
                bool(request.get("w")),
                request.get("ret"),
                read_sim_text(self.faketime),
            )
            append_event(self.state, line)
            return {"line": line}
        if op == "stopped":
            write_atomic(self.state / AGENT_STOPPED, json.dumps({"reason": str(request.get("reason"))}) + "\n")
            return {"ok": True}
        return {"error": "unknown request"}

    def _tail(self, name: str, offset: Any) -> dict[str, Any]:
        records, end = read_lines(self.state / TAILS[name], offset if isinstance(offset, int) else 0)
        return {"records": records, "offset": end}

    def serve(self, path: Path, stop: threading.Event) -> None:
        """Serve on ``path`` (anyone may connect: the folder's owner decides who reaches it) until ``stop``."""
        import socketserver  # here: the agent imports this module for its client side only

        server_side = self

        class Handler(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                try:
                    request = json.loads(self.rfile.readline(MAX_REQUEST) or b"null")
                except ValueError:
                    request = None
                self.wfile.write(json.dumps(server_side.answer(request), default=str).encode() + b"\n")

        path.parent.mkdir(parents=True, exist_ok=True)
        # Bound and listening under another name, then renamed: the socket appears only when a
        # connection to it is accepted (between bind and listen a client is refused).
        pending = path.with_name(path.name + ".pending")
        pending.unlink(missing_ok=True)
        server = socketserver.ThreadingUnixStreamServer(str(pending), Handler)
        server.daemon_threads = True
        os.chmod(pending, 0o666)
        os.replace(pending, path)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
        stop.wait()
        server.shutdown()


class ToolClient:
    """The agent's side of the socket."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(30)
            connection.connect(str(self.path))
            connection.sendall(json.dumps(request).encode() + b"\n")
            with connection.makefile("rb") as answer:
                data = json.loads(answer.readline(MAX_ANSWER) or b"{}")
        return data if isinstance(data, dict) else {}

    def status(self) -> dict[str, Any]:
        try:
            status = self.ask({"op": "status"}).get("status")
        except OSError:
            return {"status": "waiting"}
        return status if isinstance(status, dict) else {"status": "waiting"}

    def poll(self, tails: list[RemoteTail]) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
        """The status and each tail's new lines, in one request (``waiting`` and none while the
        socket is not there yet)."""
        try:
            answer = self.ask({"op": "poll", "offsets": {tail.name: tail.offset for tail in tails}})
        except OSError:
            return {"status": "waiting"}, [[] for _ in tails]
        status = answer.get("status")
        found = answer.get("tails") if isinstance(answer.get("tails"), dict) else {}
        return (
            status if isinstance(status, dict) else {"status": "waiting"},
            [tail.take(found.get(tail.name)) for tail in tails],
        )

    def notified(self) -> bool:
        try:
            return bool(self.ask({"op": "notified"}).get("notified"))
        except OSError:
            return False

    def act(self, app: str, fn: str, args: dict[str, Any], write: bool, ret: Any) -> dict[str, Any]:
        line = self.ask({"op": "act", "app": app, "fn": fn, "args": args, "w": write, "ret": ret}).get("line")
        if not isinstance(line, dict):
            raise OSError("the tool socket did not log the action")
        return line

    def stopped(self, reason: str) -> None:
        self.ask({"op": "stopped", "reason": reason})


class RemoteTail:
    """Where the agent is in a state file it reads through the tool socket (``ToolClient.poll``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.offset = 0

    def take(self, answer: Any) -> list[dict[str, Any]]:
        """The records of a tail answer; moves the offset on."""
        if not isinstance(answer, dict):
            return []
        records = answer.get("records")
        if isinstance(answer.get("offset"), int):
            self.offset = answer["offset"]
        return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []
