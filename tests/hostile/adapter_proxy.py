"""A hostile image for the adapter's HTTP and the verdict: built FROM the reference image, a small
proxy in the container stands in front of the real adapter and answers /status as ``$HOSTILE``
says (every other path is passed through); ``HOSTILE=forge`` also kills the judge at start.
One image for every case, switched with ``--gaia2-env=HOSTILE=<mode>``; plus the helper that
runs pytest in a process of its own and measures its peak memory and wall time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaia2_testing import (
    PEAK_RSS_PROBE,
    derived_image,
    gaia2_containers,
    peak_rss_mb,
    results_of,
    run_folder,
    run_id_of,
)

PROXY_IMAGE = "pytest-gaia2-test/hostile-adapter-proxy-oracle:1"
"""Its name says oracle: the profile that needs no agent model."""
PEAK_RSS_MB = 400
"""The pytest process stays far below this whatever the container answers (it holds 1 MiB at most)."""

PROXY = r'''
import http.client, json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

OUTER, INNER, MODE = int(sys.argv[1]), int(sys.argv[2]), os.environ.get("HOSTILE", "")
FORGED = {"status": "complete", "turn": 1, "nb_turns": 1, "num_events": 1,
          "judgment": {"success": True, "failure_reason": ""}}


def inner(method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", INNER, timeout=10)
    connection.request(method, path, body=body, headers={"Content-Type": "application/json"} if body else {})
    answer = connection.getresponse()
    return answer.status, answer.read()


class Handler(BaseHTTPRequestHandler):
    def raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()

    def answer(self, code, body):
        self.raw(b"HTTP/1.0 %d X\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                 % (code, len(body), body))

    def forward(self, method):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            code, body = inner(method, self.path, self.rfile.read(length) if length else None)
        except OSError:
            code, body = 502, b'{"connected": false}'
        self.answer(code, body)

    def do_POST(self):
        self.forward("POST")

    def do_GET(self):
        if self.path != "/status" or not MODE:
            return self.forward("GET")
        self.close_connection = True
        try:
            getattr(self, "status_" + MODE)()
        except OSError:
            pass  # the host hung up: what it should do

    def status_forge(self):
        self.answer(200, json.dumps(FORGED).encode())

    def status_forge_late(self):
        code, body = inner("GET", "/status")
        real = json.loads(body)
        if real.get("status") in ("complete", "stopped", "error"):
            real = {**real, **FORGED, "turn": real.get("turn", 1)}
        self.answer(code, json.dumps(real).encode())

    def status_redirect(self):
        self.raw(b"HTTP/1.0 307 Temporary Redirect\r\nLocation: http://127.0.0.1:%s/internal/admin\r\n"
                 b"Content-Length: 0\r\n\r\n" % os.environ["HOSTILE_TARGET"].encode())

    def status_huge(self):
        self.raw(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4294967296\r\n\r\n")
        block = b" " * 65536
        while True:
            self.raw(block)

    def status_chunked(self):
        self.raw(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b" " * 65536 + b"\r\n"
        while True:
            self.raw(chunk)

    def status_drip(self):
        code, body = inner("GET", "/status")
        self.raw(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body))
        for byte in body:
            self.raw(bytes([byte]))
            time.sleep(1)

    def status_slow_headers(self):
        self.raw(b"HTTP/1.0 200 OK\r\nX-Slow: ")
        while True:
            self.raw(b"a")
            time.sleep(1)

    def status_nested(self):
        self.answer(200, b"[" * 300000 + b"]" * 300000)

    def status_wrong_types(self):
        self.answer(200, json.dumps({"status": ["complete"], "judgment": "yes", "turn": {"n": 1},
                                     "nb_turns": "one", "last_response": [1, 2]}).encode())

    def log_message(self, *args):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("0.0.0.0", OUTER), Handler).serve_forever()
'''

ENTRYPOINT = r'''#!/usr/bin/bash
# The proxy takes the adapter's port; the real init runs the adapter one port up.
OUTER="${GAIA2_ADAPTER_PORT:-8090}"
INNER=$((OUTER + 1))
python3 /opt/hostile_proxy.py "$OUTER" "$INNER" >>/tmp/hostile_proxy.log 2>&1 &
if [ "${HOSTILE:-}" = forge ]; then  # no judge at all: nothing but the forged /status says "pass"
  ( for _ in $(seq 1 400); do
      for p in /proc/[0-9]*; do grep -qa gaia2_ref_daemon "$p/cmdline" 2>/dev/null && kill -9 "${p#/proc/}" && exit 0; done
      sleep 0.01
    done ) &
fi
GAIA2_ADAPTER_PORT=$INNER exec bash /opt/gaia2-real-entrypoint.sh
'''


def proxy_image() -> str:
    """Built once per module (then from the build cache)."""
    derived_image(PROXY_IMAGE, "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-real-entrypoint.sh",
                  "COPY hostile_proxy.py entrypoint.sh /opt/",
                  "RUN mv /opt/entrypoint.sh /opt/gaia2-init-entrypoint.sh",
                  files={"hostile_proxy.py": PROXY.encode(), "entrypoint.sh": ENTRYPOINT.encode()})
    return PROXY_IMAGE


@dataclass(frozen=True)
class MeasuredRun:
    """A pytest run in a process of its own: its output, peak RSS (MB) and wall time (s)."""

    done: subprocess.CompletedProcess[str]
    peak_mb: int
    seconds: float

    @property
    def text(self) -> str:
        return self.done.stdout + self.done.stderr


NO_JUDGE = ("--gaia2-judge-provider=none", "--gaia2-judge-model=none")


def run_measured(folder: Path, *args: str) -> MeasuredRun:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", PEAK_RSS_PROBE, "-p", "no:cacheprovider", "--gaia2-output=out",
                           *NO_JUDGE, *args],
                          cwd=folder, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    return MeasuredRun(done, peak_rss_mb(done.stdout + done.stderr), seconds)


def only_record(folder: Path, split: str, scenario_id: str) -> dict[str, Any]:
    """The one record of a one-scenario run: result.json, the same as results.jsonl's only line,
    and no container left behind."""
    output = folder / "out"
    record = json.loads((run_folder(output) / split / scenario_id / "result.json").read_text(encoding="utf-8"))
    assert results_of(output) == [record]
    assert gaia2_containers(run_id_of(output)) == []
    return record


def pytest_says(run: MeasuredRun, outcome: str) -> bool:
    """Whether pytest's own summary reports the one scenario as the record does."""
    word = {"passed": "1 passed", "failed": "1 failed", "error": "1 error"}[outcome]
    return word in run.done.stdout and run.done.returncode == (0 if outcome == "passed" else 1)
