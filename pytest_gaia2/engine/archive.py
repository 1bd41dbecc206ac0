"""Tar streams in and out of containers, as pure functions over bytes: no engine, no SDK.

What a container hands back is hostile input. :func:`extract` streams an archive to disk
with caps on sizes, names, depth and entry count, writes only inside the destination folder
(never through a symlink) and can mask secrets on the way; memory stays at a few chunks
whatever the archive holds. :func:`tar_files` builds the small archives copied in.
"""

from __future__ import annotations

import errno
import io
import itertools
import os
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Any

from pytest_gaia2.store.kept import printable
from pytest_gaia2.store.names import hazard
from pytest_gaia2.store.redact import Redactor
from pytest_gaia2.store.safejson import JsonReadError, open_regular

ARCHIVE_CHUNK = 256 << 10
"""Bytes per chunk asked of the engine's archive stream."""
COPY_CHUNK = 1 << 20
"""Bytes read per step when copying a file out; also the window a redaction transform sees."""
MAX_NAME_BYTES = 255
MAX_HOST_PATH_BYTES = 3800
MAX_DEPTH = 32
MAX_ENTRIES = 10_000
"""Archive entries copied per copy: bounds inodes against a tree of tiny files. Past it, only
the files named in ``rename`` (the ones the harness needs) are still written."""
MAX_SCANNED = 100_000
"""Archive entries read per copy at most (bounds time): the rest is neither copied nor counted."""
MAX_LISTED = 100
"""Skipped files named one by one in a report; past it they are only counted (bounded record)."""

NO_RENAME: Mapping[str, str] = MappingProxyType({})
_temp_names = itertools.count()


SPOOL_BYTES = 8 << 20
"""A copy-in archive stays in memory up to this size, then goes to a temporary file."""


@dataclass(frozen=True)
class ArchivedFile:
    """A member of a kept archive on the host (:mod:`~pytest_gaia2.store.kept`): ``size``
    bytes at ``offset`` of ``archive``, streamed from there, never extracted to a file."""

    archive: Path
    offset: int
    size: int


FileContent = bytes | Path | ArchivedFile
"""What is copied into a container: the bytes, a host file streamed from disk (a regular
file, checked again when opened: never a FIFO or device swapped in), or a member of a kept
archive streamed from the archive."""


def tar_spool(files: Iterable[tuple[str, FileContent, int]]) -> IO[bytes]:
    """A tar archive of ``(path, content, mode)`` entries in a spooled temporary file, read from
    its start: a host file's content is streamed into it, never held whole in memory. OSError
    names the host file that could not be read."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES)  # noqa: SIM115 - the caller closes it
    try:
        with tarfile.open(fileobj=spool, mode="w") as archive:
            for name, content, mode in files:
                info = tarfile.TarInfo(name)
                info.mode = mode
                info.mtime = int(time.time())
                if isinstance(content, bytes):
                    info.size = len(content)
                    archive.addfile(info, io.BytesIO(content))
                    continue
                source = content.archive if isinstance(content, ArchivedFile) else content
                try:
                    with open_regular(source, max_bytes=sys.maxsize) as stream:
                        if isinstance(content, ArchivedFile):  # tarfile reads exactly its size
                            stream.seek(content.offset)
                            info.size = content.size
                        else:
                            info.size = os.fstat(stream.fileno()).st_size
                        archive.addfile(info, stream)
                except JsonReadError as exc:
                    raise OSError(f"{source}: {exc}") from None
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool


def tar_files(files: Iterable[tuple[str, FileContent, int]]) -> bytes:
    """A tar archive of ``(path, content, mode)`` entries as bytes (see :func:`tar_spool`)."""
    with tar_spool(files) as archive:
        return archive.read()


class StreamBroken(Exception):
    """The engine's archive stream failed mid-way (not an OSError: those are local write errors)."""


class _ChunkStream(io.RawIOBase):
    """A read-only file over the engine's chunk iterator, so tarfile's stream mode can read it
    without the archive ever being held whole."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._rest = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            try:
                chunk = next(self._chunks)
            except StopIteration:
                return 0
            except Exception as exc:  # noqa: BLE001 - any transport failure ends the stream alike
                raise StreamBroken(f"{type(exc).__name__}: {exc}") from exc
            self._rest = memoryview(chunk)
        size = min(len(buffer), len(self._rest))
        buffer[:size] = self._rest[:size]
        self._rest = self._rest[size:]
        return size


def tar_entries(chunks: Iterable[bytes]) -> Iterator[tuple[tarfile.TarInfo, tarfile.TarFile]]:
    """Each entry of a tar stream with the archive to read its data from, in order, once."""
    with tarfile.open(fileobj=_ChunkStream(iter(chunks)), mode="r|") as archive:
        while (member := archive.next()) is not None:
            archive.members.clear()  # type: ignore[attr-defined]  # stream mode keeps every header seen
            yield member, archive


@dataclass
class CopyReport:
    """What a copy out wrote (host-relative name, bytes), kept in an archive, skipped (archive
    name, why) and noted."""

    written: list[tuple[str, int]] = field(default_factory=list)
    kept: list[tuple[str, int]] = field(default_factory=list)
    """Members added to the kept archive (member name, bytes)."""
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """The first :data:`MAX_LISTED` files not copied, with why."""
    unlisted: int = 0
    """Files not copied beyond those listed in ``skipped``."""
    total_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    """Why the archive was not read to its end (then files may be missing that nobody counted)."""
    gave_up: bool = False
    """The archive held more than ``ignore_limit`` bytes of entries nobody wanted: the rest was not read."""
    met: set[str] = field(default_factory=set)
    """The ``rename`` names met in the archive, copied or not."""

    def skip(self, name: str, reason: str) -> None:
        """One more file not copied: named while fewer than :data:`MAX_LISTED` are, else counted."""
        if len(self.skipped) < MAX_LISTED:
            self.skipped.append((name, reason))
        else:
            self.unlisted += 1


def _shown(name: str) -> str:
    """A hostile archive name made printable and short enough for a report."""
    text = printable(name)
    return text if len(text) <= 300 else f"{text[:297]}..."


def _type_problem(member: tarfile.TarInfo) -> str | None:
    """Why an entry is not copied for its type; None for regular files (and directories)."""
    if member.isreg() or member.isdir():
        return None
    if member.issym():
        return "symbolic link"
    if member.islnk():
        return "hard link"
    if member.ischr() or member.isblk():
        return "device"
    if member.isfifo():
        return "FIFO"
    return f"unsupported entry type {member.type!r}"


def _below_top(name: str) -> str:
    """An archive name below the archive's top folder (``state/a/b.json`` -> ``a/b.json``), as
    ``rename`` keys are written; a single-file archive's only entry is its own name."""
    parts = [part for part in name.split("/") if part not in ("", ".")]
    return "/".join(parts[1:] if len(parts) > 1 else parts)


def _relative(name: str) -> tuple[tuple[str, ...], str | None]:
    """An archive name's path below its top folder (a single-file archive keeps the file's
    name), or why it cannot be one: a NUL, an absolute name, a ``..``."""
    if "\0" in name:
        return (), "name contains NUL"
    if name.startswith("/"):
        return (), "absolute name"
    parts = tuple(part for part in name.split("/") if part not in ("", "."))
    if ".." in parts:
        return (), "name contains '..'"
    return (parts[1:] if len(parts) > 1 else parts), None


def _bounded(parts: tuple[str, ...], root: str) -> str | None:
    """Why ``parts`` cannot be a path below ``root`` on the host (empty, too long, too deep)."""
    if not parts or any(part in ("", ".", "..") or "\0" in part for part in parts):
        return "not a plain relative name"
    if any(len(os.fsencode(part)) > MAX_NAME_BYTES for part in parts):
        return f"a path component is longer than {MAX_NAME_BYTES} bytes"
    if len(parts) > MAX_DEPTH:
        return f"deeper than {MAX_DEPTH} levels"
    if len(os.fsencode(os.path.join(root, *parts))) > MAX_HOST_PATH_BYTES:
        return f"host path longer than {MAX_HOST_PATH_BYTES} bytes"
    return None


def _destination(name: str, root: str, target: str) -> tuple[tuple[str, ...], str | None]:
    """Where a file the harness reads goes below ``root``: ``target``, the name the harness
    gave it, checked again as a second line of defence (some targets are built from a run
    folder's records), or why not."""
    _, problem = _relative(name)
    host = tuple(target.split("/"))
    problem = problem or _bounded(host, root)
    for part in host if problem is None else ():
        problem = problem or hazard(part)
    return (host, None) if problem is None else ((), problem)


def member_name(parts: Sequence[str], redactor: Redactor | None = None) -> str:
    """A container's file's name as a member of a kept archive: printable (every other
    character escaped as ``\\xNN``), masked, never absolute nor holding ``..``."""
    text = printable("/".join(parts))
    return redactor.redact(text) if redactor is not None else text


def _open_dirs(root_fd: int, names: Sequence[str]) -> int:
    """A descriptor of ``root/names...``, created as needed, never through a symlink."""
    fd = root_fd
    try:
        for name in names:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            if fd != root_fd:
                os.close(fd)
            fd = child
    except BaseException:
        if fd != root_fd:
            os.close(fd)
        raise
    return fd


def _read_chunks(source: IO[bytes]) -> Iterator[bytes]:
    while chunk := source.read(COPY_CHUNK):
        yield chunk


def masked(chunks: Iterable[bytes], redactor: Redactor | None) -> Iterable[bytes]:
    """``chunks`` of a file with ``redactor``'s secrets masked as in the whole file, even one
    that a chunk boundary splits (:meth:`~pytest_gaia2.store.redact.Redactor.redact_chunks`)."""
    return chunks if redactor is None else redactor.redact_chunks(chunks)


class Capped:
    """At most ``max_bytes`` of ``pieces``, then a line saying the rest was cut; ``cut`` says
    whether it was, so the cut can be listed with the files not copied."""

    def __init__(self, pieces: Iterable[bytes], max_bytes: int) -> None:
        self.pieces = pieces
        self.max_bytes = max_bytes
        self.cut = False

    def __iter__(self) -> Iterator[bytes]:
        left = self.max_bytes
        for piece in self.pieces:
            if len(piece) > left:
                self.cut = True
                yield piece[:left]
                yield f"\n[pytest-gaia2: cut here, over {self.max_bytes} bytes]\n".encode()
                return
            left -= len(piece)
            yield piece


def write_file(root_fd: int, parts: Sequence[str], pieces: Iterable[bytes]) -> int:
    """Write atomically (a temporary name in the same folder, then a rename); bytes written."""
    parent = _open_dirs(root_fd, parts[:-1])
    temp = f".gaia2-copy-{os.getpid()}-{next(_temp_names)}.tmp"
    try:
        fd = os.open(
            temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644, dir_fd=parent
        )
        try:
            size = 0
            with os.fdopen(fd, "wb") as out:
                for piece in pieces:
                    out.write(piece)
                    size += len(piece)
            os.replace(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            try:
                os.unlink(temp, dir_fd=parent)
            except OSError:
                pass
            raise
        return size
    finally:
        if parent != root_fd:
            os.close(parent)


class Keeper:
    """A container's files kept as members of one tar archive on the host, never as files: no
    tool that goes to a run folder afterwards (pytest, python, git, a shell) reads a member as
    its configuration, whatever names it adds later. Members are regular files of mode 0644
    under printable, masked names (:func:`member_name`), their content masked as it streams
    and spooled (memory stays at :data:`SPOOL_BYTES`); the archive is written under a
    temporary name and appears at ``path`` whole on :meth:`close`, only when it has a member."""

    def __init__(self, path: Path, redactor: Redactor | None = None) -> None:
        self.path = path
        self.redactor = redactor
        self.members = 0
        self._temp = path.with_name(f".gaia2-copy-{os.getpid()}-{next(_temp_names)}.tmp")
        self._out: IO[bytes] | None = None
        self._archive: tarfile.TarFile | None = None

    def add(self, parts: Sequence[str], pieces: Iterable[bytes]) -> int:
        """One more member named ``parts``; its bytes as kept."""
        if self._archive is None:
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            self._out = os.fdopen(os.open(self._temp, flags, 0o644), "wb")
            self._archive = tarfile.open(fileobj=self._out, mode="w", format=tarfile.PAX_FORMAT)
        with tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES) as spool:
            for piece in masked(pieces, self.redactor):
                spool.write(piece)
            info = tarfile.TarInfo(member_name(parts, self.redactor))
            info.size = spool.tell()
            info.mode = 0o644
            info.mtime = int(time.time())
            spool.seek(0)
            self._archive.addfile(info, spool)
        self.members += 1
        return info.size

    def close(self) -> None:
        """The archive at ``path``, whole (nothing when no member was added)."""
        if self._archive is None or self._out is None:
            return
        try:
            self._archive.close()
            self._out.close()
            os.replace(self._temp, self.path)
        finally:
            self.discard()

    def discard(self) -> None:
        """Nothing kept: the temporary archive goes (after :meth:`close`, nothing to do)."""
        if self._out is not None:
            self._out.close()
            try:
                os.unlink(self._temp)
            except FileNotFoundError:
                pass
        self._archive = self._out = None

    def __enter__(self) -> Keeper:
        return self

    def __exit__(self, kind: object, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.discard()


def _write_problem(exc: OSError) -> str:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.EEXIST):
        return "a file, folder or symlink is in the way on the host"
    return f"could not write on the host: {exc.strerror or exc}"


def extract(
    chunks: Iterable[bytes],
    dest: Path,
    *,
    max_file_bytes: int,
    max_total_bytes: int,
    rename: Mapping[str, str] = NO_RENAME,
    keep: Keeper | None = None,
    prefix: str = "",
    redactor: Redactor | None = None,
    wanted: Callable[[str], bool] | None = None,
    ignore_limit: int = 0,
) -> CopyReport:
    """Write the files of a tar stream the harness reads under ``dest``, keep the rest in ``keep``.

    Only the files ``rename`` names become files: a file's archive path below the top folder
    (``state/a/b.json`` -> ``a/b.json``) goes to ``rename[path]``, the name the harness gives
    it. Every other regular file becomes a member ``prefix/path`` of ``keep``'s archive (with
    no ``keep``, it is skipped): nothing else a container holds becomes a file a later tool
    could read as its configuration, whatever names tools read now or later. Names are
    checked before anything is written (no NUL, absolute path or ``..``; components, depth and
    host path bounded), and folders are opened one by one with ``O_NOFOLLOW`` from ``dest``,
    so nothing lands outside it. Files over ``max_file_bytes``, or over what is left of
    ``max_total_bytes``, are skipped. Memory stays at a few chunks whatever the archive holds.
    Every file is masked with ``redactor`` as it streams, in windows of :data:`COPY_CHUNK`
    bytes (see :func:`masked`). A broken stream ends the copy with a note; what was written stays.

    The files ``rename`` names are the ones the harness needs: they are written whatever the
    total cap and however many entries came first (the file cap still holds). Past
    :data:`MAX_ENTRIES` entries every other file is skipped, past :data:`MAX_SCANNED` the
    archive is no longer read (a note says so); every file skipped is in ``skipped`` or counted
    in ``unlisted``.

    With ``wanted``, entries whose path below the top folder it rejects are passed over
    unlisted (one archive of a shared folder such as ``/tmp`` instead of one per file); once
    they add up to more than ``ignore_limit`` bytes the copy stops with ``gave_up`` set.
    """
    report = CopyReport()
    ignored = 0
    dest.mkdir(parents=True, exist_ok=True)
    root = os.path.abspath(dest)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    prefix_parts = tuple(part for part in prefix.split("/") if part)
    try:
        for count, (member, archive) in enumerate(tar_entries(chunks), start=1):
            if count > MAX_SCANNED:
                report.notes.append(
                    f"stopped reading after {MAX_SCANNED} archive entries: the rest was neither copied nor counted"
                )
                break
            if member.isdir():
                continue
            if wanted is not None and not wanted("/".join(member.name.split("/")[1:])):
                ignored += member.size
                if ignored > ignore_limit:
                    report.gave_up = True
                    break
                continue
            shown = _shown(member.name)
            target = rename.get(_below_top(member.name))
            if target is not None:
                report.met.add(_below_top(member.name))
                parts, problem = _destination(member.name, root, target)
            else:
                relative, problem = _relative(member.name)
                parts = (*prefix_parts, *relative)
                problem = problem or _bounded(parts, root)
                if problem is None and keep is None:
                    problem = "not a file the harness reads (nothing else of a container becomes a file)"
            problem = _type_problem(member) or problem
            if problem is None and member.size > max_file_bytes:
                problem = f"{member.size} bytes, over the {max_file_bytes}-byte file cap"
            if problem is None and target is None and count > MAX_ENTRIES:
                problem = f"past the first {MAX_ENTRIES} archive entries"
            if problem is None and target is None and report.total_bytes + member.size > max_total_bytes:
                problem = f"{member.size} bytes, over what is left of the {max_total_bytes}-byte total cap"
            if problem is not None:
                report.skip(shown, problem)
                continue
            source = archive.extractfile(member)
            assert source is not None  # a regular file
            try:
                if target is None and keep is not None:
                    size = keep.add(parts, _read_chunks(source))
                    report.kept.append((member_name(parts, redactor), size))
                else:
                    size = write_file(root_fd, parts, masked(_read_chunks(source), redactor))
                    report.written.append(("/".join(parts), size))
            except OSError as exc:
                report.skip(shown, _write_problem(exc))
                continue
            report.total_bytes += size
    except StreamBroken as exc:
        report.notes.append(f"the engine's archive stream broke, the copy is partial: {exc}")
    except tarfile.TarError as exc:
        report.notes.append(f"the archive is unreadable, the copy is partial: {exc}")
    finally:
        os.close(root_fd)
    return report


def first_file(chunks: Iterable[bytes], max_bytes: int) -> tuple[bytes | None, str | None]:
    """The content of a single-file archive, unless it is larger than ``max_bytes``."""
    for member, archive in tar_entries(chunks):
        if not member.isreg():
            return None, "not a regular file"
        if member.size > max_bytes:
            return None, f"{member.size} bytes, over the {max_bytes}-byte cap"
        source = archive.extractfile(member)
        assert source is not None
        return source.read(), None
    return None, "empty archive"
