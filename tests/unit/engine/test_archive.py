"""Streaming copy-out on tar streams built here and fed in small chunks, as the engine sends
them: what is kept, what is skipped and why, that nothing lands outside the destination,
that memory stays bounded, and that secrets are masked across chunk boundaries."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tarfile
import tracemalloc
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from pytest_gaia2.engine import archive
from pytest_gaia2.engine.archive import CopyReport, Keeper, extract, tar_spool
from pytest_gaia2.store.kept import CONTAINER_FILES
from pytest_gaia2.store.redact import Redactor

MB = 1 << 20
STATE_NAMES = {"events.jsonl": "events.jsonl", "judgments.jsonl": "daemon_judgments.jsonl"}


def entry(name: str, content: bytes = b"", kind: bytes = tarfile.REGTYPE, **attrs: object) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = len(content) if kind == tarfile.REGTYPE else 0
    for key, value in attrs.items():
        setattr(info, key, value)
    return info


def tar_bytes(*entries: tuple[tarfile.TarInfo, bytes]) -> bytes:
    """A PAX archive (long and non-ASCII names allowed, as the engine's are)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for info, content in entries:
            archive.addfile(info, io.BytesIO(content) if info.isreg() else None)
    return buffer.getvalue()


def files(*items: tuple[str, bytes]) -> bytes:
    return tar_bytes(*((entry(name, content), content) for name, content in items))


def chunks(data: bytes, size: int = 4093) -> Iterator[bytes]:
    """The stream in small, odd-sized chunks."""
    for start in range(0, len(data), size):
        yield data[start:start + size]


def generated(members: Iterable[tuple[str, int]], chunk: int = MB) -> Iterator[bytes]:
    """A tar stream of zero-filled files made on the fly: never held whole, however large."""
    for name, size in members:
        info = tarfile.TarInfo(name)
        info.size = size
        yield info.tobuf(format=tarfile.PAX_FORMAT)
        left = size
        while left:
            step = min(chunk, left)
            yield bytes(step)
            left -= step
        yield bytes(-size % tarfile.BLOCKSIZE)
    yield bytes(2 * tarfile.BLOCKSIZE)


def copy(data: bytes | Iterable[bytes], dest: Path, **kwargs: object) -> CopyReport:
    """Extract as an attempt does: the evidence files by name, the rest kept in dest's archive."""
    options: dict[str, object] = {"max_file_bytes": 64 * MB, "max_total_bytes": 256 * MB, "prefix": "state",
                                  "rename": STATE_NAMES}
    options.update(kwargs)
    stream = chunks(data) if isinstance(data, bytes) else data
    dest.mkdir(parents=True, exist_ok=True)
    with Keeper(dest / CONTAINER_FILES, options.get("redactor")) as keep:  # type: ignore[arg-type]
        return extract(stream, dest, keep=keep, **options)  # type: ignore[arg-type]


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path; fails on anything but files and folders."""
    found = {}
    for path in root.rglob("*"):
        assert not path.is_symlink(), path
        if path.is_file():
            found[path.relative_to(root).as_posix()] = path.read_bytes()
        else:
            assert path.is_dir(), path
    return found


def members(path: Path) -> dict[str, bytes]:
    """A kept archive's members by name (empty when there is no archive)."""
    if not path.exists():
        return {}
    with tarfile.open(path) as kept:
        found = {}
        for member in kept.getmembers():
            assert member.isreg() and member.mode == 0o644, member
            source = kept.extractfile(member)
            assert source is not None
            found[member.name] = source.read()
        return found


def everything(root: Path) -> dict[str, bytes]:
    """The files under ``root`` and the members of its kept archive, which is no file of it."""
    files = tree(root)
    files.pop(CONTAINER_FILES, None)
    return {**files, **members(root / CONTAINER_FILES)}


def reasons(report: CopyReport) -> dict[str, str]:
    return dict(report.skipped)


def test_known_files_get_their_names_and_the_rest_is_kept_in_the_archive_under_the_prefix(tmp_path: Path) -> None:
    report = copy(files(("state/events.jsonl", b"e\n"), ("state/judgments.jsonl", b"j\n"),
                        ("state/filesystem/docs/a.txt", b"aaa"), ("state/contacts.json", b"{}")), tmp_path)
    assert tree(tmp_path).keys() == {"events.jsonl", "daemon_judgments.jsonl", CONTAINER_FILES}
    assert everything(tmp_path) == {"events.jsonl": b"e\n", "daemon_judgments.jsonl": b"j\n",
                                    "state/filesystem/docs/a.txt": b"aaa", "state/contacts.json": b"{}"}
    assert sorted(report.written) == [("daemon_judgments.jsonl", 2), ("events.jsonl", 2)]
    assert sorted(report.kept) == [("state/contacts.json", 2), ("state/filesystem/docs/a.txt", 3)]
    assert (report.total_bytes, report.skipped, report.notes) == (9, [], [])


def test_a_single_file_archive_is_named_by_the_map_or_kept_under_the_prefix(tmp_path: Path) -> None:
    copy(files(("gaia2-eventd.log", b"log")), tmp_path, rename={"gaia2-eventd.log": "eventd.log"}, prefix="")
    copy(files(("trace.jsonl", b"t")), tmp_path / "other", rename={}, prefix="logs")
    assert everything(tmp_path / "other") == {"logs/trace.jsonl": b"t"}
    assert tree(tmp_path).keys() == {"eventd.log", f"other/{CONTAINER_FILES}"}


def test_without_an_archive_nothing_but_the_files_the_harness_reads_is_written(tmp_path: Path) -> None:
    report = extract(chunks(files(("out/a/status.json", b"{}"), ("out/a/conftest.py", b"x"), ("out/b.txt", b"y"))),
                     tmp_path, max_file_bytes=MB, max_total_bytes=MB, rename={"a/status.json": "a/status.json"})
    assert tree(tmp_path) == {"a/status.json": b"{}"}
    assert set(reasons(report)) == {"out/a/conftest.py", "out/b.txt"}
    assert all(why.startswith("not a file the harness reads") for why in reasons(report).values())


def test_a_name_the_harness_gives_that_a_tool_would_obey_is_still_refused(tmp_path: Path) -> None:
    """The block list stays a second line of defence for the names files are written under
    (some are built from a run folder's records, as rejudge's are)."""
    report = copy(files(("state/events.jsonl", b"e")), tmp_path, rename={"events.jsonl": "x/conftest.py"})
    assert everything(tmp_path) == {} and list(reasons(report)) == ["state/events.jsonl"]


def test_a_250_character_name_is_kept_and_a_300_byte_component_is_skipped(tmp_path: Path) -> None:
    long_ok, accented_ok = "n" * 250, "é" * 120  # 240 bytes in UTF-8
    too_long, accented_too_long = "x" * 300, "é" * 130  # 260 bytes, though 130 characters
    report = copy(files((f"state/{long_ok}", b"1"), (f"state/{accented_ok}", b"2"),
                        (f"state/{too_long}", b"3"), (f"state/d/{accented_too_long}/f", b"4")), tmp_path)
    assert everything(tmp_path) == {f"state/{long_ok}": b"1", f"state/{accented_ok}": b"2"}
    assert list(reasons(report).values()) == ["a path component is longer than 255 bytes"] * 2


def test_deep_trees_and_long_host_paths_are_bounded(tmp_path: Path) -> None:
    deep_ok = "/".join(["d"] * (archive.MAX_DEPTH - 2))  # + "state" + the file = MAX_DEPTH levels
    too_deep = "/".join(["d"] * archive.MAX_DEPTH)
    too_long = "/".join(["p" * 200] * 20)  # 20 short-enough components, 4000 bytes in all
    report = copy(files((f"state/{deep_ok}/f", b"ok"), (f"state/{too_deep}/f", b"no"),
                        (f"state/{too_long}/f", b"no")), tmp_path)
    assert everything(tmp_path) == {f"state/{deep_ok}/f": b"ok"}
    assert sorted(reasons(report).values()) == [f"deeper than {archive.MAX_DEPTH} levels",
                                                f"host path longer than {archive.MAX_HOST_PATH_BYTES} bytes"]


def test_links_devices_and_fifos_are_skipped_and_nothing_lands_outside(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    archive = tar_bytes(
        (entry("state/real.json", b"{}"), b"{}"),
        (entry("state/passwd", kind=tarfile.SYMTYPE, linkname="/etc/passwd"), b""),
        (entry("state/escape", kind=tarfile.SYMTYPE, linkname=str(outside)), b""),
        (entry("state/escape/pwned", b"x"), b"x"),  # through the link, if it had been made
        (entry("state/hard", kind=tarfile.LNKTYPE, linkname="state/real.json"), b""),
        (entry("state/fifo", kind=tarfile.FIFOTYPE), b""),
        (entry("state/null", kind=tarfile.CHRTYPE, devmajor=1, devminor=3), b""),
        (entry("state/sda", kind=tarfile.BLKTYPE, devmajor=8, devminor=0), b""),
    )
    report = copy(archive, dest)
    assert reasons(report) == {"state/passwd": "symbolic link", "state/escape": "symbolic link",
                               "state/hard": "hard link", "state/fifo": "FIFO", "state/null": "device",
                               "state/sda": "device"}
    assert everything(dest) == {"state/real.json": b"{}", "state/escape/pwned": b"x"}  # a plain member
    assert list(outside.iterdir()) == []


def test_dot_dot_absolute_and_nul_names_are_skipped(tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    nul = entry("state/ab", b"x")
    nul.pax_headers = {"path": "state/a\0b"}
    report = copy(tar_bytes((entry("state/../../escape", b"x"), b"x"), (entry("/etc/cron.d/x", b"x"), b"x"),
                            (entry("state/a/../../../up", b"x"), b"x"), (nul, b"x"),
                            (entry("state/ok", b"y"), b"y")), dest)
    assert everything(dest) == {"state/ok": b"y"}
    assert sorted(reasons(report).values()) == ["absolute name", "name contains '..'", "name contains '..'",
                                                "name contains NUL"]
    assert "state/a\\x00b" in reasons(report)  # shown printable


def test_symlinks_already_in_the_destination_are_never_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("untouched")
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "state").symlink_to(outside)  # a folder on the way is a link
    (dest / "events.jsonl").symlink_to(outside / "victim")  # the target itself is a link
    (dest / "sub").symlink_to(outside)
    report = copy(files(("state/notes.json", b"x"), ("state/events.jsonl", b"new"), ("state/judgments.jsonl", b"j")),
                  dest, rename={**STATE_NAMES, "judgments.jsonl": "sub/daemon_judgments.jsonl"})
    assert reasons(report) == {"state/judgments.jsonl": "a file, folder or symlink is in the way on the host"}
    assert members(dest / CONTAINER_FILES) == {"state/notes.json": b"x"}  # a member: no link on its way
    assert (outside / "victim").read_text() == "untouched" and list(outside.iterdir()) == [outside / "victim"]
    assert not (dest / "events.jsonl").is_symlink() and (dest / "events.jsonl").read_bytes() == b"new"


def test_a_file_where_a_folder_is_needed_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"file")
    report = copy(files(("state/events.jsonl", b"e"), ("state/x", b"member")), tmp_path,
                  rename={"events.jsonl": "a/events.jsonl"})
    assert everything(tmp_path) == {"a": b"file", "state/x": b"member"}  # as members, both a and a/b could be
    assert reasons(report) == {"state/events.jsonl": "a file, folder or symlink is in the way on the host"}


def test_file_and_total_caps(tmp_path: Path) -> None:
    report = copy(files(("state/big", b"b" * 101), ("state/one", b"1" * 60), ("state/two", b"2" * 60),
                        ("state/small", b"s" * 40)), tmp_path, max_file_bytes=100, max_total_bytes=100)
    assert everything(tmp_path) == {"state/one": b"1" * 60, "state/small": b"s" * 40}  # a later small one fits
    assert reasons(report) == {"state/big": "101 bytes, over the 100-byte file cap",
                               "state/two": "60 bytes, over what is left of the 100-byte total cap"}
    assert report.total_bytes == 100


def test_a_200_mb_file_over_the_cap_is_skipped_with_memory_bounded(tmp_path: Path) -> None:
    stream = generated([("state/huge.bin", 200 * MB), ("state/after.json", 3)])
    tracemalloc.start()
    try:
        report = copy(stream, tmp_path, max_file_bytes=10 * MB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reasons(report) == {"state/huge.bin": f"{200 * MB} bytes, over the {10 * MB}-byte file cap"}
    assert everything(tmp_path) == {"state/after.json": bytes(3)}  # the stream went on past it
    assert peak < 8 * MB, f"peak {peak / MB:.1f} MiB"


@pytest.mark.main_lane
def test_a_large_file_within_the_caps_is_streamed_to_disk_with_memory_bounded(tmp_path: Path) -> None:
    tracemalloc.start()
    try:
        report = copy(generated([("state/large.bin", 64 * MB)]), tmp_path, max_file_bytes=100 * MB,
                      redactor=Redactor(["secret"]))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.kept == [("state/large.bin", 64 * MB)]
    with tarfile.open(tmp_path / CONTAINER_FILES) as kept:
        assert kept.getmember("state/large.bin").size == 64 * MB
    # A quarter of the file: held whole it would be 64 MiB. tracemalloc counts every thread of
    # the process (an xdist worker's I/O thread too), 8.5 MiB once on a machine under load.
    assert peak < 16 * MB, f"peak {peak / MB:.1f} MiB"


def test_reading_a_small_file_stops_at_the_cap_without_reading_the_rest() -> None:
    consumed = []

    def counted(stream: Iterable[bytes]) -> Iterator[bytes]:
        for piece in stream:
            consumed.append(len(piece))
            yield piece

    assert archive.first_file(counted(generated([("huge", 200 * MB)])), 1 * MB) == (
        None, f"{200 * MB} bytes, over the {1 * MB}-byte cap")
    assert sum(consumed) < 2 * MB
    assert archive.first_file(chunks(files(("daemon_status.json", b'{"status": "complete"}'))), 1024) == (
        b'{"status": "complete"}', None)
    assert archive.first_file(chunks(tar_bytes((entry("state", kind=tarfile.DIRTYPE), b""))), 1024) == (
        None, "not a regular file")


SECRETS = [b"sk-live-0123456789abcdef", b"judge-token-XYZ987", b"hunter22"]
REDACTOR = Redactor(secret.decode() for secret in SECRETS)


def mask(data: bytes) -> bytes:
    return REDACTOR.redact_bytes(data)


def test_secrets_spanning_every_chunk_boundary_are_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 16 bytes, so almost every secret crosses one; the result is the whole-file mask."""
    monkeypatch.setattr(archive, "COPY_CHUNK", 16)
    rng = random.Random(7)
    pieces = []
    for _ in range(400):
        pieces.append(bytes(rng.choice(b"abcdefghij \n") for _ in range(rng.randrange(0, 40))))
        pieces.append(rng.choice(SECRETS))
    content = b"".join(pieces)
    report = copy(files(("state/events.jsonl", content)), tmp_path, redactor=REDACTOR)
    written = (tmp_path / "events.jsonl").read_bytes()
    assert written == mask(content)
    assert not any(secret in written for secret in SECRETS)
    assert report.written == [("events.jsonl", len(written))]


def test_a_secret_across_a_real_chunk_boundary_of_a_large_file_is_masked(tmp_path: Path) -> None:
    secret = SECRETS[0]
    content = bytearray(b"x" * (3 * archive.COPY_CHUNK))
    for boundary in (archive.COPY_CHUNK, 2 * archive.COPY_CHUNK):
        content[boundary - 7:boundary - 7 + len(secret)] = secret
    copy(files(("state/big.log", bytes(content))), tmp_path, redactor=REDACTOR)
    written = members(tmp_path / CONTAINER_FILES)["state/big.log"]
    assert secret not in written and written.count(b"***") == 2
    assert written == mask(bytes(content))


def test_a_broken_stream_keeps_what_was_written_and_says_so(tmp_path: Path) -> None:
    data = files(("state/first.json", b"1" * 5000), ("state/second.json", b"2" * 50_000))

    def breaking() -> Iterator[bytes]:
        yield data[:20_000]  # the first file whole, the second one in part
        raise ConnectionResetError("engine went away")

    report = copy(breaking(), tmp_path)
    assert tree(tmp_path).keys() == {CONTAINER_FILES}  # and no temporary left
    assert everything(tmp_path) == {"state/first.json": b"1" * 5000}
    assert report.kept == [("state/first.json", 5000)]
    assert report.notes == ["the engine's archive stream broke, the copy is partial: "
                            "ConnectionResetError: engine went away"]


def test_a_truncated_archive_keeps_what_was_written_and_says_so(tmp_path: Path) -> None:
    data = files(("state/first.json", b"1" * 5000), ("state/second.json", b"2" * 50_000))
    report = copy(data[:20_000], tmp_path)
    assert everything(tmp_path) == {"state/first.json": b"1" * 5000}
    assert len(report.notes) == 1 and report.notes[0].startswith("the archive is unreadable, the copy is partial")


def test_past_the_entry_cap_only_the_needed_files_are_written_and_every_other_is_listed_or_counted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A state folder of many tiny files sorted before the judge's files: those still arrive,
    the files past the cap are named (the first MAX_LISTED) and counted (the rest)."""
    monkeypatch.setattr(archive, "MAX_ENTRIES", 5)
    monkeypatch.setattr(archive, "MAX_LISTED", 3)
    report = copy(files(*((f"state/a{i:02}", b"x") for i in range(20)), ("state/events.jsonl", b"e"),
                        ("state/judgments.jsonl", b"j")), tmp_path)
    assert everything(tmp_path) == {**{f"state/a{i:02}": b"x" for i in range(5)},
                                    "events.jsonl": b"e", "daemon_judgments.jsonl": b"j"}
    assert report.skipped == [(f"state/a{i:02}", "past the first 5 archive entries") for i in range(5, 8)]
    assert report.unlisted == 12 and report.notes == []
    assert report.met == {"events.jsonl", "judgments.jsonl"}


def test_reading_stops_after_the_scan_bound_with_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "MAX_ENTRIES", 2)
    monkeypatch.setattr(archive, "MAX_SCANNED", 6)
    report = copy(files(*((f"state/a{i:02}", b"x") for i in range(10)), ("state/events.jsonl", b"e")), tmp_path)
    assert len(report.kept) == 2 and len(report.skipped) == 4 and "events.jsonl" not in report.met
    assert report.notes == ["stopped reading after 6 archive entries: the rest was neither copied nor counted"]


def test_the_needed_files_are_copied_whatever_the_total_cap_left(tmp_path: Path) -> None:
    report = copy(files(("state/filler", b"f" * 100), ("state/events.jsonl", b"e" * 60), ("state/other", b"o")),
                  tmp_path, max_file_bytes=100, max_total_bytes=100)
    assert everything(tmp_path) == {"state/filler": b"f" * 100, "events.jsonl": b"e" * 60}
    assert reasons(report) == {"state/other": "1 bytes, over what is left of the 100-byte total cap"}


def test_a_cut_stream_says_it_was_cut() -> None:
    whole = archive.Capped([b"abc", b"def"], 6)
    assert b"".join(whole) == b"abcdef" and not whole.cut
    cut = archive.Capped([b"abc", b"defg"], 6)
    assert b"".join(cut).startswith(b"abcdef\n[pytest-gaia2: cut here, over 6 bytes]") and cut.cut


def test_importing_the_engine_does_not_import_the_sdk() -> None:
    code = ("import sys, pytest_gaia2.engine.client, pytest_gaia2.run.preflight; "
            "print(sorted(m for m in ('docker', 'requests', 'urllib3') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(archive.__file__).parents[1])})
    assert done.stdout.strip() == "[]"


def test_one_archive_of_a_shared_folder_keeps_only_what_is_wanted(tmp_path: Path) -> None:
    """The container's /tmp in one archive: the logs land under their names, the rest is not
    written and not listed as skipped (it was never an artifact)."""
    from pytest_gaia2.store import folder as store

    data = files(("tmp/gaia2-eventd.log", b"eventd"), ("tmp/agent-scratch.bin", b"x" * 1000),
                 ("tmp/openclaw/run.log", b"claw"), ("tmp/openclawish/other.log", b"no"))
    with Keeper(tmp_path / CONTAINER_FILES) as keep:
        report = extract(chunks(data), tmp_path, max_file_bytes=MB, max_total_bytes=MB, rename=store.LOG_FILES,
                         keep=keep, prefix="tmp", wanted=store.is_log_artifact, ignore_limit=MB)
    assert everything(tmp_path) == {"eventd.log": b"eventd", "tmp/openclaw/run.log": b"claw"}
    assert report.skipped == [] and not report.gave_up and report.total_bytes == 10


def test_too_much_unwanted_content_stops_the_read_early(tmp_path: Path) -> None:
    """A 1 GiB scratch file in the shared folder is never read through: the copy gives up after
    the limit and the caller fetches the logs one by one."""
    from pytest_gaia2.store import folder as store

    stream = generated([("tmp/huge.bin", 1 << 30), ("tmp/gaia2-eventd.log", 10)])
    consumed = 0

    def counting() -> Iterator[bytes]:
        nonlocal consumed
        for chunk in stream:
            consumed += len(chunk)
            yield chunk

    report = extract(counting(), tmp_path, max_file_bytes=MB, max_total_bytes=MB, rename=store.LOG_FILES,
                     wanted=store.is_log_artifact, ignore_limit=16 * MB)
    assert report.gave_up and report.written == []
    assert consumed < 4 * MB


def test_files_a_later_tool_would_run_or_obey_are_never_written_but_kept_as_members(tmp_path: Path) -> None:
    """A run folder is where python, pytest, git and shells go afterwards: a container's
    conftest.py, native library, pytest.toml, a name no tool reads yet, or .git folder must not
    be a file there. Only the evidence file is; the rest are members of the archive."""
    planted = ["state/conftest.py", "state/sub/test_planted.py", "state/CONFTEST.PY", "state/x.pyc",
               "state/site.pth", "state/test_doc.txt", "state/json.cpython-311-x86_64-linux-gnu.so",
               "state/pytest.ini", "state/pytest.toml", "state/.pytestrc.toml", "state/pytest.yaml",
               "state/README.md", "state/.git/config", "state/.envrc", "state/conftest.py.", "state/a/.hidden/x.json"]
    report = copy(files(*((name, b"import os\n") for name in planted), ("state/events.jsonl", b"e\n")), tmp_path)
    assert tree(tmp_path).keys() == {"events.jsonl", CONTAINER_FILES}
    assert everything(tmp_path) == {"events.jsonl": b"e\n", **{name: b"import os\n" for name in planted}}
    assert report.skipped == []


def test_member_names_are_printable_and_masked_and_contents_masked(tmp_path: Path) -> None:
    report = copy(files(("state/a\x1b[31m\u202eb", b"x"), ("state/sk-live-0123456789abcdef.json", b"hunter22 here")),
                  tmp_path, redactor=REDACTOR)
    assert everything(tmp_path) == {"state/a\\x1b[31m\\x202eb": b"x", "state/***.json": b"*** here"}
    assert [name for name, _ in report.kept] == ["state/a\\x1b[31m\\x202eb", "state/***.json"]
    assert not any(secret in (tmp_path / CONTAINER_FILES).read_bytes() for secret in SECRETS)


def test_an_archive_with_no_member_is_not_written_and_a_failed_copy_leaves_no_temporary(tmp_path: Path) -> None:
    copy(files(("state/events.jsonl", b"e")), tmp_path)
    assert tree(tmp_path) == {"events.jsonl": b"e"}

    def breaking() -> Iterator[bytes]:
        yield files(("state/first.json", b"1" * 5000))[:6000]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        copy(breaking(), tmp_path / "second")
    assert tree(tmp_path / "second") == {}


def test_a_host_file_is_streamed_into_the_copy_in_archive_not_read_whole(tmp_path: Path) -> None:
    """--gaia2-copy-in of a large file: the archive goes to a temporary file past SPOOL_BYTES,
    and the file's bytes pass through in chunks (peak memory far below its size)."""
    big = tmp_path / "big.bin"
    with open(big, "wb") as handle:
        for _ in range(48):
            handle.write(os.urandom(1 << 20))
    tracemalloc.start()
    try:
        with tar_spool([("opt/big.bin", big, 0o644), ("opt/small.txt", b"hi", 0o600)]) as spool:
            _, peak = tracemalloc.get_traced_memory()
            with tarfile.open(fileobj=spool, mode="r") as archive:
                members = {m.name: m for m in archive.getmembers()}
                assert members["opt/big.bin"].size == big.stat().st_size and members["opt/small.txt"].mode == 0o600
                extracted = archive.extractfile(members["opt/big.bin"])
                assert extracted is not None and extracted.read(1 << 16) == big.read_bytes()[: 1 << 16]
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, peak


def test_a_host_file_that_became_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        tar_spool([("opt/pipe", fifo, 0o644)])
