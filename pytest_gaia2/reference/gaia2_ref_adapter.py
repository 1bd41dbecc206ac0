"""Main process of the reference image: the adapter HTTP server and the agent's tool socket.

``gaia2-init-entrypoint.sh`` execs this as user gaia2, so it is the container's
PID 1 and its stderr is what ``docker logs`` shows (it also appends to
/tmp/entrypoint.log, the artifact the runner copies out). It serves Gaia2's
oracle-adapter API on ``0.0.0.0:$GAIA2_ADAPTER_PORT`` and, on a Unix socket, the
tools of the agent, a process of user ``agent`` (gaia2_ref_tools.py). Fault switches (``GAIA2_FAULT_*``, see README.md) make it misbehave in
the ways a runner has to survive.
"""

from __future__ import annotations

import json
import logging
import os
import pwd
import signal
import sys
import threading
import time

# http.server pulls in http.client, which imports ssl only to offer HTTPS clients; the adapter
# serves plain HTTP and calls nothing, and ssl was a good share of its start-up CPU.
sys.modules.setdefault("ssl", None)  # type: ignore[arg-type]
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer  # noqa: E402
from pathlib import Path
from types import FrameType
from typing import Any

from gaia2_ref_runtime import (
    TERMINAL_STATUSES,
    env_flag,
    env_float,
    faketime_path,
    read_status,
    scenario_path,
    setup_logging,
    state_dir,
    write_atomic,
)
from gaia2_ref_tools import ToolServer, socket_path

log = logging.getLogger("gaia2-ref")
MAX_BODY = 1 << 20
DAEMON_START_S = 30.0
"""A daemon that has not written its status by then never will: the run ends ``error``."""


class Handler(BaseHTTPRequestHandler):
    """Gaia2 oracle-adapter routes; every answer is JSON with ``Connection: close``."""

    notified: threading.Event
    state: Path
    never_healthy: bool = False
    protocol_version = "HTTP/1.0"

    def _send(self, code: int, payload: dict[str, Any]) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        route = self.path.split("?", 1)[0]
        if route == "/health":
            if self.never_healthy:
                self._send(503, {"ok": False, "connected": False, "oracle": True})
            else:
                self._send(200, {"ok": True, "connected": True, "oracle": True})
        elif route == "/status":
            self._send(200, read_status(self.state))
        else:
            self._send(404, {"error": "Not found"})

    def do_POST(self) -> None:
        route = self.path.split("?", 1)[0]
        length = min(int(self.headers.get("Content-Length") or 0), MAX_BODY)
        raw = self.rfile.read(length) if length > 0 else b""
        if route not in ("/notify", "/send_user_message", "/send_notifications"):
            self._send(404, {"error": "Not found"})
            return
        try:
            message = str((json.loads(raw or b"{}") or {}).get("message") or "").strip()
        except (ValueError, AttributeError):
            message = ""
        if route != "/send_notifications" and message:
            log.info("Received /notify message (%d chars)", len(message))
            self.notified.set()
        self._send(200, {"ok": True})

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)


def watch_status(state: Path, server_stop: threading.Event, stop: threading.Event) -> None:
    """Log daemon status changes; a daemon that never starts ends the run ``error``; with the
    exit-after-verdict fault, stop HTTP at the verdict."""
    last: dict[str, Any] = {}
    exit_after_verdict = env_flag("GAIA2_FAULT_ADAPTER_EXIT_AFTER_VERDICT")
    deadline = time.monotonic() + DAEMON_START_S if scenario_path().exists() else None
    while not stop.wait(0.25):
        status = read_status(state)
        if deadline is not None and status.get("status") == "waiting" and time.monotonic() > deadline:
            log.error("Daemon did not report running within %.0fs; writing status error", DAEMON_START_S)
            write_atomic(state / "daemon_status.json", json.dumps({"status": "error"}) + "\n")
            deadline = None
        elif status.get("status") != "waiting":
            deadline = None
        if status != last:
            log.info("daemon status: %s", json.dumps(status))
            last = status
        if exit_after_verdict and status.get("status") in TERMINAL_STATUSES:
            log.warning("FAULT GAIA2_FAULT_ADAPTER_EXIT_AFTER_VERDICT: stopping the HTTP server, container stays up")
            server_stop.set()
            return


def serve(port: int, stop: threading.Event, server_stop: threading.Event) -> None:
    """Run the HTTP server until shutdown or the exit-after-verdict fault."""
    delay = env_float("GAIA2_FAULT_HEALTH_DELAY", 0.0)
    if delay > 0:
        log.warning("FAULT GAIA2_FAULT_HEALTH_DELAY: HTTP server starts in %.1fs", delay)
        if stop.wait(delay):
            return
    host = "0.0.0.0"
    if env_flag("GAIA2_FAULT_LOOPBACK_ONLY"):
        # `curl 127.0.0.1` inside answers, but a published port (it targets the container's own
        # address) finds nothing: reachable inside, unreachable from the host.
        host = "127.0.0.1"
        log.warning("FAULT GAIA2_FAULT_LOOPBACK_ONLY: listening on 127.0.0.1 only, published ports cannot reach it")
    server = ThreadingHTTPServer((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
    thread.start()
    log.info("Adapter listening on %s:%d", host, port)
    while not stop.wait(0.2) and not server_stop.is_set():
        pass
    server.shutdown()
    server.server_close()
    log.info("HTTP server stopped")


def crash_later(code: int, after: float, stop: threading.Event) -> None:
    """GAIA2_FAULT_EXIT_CODE: print recognisable lines, then end PID 1 with ``code``."""
    if stop.wait(after):
        return
    print(f"[gaia2-ref] FAULT GAIA2_FAULT_EXIT_CODE: simulated crash, exiting with code {code}", flush=True)
    print("Traceback (most recent call last):", file=sys.stderr)
    print(f"RuntimeError: gaia2-ref simulated fault (exit code {code})", file=sys.stderr, flush=True)
    log.error("exiting with code %d (GAIA2_FAULT_EXIT_CODE)", code)
    logging.shutdown()
    os._exit(code)


def main() -> int:
    setup_logging(log.name, "[%(asctime)s] %(message)s", "%H:%M:%S", [Path("/tmp/entrypoint.log")])
    stop = threading.Event()
    server_stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("Received signal %d, shutting down", signum)
        stop.set()

    if env_flag("GAIA2_FAULT_IGNORE_SIGTERM"):
        log.warning("FAULT GAIA2_FAULT_IGNORE_SIGTERM: ignoring SIGTERM")
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    port = int(os.environ.get("GAIA2_ADAPTER_PORT") or 8090)
    state = state_dir()
    log.info(
        "=== gaia2 reference adapter (pid %d, user %s, port %d, state %s) ===",
        os.getpid(),
        pwd.getpwuid(os.getuid()).pw_name,
        port,
        state,
    )
    notified = threading.Event()
    Handler.notified = notified
    Handler.state = state
    Handler.never_healthy = env_flag("GAIA2_FAULT_NEVER_HEALTHY")
    if Handler.never_healthy:
        log.warning("FAULT GAIA2_FAULT_NEVER_HEALTHY: /health will answer 503")

    tools = ToolServer(state, faketime_path(), notified)
    threading.Thread(target=tools.serve, args=(socket_path(), stop), name="tools", daemon=True).start()
    threading.Thread(target=watch_status, args=(state, server_stop, stop), name="status", daemon=True).start()
    exit_code = os.environ.get("GAIA2_FAULT_EXIT_CODE", "").strip()
    if exit_code:
        after = env_float("GAIA2_FAULT_EXIT_AFTER", 1.0)
        threading.Thread(target=crash_later, args=(int(exit_code), after, stop), name="fault", daemon=True).start()

    serve(port, stop, server_stop)
    while not stop.wait(1.0):
        pass  # HTTP stopped by a fault: keep the container alive until SIGTERM
    log.info("Adapter exiting")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # also record the crash in /tmp/entrypoint.log, the artifact runners copy out
        log.exception("Adapter crashed")
        sys.exit(1)
