"""Bounded JSON: every bad input is one error type with a readable reason, and nothing hangs."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from gaia2_testing import examples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_gaia2.store import safejson
from pytest_gaia2.store.safejson import (
    JsonLimitError,
    JsonReadError,
    loads_bounded,
    read_json_file,
)

LIMIT = 1 << 20


def _refused(data: bytes, *, max_bytes: int = LIMIT, max_depth: int = 200) -> str:
    with pytest.raises(JsonLimitError) as info:
        loads_bounded(data, max_bytes=max_bytes, max_depth=max_depth)
    return str(info.value)


def test_valid_json_parses() -> None:
    assert loads_bounded(b'{"a": [1, 2.5, "x", null, true]}', max_bytes=100) == {"a": [1, 2.5, "x", None, True]}
    assert loads_bounded('\ufeff{"é": "ü"}'.encode(), max_bytes=100) == {"é": "ü"}  # a BOM, as json.loads(bytes)


def test_errors_are_value_errors_of_one_hierarchy() -> None:
    assert issubclass(JsonLimitError, JsonReadError) and issubclass(JsonReadError, ValueError)


def test_200000_deep_nesting_is_refused_before_parsing() -> None:
    started = time.monotonic()
    assert _refused(b"[" * 200_000) == "nested deeper than the 200 levels allowed"
    assert _refused(b"[" * 200_000 + b"]" * 200_000) == "nested deeper than the 200 levels allowed"
    assert _refused(b'{"a":' * 200_000) == "nested deeper than the 200 levels allowed"
    assert time.monotonic() - started < 5


def test_depth_limit_is_exact() -> None:
    assert loads_bounded(b"[" * 200 + b"]" * 200, max_bytes=LIMIT) is not None
    assert "nested deeper" in _refused(b"[" * 201 + b"]" * 201)


def test_brackets_inside_strings_do_not_count() -> None:
    assert loads_bounded(b'["' + b"[{" * 1000 + b'"]', max_bytes=LIMIT) == ["[{" * 1000]
    # An escaped quote does not end the string; an escaped backslash before a quote does.
    assert loads_bounded(b'["\\"' + b"[" * 1000 + b'"]', max_bytes=LIMIT) == ['"' + "[" * 1000]
    assert "nested deeper" in _refused(b'["\\\\", ' + b"[" * 300)


def test_no_recursion_error_escapes_even_with_a_huge_depth_limit() -> None:
    message = _refused(b"[" * 200_000 + b"]" * 200_000, max_depth=10**9)
    assert message == "nested deeper than json's recursion limit allows"


def test_size_limit() -> None:
    assert _refused(b"[" + b"1," * 60 + b"1]", max_bytes=100) == "larger than the 100 bytes allowed (123 bytes)"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_not_json(constant: str) -> None:
    assert _refused(f'{{"duration": {constant}}}'.encode()) == f"not valid JSON ({constant} is not a JSON number)"


def test_invalid_utf8_names_the_byte_offset() -> None:
    assert _refused(b'{"a": "\xff"}') == "not valid UTF-8 (byte offset 7: invalid start byte)"
    assert _refused('{"é": 1}'.encode("latin-1")).startswith("not valid UTF-8 (byte offset 2:")


def test_syntax_errors_name_line_and_column() -> None:
    assert _refused(b'{"a": 1,\n "b" 2}') == "not valid JSON (line 2, column 6: Expecting ':' delimiter)"
    assert _refused(b"") == "not valid JSON (line 1, column 1: Expecting value)"
    assert _refused(b'{"a": 1} x') == "not valid JSON (line 1, column 10: Extra data)"


@pytest.mark.skipif(not hasattr(sys, "get_int_max_str_digits"), reason="no integer digit limit before 3.10.7")
def test_integer_beyond_the_digit_limit_is_the_same_error() -> None:
    assert _refused(b"1" * 5000).startswith("not valid JSON (")


def test_read_json_file(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_bytes(b'{"a": 1}')
    assert read_json_file(tmp_path / "a.json", max_bytes=100) == {"a": 1}
    (tmp_path / "link.json").symlink_to(tmp_path / "a.json")
    assert read_json_file(tmp_path / "link.json", max_bytes=100) == {"a": 1}


def _read_refused(path: Path, max_bytes: int = LIMIT) -> JsonReadError:
    with pytest.raises(JsonReadError) as info:
        read_json_file(path, max_bytes=max_bytes)
    return info.value


@pytest.mark.timeout(20)
def test_fifo_is_never_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    opened: list[object] = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *args, **kwargs: opened.append(args) or real_open(*args, **kwargs))
    assert str(_read_refused(fifo)) == "not a regular file (fifo)"
    assert opened == []


def test_special_files_are_named(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    assert str(_read_refused(tmp_path / "dir.json")) == "not a regular file (directory)"
    assert str(_read_refused(Path(os.devnull))) == "not a regular file (character device)"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.json"))
        assert str(_read_refused(tmp_path / "s.json")) == "not a regular file (socket)"


@pytest.mark.timeout(20)
def test_fifo_swapped_in_after_the_stat_is_caught_by_fstat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The open is non-blocking, so a FIFO that replaced the file after the check cannot hang the read."""
    regular = tmp_path / "regular.json"
    regular.write_bytes(b"{}")
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    looks_regular = os.stat(regular)
    with monkeypatch.context() as patch:
        patch.setattr(safejson.os, "stat", lambda path: looks_regular)
        assert str(_read_refused(fifo)) == "not a regular file (fifo)"


def test_missing_and_broken_symlink(tmp_path: Path) -> None:
    assert str(_read_refused(tmp_path / "none.json")) == "cannot be read (no such file)"
    (tmp_path / "broken.json").symlink_to(tmp_path / "gone.json")
    assert str(_read_refused(tmp_path / "broken.json")) == "cannot be read (broken symbolic link)"


def test_permission_error_is_a_read_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.json"
    path.write_bytes(b"{}")

    def denied(*args: object, **kwargs: object) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "open", denied)
    assert str(_read_refused(path)) == "cannot be read (Permission denied)"


def test_too_large_file_is_refused_from_its_size(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 200 + b"{}")
    error = _read_refused(path, max_bytes=100)
    assert isinstance(error, JsonLimitError)
    assert str(error) == "larger than the 100 bytes allowed (202 bytes)"


def test_a_file_that_grows_while_read_is_still_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "growing.json"
    path.write_bytes(b"{}")
    small = os.stat(path)
    path.write_bytes(b" " * 500 + b"{}")
    monkeypatch.setattr(os, "fstat", lambda fd: small)  # the size seen before the file grew
    assert str(_read_refused(path, max_bytes=100)) == "larger than the 100 bytes allowed (grew while being read)"


def test_without_a_pre_scan_jsons_own_recursion_guard_refuses_deep_nesting() -> None:
    with pytest.raises(JsonLimitError, match="recursion limit"):
        loads_bounded(b"[" * 200_000 + b"]" * 200_000, max_bytes=10**7, max_depth=None)
    assert loads_bounded(b"[" * 300 + b"]" * 300, max_bytes=10**7, max_depth=None) is not None


_JSON_TEXT = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                       max_size=3),
                          max_leaves=10).map(lambda value: json.dumps(value).encode())
_NESTED = st.integers(min_value=0, max_value=400).map(lambda depth: b"[" * depth + b"]" * depth)


@settings(max_examples=examples(400), deadline=None)
@given(data=st.binary(max_size=200) | _JSON_TEXT | _NESTED)
def test_any_bytes_parse_or_fail_with_the_one_error(data: bytes) -> None:
    """Whatever the bytes: a value within the bounds, or a JsonLimitError; nothing else escapes."""
    try:
        value = loads_bounded(data, max_bytes=150, max_depth=50)
    except JsonLimitError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert len(data) <= 150 and json.loads(json.dumps(value)) == value


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=300) | _JSON_TEXT, link=st.booleans())
def test_any_file_reads_or_fails_with_the_one_error(tmp_path: Path, data: bytes, link: bool) -> None:
    target = tmp_path / "data.json"
    target.write_bytes(data)
    path = tmp_path / "link.json"
    path.unlink(missing_ok=True)
    path.symlink_to(target)
    if link:  # a link is refused whatever it points at
        with pytest.raises(JsonReadError, match="symbolic link"):
            read_json_file(path, max_bytes=200, follow_symlinks=False)
        return
    try:
        read_json_file(target, max_bytes=200, follow_symlinks=False)
    except JsonReadError as exc:  # JsonLimitError included
        assert "\n" not in str(exc)
    else:
        assert len(data) <= 200
