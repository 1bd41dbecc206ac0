"""What masking costs, side by side: this checkout's redactor against another revision's (its
package exported from git), alternating, in one run.

The redactor masks the final bytes of every file a run writes and every file it copies out of a
container, so its speed is the run's when traces are large; every pytest process with a key builds
one (its patterns compiled on first use), and tests/unit/store/test_redact.py builds hundreds
(Hypothesis: new keys per example). Figures are CPU seconds (user + system), medians:

- ``build, N keys``: a redactor for 1 and 4 keys, from nothing cached (the module's sources, re's
  compiled patterns), then one ``redact`` and one ``redact_bytes`` (each pattern it uses compiled);
- ``build, base64 of a key``: the same for 1 key, used once on bytes holding the key's base64;
- ``mask N MB``: a trace-like file (JSON, a JSON string inside, escapes, non-ASCII) without the
  keys (the common case: every byte is looked at), as bytes and as text, and as bytes with the
  keys planted in a few forms; the redactor built before;
- ``test_redact.py``: each revision's own test file with its own package, in a fresh pytest
  (derandomized Hypothesis: ``HYPOTHESIS_PROFILE=ci``).

    .venv/bin/python benchmarks/redaction.py [--against main] [--runs 9] [--megabytes 1 64] [--test-runs 3]
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import side_by_side  # this folder's: the script's own folder is first on sys.path

REPO = side_by_side.REPO
KEYS = ["sk-canary-0f3a9c1b2d4e5f60718293a4", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz12", "r8_ZZZ9yyyXXXwww0000", "AIzaSyD-abcdefgh_ijkl"]
WORDS = ["the", "agent", "called", "tool", "with", "arguments", "email", "contact", "search", "result",
         "C:\\path\\x", "naïve", "é", "中文", "0123456789abcdef", "aGVsbG8gd29ybGQ=", "\n"]
TEST_FILE = "tests/unit/store/test_redact.py"


def _module(name: str, path: Path) -> ModuleType:
    """A redact module loaded from its file (it imports the standard library only)."""
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
    """``data`` with the first key planted as it is, in hex, base64, base85 and reversed."""
    key = KEYS[0].encode()
    forms = [key, key.hex().encode(), base64.b64encode(key), base64.b85encode(key), KEYS[0][::-1].encode()]
    step = len(data) // (len(forms) + 1)
    out = bytearray(data)
    for index, form in enumerate(forms, 1):
        out[index * step:index * step] = b" " + form + b" "
    return bytes(out)


def _cpu(action: Callable[[], object]) -> float:
    started = time.process_time()
    action()
    return time.process_time() - started


def _build(module: ModuleType, keys: list[str], used_on: bytes = b"x") -> float:
    """CPU of a redactor for ``keys`` built from nothing cached and used on text and on ``used_on``."""
    re.purge()
    module._sources.cache_clear()
    return _cpu(lambda: (redactor := module.Redactor(keys)).redact("x") + redactor.redact_bytes(used_on).decode())


def _mask(module: ModuleType, data: Any) -> float:
    """CPU of masking ``data`` (bytes or text) with a redactor for two keys built before."""
    redactor = module.Redactor(KEYS[:2])
    mask = redactor.redact if isinstance(data, str) else redactor.redact_bytes
    mask(data[:1])
    return _cpu(lambda: mask(data))


def _tests(root: Path, output_file: Path) -> float:
    """CPU of a fresh pytest of ``root``'s test_redact.py with ``root``'s package."""
    env = {**os.environ, "PYTHONPATH": str(root), "HYPOTHESIS_PROFILE": "ci"}
    args = [sys.executable, "-m", "pytest", TEST_FILE, "-q", "-p", "no:cacheprovider"]
    with open(output_file, "wb") as output:
        process = subprocess.Popen(args, cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(output_file.read_text(encoding="utf-8", errors="replace"))
    return usage.ru_utime + usage.ru_stime


def _row(label: str, theirs: list[float], ours: list[float]) -> None:
    a, b = statistics.median(theirs), statistics.median(ours)
    print(f"{label:<30}  {a:>10.4f}  {b:>10.4f}  {b / a:.2f}x", flush=True)


def main() -> None:
    parser = side_by_side.parser(__doc__)
    parser.add_argument("--megabytes", type=float, nargs="+", default=[1.0], help="trace sizes masked (default: 1)")
    parser.add_argument("--test-runs", type=int, default=3, help="runs of test_redact.py each (default: 3; 0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        other = side_by_side.exported(args.against, Path(temp) / "other", ("pytest_gaia2", "tests", "scenarios", "pyproject.toml"))
        before = _module("redact_before", other / "pytest_gaia2" / "store" / "redact.py")
        after = _module("redact_after", REPO / "pytest_gaia2" / "store" / "redact.py")
        print(f"{'CPU s, median':<30}  {args.against:>10}  {'this':>10}  this / {args.against}")
        for count in (1, 4):
            _row(f"build, {count} keys", *side_by_side.alternating(
                args.runs, partial(_build, before, KEYS[:count]), partial(_build, after, KEYS[:count])))
        encoded = b"key: " + base64.b64encode(KEYS[0].encode())
        _row("build, base64 of a key", *side_by_side.alternating(
            args.runs, partial(_build, before, KEYS[:1], encoded), partial(_build, after, KEYS[:1], encoded)))
        for megabytes in args.megabytes:
            data = _trace(int(megabytes * 1e6))
            planted = _planted(data)
            assert KEYS[0].encode().hex().encode() not in after.Redactor(KEYS).redact_bytes(planted)
            assert before.Redactor(KEYS).redact_bytes(planted) == after.Redactor(KEYS).redact_bytes(planted)
            for label, masked in [("bytes", data), ("text", data.decode("utf-8")), ("bytes, keys planted", planted)]:
                _row(f"mask {megabytes:g} MB, {label}", *side_by_side.alternating(
                    args.runs, partial(_mask, before, masked), partial(_mask, after, masked)))
        if args.test_runs:
            output = Path(temp) / "output.txt"
            _row("test_redact.py", *side_by_side.alternating(args.test_runs, partial(_tests, other, output),
                                                                 partial(_tests, REPO, output)))


if __name__ == "__main__":
    main()
