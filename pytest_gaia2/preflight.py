"""Checks before the first container: engine, orphans, image, settings, keys, line endings, endpoint.

Run once per run on the controller. A check that makes every scenario fail stops the run
with one message; a check that only might matter (the model endpoint) warns.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import docker.errors
from filelock import FileLock

from . import settings as settings_mod
from .engine import ENTRYPOINT, engine_address, pid_alive
from .reference import build

if TYPE_CHECKING:
    from .session import Gaia2Session

ENDPOINT_CHECK_SECONDS = 5
REAPED_SHOWN = 5  # container names in the one-line reaping report
IMAGE_BUILD_LOCK = Path(tempfile.gettempdir()) / "pytest-gaia2-image-build.lock"
"""Serialises builds of the reference image (and images derived from it) on this machine."""


class PreflightError(Exception):
    """A problem that would make every scenario fail; the message says how to fix it."""


@dataclass
class Outcome:
    ok: bool = True
    image_id: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def check(self, ok: bool, what: str, *fixes: str) -> None:
        """One report line; a failed check gets one ``fix:`` line per thing to fix."""
        self.ok &= ok
        self.lines.append(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            self.lines.extend(f"         fix: {fix}" for fix in fixes)

    def note(self, what: str) -> None:
        """Something the run did that the user should hear about in every run, not only pre-flight."""
        self.notes.append(what)
        self.lines.append(f"  [ok] {what}")

    def warn(self, what: str) -> None:
        self.warnings.append(what)
        self.lines.append(f"  [warn] {what}")


def _image(session: Gaia2Session) -> str:
    """The image id; the reference image is built once per machine under a file lock."""
    client = session.engine().client
    settings = session.settings
    if settings.is_reference:
        with FileLock(str(IMAGE_BUILD_LOCK)):
            try:
                return build.ensure_image(client, settings.image, log=lambda line: None)
            except build.ImageBuildError as exc:
                raise PreflightError(f"the reference image {settings.image} could not be built: {exc}") from None
    try:
        return str(client.images.get(settings.image).id)
    except docker.errors.ImageNotFound:
        raise PreflightError(
            f"image {settings.image!r} is not on the engine at {engine_address()}; build or pull it "
            f"(e.g. `make -C gaia2-cli build` upstream, or `docker pull {settings.image}`)"
        ) from None


def _crlf_scripts(session: Gaia2Session) -> list[str]:
    """Shell scripts under /opt with Windows line endings: they break the entrypoint."""
    client = session.engine().client
    handle = client.containers.create(session.settings.image, entrypoint=ENTRYPOINT, command=["-c", "true"],
                                      labels=session.engine().labels("preflight"))
    try:
        from .engine import untar

        stream, _ = handle.get_archive("/opt")
        files = untar(stream)
    except docker.errors.NotFound:
        files = {}
    finally:
        handle.remove(force=True)
    return sorted(name for name, content in files.items() if name.endswith(".sh") and b"\r\n" in content)


def _endpoint_reachable(session: Gaia2Session, url: str) -> tuple[bool, str]:
    """Whether a container on the run's network reaches the model endpoint by TCP (bash's
    /dev/tcp; no tools needed)."""
    parsed = urlparse(url)
    if not parsed.hostname:
        return False, f"{url!r} has no host"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    script = f"timeout {ENDPOINT_CHECK_SECONDS} bash -c '</dev/tcp/{parsed.hostname}/{port}'"
    client = session.engine().client
    try:
        client.containers.run(
            session.settings.image, entrypoint=ENTRYPOINT, command=["-c", script], remove=True,
            extra_hosts=settings_mod.extra_hosts(), labels=session.engine().labels("preflight"),
            network_mode="host" if session.settings.network == "host" else None,
        )
    except docker.errors.ContainerError:
        return False, f"{parsed.hostname}:{port}"
    return True, f"{parsed.hostname}:{port}"


def run(session: Gaia2Session) -> Outcome:
    """Every check, in the order a user would fix them; raises on the first fatal one, except
    with ``--gaia2-preflight-only``, which reports a missing image like any failed check."""
    outcome = Outcome()
    outcome.lines.append("gaia2 pre-flight:")
    engine = session.engine()  # raises EngineError with the fix
    version = engine.client.version()
    outcome.facts["engine"] = {"address": engine_address(), "version": version.get("Version"),
                               "os": version.get("Os"), "arch": version.get("Arch")}
    outcome.check(True, f"engine answers: {engine_address()} (version {version.get('Version')})")
    reaped = engine.reap_orphans(session.settings.reap_grace, pid_alive)
    if reaped:
        shown = ", ".join(reaped[:REAPED_SHOWN]) + (", ..." if len(reaped) > REAPED_SHOWN else "")
        outcome.note(f"removed {len(reaped)} container(s) left by earlier runs whose process is gone: {shown}")
    problems = settings_mod.problems(session.settings)
    outcome.check(not problems, "settings complete for the image's profile "
                  f"({session.settings.profile.name})", *problems)
    try:
        outcome.image_id = _image(session)
    except PreflightError as exc:
        if not session.values["preflight_only"]:
            raise
        outcome.check(False, f"image {session.settings.image} present", str(exc))
        return outcome  # the remaining checks need the image
    outcome.facts["image"] = {"name": session.settings.image, "id": outcome.image_id}
    outcome.check(True, f"image {session.settings.image} present ({outcome.image_id[:19]})")
    crlf = _crlf_scripts(session)
    outcome.check(not crlf, "entrypoint scripts have Unix line endings",
                  f"convert to LF and rebuild the image: {', '.join(crlf)}")
    if crlf and not session.values["preflight_only"]:
        raise PreflightError(f"scripts in {session.settings.image} have CRLF line endings: {', '.join(crlf)}; "
                             "convert them to LF and rebuild the image")
    for url in filter(None, (session.settings.base_url, session.settings.judge_base_url)):
        reachable, where = _endpoint_reachable(session, url)
        if reachable:
            outcome.check(True, f"model endpoint {where} reachable from a container")
        else:
            outcome.warn(f"model endpoint {where} did not accept a TCP connection from a container "
                         "(is the server up? on the host, use host.docker.internal)")
    return outcome
