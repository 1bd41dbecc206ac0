"""Redaction of secret values in text, JSON-able structures and log records, in any encoding
(properties checked with Hypothesis against :mod:`leaks`, which decodes instead of matching),
and control characters kept from the terminal."""

from __future__ import annotations

import base64
import codecs
import gzip
import html.entities
import io
import json
import logging
import re
import subprocess
import unicodedata
from collections.abc import Callable
from typing import Any

import pytest
from gaia2_testing import examples
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st
from leaks import holds

from pytest_gaia2.engine.archive import masked
from pytest_gaia2.store.redact import (
    MASK,
    MAX_NESTING,
    MAX_ZERO_PADDING,
    RedactingFilter,
    Redactor,
    looks_secret,
    mask_userinfo,
    printable,
    secret_values,
)

AGENT_KEY = "sk-ant-api03-AGENTSECRET"
JUDGE_KEY = "sk-oai-JUDGESECRET"


def test_redact_replaces_every_occurrence_of_every_secret() -> None:
    redactor = Redactor([AGENT_KEY, JUDGE_KEY])
    text = f"-e API_KEY={AGENT_KEY} -e GAIA2_JUDGE_API_KEY={JUDGE_KEY} again {AGENT_KEY}"
    assert redactor.redact(text) == f"-e API_KEY={MASK} -e GAIA2_JUDGE_API_KEY={MASK} again {MASK}"


def test_longest_secret_is_masked_whole() -> None:
    redactor = Redactor(["abcdef", "abcdefghij"])
    assert redactor.redact("x abcdefghij y abcdef z") == "x *** y *** z"


def test_values_shorter_than_six_characters_are_not_secrets() -> None:
    redactor = Redactor(["true", "12345", "none"])
    assert redactor.redact("true 12345 none") == "true 12345 none"


def test_regex_metacharacters_are_matched_literally() -> None:
    redactor = Redactor(["a.b*c+d(e]"])
    assert redactor.redact("key a.b*c+d(e] and aXbbbccd(e]") == "key *** and aXbbbccd(e]"


def test_without_secrets_text_is_returned_unchanged() -> None:
    text = "nothing to hide"
    assert Redactor([]).redact(text) is text
    assert Redactor([""]).redact(text) is text


def test_redact_obj_masks_nested_strings_and_keys_without_mutating() -> None:
    redactor = Redactor([AGENT_KEY])
    original = {
        "error": f"docker run -e API_KEY={AGENT_KEY}",
        "nested": [{"cmd": (AGENT_KEY, 3)}, 1.5, None, True],
        AGENT_KEY: "as a key",
    }
    snapshot = json.dumps(original)
    redacted = redactor.redact_obj(original)
    assert redacted == {
        "error": "docker run -e API_KEY=***",
        "nested": [{"cmd": ("***", 3)}, 1.5, None, True],
        "***": "as a key",
    }
    assert json.dumps(original) == snapshot
    assert AGENT_KEY not in json.dumps(redacted)


def test_many_secrets_in_a_large_text() -> None:
    """A run has a handful of secrets; each costs its forms' share of the pattern (docs/explanation/security.md)."""
    secrets = [f"secret-value-{index:05d}" for index in range(200)]
    text = " | ".join(secrets) * 20
    redacted = Redactor(secrets).redact(text)
    assert "secret-value" not in redacted
    assert redacted.count(MASK) == 200 * 20


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("API_KEY", True),
        ("GITHUB_TOKEN", True),
        ("OPENCLAW_HOOKS_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("my_client_secret", True),
        ("HOME", False),
        ("BASE_URL", False),
        ("GAIA2_ORACLE_TURN_DELAY", False),
    ],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_secret_values_takes_values_of_secret_names_only() -> None:
    env = {"OPENAI_API_KEY": " sk-openai-xyz ", "HOME": "/root", "EMPTY_TOKEN": ""}
    assert secret_values(env) == {"sk-openai-xyz"}


def _logger_with_filter(name: str, redactor: Redactor) -> tuple[logging.Logger, io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
    handler.addFilter(RedactingFilter(redactor))
    logger = logging.getLogger(name)
    logger.handlers = [handler]
    logger.propagate = False
    logger.setLevel(logging.DEBUG)
    return logger, stream


def test_log_filter_masks_message_and_args() -> None:
    logger, stream = _logger_with_filter("test_redact.args", Redactor([AGENT_KEY]))

    class Command:
        def __str__(self) -> str:
            return f"docker run -e API_KEY={AGENT_KEY}"

    logger.warning("launch failed: %s (key %r)", Command(), AGENT_KEY)
    logger.info(f"inline {AGENT_KEY}")
    output = stream.getvalue()
    assert AGENT_KEY not in output
    assert "WARNING launch failed: docker run -e API_KEY=*** (key '***')" in output
    assert "INFO inline ***" in output


def test_log_filter_masks_exception_text() -> None:
    logger, stream = _logger_with_filter("test_redact.exc", Redactor([AGENT_KEY]))
    try:
        raise subprocess.CalledProcessError(125, ["docker", "run", "-e", f"API_KEY={AGENT_KEY}"])
    except subprocess.CalledProcessError:
        logger.exception("container start failed")
    output = stream.getvalue()
    assert "CalledProcessError" in output
    assert "API_KEY=***" in output
    assert AGENT_KEY not in output


def test_log_filter_keeps_records_and_survives_bad_format_args() -> None:
    redactor = Redactor([AGENT_KEY])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "%d items", (AGENT_KEY,), None)
    assert RedactingFilter(redactor).filter(record) is True
    assert AGENT_KEY not in record.getMessage()
    assert record.args is None


# -- any encoding (Hypothesis) -------------------------------------------------------------------

SECRET_CHARACTERS = st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp"), blacklist_characters=MASK)
"""Printable unicode, astral planes included; never the mask's own character."""
SECRETS = st.one_of(st.text(SECRET_CHARACTERS, min_size=6, max_size=24),
                    st.text(st.sampled_from("0123456789abcdefnrtu_-"), min_size=6, max_size=16))
"""Any printable text, and keys of hex digits and escape letters (``r8_...``, ``fw_...``)."""
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
TRICKY = st.text(st.sampled_from('\\\\u0073"%&#x;+/=ab7 '), max_size=20)
"""Text made of what escapes are made of: backslashes, quotes, percent and ampersand signs."""
FRAGMENTS = st.lists(st.sampled_from(["\\u0080", "\\\\u00e9", "\\r", "\\n", "\\\\", "\\", '\\"', "\\u00", "u",
                                      "%e9", "&#x", "0"]), max_size=6).map("".join)
"""Escapes and pieces of escapes a secret may follow."""
AROUND = st.one_of(TEXT, TRICKY, FRAGMENTS)
PROPERTIES = settings(max_examples=examples(150), deadline=None)
_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _nested(escape: str, level: int) -> str:
    """A JSON escape as it reads ``level`` JSON strings deep (a string inside a string doubles it)."""
    for _ in range(level - 1):
        escape = json.dumps(escape)[1:-1]
    return escape


def _character_forms(char: str) -> list[str]:
    """Every way a host output may write one character, written here as the encoders write them."""
    data = char.encode("utf-16-be")
    units = [data[i:i + 2].hex() for i in range(0, len(data), 2)]
    forms = [char, "".join(f"%{byte:02X}" for byte in char.encode()), "".join(f"%{byte:02x}" for byte in char.encode()),
             f"&#{ord(char)};", f"&#{'0' * MAX_ZERO_PADDING}{ord(char)};", f"&#x{ord(char):x};", f"&#X{ord(char):X};"]
    forms += [f"&{name}" for name, value in html.entities.html5.items() if value == char and name.endswith(";")]
    for level in range(1, MAX_NESTING + 1):
        forms += [_nested("".join(f"\\u{unit}" for unit in units), level),
                  _nested("".join(f"\\u{unit.upper()}" for unit in units), level)]
        if char in _SHORT:
            forms.append(_nested(_SHORT[char], level))
    if char == " ":
        forms.append("+")
    return forms


@st.composite
def encoded_secrets(draw: st.DrawFn) -> tuple[str, str]:
    """A secret and the secret written with a form drawn for each of its characters."""
    secret = draw(SECRETS)
    return secret, "".join(draw(st.sampled_from(_character_forms(char))) for char in secret)


@PROPERTIES
@given(encoded_secrets(), AROUND, AROUND)
def test_a_secret_in_any_mix_of_encodings_is_masked(encoded: tuple[str, str], before: str, after: str) -> None:
    secret, form = encoded
    assume(not holds(before, secret) and not holds(after, secret))
    redacted = Redactor([secret]).redact(before + form + after)
    assert MASK in redacted and not holds(redacted, secret)
    assert Redactor([secret]).redact_bytes((before + form + after).encode()) == redacted.encode()


@PROPERTIES
@given(st.text(SECRET_CHARACTERS, min_size=10, max_size=24), st.binary(max_size=8), st.binary(max_size=8),
       st.booleans(), AROUND, AROUND)
def test_a_secret_in_base64_at_any_alignment_is_masked(secret: str, head: bytes, tail: bytes, url_safe: bool,
                                                        before: str, after: str) -> None:
    """Ten bytes and more (shorter ones leave too few whole base64 groups at some alignment)."""
    assume(len(secret.encode()) >= 10 and not holds(before, secret) and not holds(after, secret))
    encode = base64.urlsafe_b64encode if url_safe else base64.b64encode
    redacted = Redactor([secret]).redact(before + encode(head + secret.encode() + tail).decode() + after)
    assert MASK in redacted and not holds(redacted, secret)


def _wrapped(text: str, width: int, newline: str = "\n") -> str:
    return newline.join(text[i:i + width] for i in range(0, len(text), width))


FORMS: dict[str, Callable[[str, bytes], bytes]] = {
    "hex": lambda key, data: data.hex().encode(),
    "HEX": lambda key, data: data.hex().upper().encode(),
    "hex bytes": lambda key, data: " ".join(f"{byte:02X}" for byte in data).encode(),
    "hex colons": lambda key, data: ":".join(f"{byte:02x}" for byte in data).encode(),
    "base32": lambda key, data: base64.b32encode(data),
    "base32 lower unpadded": lambda key, data: base64.b32encode(data).lower().rstrip(b"="),
    "base64": lambda key, data: base64.b64encode(data),
    "base64 unpadded": lambda key, data: base64.b64encode(data).rstrip(b"="),
    "base64 url-safe": lambda key, data: base64.urlsafe_b64encode(data),
    "base64 wrapped at 76": lambda key, data: base64.encodebytes(data),
    "base64 wrapped at 64, CRLF": lambda key, data: _wrapped(base64.b64encode(data).decode(), 64, "\r\n").encode(),
    "base64 wrapped at 5": lambda key, data: _wrapped(base64.b64encode(data).decode(), 5).encode(),
    "base64 of base64": lambda key, data: base64.b64encode(base64.b64encode(key.encode())),
    "url-safe base64 of base64": lambda key, data: base64.urlsafe_b64encode(base64.b64encode(key.encode())),
    "base85": lambda key, data: base64.b85encode(data),
    "ascii85": lambda key, data: base64.a85encode(data),
    "ascii85 adobe wrapped": lambda key, data: base64.a85encode(data, adobe=True, wrapcol=20),
    "gzip+base64": lambda key, data: base64.b64encode(gzip.compress(data)),
    "gzip+base64 wrapped": lambda key, data: base64.encodebytes(gzip.compress(data)),
    "utf-16-le": lambda key, data: key.encode("utf-16-le"),
    "utf-16-be": lambda key, data: key.encode("utf-16-be"),
    "reversed": lambda key, data: key[::-1].encode(),
    "rot13": lambda key, data: codecs.encode(key, "rot13").encode(),
    "fullwidth": lambda key, data: key.translate({code: code + 0xFEE0 for code in range(0x21, 0x7F)}).encode(),
    "zero-width": lambda key, data: "\u200b".join(key).encode(),
    "soft hyphens": lambda key, data: "\u00ad".join(key).encode(),
    "spaced": lambda key, data: " ".join(key).encode(),
    "dotted twice": lambda key, data: "..".join(key).encode(),
}
"""Every form docs/explanation/security.md promises to mask, as Python's own encoders write it (the encoded
ones of the key inside other bytes: at any alignment)."""
LONG_SECRETS = st.text(SECRET_CHARACTERS, min_size=12, max_size=24).filter(lambda key: len(key.encode()) >= 12)
"""Keys of 12 bytes and more: the encoded forms are promised at every alignment from there."""


@settings(max_examples=examples(120), deadline=None)
@example(form="fullwidth", secret="000 \U00010000\U00010000", head=b"", tail=b"", before="", after="",
         in_json=False)  # a space left as it is between fullwidth letters
@given(st.sampled_from(sorted(FORMS)), st.one_of(LONG_SECRETS, SECRETS.filter(lambda key: len(key.encode()) >= 12)),
       st.binary(max_size=7), st.binary(max_size=7), AROUND, AROUND, st.booleans())
def test_a_secret_in_every_listed_form_is_masked(form: str, secret: str, head: bytes, tail: bytes, before: str,
                                                 after: str, in_json: bool) -> None:
    """Raw and inside a JSON string (as the store writes records), the key is gone in every form,
    decoded (leaks.holds undoes each form) and raw, and a JSON document still parses."""
    assume(not holds(before, secret) and not holds(after, secret))
    whole = before.encode() + FORMS[form](secret, head + secret.encode() + tail) + after.encode()
    if in_json:
        try:
            whole = json.dumps(whole.decode(), ensure_ascii=False)[1:-1].encode()
        except UnicodeDecodeError:
            assume(False)  # UTF-16 of a key that is not ASCII is no text a JSON writer is given
    redacted = Redactor([secret]).redact_bytes(whole)
    assert MASK.encode() in redacted and not holds(redacted, secret), redacted
    if in_json:
        json.loads(b'"' + redacted + b'"')
    try:
        text = whole.decode()
    except UnicodeDecodeError:
        return
    assert Redactor([secret]).redact(text).encode() == redacted


@pytest.mark.parametrize("wrap", [lambda text: text, json.dumps])
def test_a_gzip_blob_is_masked_to_its_end_only(wrap: Callable[[str], str]) -> None:
    """A wrapped blob's mask ends where its gzip stream does, not at the next line's letters."""
    key = "sk-canary-0f3a9c1b2d4e5f60718293a4"
    blob = base64.encodebytes(gzip.compress(f"log: {key}\n".encode() * 9)).decode()
    redacted = Redactor([key]).redact(wrap(f"before {blob}hostile next line"))
    assert not holds(redacted, key) and MASK in redacted
    assert redacted.startswith(wrap("before ")[:-1]) and "hostile next line" in redacted


def test_blobs_without_the_key_are_kept_and_looked_into_once() -> None:
    """A bomb inflates to its first 4 KiB only; a text of magics is read past each blob."""
    key = "sk-canary-0f3a9c1b2d4e5f60718293a4"
    bomb = base64.b64encode(gzip.compress(b"\0" * 1_000_000)).decode()
    text = " ".join([bomb] * 20 + ["H4sI" * 500] + [base64.b64encode(gzip.compress(b"no key here")).decode()])
    assert Redactor([key]).redact(text) == text
    assert Redactor([key]).redact_bytes(text.encode()) == text.encode()


def _strings(value: Any) -> list[str]:
    """Every string of a parsed JSON value, keys included, and of the JSON documents they hold."""
    if isinstance(value, dict):
        return [text for key, item in value.items() for text in _strings(key) + _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, str):
        try:
            return [value, *_strings(json.loads(value))]
        except ValueError:
            return [value]
    return []


@PROPERTIES
@given(SECRETS, AROUND, AROUND, st.booleans(), st.booleans())
@example(secret="\xa000000", before="\\" * 8, after="", ascii_inner=True, ascii_outer=False)  # \u00a0 after a long run of backslashes, a string deep
def test_a_secret_in_json_is_masked_and_the_document_still_parses(
    secret: str, before: str, after: str, ascii_inner: bool, ascii_outer: bool
) -> None:
    """As json.dumps writes it, also inside a JSON document that a JSON string holds (a trace's
    raw_response), with ``\\uXXXX`` (ensure_ascii) or without."""
    assume(not holds(before, secret) and not holds(after, secret))
    inner = json.dumps({"model": secret, "text": before + secret + after}, ensure_ascii=ascii_inner)
    document = json.dumps({secret: [before + secret, inner], "after": after + secret}, ensure_ascii=ascii_outer)
    redacted = Redactor([secret]).redact(document)
    strings = _strings(json.loads(redacted))
    assert not any(secret in text for text in strings) and not holds(redacted, secret)
    assert json.loads(json.loads(redacted)[MASK][1])["model"] == MASK


@PROPERTIES
@given(SECRETS, AROUND)
def test_text_without_the_secret_in_any_form_is_unchanged(secret: str, text: str) -> None:
    assume(not holds(text, secret))
    assert Redactor([secret]).redact(text) == text
    assert Redactor([secret]).redact_bytes(text.encode()) == text.encode()


WIDE_SECRETS = st.text(st.characters(min_codepoint=0x80, blacklist_categories=("Cs",)), min_size=6, max_size=12)
"""Keys of characters of two to four bytes, most with a UTF-16 that is no UTF-8 (a form matched in final bytes only)."""


@st.composite
def keys_and_text(draw: st.DrawFn) -> tuple[list[str], str]:
    """Keys, and a text of their forms and pieces of forms, any characters and lone surrogates
    (a JSON ``\\udc80`` read back, bytes decoded with ``surrogateescape``)."""
    keys = draw(st.lists(st.one_of(SECRETS, WIDE_SECRETS), min_size=1, max_size=2))
    pieces = st.one_of(encoded_secrets().map(lambda pair: pair[1]), AROUND, st.text(max_size=40), st.sampled_from(keys),
                       st.sampled_from(keys).map(lambda key: key.encode("utf-16-le").decode("utf-8", "surrogateescape")),
                       st.binary(max_size=24).map(lambda data: data.decode("utf-8", "surrogateescape")))
    return keys, "".join(draw(st.lists(pieces, max_size=6)))


@settings(max_examples=examples(40), deadline=None)  # each example compiles two patterns of up to two keys
@given(keys_and_text())
@example(case=(["\u4180\u4342\u4544\u4746\u4948\u4b4a"], "\x80ABCDEFGHIJK"))  # its UTF-16 inside the UTF-8 of \x80
@example(case=(["\u4180\u4342\u4544\u4746\u4948\u4b4a"], "\udc80ABCDEFGHIJK"))  # and as surrogateescape'd text
def test_text_is_masked_as_its_text_pattern_masks_it(case: tuple[list[str], str]) -> None:
    """:meth:`Redactor.redact` masks text as UTF-8 bytes where that gives what the text pattern
    gives: the same spans in any text, for keys with and without forms in final bytes only."""
    keys, text = case
    redactor = Redactor(keys)
    assert redactor.redact(text) == redactor._as_text(text)


def _masked_with_the_whole_pattern(redactor: Redactor, data: bytes) -> bytes:
    """``data`` masked as before the short pattern: with the whole one, whatever ``data`` holds."""
    whole = Redactor(redactor.values)
    whole._bytes_pattern_for = lambda data: re.compile(whole._sources.whole)
    return whole.redact_bytes(data)


@st.composite
def keys_and_forms(draw: st.DrawFn) -> tuple[list[str], bytes]:
    """Keys, and bytes of their listed forms (:data:`FORMS`), whole and in pieces, among other
    bytes and the keys' text forms; inside a JSON string or not."""
    keys = draw(st.lists(st.one_of(LONG_SECRETS, SECRETS, WIDE_SECRETS), min_size=1, max_size=2))
    key = st.sampled_from(keys)
    form = st.tuples(st.sampled_from(sorted(FORMS)), key, st.binary(max_size=7), st.binary(max_size=7)).map(
        lambda case: FORMS[case[0]](case[1], case[2] + case[1].encode() + case[3]))
    piece = st.tuples(form, st.integers(0, 40), st.integers(0, 40)).map(lambda case: case[0][case[1]:-case[2] or None])
    pieces = draw(st.lists(st.one_of(form, piece, AROUND.map(str.encode), st.binary(max_size=24),
                                     encoded_secrets().map(lambda pair: pair[1].encode())), max_size=6))
    data = b"".join(pieces)
    if draw(st.booleans()):
        data = json.dumps(data.decode("utf-8", "replace")).encode()
    return keys, data


@settings(max_examples=examples(50), deadline=None)  # each example compiles both bytes patterns of up to two keys
@given(keys_and_forms())
@example(case=(["sk-canary-0f3a9c1b2d4e5f60718293a4"], base64.encodebytes(b"sk-canary-0f3a9c1b2d4e5f60718293a4")))
@example(case=(["sk-canary-0f3a9c1b2d4e5f60718293a4"], json.dumps(FORMS["base64 wrapped at 5"](
    "", b"sk-canary-0f3a9c1b2d4e5f60718293a4").decode()).encode()))
@example(case=(["sk-canary-0f3a9c1b2d4e5f60718293a4"], b"73 6B 2D 63 61 6E:61:72:79-2d.30 66 33 61"))
@example(case=(["sk-canary-0f3a9c1b2d4e5f60718293a4"], json.dumps("sk-canary-0f3a9c1b2d4e5f60718293a4".encode(
    "utf-16-le").decode()).encode()))  # UTF-16 with \u0000 between its letters
@example(case=(["sk-canary-0f3a9c1b2d4e5f60718293a4"], "".join(  # and its zero bytes in every encoding
    letter + ["%00", "&#0;", "&#x00;", "\\u0000", "\0", "&#X0;", "\\\\u0000"][index % 7]
    for index, letter in enumerate("sk-canary-0f3a9c1b2d4e5f60718293a4")).encode()))
def test_bytes_are_masked_as_the_whole_pattern_masks_them(case: tuple[list[str], bytes]) -> None:
    """Bytes without a literal of an encoded form (:func:`redact._literal`) are masked with a
    short pattern without those forms: exactly as the whole pattern masks them, wherever the
    forms stand whole or in pieces, wrapped, in JSON."""
    keys, data = case
    redactor = Redactor(keys)
    assert redactor.redact_bytes(data) == _masked_with_the_whole_pattern(redactor, data)


def _streamed(redactor: Redactor, whole: bytes, cuts: list[int]) -> bytes:
    bounds = sorted({min(cut, len(whole)) for cut in cuts} | {0, len(whole)})
    chunks = [whole[start:end] for start, end in zip(bounds, bounds[1:], strict=False)]
    return b"".join(masked(chunks, redactor))


def _backslashes(most: int) -> st.SearchStrategy[str]:
    return st.integers(1, most).map(lambda n: "\\" * n)


@settings(max_examples=examples(15), deadline=None)  # each example checks every cut: 60 took over a minute
@given(st.lists(st.one_of(encoded_secrets().map(lambda pair: pair[1]), AROUND, _backslashes(40),
                          st.tuples(_backslashes(40), encoded_secrets()).map(lambda pair: pair[0] + pair[1][1])),
                max_size=6), st.data())
def test_a_stream_cut_at_any_point_is_masked_as_a_whole(pieces: list[str], data: st.DataObject) -> None:
    """archive.masked carries a window's end unmasked into the next: wherever one cut falls
    (inside a run of backslashes before a secret, inside an escape), the bytes are those of
    masking the file whole."""
    redactor = Redactor([data.draw(SECRETS), "sk-canary-0123456789"])
    whole = "".join(pieces).encode()
    whole += b"." * redactor.longest  # a window keeps that much back: so the cuts fall everywhere in the pieces
    expected = redactor.redact_bytes(whole)
    for cut in range(redactor.longest, len(whole)):  # a first chunk shorter than that is carried whole
        assert _streamed(redactor, whole, [cut]) == expected, cut


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.one_of(encoded_secrets().map(lambda pair: pair[1]), AROUND, _backslashes(1500),
                          st.tuples(_backslashes(1500), encoded_secrets()).map(lambda pair: pair[0] + pair[1][1])),
                max_size=8), st.lists(st.integers(0, 6000), max_size=16), st.data())
def test_a_stream_in_any_chunks_is_masked_as_a_whole(pieces: list[str], cuts: list[int], data: st.DataObject) -> None:
    """Many chunks, and runs of backslashes longer than a match (cut between their pairs)."""
    redactor = Redactor([data.draw(SECRETS), "sk-canary-0123456789"])
    whole = "".join(pieces).encode()
    assert _streamed(redactor, whole, cuts) == redactor.redact_bytes(whole)


def test_a_stream_of_backslashes_moves_on_in_bounded_windows() -> None:
    """A file of backslashes is not held whole to find where a run ends."""
    redactor = Redactor(["sk-canary-0123456789"])
    windows = list(masked((b"\\" * 4096 for _ in range(64)), redactor))
    assert b"".join(windows) == b"\\" * 4096 * 64
    assert max(map(len, windows)) <= 4096 + 2 * redactor.longest + 2 * 2**MAX_NESTING  # a short run goes whole


@pytest.mark.parametrize(("secret", "text", "masked_text"), [
    # A mask never starts inside an escape: it takes the escape's start too (\u0080 then the
    # key as JSON, the key from the fourth digit as text: both readings lose it, JSON stays valid).
    ("000000", '"\\u0080000000"', '"***0"'),
    ("000000", '"\\\\u0080000000"', '"***0"'),  # the same one JSON string deeper
    ("000000", '"\\u0080x000000"', '"\\u0080x***"'),
    ("0080abcdef", '"\\u0080abcdef"', '"***"'),  # é then abcdef as JSON, the key as text
    # A key starting with an escape's letter: the escape goes with it (valid JSON, no key as text).
    ("r8_abcdef", '"\\r8_abcdef"', '"***"'),
    ("r8_abcdef", '"\\\\r8_abcdef"', '"***"'),
    ("0080abcdef", '"\\\\u0080abcdef"', '"***"'),
    # A key ending with a backslash: its JSON escape (a pair), not the first half of one.
    ("abcdef\\", '{"k": "abcdef\\\\", "n": "\\\\"}', '{"k": "***", "n": "\\\\"}'),
    # Plain text: a backslash before a key hides nothing.
    ("sk-canary-0123", "C:\\sk-canary-0123 \\\\sk-canary-0123", "C:*** ***"),
    # Escaped backslashes, however many, before the key's first character as an escape: stepped
    # over in blocks of 16 (whole escaped backslashes at every nesting level); the mask takes the rest.
    ("sk-canary-0123", "\\" * 41 + "u0073k-canary-0123", "\\" * 16 + "***"),
    ("sk-canary-0123", "\\" * 42 + "u0073k-canary-0123", "\\" * 16 + "***"),  # one string deeper
])
def test_escapes_and_secrets_around_them(secret: str, text: str, masked_text: str) -> None:
    redacted = Redactor([secret]).redact(text)
    assert redacted == masked_text
    if text.startswith('"'):
        json.loads(redacted)
        if "\\\\u" in text:
            json.loads('"' + json.loads(redacted) + '"')


@pytest.mark.parametrize("before", ["", "x", "\\", "\\\\", "\\\\\\"])
def test_escaped_backslashes_before_a_secret_keep_the_json_string_whole(before: str) -> None:
    """A mask never lands right after a lone backslash (``\\***`` would escape the mask, or the
    closing quote): the backslashes before the secret are kept as whole pairs or taken with it."""
    secret = "sk-canary-0123456789"
    for written in (secret, json.dumps(secret, ensure_ascii=False)[1:-1],
                    "".join(f"\\u{ord(char):04x}" for char in secret)):
        document = '{"a": "' + before.replace("\\", "\\\\") + written + '", "b": "\\\\"}'
        redacted = Redactor([secret]).redact(document)
        parsed = json.loads(redacted)
        assert parsed["b"] == "\\" and parsed["a"].endswith(MASK) and not holds(redacted, secret)


def test_escaped_backslashes_before_other_escapes_are_not_a_secret() -> None:
    """``\\\\u0073`` (an escaped backslash and the text ``u0073``) is the secret's first
    character one JSON string deeper; followed by anything but the rest of the secret it is text."""
    redactor = Redactor(["sk-canary-0123456789"])
    for text in ('"\\\\u0073\\\\u006b-canary-012345678"', '"\\\\\\\\u0073k-canary-x"', '"\\\\u0073"',
                 '"\\\\sk-canary-012345678"'):
        assert redactor.redact(text) == text


def test_the_secret_one_json_string_deeper_is_masked() -> None:
    """A trace line's raw_response is a JSON string holding JSON: a model name written as
    ``\\u0073...`` there is ``\\\\u0073...`` in the file, and two parses give the key."""
    secret = "sk-canary-0123456789"
    escaped = "".join(f"\\u{ord(char):04x}" for char in secret)
    line = json.dumps({"request": {"model": secret}, "raw_response": '{"model": "' + escaped + '"}'})
    redacted = Redactor([secret]).redact(line)
    assert json.loads(json.loads(redacted)["raw_response"]) == {"model": MASK}


# -- the terminal -------------------------------------------------------------------------------

def _forbidden(char: str) -> bool:
    """What a terminal or an XML file must never get from a container (a lone surrogate included:
    no UTF-8 terminal or file can take it)."""
    code = ord(char)
    return ((code < 0x20 and char not in "\n\t") or 0x7F <= code <= 0x9F or char in "\u2028\u2029"
            or 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069 or 0xD800 <= code <= 0xDFFF)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(st.one_of(st.characters(max_codepoint=0xA0), st.sampled_from("\u2028\u2029\u202a\u202e\u2066\u2069"),
                         st.characters())))
def test_printable_leaves_no_control_character(text: str) -> None:
    shown = printable(text)
    assert not any(_forbidden(char) for char in shown)
    if not any(_forbidden(char) for char in text):
        assert shown == text
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")


def test_printable_shows_escape_sequences_as_text() -> None:
    assert printable("\x1b]0;title\x07\x1b[2J\x9b31m\u202eab\n") == "\\x1b]0;title\\x07\\x1b[2J\\x9b31m\\u202eab\n"
    assert unicodedata.category(printable("\x00")[0]) != "Cc"


@pytest.mark.parametrize(("text", "shown"), [
    ("tcp://user:pw@host:2376", "tcp://user:***@host:2376"),
    ("cannot reach ssh://deploy:s3cr3t!@build.example/ (refused)", "cannot reach ssh://deploy:***@build.example/ (refused)"),
    ("HTTPS://a:b@c and http://x:y@z", "HTTPS://a:***@c and http://x:***@z"),
    ("http://user@host and unix:///var/run/docker.sock", "http://user@host and unix:///var/run/docker.sock"),
    ("a time 10:30@noon", "a time 10:30@noon"),
])
def test_mask_userinfo(text: str, shown: str) -> None:
    assert mask_userinfo(text) == shown


@settings(max_examples=examples(100), deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9+.-]{0,8}", fullmatch=True), st.text(st.characters(
    blacklist_characters="/@:", blacklist_categories=("Cs", "Zs", "Cc")), max_size=12),
    st.text(st.characters(blacklist_characters="/@", blacklist_categories=("Cs", "Zs", "Cc")), min_size=1, max_size=20))
def test_mask_userinfo_hides_any_password(scheme: str, user: str, password: str) -> None:
    assume(not any(char.isspace() for char in user + password))
    shown = mask_userinfo(f"engine at {scheme}://{user}:{password}@host.example:2376 refused")
    assert shown == f"engine at {scheme}://{user}:{MASK}@host.example:2376 refused"
