"""Reading JSON that may be hostile or broken, with one error type and bounded cost.

Scenario files come from users and datasets, state files from containers: a bad one must
become a message about that one file, never a hang (a FIFO), a RecursionError (deep
nesting), a MemoryError (a huge file) or a stray exception that stops the whole run.
Messages do not name the file; callers add the path they know.
"""

from __future__ import annotations

import json
import os
import stat
from itertools import accumulate
from pathlib import Path
from typing import Any, BinaryIO

DEFAULT_MAX_DEPTH = 200

_NOT_STRUCTURE = bytes(set(range(256)) - set(b'"[]{}'))
_STEP = [1 if byte in b"[{" else -1 if byte in b"]}" else 0 for byte in range(256)]

# Non-blocking, so even a FIFO swapped in after the stat cannot hang the open; binary on Windows.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_BINARY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


class JsonReadError(ValueError):
    """A JSON file that cannot be read: missing, unreadable, or not a regular file."""


class JsonLimitError(JsonReadError):
    """JSON content refused: too large, too deep, not UTF-8, or not valid JSON."""


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")  # becomes a JsonLimitError in loads_bounded


# One decoder for every call: the C scanner is built once and NaN/Infinity are refused.
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def _depth(data: bytes) -> int:
    """The deepest bracket nesting outside strings, in a few C-speed passes (no Python loop per byte).

    Escaped backslashes, then escaped quotes, are dropped, so every quote left opens or
    closes a string; of the quotes and brackets that remain, the even pieces between quotes
    lie outside strings. Up to json's first syntax error both read the same strings, and
    json stops there, so it never nests deeper than this count.
    """
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    return max(accumulate(map(_STEP.__getitem__, outside)), default=0)


def loads_bounded(data: bytes, *, max_bytes: int, max_depth: int | None = DEFAULT_MAX_DEPTH) -> Any:
    """Parse UTF-8 JSON ``data``; every problem is a :class:`JsonLimitError`.

    ``max_depth=None`` skips the pre-scan (it costs about as much as the parse) and relies on
    json's own recursion guard: for large files whose readers never recurse into them.
    """
    if len(data) > max_bytes:
        raise JsonLimitError(f"larger than the {max_bytes} bytes allowed ({len(data)} bytes)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonLimitError(f"not valid UTF-8 (byte offset {exc.start}: {exc.reason})") from None
    if max_depth is not None and _depth(data) > max_depth:
        raise JsonLimitError(f"nested deeper than the {max_depth} levels allowed")
    try:
        # A leading byte-order mark is tolerated, as json.loads does for bytes.
        return _DECODER.decode(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        raise JsonLimitError(f"not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except RecursionError:
        raise JsonLimitError("nested deeper than json's recursion limit allows") from None
    except ValueError as exc:  # NaN, an integer too long to convert
        raise JsonLimitError(f"not valid JSON ({exc})") from None


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "special file")


def _refused(mode: int) -> JsonReadError | None:
    return None if stat.S_ISREG(mode) else JsonReadError(f"not a regular file ({_kind(mode)})")


def open_regular(path: Path, *, max_bytes: int, follow_symlinks: bool = True) -> BinaryIO:
    """A binary stream of a regular file of at most ``max_bytes`` (checked on the opened file).

    A FIFO, socket, device or directory is refused from ``stat`` alone, before any open, so
    opening never blocks; what was opened is checked again in case the path was swapped. With
    ``follow_symlinks=False`` a symbolic link is refused too (O_NOFOLLOW): files of a run
    folder are never links, so one there points somewhere the reader must not go.
    """
    try:
        mode = (os.stat if follow_symlinks else os.lstat)(path).st_mode
        if stat.S_ISLNK(mode):
            raise JsonReadError("is a symbolic link, not followed")
        if (refused := _refused(mode)) is not None:
            raise refused
        fd = os.open(path, _OPEN_FLAGS | (0 if follow_symlinks else _NOFOLLOW))
    except FileNotFoundError:
        reason = "broken symbolic link" if os.path.islink(path) else "no such file"
        raise JsonReadError(f"cannot be read ({reason})") from None
    except OSError as exc:
        raise JsonReadError(f"cannot be read ({exc.strerror or exc})") from None
    stream = os.fdopen(fd, "rb")
    info = os.fstat(fd)
    if (refused := _refused(info.st_mode)) is not None or info.st_size > max_bytes:
        stream.close()
        raise refused or JsonLimitError(f"larger than the {max_bytes} bytes allowed ({info.st_size} bytes)")
    return stream


def read_regular_file(path: Path, *, max_bytes: int, follow_symlinks: bool = True) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; anything else is a :class:`JsonReadError`
    (see :func:`open_regular`); a file that grows while read is cut at the bound and refused."""
    with open_regular(path, max_bytes=max_bytes, follow_symlinks=follow_symlinks) as stream:
        try:
            size = os.fstat(stream.fileno()).st_size
            data = stream.read(size + 1)
            if len(data) > size:  # it grew since fstat: read on, still bounded
                data += stream.read(max(0, max_bytes + 1 - len(data)))
        except OSError as exc:
            raise JsonReadError(f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > max_bytes:
        raise JsonLimitError(f"larger than the {max_bytes} bytes allowed (grew while being read)")
    return data


def read_json_file(
    path: Path, *, max_bytes: int, max_depth: int = DEFAULT_MAX_DEPTH, follow_symlinks: bool = True
) -> Any:
    """Parse a regular JSON file with the limits of :func:`loads_bounded`."""
    data = read_regular_file(path, max_bytes=max_bytes, follow_symlinks=follow_symlinks)
    return loads_bounded(data, max_bytes=max_bytes, max_depth=max_depth)
