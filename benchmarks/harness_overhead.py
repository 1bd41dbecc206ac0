"""How much the harness costs: collection of 800 scenarios, and each phase of one container run.

Prints its figures; run it with the engine up and the reference image built:
    .venv/bin/python benchmarks/harness_overhead.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import tracemalloc
import uuid
from pathlib import Path

from pytest_gaia2 import selection
from pytest_gaia2.engine import Engine, connect
from pytest_gaia2.reference import build
from pytest_gaia2.run import Launch, Limits, ScenarioRun
from pytest_gaia2.scenarios import discover

REPO = Path(__file__).resolve().parents[1]
SPLITS = ("execution", "search", "adaptability", "time", "ambiguity")


def bench_collection(count: int) -> None:
    """Discovery and a stratified sample over ``count`` scenario files, with peak memory."""
    template = json.loads(next((REPO / "scenarios" / "search").glob("*.json")).read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for index in range(count):
            split = SPLITS[index % len(SPLITS)]
            sid = f"scenario_universe_{21 + index % 10}_{index:06d}"
            template["metadata"]["definition"]["scenario_id"] = sid
            (root / split).mkdir(exist_ok=True)
            (root / split / f"{sid}.json").write_text(json.dumps(template), encoding="utf-8")
        tracemalloc.start()
        started = time.perf_counter()
        scenarios, errors = discover([root])
        discovered = time.perf_counter()
        chosen = selection.sample(scenarios, 160, seed=1)
        sampled = time.perf_counter()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"collection: {len(scenarios)} scenarios discovered in {discovered - started:.3f} s, "
          f"stratified sample of {len(chosen)} in {(sampled - discovered) * 1000:.1f} ms, "
          f"peak memory {peak / 2**20:.1f} MiB, {len(errors)} errors")


def bench_runs(runs: int) -> None:
    """Wall time of each phase of a scenario run on the reference image."""
    client = connect()
    image = build.ensure_image(client)
    engine = Engine(client, run_id=uuid.uuid4().hex, worker="bench", owner_pid=0)
    scenario = discover([REPO / "scenarios" / "search"])[0][0]
    phases: dict[str, list[float]] = {"start+health": [], "drive+collect": [], "remove": []}
    out = Path(tempfile.mkdtemp())
    try:
        for attempt in range(1, runs + 1):
            launch = Launch(image=build.image_name(), env={"GAIA2_ADAPTER_PORT": "8090", "GAIA2_JUDGE_FINAL_TURN": "1"},
                            image_id=image)
            run = ScenarioRun(scenario, engine, launch, Limits(), out / str(attempt), attempt=attempt)
            t0 = time.perf_counter()
            run.start()
            t1 = time.perf_counter()
            result = run.drive()
            t2 = time.perf_counter()
            run.remove()
            t3 = time.perf_counter()
            assert result.passed, result.verdict.message
            for name, value in zip(phases, (t1 - t0, t2 - t1, t3 - t2)):
                phases[name].append(value)
    finally:
        engine.remove_run()
        shutil.rmtree(out, ignore_errors=True)
    for name, values in phases.items():
        print(f"run phase {name:14s}: median {statistics.median(values):.2f} s, max {max(values):.2f} s over {runs} runs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scenarios", type=int, default=800)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    bench_collection(args.scenarios)
    bench_runs(args.runs)


if __name__ == "__main__":
    main()
