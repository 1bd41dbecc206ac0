"""What the model gateway adds to one model call: latency and host CPU, against calling the provider directly.

A scripted provider on loopback (``tests/llm_server.py``) answers every call at once, so the
figures are the gateway's own cost (a real provider answers in hundreds of milliseconds to
seconds, beside which the added milliseconds are the ratio that matters). Calls alternate,
direct and through the gateway, plain and streamed; the medians are printed:

    .venv/bin/python benchmarks/gateway_overhead.py [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from llm_server import chat_server  # noqa: E402

from pytest_gaia2.cost.prices import Price, PriceBook  # noqa: E402
from pytest_gaia2.run.gateway import Gateway, GatewayClient, Upstream  # noqa: E402

KEY = "sk-benchmark-key"


def call(url: str, key: str, stream: bool, opener: urllib.request.OpenerDirector) -> tuple[float, float]:
    """(wall seconds, this process's CPU seconds) of one chat completion, read to its end."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "stream": stream}
    request = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        method="POST",
    )
    wall, cpu = time.perf_counter(), time.process_time()
    with opener.open(request, timeout=10) as response:
        response.read()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with chat_server(lambda model, prompt: "scripted reply") as provider, tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp)
        upstream = Upstream("agent", f"http://127.0.0.1:{provider.port}/v1", KEY)
        gateway = Gateway({"agent": upstream}, prices=PriceBook({"m": Price(1.0, 2.0)}), run_folder=run)
        gateway.start()
        try:
            client = GatewayClient.of(gateway.access("127.0.0.1"))
            token = client.grant("bench#1", run / "bench", None)
            direct_url, gateway_url = f"http://127.0.0.1:{provider.port}/v1", f"http://127.0.0.1:{gateway.port}/agent"
            results: dict[tuple[str, bool], list[tuple[float, float]]] = {}
            for _ in range(args.calls):
                for stream in (False, True):
                    results.setdefault(("direct", stream), []).append(call(direct_url, KEY, stream, opener))
                    results.setdefault(("gateway", stream), []).append(call(gateway_url, token, stream, opener))
            summary = client.revoke(token)
        finally:
            gateway.stop()
    assert summary["calls"] == 2 * args.calls, summary
    print(
        f"{args.calls} calls each, loopback provider answering at once; medians; CPU is this process's "
        "(client, and the gateway's thread when through it)"
    )
    for stream in (False, True):
        direct, through = results[("direct", stream)], results[("gateway", stream)]
        wall_d, wall_g = (statistics.median(w for w, _ in rows) for rows in (direct, through))
        cpu_d, cpu_g = (statistics.mean(c for _, c in rows) for rows in (direct, through))
        kind = "streamed" if stream else "plain"
        print(
            f"{kind + ' call, wall':<22}{wall_d * 1000:>8.2f} ms direct {wall_g * 1000:>8.2f} ms gateway "
            f"(+{(wall_g - wall_d) * 1000:.2f} ms, {wall_g / wall_d:.2f} x)"
        )
        print(
            f"{kind + ' call, host CPU':<22}{cpu_d * 1000:>8.2f} ms direct {cpu_g * 1000:>8.2f} ms gateway "
            f"(+{(cpu_g - cpu_d) * 1000:.2f} ms a call)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
