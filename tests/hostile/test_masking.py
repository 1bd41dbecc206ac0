"""A key in any encoding stays masked, and nothing from a container reaches the terminal raw.

The image (built FROM the reference image) gets ``OPENAI_API_KEY`` through ``--gaia2-env`` only,
so only the run's own secrets can mask it, and turns it against the host: the model name of
its trace.jsonl is the key in JSON ``\\uXXXX`` escapes (inside ``raw_response``, a JSON string
in a JSON string, two levels deep), every events.jsonl line, every judgments line's and
daemon_status.json's failure reason carry it escaped the same way, and its log and output hold
it URL-encoded, as HTML character references and as base64 (alone and inside a longer blob).
Its log, its output and the judge's failure reason (so results.jsonl, result.json, the pages
and the terminal) also hold it in every form docs/explanation/security.md lists (:data:`FORMS`: hex, base32,
base64 in each variant and wrapping, base64 of base64, base85, ascii85, gzip+base64, UTF-16,
reversed, rot13, fullwidth, with separators and zero-width characters).
The judge's failure reason also carries terminal escapes: a window title, clear screen, a
clipboard write.

Every file of the output folder, the report the console command writes afterwards, the JUnit
XML and everything printed are then searched for the key raw and decoded (:mod:`leaks`, which
undoes each of those forms); no ESC or BEL byte may reach the terminal or the JUnit XML; and the
judge's rejection is still reported as a failure with its (masked) reason.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gaia2_testing import (
    DATA,
    HOST_SETTINGS,
    derived_image,
    gaia2_containers,
    made_once,
    results_of,
    run_folder,
    run_id_of,
)
from leaks import holds, leaks_in

from pytest_gaia2.store.redact import MASK

IMAGE = "pytest-gaia2-test/masking-oracle:1"
"""An oracle image by its name: no agent model to configure."""
SCENARIO = "scenario_universe_22_ygzpjz"
"""The judge rejects it (tests/data/scenarios/judge_fail): a failure with the judge's reason."""

FORMS = r'''
def hostile_forms(key):
    """The key in every form the harness promises to mask (docs/explanation/security.md)."""
    import base64, codecs, gzip, textwrap
    raw = key.encode()
    b64 = base64.b64encode(raw)
    return {
        "hex": raw.hex(), "HEX": raw.hex().upper(), "hex bytes": ":".join("%02x" % b for b in raw),
        "base32": base64.b32encode(raw).decode(), "base32 unpadded": base64.b32encode(raw).decode().rstrip("=").lower(),
        "base64": b64.decode(), "base64 unpadded": b64.decode().rstrip("="),
        "base64 url-safe in a blob": base64.urlsafe_b64encode(b"\xfb\xff" + raw + b"\xfe").decode(),
        "base64 wrapped at 76": base64.encodebytes(b"x" * 50 + raw + b"y" * 30).decode(),
        "base64 wrapped at 64": "\r\n".join(textwrap.wrap(base64.b64encode(b"z" * 40 + raw).decode(), 64)),
        "base64 of base64": base64.b64encode(b64).decode(),
        "base85": base64.b85encode(raw).decode(), "ascii85": base64.a85encode(raw, adobe=True).decode(),
        "gzip+base64": base64.b64encode(gzip.compress(b"log line: " + raw + b"\n")).decode(),
        "utf-16-le": key.encode("utf-16-le").decode("ascii"), "utf-16-be": key.encode("utf-16-be").decode("ascii"),
        "reversed": key[::-1], "rot13": codecs.encode(key, "rot13"),
        "fullwidth": key.translate({c: c + 0xFEE0 for c in range(0x21, 0x7F)}),
        "zero-width": "\u200b".join(key), "spaced": " ".join(key), "dotted": ".".join(key),
    }
'''
"""Run inside the container (its own code, not the harness's): written into the image."""
FORM_NAMES = ["hex", "HEX", "hex bytes", "base32", "base32 unpadded", "base64", "base64 unpadded",
              "base64 url-safe in a blob", "base64 wrapped at 76", "base64 wrapped at 64", "base64 of base64",
              "base85", "ascii85", "gzip+base64", "utf-16-le", "utf-16-be", "reversed", "rot13", "fullwidth",
              "zero-width", "spaced", "dotted"]

RUNTIME_PATCH = FORMS + r'''

# -- hostile test image: every JSON file the judge and the agent write carries the key in
# JSON \u escapes (valid JSON, never the key's bytes), and the judge's reason terminal escapes.
_KEY = os.environ.get("OPENAI_API_KEY", "")
_TERMINAL = "\x1b]0;pwned title\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x9b31m"
_real_write_atomic = write_atomic


def _escaped(text):
    return text.replace(_KEY, "".join("\\u%04x" % ord(c) for c in _KEY)) if _KEY else text


def _hostile_reason(record):
    if isinstance(record, dict) and record.get("failure_reason"):
        forms = " | ".join(f"{name}: {form}" for name, form in hostile_forms(_KEY).items()) if _KEY else ""
        return {**record, "failure_reason": f"{record['failure_reason']} (key {_KEY}) {_TERMINAL} | {forms}"}
    return record


def append_jsonl(path, record):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(_escaped(json.dumps(_hostile_reason(record), default=str)) + "\n")


def append_event(state, line):
    line = {**line, "args": {**(line.get("args") or {}), "note": f"key {_KEY}"}}
    with open(state / "events.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            with open(state / "events.jsonl", "a", encoding="utf-8") as handle:
                handle.write(_escaped(json.dumps(line, default=str)) + "\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def write_atomic(path, text):
    if path.name == "daemon_status.json":
        status = json.loads(text)
        status = {**status, "judgment": _hostile_reason(status.get("judgment")), "note": f"key {_KEY}"}
        text = json.dumps(status) + "\n"
    _real_write_atomic(path, _escaped(text))
'''

ENTRYPOINT = r'''#!/usr/bin/bash
# Plants the trace and logs the key in every encoding, then runs the real init.
python3 - <<'EOF'
import base64, json, os, sys
exec(open("/opt/hostile_forms.py").read())
key = os.environ["OPENAI_API_KEY"]
escaped = "".join("\\u%04x" % ord(c) for c in key)
body = '{"object": "chat.completion", "model": "%s", "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}' % escaped
with open("/tmp/trace.jsonl", "w") as trace:
    trace.write('{"type": "llm_call", "request": {"model": "%s"}, "raw_response": %s}\n' % (escaped, json.dumps(body)))
html = "".join(("&#%d;" if i % 2 else "&#x%X;") % ord(c) for i, c in enumerate(key))
forms = {
    "url": "".join("%%%02x" % b for b in key.encode()),
    "url, some characters": key.replace("s", "%73").replace("-", "%2D"),
    "html": html,
    "base64": base64.b64encode(key.encode()).decode(),
    "base64 in a blob": base64.urlsafe_b64encode(b"prefix:" + key.encode() + b":suffix").decode(),
    "json": escaped,
}
forms.update(hostile_forms(key))
with open("/tmp/entrypoint.log", "a") as log:
    for name, form in forms.items():
        print(f"hostile {name}: {form}", file=log)
        print(f"hostile {name}: {form}", flush=True)
with open("/tmp/entrypoint.log", "ab") as log:  # UTF-16 as a UTF-16 file holds it, not as text
    for codec in ("utf-16-le", "utf-16-be"):
        log.write(f"hostile {codec} bytes: ".encode() + key.encode(codec) + b"\n")
        sys.stdout.buffer.write(key.encode(codec) + b"\n")
sys.stdout.flush()
EOF
exec bash /opt/gaia2-real-entrypoint.sh
'''


@pytest.fixture(scope="module")
def masking_image() -> str:
    derived_image(IMAGE, "COPY runtime_patch.py /opt/",
                  "RUN cat /opt/runtime_patch.py >> /opt/gaia2_ref_runtime.py && rm /opt/runtime_patch.py",
                  "RUN mv /opt/gaia2-init-entrypoint.sh /opt/gaia2-real-entrypoint.sh",
                  "COPY masking-entrypoint.sh /opt/gaia2-init-entrypoint.sh", "COPY hostile_forms.py /opt/",
                  files={"runtime_patch.py": RUNTIME_PATCH.encode(), "masking-entrypoint.sh": ENTRYPOINT.encode(),
                         "hostile_forms.py": FORMS.encode()})
    return IMAGE


@pytest.fixture(scope="module")
def hostile_run(masking_image: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One run of the judge's rejection with the key in the container, then ``report`` on it, once
    per test session (four tests read it, on whichever xdist workers they land): the run in
    ``run/``, what each command printed beside it (outside the folder the leak scan reads)."""

    def make(root: Path) -> None:
        token = secrets.token_hex(12)
        folder = root / "run"
        folder.mkdir()
        env = {name: value for name, value in os.environ.items() if name not in HOST_SETTINGS}
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--gaia2-output=out", "-v", "-rA",
             "--junitxml=junit.xml", f"--gaia2-image={masking_image}", "--gaia2-judge-provider=none",
             "--gaia2-judge-model=none", f"--gaia2-scenarios={DATA / 'scenarios' / 'judge_fail'}",
             f"--gaia2-env=OPENAI_API_KEY=sk-canary-{token}"],
            cwd=folder, env=env, capture_output=True, stdin=subprocess.DEVNULL, timeout=600)
        report = subprocess.run([sys.executable, "-m", "pytest_gaia2.cli", "report", "out"], cwd=folder, env=env,
                                capture_output=True, stdin=subprocess.DEVNULL, timeout=300)
        printed = root / "printed"
        printed.mkdir()
        (printed / "token").write_text(token, encoding="utf-8")
        for name, done in (("run", run), ("report", report)):
            (printed / f"{name}.code").write_text(str(done.returncode), encoding="utf-8")
            (printed / f"{name}.stdout").write_bytes(done.stdout)
            (printed / f"{name}.stderr").write_bytes(done.stderr)

    root = made_once(tmp_path_factory, "masking", make)
    printed = root / "printed"
    token = (printed / "token").read_text(encoding="utf-8")
    done = {name: subprocess.CompletedProcess([name], int((printed / f"{name}.code").read_text(encoding="utf-8")),
                                              (printed / f"{name}.stdout").read_bytes(),
                                              (printed / f"{name}.stderr").read_bytes())
            for name in ("run", "report")}
    return {"folder": root / "run", "key": f"sk-canary-{token}", "token": token, **done}


def test_the_container_really_wrote_the_key_in_every_encoding(hostile_run: dict[str, Any]) -> None:
    """Not a clean run that proves nothing: the copied files held the key encoded (masked now),
    and the failure reason came through."""
    output = hostile_run["folder"] / "out"
    attempt = run_folder(output) / "search" / SCENARIO
    log = (attempt / "entrypoint.log").read_text(encoding="utf-8")
    written = {part.split(": ", 1)[0]: part for part in log.split("hostile ")[1:]}
    for form in ("url", "url, some characters", "html", "base64", "base64 in a blob", "json", *FORM_NAMES,
                 "utf-16-le bytes", "utf-16-be bytes"):
        assert MASK in written[form], (form, log)
    assert "\\u0073\\u006b" not in (attempt / "events.jsonl").read_text(encoding="utf-8")
    assert "key ***" in (attempt / "events.jsonl").read_text(encoding="utf-8")
    assert gaia2_containers(run_id_of(output)) == []


def test_the_key_is_nowhere_raw_or_decoded(hostile_run: dict[str, Any]) -> None:
    folder: Path = hostile_run["folder"]
    assert (folder / "junit.xml").is_file() and (run_folder(folder / "out") / "report.html").is_file()
    assert leaks_in(folder, [hostile_run["token"]]) == []
    for done in (hostile_run["run"], hostile_run["report"]):
        assert not holds(done.stdout + done.stderr, hostile_run["token"])


def test_no_control_character_reaches_the_terminal_or_the_junit_xml(hostile_run: dict[str, Any]) -> None:
    printed = hostile_run["run"].stdout + hostile_run["run"].stderr + hostile_run["report"].stdout
    junit = (hostile_run["folder"] / "junit.xml").read_bytes()
    for text in (printed, junit):
        assert b"\x1b" not in text and b"\x07" not in text and "\x9b".encode() not in text
    assert b"\\x1b]0;pwned title\\x07\\x1b[2J" in printed  # shown escaped, not dropped
    assert b"\\x1b]0;pwned title\\x07\\x1b[2J" in junit


def test_the_rejection_is_still_a_failure_with_its_masked_reason(hostile_run: dict[str, Any]) -> None:
    run = hostile_run["run"]
    assert run.returncode == 1 and b"1 failed" in run.stdout, run.stdout.decode(errors="replace")
    [record] = results_of(hostile_run["folder"] / "out")
    assert record["outcome"] == "failed"
    reason = json.dumps(record["failure_reasons"], ensure_ascii=False)
    assert f"(key {MASK})" in reason and "pwned title" in reason
    written = {part.split(": ", 1)[0]: part for part in reason.split(" | ")[1:]}
    for name in FORM_NAMES:  # every form reached the record, masked
        assert MASK in written[name], (name, reason)
    assert f"(key {MASK})".encode() in run.stdout
    assert list(record["usage"]["models"]) == [MASK], record["usage"]
