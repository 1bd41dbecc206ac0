"""What masking costs, side by side: this checkout's redactor against another revision's.

The redactor masks the final bytes of every file a run writes and every file it copies out of a
container, so its speed is the run's when traces are large. These machines are noisy, so both
redactors run in one process, alternately, on the same bytes, and the figures are medians and
their ratio:

- building a redactor for two keys (once per run and worker; cached after);
- masking a trace-like JSONL file without the keys (the common case: every byte is looked at);
- masking the same file with the keys planted in a few forms.

    .venv/bin/python benchmarks/redaction.py [--against main] [--megabytes 4] [--runs 5]

The table is printed and appended, with the machine's description, to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import importlib.util
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
KEYS = ["sk-canary-0f3a9c1b2d4e5f60718293a4", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz12"]
WORDS = ["the", "agent", "called", "tool", "with", "arguments", "email", "contact", "search", "result",
         "C:\\path\\x", "naïve", "é", "中文", "0123456789abcdef", "aGVsbG8gd29ybGQ=", "\n"]


def _module(name: str, source: str) -> ModuleType:
    """A redact module from its source (another revision's, read with git show)."""
    path = Path(tempfile.mkdtemp()) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _trace(size: int, seed: int = 1) -> bytes:
    """Lines like a trace's: JSON with a JSON string inside (raw_response), escapes, non-ASCII."""
    rng = random.Random(seed)
    lines: list[str] = []
    total = 0
    while total < size:
        text = " ".join(rng.choices(WORDS, k=40))
        line = json.dumps({"type": "llm_call", "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": text}]},
                           "raw_response": json.dumps({"choices": [{"message": {"content": text[::-1]}}]}),
                           "usage": {"prompt_tokens": rng.randint(1, 9999)}})
        lines.append(line)
        total += len(line) + 1
    return ("\n".join(lines) + "\n").encode()


def _planted(data: bytes) -> bytes:
    key = KEYS[0].encode()
    forms = [key, key.hex().encode(), base64.b64encode(key), base64.b85encode(key), KEYS[0][::-1].encode()]
    step = len(data) // (len(forms) + 1)
    out = bytearray(data)
    for index, form in enumerate(forms, 1):
        out[index * step:index * step] = b" " + form + b" "
    return bytes(out)


def _timed(action: Callable[[], Any]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _build(module: ModuleType) -> None:
    """A redactor built from nothing cached (neither the module's sources nor re's patterns)."""
    module.re.purge()
    if hasattr(module, "_sources"):
        module._sources.cache_clear()
    module.Redactor(KEYS).redact_bytes(b"x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main", help="the revision compared with (default: main)")
    parser.add_argument("--megabytes", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    source = subprocess.run(["git", "show", f"{args.against}:pytest_gaia2/store/redact.py"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    before = _module("redact_before", source)
    sys.path.insert(0, str(REPO))
    from pytest_gaia2.store import redact as after

    data = _trace(int(args.megabytes * 1e6))
    planted = _planted(data)
    rows = []
    for label, action in [
        ("build a redactor for two keys, s", _build),
        ("mask a trace without the keys, MB/s", lambda module: module.Redactor(KEYS).redact_bytes(data)),
        ("mask a trace with keys planted, MB/s", lambda module: module.Redactor(KEYS).redact_bytes(planted)),
    ]:
        old_times, new_times = [], []
        for _ in range(args.runs):  # alternately: a load that comes and goes slows both alike
            old_times.append(_timed(lambda: action(before)))  # noqa: B023
            new_times.append(_timed(lambda: action(after)))  # noqa: B023
        old, new = statistics.median(old_times), statistics.median(new_times)
        if label.endswith("MB/s"):
            mb = len(data) / 1e6
            rows.append((label, f"{mb / old:.1f}", f"{mb / new:.1f}", f"{new / old:.2f} x the time"))
        else:
            rows.append((label, f"{old:.3f}", f"{new:.3f}", f"{new / old:.2f} x"))
    assert KEYS[0].encode().hex().encode() not in after.Redactor(KEYS).redact_bytes(planted)
    width = max(len(row[0]) for row in rows)
    table = "\n".join(f"{label:<{width}}  {old:>8}  {new:>8}  {ratio}" for label, old, new, ratio in rows)
    header = f"{'':<{width}}  {args.against:>8}  {'this':>8}  this / {args.against}"
    machine = f"{platform.node()}: {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    load = os.getloadavg()[0]
    text = (f"\n## redaction {dt.datetime.now(dt.timezone.utc).isoformat(timespec='seconds')} — {machine}\n\n"
            f"medians of {args.runs}, {len(data) / 1e6:.1f} MB, load average {load:.1f} at the start\n\n"
            f"```\n{header}\n{table}\n```\n")
    print(text)
    with open(REPO / "benchmarks" / "RESULTS.md", "a", encoding="utf-8") as results:
        results.write(text)


if __name__ == "__main__":
    main()
