"""Which offline judge an image has, for ``pytest-gaia2 rejudge``.

pytest-gaia2's reference image (and images built from it) ship ``/opt/gaia2_ref_rejudge.py``.
Meta's gaia2-cli images ship no such command: their judge (``gaia2_core.judge.Judge`` with
``gaia2_cli``'s LiteLLM engine) is built only inside ``gaia2-eventd``. Every one of their init
scripts starts ``/usr/local/bin/gaia2-eventd``, a pip console script whose first line names the
Python that holds ``gaia2_cli`` and ``gaia2_core`` (``/usr/local/bin/python3.12`` in upstream's
``python:3.12.6-slim`` base). pytest-gaia2 then copies in its own small script
(``judges/gaia2_cli_rejudge.py``) and runs it with that Python, so the image's own judge code
judges the saved events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from pytest_gaia2.engine import client as engine_mod
from pytest_gaia2.store.console import CommandError

REFERENCE_JUDGE = "/opt/gaia2_ref_rejudge.py"
EVENTD = "/usr/local/bin/gaia2-eventd"
EVENTD_MODULE = b"gaia2_cli.daemon.eventd"
GAIA2_CLI_JUDGE = "gaia2_cli_rejudge.py"
_SHEBANG = re.compile(rb"#!\s*(/\S+)")
_PIP_LONG_SHEBANG = re.compile(rb"'''exec' \"?(/[^\"\s]+)")  # pip's form when the path is too long for #!


@dataclass(frozen=True)
class OfflineJudge:
    """How an image judges saved events: the command (``--jobs``, ``--out`` and folders follow)
    and the files it needs copied in beside the jobs."""

    command: tuple[str, ...]
    files: tuple[tuple[str, bytes, int], ...] = ()


def eventd_python(script: bytes) -> str | None:
    """The interpreter of a pip console script that runs gaia2-eventd; None for anything else."""
    if EVENTD_MODULE not in script:
        return None
    first, _, rest = script.partition(b"\n")
    found = _SHEBANG.match(first)
    if found and found.group(1) == b"/bin/sh":
        found = _PIP_LONG_SHEBANG.match(rest)
    if not found or not found.group(1).rsplit(b"/", 1)[-1].startswith(b"python"):
        return None
    return found.group(1).decode("utf-8", errors="replace")


def offline_judge_of(engine: engine_mod.Engine, image: str, inbox: str) -> OfflineJudge:
    """The image's offline judge, or one clear error naming the image."""
    if engine.image_files(image, REFERENCE_JUDGE, max_total_bytes=1 << 20):
        return OfflineJudge(("python3", REFERENCE_JUDGE))
    scripts = engine.image_files(image, EVENTD, max_total_bytes=1 << 20)
    python = next((found for found in map(eventd_python, scripts.values()) if found), None)
    if python:
        script = resources.files("pytest_gaia2.run.judges").joinpath(GAIA2_CLI_JUDGE).read_bytes()
        path = f"{inbox}/{GAIA2_CLI_JUDGE}"
        return OfflineJudge((python, path), ((path, script, 0o644),))
    raise CommandError(
        f"image {image!r} has no offline judge: neither pytest-gaia2's reference judge ({REFERENCE_JUDGE}) "
        f"nor gaia2-cli's event daemon ({EVENTD}, a pip script of {EVENTD_MODULE.decode()} whose Python "
        "holds gaia2_core's judge); only such images can re-judge saved events"
    )
