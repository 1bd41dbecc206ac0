"""Build (or reuse) the reference image on the host.

The image is tagged ``pytest-gaia2/reference-oracle:<version>-<context hash>``
(the name contains ``oracle`` so Gaia2 tooling treats it as needing no agent
model; the hash of its build context in the tag lets two checkouts with
different reference files share one engine without rebuilding each other's
image) and labelled with the full hash, so an unchanged image is reused and an
edited one is rebuilt. The base is ``python:3.12-slim`` when it is local or
pullable; without a registry a Debian bookworm base is made with debootstrap
and ``docker import``-ed as ``pytest-gaia2/debian-base:bookworm`` (reused
afterwards). Callers serialise concurrent builds (e.g. with a FileLock); this
module is safe to call repeatedly.

CLI: ``python -m pytest_gaia2.reference.build [--tag T] [--force]`` prints the image id.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_gaia2.store.version import PLUGIN_VERSION

if TYPE_CHECKING:
    from docker import DockerClient

HERE = Path(__file__).resolve().parent
HASH_LABEL = "org.pytest-gaia2.context-hash"
SLIM_BASE = "python:3.12-slim"
BOOTSTRAP_BASE = "pytest-gaia2/debian-base:bookworm"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
BOOTSTRAP_PACKAGES = "python3,curl,passwd,ca-certificates"

Log = Callable[[str], None]


class ImageBuildError(RuntimeError):
    """The reference image could not be built; the message says what failed and how to fix it."""


def image_name() -> str:
    return f"pytest-gaia2/reference-oracle:{PLUGIN_VERSION}-{context_hash()[:12]}"


def context_files() -> list[Path]:
    """Exactly the files the Dockerfile uses (README, build.py and caches stay out)."""
    files = [HERE / "Dockerfile", HERE / "gaia2-init-entrypoint.sh", *sorted(HERE.glob("gaia2_ref_*.py"))]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise ImageBuildError(
            f"reference build context is incomplete, missing: {', '.join(missing)}; reinstall pytest-gaia2"
        )
    return files


def _content(path: Path) -> bytes:
    """File bytes as they go into the image; shell scripts are forced to LF endings."""
    data = path.read_bytes()
    return data.replace(b"\r\n", b"\n") if path.suffix == ".sh" else data


def context_hash() -> str:
    digest = hashlib.sha256()
    for path in context_files():
        digest.update(path.name.encode() + b"\0" + _content(path) + b"\0")
    return digest.hexdigest()


def _context_tar() -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path in context_files():
            data = _content(path)
            info = tarfile.TarInfo(path.name)
            info.size = len(data)
            info.mode = 0o755 if path.suffix == ".sh" else 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


def _has_image(client: DockerClient, name: str) -> bool:
    from docker.errors import ImageNotFound

    try:
        client.images.get(name)
        return True
    except ImageNotFound:
        return False


def _slim_available(client: DockerClient, log: Log) -> bool:
    from docker.errors import APIError

    if _has_image(client, SLIM_BASE):
        return True
    repo, tag = SLIM_BASE.split(":")
    try:
        log(f"pulling {SLIM_BASE} ...")
        client.images.pull(repo, tag=tag)
        return True
    except APIError as exc:
        log(f"cannot pull {SLIM_BASE} ({str(exc).splitlines()[0][:160]}); bootstrapping a Debian base instead")
        return False


def _ensure_debootstrap(log: Log) -> str:
    found = shutil.which("debootstrap")
    if found:
        return found
    if os.geteuid() != 0:
        raise ImageBuildError(
            f"{SLIM_BASE} cannot be pulled and debootstrap is not installed. Fix: run as root once, "
            f"`apt-get install debootstrap`, or make {SLIM_BASE} available locally (docker pull/load)."
        )
    log("installing debootstrap with apt-get ...")
    for command in (["apt-get", "update"], ["apt-get", "install", "-y", "--no-install-recommends", "debootstrap"]):
        result = subprocess.run(
            command, capture_output=True, text=True, env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        )
        if result.returncode != 0:
            raise ImageBuildError(
                f"`{' '.join(command)}` failed while installing debootstrap:\n{result.stderr[-2000:]}"
            )
    found = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(found).exists():
        raise ImageBuildError("debootstrap was installed but cannot be found on PATH (/usr/sbin)")
    return found


def _tar_stream(process: subprocess.Popen[bytes]) -> Iterator[bytes]:
    assert process.stdout is not None
    while chunk := process.stdout.read(1 << 20):
        yield chunk


def _bootstrap_base(client: DockerClient, log: Log) -> str:
    """Make (or reuse) a Debian bookworm base image without any registry."""
    from docker.errors import APIError

    if _has_image(client, BOOTSTRAP_BASE):
        log(f"reusing bootstrapped base {BOOTSTRAP_BASE}")
        return BOOTSTRAP_BASE
    if os.geteuid() != 0:
        raise ImageBuildError(
            f"{SLIM_BASE} cannot be pulled and building the {BOOTSTRAP_BASE} base with debootstrap needs root. "
            f"Fix: run once as root (`python -m pytest_gaia2.reference.build`), or `docker load` a {SLIM_BASE} image."
        )
    debootstrap = _ensure_debootstrap(log)
    with tempfile.TemporaryDirectory(prefix="gaia2-debian-") as tmp:
        root = Path(tmp) / "rootfs"
        command = [
            debootstrap,
            "--variant=minbase",
            f"--include={BOOTSTRAP_PACKAGES}",
            "bookworm",
            str(root),
            DEBIAN_MIRROR,
        ]
        log(f"running {' '.join(command)} (about a minute) ...")
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            raise ImageBuildError(
                f"debootstrap failed (exit {result.returncode}); check that {DEBIAN_MIRROR} is reachable.\n"
                f"{result.stdout[-1500:]}{result.stderr[-1500:]}"
            )
        log(f"importing the root filesystem as {BOOTSTRAP_BASE} ...")
        repo, tag = BOOTSTRAP_BASE.split(":")
        tar = subprocess.Popen(["tar", "-C", str(root), "-c", "."], stdout=subprocess.PIPE)
        try:
            reply = str(client.api.import_image_from_stream(_tar_stream(tar), repository=repo, tag=tag))
        except APIError as exc:
            raise ImageBuildError(f"docker import of the bootstrapped Debian root failed: {exc}") from exc
        finally:
            if tar.stdout:
                tar.stdout.close()
            tar.wait()
        if '"error' in reply:
            raise ImageBuildError(f"docker import of the bootstrapped Debian root failed: {reply[-1000:]}")
    if not _has_image(client, BOOTSTRAP_BASE):
        raise ImageBuildError(f"docker import reported success but {BOOTSTRAP_BASE} does not exist")
    return BOOTSTRAP_BASE


def _build(client: DockerClient, name: str, base: str, digest: str, log: Log) -> str:
    from docker.errors import APIError, BuildError

    log(f"building {name} FROM {base} ...")
    try:
        image, _ = client.images.build(
            fileobj=_context_tar(),
            custom_context=True,
            tag=name,
            buildargs={"BASE": base},
            labels={HASH_LABEL: digest},
            rm=True,
            forcerm=True,
            pull=False,
        )
    except BuildError as exc:
        tail = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in exc.build_log)[-3000:]
        raise ImageBuildError(f"docker build of {name} FROM {base} failed: {exc.msg}\n{tail}") from exc
    except APIError as exc:
        raise ImageBuildError(f"docker build of {name} FROM {base} failed: {exc}") from exc
    log(f"built {name} ({image.id})")
    return str(image.id)


def ensure_image(client: DockerClient, name: str | None = None, log: Log = print, force: bool = False) -> str:
    """Return the id of an up-to-date reference image, building it when needed."""
    from docker.errors import DockerException, ImageNotFound

    name = name or image_name()
    digest = context_hash()
    previous: str | None = None
    try:
        image = client.images.get(name)
        previous = str(image.id)
        if not force and (image.labels or {}).get(HASH_LABEL) == digest:
            return previous
        log(f"{name} exists but is outdated or a rebuild was forced; rebuilding")
    except ImageNotFound:
        pass
    try:
        base = SLIM_BASE if _slim_available(client, log) else _bootstrap_base(client, log)
    except DockerException as exc:
        raise ImageBuildError(f"cannot prepare a base image for {name}: {exc}") from exc
    image_id = _build(client, name, base, digest, log)
    if previous and previous != image_id:
        _remove_stale(client, previous, log)
    return image_id


def _remove_stale(client: DockerClient, image_id: str, log: Log) -> None:
    """Drop the image the new build replaced, unless a container still uses it."""
    from docker.errors import APIError

    try:
        client.images.remove(image_id)
        log(f"removed outdated image {image_id}")
    except APIError:
        pass


def main(argv: list[str] | None = None) -> int:
    import docker
    from docker.errors import DockerException

    parser = argparse.ArgumentParser(
        prog="python -m pytest_gaia2.reference.build", description="Build the pytest-gaia2 reference image."
    )
    parser.add_argument("--tag", default=None, help=f"image tag (default {image_name()})")
    parser.add_argument("--force", action="store_true", help="rebuild even if an up-to-date image exists")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        image_id = ensure_image(docker.from_env(), name=args.tag, log=log, force=args.force)
    except (ImageBuildError, DockerException) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(image_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
