"""What a redactor costs to build and use, side by side: this checkout's against another
revision's (its package exported from git), alternating, in one run.

Every pytest process with a key builds one (its patterns compiled on first use), and
tests/unit/store/test_redact.py builds hundreds (Hypothesis: new keys per example). Figures are
CPU seconds (user + system), medians:

- ``build, N keys``: a redactor for 1 and 4 keys, from nothing cached (the module's sources, re's
  compiled patterns), then one ``redact`` and one ``redact_bytes`` (each pattern it uses compiled);
- ``build, base64 of a key``: the same for 1 key, used once on bytes holding the key's base64;
- ``redact N MB``: masking a trace-like text (JSON, a JSON string inside, non-ASCII) without the
  keys, with the redactor built before (its patterns compiled);
- ``test_redact.py``: each revision's own test file with its own package, in a fresh pytest
  (derandomized Hypothesis: ``HYPOTHESIS_PROFILE=ci``).

    .venv/bin/python benchmarks/redactor.py [--against main] [--runs 9] [--megabytes 1 64] [--test-runs 3]
"""

from __future__ import annotations

import base64
import importlib.util
import os
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

import side_by_side  # this folder's: the script's own folder is first on sys.path
from redaction import _trace  # a trace-like file, as the redaction benchmark masks

REPO = side_by_side.REPO
KEYS = ["sk-canary-0f3a9c1b2d4e5f60718293a4", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz12", "r8_ZZZ9yyyXXXwww0000", "AIzaSyD-abcdefgh_ijkl"]
TEST_FILE = "tests/unit/store/test_redact.py"


def _module(name: str, path: Path) -> ModuleType:
    """A redact module loaded from its file (it imports the standard library only)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _cpu(action: Callable[[], object]) -> float:
    started = time.process_time()
    action()
    return time.process_time() - started


def _build(module: ModuleType, keys: list[str]) -> float:
    """CPU of a redactor for ``keys`` built from nothing cached and used on text and on bytes."""
    re.purge()
    module._sources.cache_clear()
    return _cpu(lambda: (redactor := module.Redactor(keys)).redact("x") + redactor.redact_bytes(b"x").decode())


def _build_encoded(module: ModuleType, keys: list[str]) -> float:
    """CPU of a redactor for ``keys`` built from nothing cached and used on bytes holding a key's base64."""
    re.purge()
    module._sources.cache_clear()
    data = b"key: " + base64.b64encode(keys[0].encode())
    return _cpu(lambda: module.Redactor(keys).redact_bytes(data))


def _redact(module: ModuleType, text: str) -> float:
    redactor = module.Redactor(KEYS[:2])
    redactor.redact("x")
    return _cpu(lambda: redactor.redact(text))


def _tests(root: Path, output_file: Path) -> float:
    """CPU of a fresh pytest of ``root``'s test_redact.py with ``root``'s package."""
    env = {**os.environ, "PYTHONPATH": str(root), "HYPOTHESIS_PROFILE": "ci"}
    args = [sys.executable, "-m", "pytest", TEST_FILE, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    with open(output_file, "wb") as output:
        process = subprocess.Popen(args, cwd=root, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(output_file.read_text(encoding="utf-8", errors="replace"))
    return usage.ru_utime + usage.ru_stime


def _row(label: str, theirs: list[float], ours: list[float]) -> None:
    a, b = statistics.median(theirs), statistics.median(ours)
    print(f"{label:<22}  {a:>10.4f}  {b:>10.4f}  {b / a:.2f}x", flush=True)


def main() -> None:
    parser = side_by_side.parser(__doc__)
    parser.add_argument("--megabytes", type=float, nargs="+", default=[1.0], help="text sizes masked (default: 1)")
    parser.add_argument("--test-runs", type=int, default=3, help="runs of test_redact.py each (default: 3; 0: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        other = side_by_side.exported(args.against, Path(temp) / "other", ("pytest_gaia2", "tests", "scenarios", "pyproject.toml"))
        before = _module("redact_before", other / "pytest_gaia2" / "store" / "redact.py")
        after = _module("redact_after", REPO / "pytest_gaia2" / "store" / "redact.py")
        print(f"{'CPU s, median':<22}  {args.against:>10}  {'this':>10}  this / {args.against}")
        for count in (1, 4):
            _row(f"build, {count} keys", *side_by_side.alternating(
                args.runs, partial(_build, before, KEYS[:count]), partial(_build, after, KEYS[:count])))
        _row("build, base64 of a key", *side_by_side.alternating(
            args.runs, partial(_build_encoded, before, KEYS[:1]), partial(_build_encoded, after, KEYS[:1])))
        for megabytes in args.megabytes:
            text = _trace(int(megabytes * 1e6)).decode("utf-8")
            assert before.Redactor(KEYS).redact(text) == after.Redactor(KEYS).redact(text)
            _row(f"redact {megabytes:g} MB", *side_by_side.alternating(
                args.runs, partial(_redact, before, text), partial(_redact, after, text)))
        if args.test_runs:
            output = Path(temp) / "output.txt"
            _row("test_redact.py", *side_by_side.alternating(args.test_runs, partial(_tests, other, output),
                                                                 partial(_tests, REPO, output)))


if __name__ == "__main__":
    main()
