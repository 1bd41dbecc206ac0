"""The kept archive's member list, read back from a run folder as hostile input: never raises,
bounded in members listed, bytes read and headers walked, names printable."""

from __future__ import annotations

import io
import tarfile
import tracemalloc
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_gaia2.store import kept
from pytest_gaia2.store.kept import listing

MB = 1 << 20


def archive(*members: tuple[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as out:
        for name, content in members:
            info = tarfile.TarInfo(name)
            info.size = len(content)
            out.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def test_members_are_listed_with_sizes_and_short_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / kept.CONTAINER_FILES
    path.write_bytes(archive(("var/gaia2/state/pytest.toml", b"[pytest]\n"), ("tmp/bin", b"\xff\xfe"),
                             ("home/big.txt", b"x" * 100)))
    found = listing(path, shown_bytes=50)
    assert [(m.name, m.size, m.text) for m in found.members] == [
        ("var/gaia2/state/pytest.toml", 9, "[pytest]\n"), ("tmp/bin", 2, None), ("home/big.txt", 100, None)]
    assert (found.more, found.problem) == (0, None)


def test_past_the_listed_bound_members_are_counted_and_past_the_header_bound_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / kept.CONTAINER_FILES
    path.write_bytes(archive(*((f"m{i}", b"") for i in range(30))))
    monkeypatch.setattr(kept, "MAX_MEMBERS", 25)
    found = listing(path, listed=10)
    assert [m.name for m in found.members] == [f"m{i}" for i in range(10)] and found.more == 15


def test_names_are_shown_printable(tmp_path: Path) -> None:
    path = tmp_path / kept.CONTAINER_FILES
    path.write_bytes(archive(("a\x1b[2J\u202eb\u2028c", b"")))
    assert [m.name for m in listing(path).members] == ["a\\x1b[2J\\x202eb\\x2028c"]


def test_a_link_a_fifo_or_garbage_in_its_place_is_a_problem_not_an_error(tmp_path: Path) -> None:
    target = tmp_path / "real.tar"
    target.write_bytes(archive(("x", b"1")))
    link = tmp_path / "link.tar"
    link.symlink_to(target)
    assert listing(link).problem and listing(link).members == []
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"not an archive at all" * 100)
    assert listing(garbage).problem
    assert listing(tmp_path / "absent.tar").problem


def test_a_huge_member_is_listed_without_being_read(tmp_path: Path) -> None:
    path = tmp_path / kept.CONTAINER_FILES
    with open(path, "wb") as out, tarfile.open(fileobj=out, mode="w") as tar:
        info = tarfile.TarInfo("var/gaia2/state/huge.bin")
        info.size = 64 * MB
        tar.addfile(info, _Zeros(info.size))  # type: ignore[arg-type]
        small = tarfile.TarInfo("after.txt")
        small.size = 2
        tar.addfile(small, io.BytesIO(b"ok"))
    tracemalloc.start()
    try:
        found = listing(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [(m.name, m.size, m.text) for m in found.members] == [
        ("var/gaia2/state/huge.bin", 64 * MB, None), ("after.txt", 2, "ok")]
    assert peak < 4 * MB, peak


class _Zeros(io.RawIOBase):
    """``size`` zero bytes, made as read: a huge member never held whole."""

    def __init__(self, size: int) -> None:
        self.left = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        step = min(len(buffer), self.left)
        buffer[:step] = bytes(step)
        self.left -= step
        return step


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096))
@example(b"")
@example(archive(("x", b"1"))[:700])
@example(archive(("x", b"1"))[:512] + b"\0" * 1024)
def test_any_bytes_as_the_archive_never_raise(tmp_path_factory: pytest.TempPathFactory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("kept") / kept.CONTAINER_FILES
    path.write_bytes(data)
    found = listing(path, listed=5, shown_bytes=64)
    assert len(found.members) <= 5
    assert all(m.name.isprintable() and (m.text is None or len(m.text) <= 64) for m in found.members)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.text(min_size=1, max_size=40).filter(lambda n: "\0" not in n), st.binary(max_size=200)),
                max_size=8))
def test_a_well_formed_archive_is_listed_whole_and_printable(
        tmp_path_factory: pytest.TempPathFactory, members: list[tuple[str, bytes]]) -> None:
    path = tmp_path_factory.mktemp("kept") / kept.CONTAINER_FILES
    path.write_bytes(archive(*members))
    found = listing(path)
    assert found.problem is None
    assert [m.size for m in found.members] == [len(content) for _, content in members]
    assert all(m.name.isprintable() for m in found.members)
