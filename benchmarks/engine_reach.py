"""What reaching the adapter through the engine API costs, against the published port, side by side.

A remote engine's adapter is reached by exec of curl inside the container (``api``); a local
one's through its published 127.0.0.1 port (``ports``). Both are measured on the same local
engine, interleaved, as medians:

- one call: GET /status through each client (no spacing between exec calls);
- one scenario: the wall time pytest-gaia2 records per scenario (launch to collected verdict),
  serial runs of the shipped search split with ``--gaia2-engine URL`` vs ``URL#1,api``.

    .venv/bin/python benchmarks/engine_reach.py [--engine unix:///var/run/docker.sock] [--rounds 5] [--calls 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVER = ("import http.server, json\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        body = json.dumps({'status': 'running', 'turn': 1}).encode()\n"
          "        self.send_response(200); self.send_header('Content-Length', str(len(body))); self.end_headers()\n"
          "        self.wfile.write(body)\n"
          "    def log_message(self, *a): pass\n"
          "http.server.ThreadingHTTPServer(('0.0.0.0', 8090), H).serve_forever()\n")


def per_call(url: str, calls: int) -> tuple[float, float]:
    """Median seconds of one /status through the published port and through exec."""
    from pytest_gaia2.engine import adapter
    from pytest_gaia2.engine.client import Engine, connect
    from pytest_gaia2.engine.container import Container, LaunchSpec
    from pytest_gaia2.reference import build

    engine = Engine(connect(url=url), run_id="bench-reach", worker="main", owner_pid=0, address=url)
    handle = engine.client.containers.run(build.image_name(), entrypoint=["python3", "-c", SERVER], detach=True,
                                          ports={"8090/tcp": ("127.0.0.1", None)}, labels=engine.labels("bench"))
    try:
        handle.reload()
        port = int(handle.attrs["NetworkSettings"]["Ports"]["8090/tcp"][0]["HostPort"])
        container = Container(handle, LaunchSpec(build.image_name(), "bench", {}, {}, 8090), port)
        adapter.EXEC_SPACING = 0.0
        clients = {"ports": adapter.AdapterClient(container.adapter_url), "api": adapter.ExecAdapterClient(container, 8090)}
        deadline = time.monotonic() + 20
        while True:
            try:
                clients["ports"].status()
                break
            except adapter.AdapterUnavailable:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        times: dict[str, list[float]] = {"ports": [], "api": []}
        failed = 0
        for _ in range(calls):
            for name, client in clients.items():
                started = time.perf_counter()
                try:
                    client.status()
                except adapter.AdapterUnavailable:
                    failed += 1  # counted, not timed: the poll loop simply asks again
                    continue
                times[name].append(time.perf_counter() - started)
        if failed:
            print(f"{failed} of {2 * calls} calls failed")
        return statistics.median(times["ports"]), statistics.median(times["api"])
    finally:
        engine.remove_id(handle.id)
        engine.client.close()


def per_scenario(url: str, rounds: int) -> dict[str, list[float]]:
    """Every scenario's recorded wall time, per reach, over ``rounds`` interleaved serial runs."""
    walls: dict[str, list[float]] = {"ports": [], "api": []}
    for _ in range(rounds):
        for reach, value in (("ports", url), ("api", f"{url}#1,api")):
            with tempfile.TemporaryDirectory(prefix="gaia2-reach-") as tmp:
                done = subprocess.run(
                    [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "search_split",
                     f"--gaia2-scenarios={REPO / 'scenarios'}", f"--gaia2-output={tmp}/out", f"--gaia2-engine={value}"],
                    cwd=tmp, capture_output=True, text=True, stdin=subprocess.DEVNULL)
                if done.returncode != 0:
                    raise SystemExit(f"the {reach} run failed:\n{done.stdout[-3000:]}")
                lines = (Path(tmp) / "out" / "latest" / "results.jsonl").read_text(encoding="utf-8").splitlines()
                walls[reach] += [json.loads(line)["wall_time_s"] for line in lines if line.strip()]
    return walls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", default="unix:///var/run/docker.sock")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=40)
    args = parser.parse_args()
    ports_call, api_call = per_call(args.engine, args.calls)
    walls = per_scenario(args.engine, args.rounds)
    ports_s, api_s = statistics.median(walls["ports"]), statistics.median(walls["api"])
    print(f"{'measure':<34}{'ports':>10}{'api (exec)':>12}{'ratio':>8}")
    print(f"{'one GET /status (median, ms)':<34}{ports_call * 1000:>10.1f}{api_call * 1000:>12.1f}"
          f"{api_call / ports_call:>7.1f}x")
    label = f"one scenario (median of {len(walls['api'])}, s)"
    print(f"{label:<34}"
          f"{ports_s:>10.2f}{api_s:>12.2f}{api_s / ports_s:>7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
