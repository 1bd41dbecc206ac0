"""A chain checkpoint is one archive: what the next container receives is streamed from it,
never extracted into the run folder, bounded per file and in total, and a forged member name
cannot put a file anywhere but the home or the carried state."""

from __future__ import annotations

import io
import os
import tarfile
import tracemalloc
from pathlib import Path

from pytest_gaia2.engine.archive import ArchivedFile, Keeper, tar_spool
from pytest_gaia2.run import chain
from pytest_gaia2.store.kept import CONTAINER_FILES

MB = 1 << 20


def checkpoint(folder: Path, *members: tuple[str, bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    with Keeper(folder / CONTAINER_FILES) as keep:
        for name, content in members:
            keep.add(name.split("/"), [content])
    return folder


def spooled(files: list[tuple[str, object, int]]) -> dict[str, bytes]:
    with tar_spool(files) as spool, tarfile.open(fileobj=spool) as archive:  # type: ignore[arg-type]
        return {m.name: archive.extractfile(m).read() for m in archive.getmembers()}  # type: ignore[union-attr]


def test_the_home_and_app_state_are_carried_from_the_archive_to_where_the_next_container_reads_them(
        tmp_path: Path) -> None:
    found = checkpoint(tmp_path / "0000", ("home/notes/a.txt", b"remember"), ("app_state/contacts.json", b"{}"),
                       ("home/conftest.py", b"import os"))
    files = chain.carried_files(found, MB, 10 * MB)
    assert all(isinstance(content, ArchivedFile) and mode == 0o644 for _, content, mode in files)
    assert spooled(files) == {"/home/agent/notes/a.txt": b"remember", "/var/gaia2/carried_state/contacts.json": b"{}",
                              "/home/agent/conftest.py": b"import os"}
    assert [p.name for p in found.iterdir()] == [CONTAINER_FILES]  # nothing was extracted


def test_forged_member_names_and_oversized_members_are_not_carried(tmp_path: Path) -> None:
    folder = tmp_path / "0000"
    folder.mkdir()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name, size in (("home/../../etc/cron.d/x", 1), ("/home/abs", 1), ("other/x", 1), ("home/", 0),
                           ("home/big", 2000), ("home/ok", 3), ("app_state/a.json", 5), ("app_state/b.json", 5)):
            info = tarfile.TarInfo(name)
            info.size = size
            out.addfile(info, io.BytesIO(b"z" * size))
        link = tarfile.TarInfo("home/link")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        out.addfile(link)
    (folder / CONTAINER_FILES).write_bytes(buffer.getvalue())
    files = chain.carried_files(folder, 1000, 8)
    assert [path for path, _, _ in files] == ["/home/agent/ok", "/var/gaia2/carried_state/a.json"]  # total cap: 8


def test_no_archive_or_a_damaged_one_carries_what_it_can(tmp_path: Path) -> None:
    assert chain.carried_files(tmp_path, MB, MB) == []
    found = checkpoint(tmp_path / "0001", ("home/a", b"a" * 600), ("home/b", b"b" * 600))
    data = (found / CONTAINER_FILES).read_bytes()
    (found / CONTAINER_FILES).write_bytes(data[:1600])  # the second member's data cut off
    files = chain.carried_files(found, MB, MB)
    assert [path for path, _, _ in files][:1] == ["/home/agent/a"]


def test_a_large_carried_member_is_streamed_into_the_next_container_not_read_whole(tmp_path: Path) -> None:
    folder = tmp_path / "0000"
    folder.mkdir()
    with Keeper(folder / CONTAINER_FILES) as keep:
        keep.add(["home", "big.bin"], (os.urandom(MB) for _ in range(48)))
    files = chain.carried_files(folder, 64 * MB, 64 * MB)
    tracemalloc.start()
    try:
        with tar_spool(files) as spool:
            _, peak = tracemalloc.get_traced_memory()
            with tarfile.open(fileobj=spool) as archive:
                assert archive.getmember("/home/agent/big.bin").size == 48 * MB
    finally:
        tracemalloc.stop()
    assert peak < 24 * MB, peak
