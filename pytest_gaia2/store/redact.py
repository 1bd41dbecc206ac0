"""Keeping secret values (API keys, tokens) out of everything a run writes, logs or prints.

The plugin builds one :class:`Redactor` per run from the values it resolved and installs it
(:func:`installed`) for the run: the store's writers mask the final bytes of every file with
every installed redactor (:func:`active`), so no run file can be written unmasked. A secret is
matched raw and in any mix of the per-character encodings a host output can carry (JSON
``\\uXXXX`` and short escapes, also inside a JSON string inside a JSON string, a trace's
``raw_response``; URL ``%XX`` and ``+``; HTML character references), and as base64; the mask
``***`` is valid wherever the match was (inside a JSON string, a URL, HTML).

:func:`printable` is the other half: nothing from a container reaches a terminal (or a JUnit
XML file) with its control characters, so no escape sequence sets a title, the clipboard or
clears the screen.
"""

from __future__ import annotations

import base64
import contextlib
import html.entities
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``, ``none``) would mask ordinary text everywhere."""
MAX_ZERO_PADDING = 16
"""Leading zeros an HTML character reference (``&#x0073;``) may carry and still be recognised:
bounded, so a streamed file's windows need overlap by a known number of bytes only."""
MIN_BASE64 = 8
"""Base64 cores shorter than this are not masked (too likely in unrelated text)."""
MAX_NESTING = 4
"""JSON strings inside JSON strings a JSON escape is recognised through: each level doubles the
backslashes before it (a trace's ``raw_response`` holds ``\\\\u0073`` for ``\\u0073``)."""
_MAX_BACKSLASHES = 2**MAX_NESTING
"""The most backslashes an escape's form starts with (a backslash itself, ``MAX_NESTING`` deep)."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_JSON_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
"""Each character with a short JSON escape -> the letter after the backslash(es)."""
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^/@\s:]*):[^/@\s]*@")


def looks_secret(name: str) -> bool:
    """Whether a variable NAME suggests its value is a secret (``*_API_KEY``, ``*_TOKEN``, ...)."""
    return bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str]) -> set[str]:
    """The values of every variable in ``env`` whose name looks secret."""
    return {value.strip() for name, value in env.items() if value and looks_secret(name)}


def mask_userinfo(text: str) -> str:
    """``text`` with the password of every ``scheme://user:password@`` masked (engine URLs in messages)."""
    return _USERINFO.sub(rf"\1:{MASK}@", text)


# -- the encodings of one character ------------------------------------------------------------


def _any_case(hex_digits: str) -> str:
    """A regex for ``hex_digits`` with each letter in either case."""
    return "".join(f"[{d.lower()}{d.upper()}]" if d.isalpha() else d for d in hex_digits)


@lru_cache(maxsize=1)
def _named_references() -> dict[str, tuple[str, ...]]:
    """Each character -> the HTML5 named references that decode to exactly it (``&amp;``, ``&lowbar;``)."""
    names: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if len(value) == 1:
            names.setdefault(value, []).append(name)
    return {char: tuple(sorted(found, key=len, reverse=True)) for char, found in names.items()}


def _json_escapes(char: str) -> list[tuple[str, int]]:
    """The JSON escapes of ``char`` at every nesting level up to ``MAX_NESTING`` (a level doubles
    the backslashes before it). Each takes only as many backslashes as leave the escape inside
    its string, so the mask never stands where a string's closing quote was."""
    units = char.encode("utf-16-be")
    some = f"\\\\{{1,{_MAX_BACKSLASHES - 1}}}"  # one .. 15: an escape, after escaped backslashes or not
    forms = [
        (
            "".join(some + "u" + _any_case(units[i : i + 2].hex()) for i in range(0, len(units), 2)),
            (_MAX_BACKSLASHES + 4) * len(units),
        )
    ]
    if char == '"':  # an odd number: an even one before a quote ends the string
        forms.append((f'\\\\(?:\\\\\\\\){{0,{_MAX_BACKSLASHES // 2 - 1}}}"', _MAX_BACKSLASHES))
    elif char == "\\":  # pairs only
        forms.append((f"\\\\\\\\(?:\\\\\\\\){{0,{_MAX_BACKSLASHES // 2 - 1}}}", _MAX_BACKSLASHES))
    elif char in _JSON_SHORT:
        forms.append((some + re.escape(_JSON_SHORT[char]), _MAX_BACKSLASHES))
    return forms


@lru_cache(maxsize=4096)
def _char_forms(char: str) -> tuple[tuple[str, int], ...]:
    """Every way one character may be written in a host output: (regex, most bytes it matches)."""
    code = ord(char)
    utf8 = char.encode("utf-8")
    forms = [
        *_json_escapes(char),  # before the raw form: a final backslash is taken with its pair
        (re.escape(char), len(utf8)),
        ("".join("%" + _any_case(f"{byte:02x}") for byte in utf8), 3 * len(utf8)),
        (f"&#0{{0,{MAX_ZERO_PADDING}}}{code}(?:;|(?![0-9]))", 3 + MAX_ZERO_PADDING + len(str(code))),
        (
            f"&#[xX]0{{0,{MAX_ZERO_PADDING}}}{_any_case(f'{code:x}')}(?:;|(?![0-9a-fA-F]))",
            4 + MAX_ZERO_PADDING + len(f"{code:x}"),
        ),
    ]
    if char == " ":
        forms.append((r"\+", 1))
    forms += [(re.escape(f"&{name}"), len(name) + 1) for name in _named_references().get(char, ())]
    return tuple(forms)


def _base64_cores(secret: bytes) -> set[str]:
    """The base64 characters that encode ``secret`` whatever its alignment in a longer text,
    in the standard and the URL-safe alphabets."""
    cores = set()
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + secret).decode("ascii")
        core = encoded[-(-4 * offset // 3) : len(encoded) - 4]  # drop the padding's and the partial group's
        if len(core) >= MIN_BASE64:
            cores |= {core, core.translate(str.maketrans("+/", "-_"))}
    return cores


def _encoded_char(char: str) -> str:
    """A regex for ``char`` in any of its encodings."""
    return "(?:" + "|".join(form for form, _ in _char_forms(char)) + ")"


def _longest(secret: str) -> int:
    """The most bytes a match of ``secret`` can span (the escaped backslashes before it included)."""
    return _MAX_BACKSLASHES + 4 + sum(max(size for _, size in _char_forms(char)) for char in secret)


def _trie(words: Iterable[str], unit: Callable[[str], str]) -> str:
    """One regex for all ``words`` (each character by ``unit``), their common starts shared, so
    a position of the text costs one try per distinct next character however many secrets
    there are. Where a word ends and a longer one goes on, the longer is tried first: a secret
    that starts another never masks it in pieces."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branches(root, unit)


def _branches(node: dict[str, Any], unit: Callable[[str], str]) -> str:
    branches = []
    for char in sorted(key for key in node if key):
        parts, child = [unit(char)], node[char]
        while len(child) == 1 and "" not in child:  # a chain: no group, no recursion
            ((char, child),) = child.items()
            parts.append(unit(char))
        if child != {"": {}}:
            parts.append(_branches(child, unit))
        branches.append("".join(parts))
    if "" in node:
        branches.append("")
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


# -- the redactor ------------------------------------------------------------------------------

_PAIRS = r"\\\\(?:\\\\)*"
"""Escaped backslashes, all of a run's pairs at once, where no secret starts: a match never
starts on a pair's second backslash. (A literal first: a group's repeat costs an allocation.)"""
_LEADING = f"\\\\{{1,{_MAX_BACKSLASHES}}}(?:u[0-9a-fA-F]{{0,3}}|)|(?<=\\\\)u[0-9a-fA-F]{{0,3}}|"
"""What a match may take before a secret: backslashes, a ``u`` after them and up to three hex
digits. Read as text, ``\\r8_...`` holds a key ``r8_...`` and ``\\u0080...`` a key ``80...``;
read as JSON they start with an escape: the mask takes the escape too, so both readings lose
the key and a JSON string stays valid."""


class Redactor:
    """Replaces every known secret with ``***`` in one regex pass, whatever its encoding.

    A match never starts inside a JSON escape: one that would (a key ``000000`` in the hex
    digits of ``\\u0080000000``, a key ``r8_...`` after the backslash of ``\\r8_...``) takes the
    escape's start with it, and escaped backslashes are stepped over in pairs; so a mask never
    lands after a lone backslash or within an escape, where it would break a JSON string.
    """

    def __init__(self, values: Iterable[str]) -> None:
        candidates = {value for value in values if value and len(value) >= MIN_SECRET_LENGTH}
        # A stable order (the trie, not this order, tries a longer secret before one it starts with).
        self.values: tuple[str, ...] = tuple(sorted(candidates, key=lambda value: (-len(value), value)))
        self.longest = max(map(_longest, self.values), default=0)
        """Bytes a match can span at most: how much a chunked writer must hold back between chunks."""
        cores = {core for value in self.values for core in _base64_cores(value.encode("utf-8"))}
        secrets = [_trie(self.values, _encoded_char), *([_trie(cores, re.escape)] if cores else [])]
        source = f"(?P<secret>(?:{_LEADING})(?:{'|'.join(secrets)}))|{_PAIRS}"
        self._pattern = re.compile(source) if self.values else None
        self._bytes_pattern = re.compile(source.encode("utf-8")) if self.values else None

    @staticmethod
    def _mask(match: re.Match[Any]) -> Any:
        if match.group("secret") is None:
            return match.group(0)  # escaped backslashes: kept as they were
        return MASK if isinstance(match.group(0), str) else MASK.encode()

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(self._mask, text)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every secret's UTF-8 bytes (in any encoding) replaced: final file bytes."""
        if self._bytes_pattern is None or not data:
            return data
        return self._bytes_pattern.sub(self._mask, data)

    def redact_chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """A file streamed in ``chunks``, masked to exactly the bytes :meth:`redact_bytes` gives
        for the whole: the end of each window (:attr:`longest` bytes, or more, see
        :func:`stream_cut`) is carried unmasked into the next, so a secret a boundary splits is
        seen whole and nothing near the end is masked before what follows is known."""
        if self._bytes_pattern is None:
            yield from chunks
            return
        carry = b""
        for chunk in chunks:
            data = carry + chunk
            cut = stream_cut(data, max(0, len(data) - self.longest), self.longest)
            pieces, done = [], 0
            for match in self._bytes_pattern.finditer(data):
                if match.start() >= cut:
                    break
                if match.group("secret") is not None:  # it started before the cut: it is whole
                    pieces += [data[done : match.start()], MASK.encode()]
                    done = match.end()
            pieces.append(data[done : max(cut, done)])
            yield b"".join(pieces)
            carry = data[max(cut, done) :]
        yield self.redact_bytes(carry)

    def redact_obj(self, obj: Any) -> Any:
        """A copy of a JSON-able structure with secrets masked in every string, keys included."""
        if isinstance(obj, str):
            return self.redact(obj)
        if isinstance(obj, dict):
            return {self.redact_obj(key): self.redact_obj(value) for key, value in obj.items()}
        if isinstance(obj, list):
            return [self.redact_obj(item) for item in obj]
        if isinstance(obj, tuple):
            return tuple(self.redact_obj(item) for item in obj)
        return obj


def stream_cut(data: bytes, cut: int, longest: int) -> int:
    """Where a window of a streamed file may be cut (at or before ``cut``) so that the next
    window, which starts there, is scanned as the whole file is, for matches of at most
    ``longest`` bytes (:attr:`Redactor.longest`).

    A run of backslashes just before ``cut`` goes to the next window whole when it is short (a
    match may start with it); a long one is cut between its pairs, leaving the next window more
    of it than a match can take, so neither window starts a match inside the run (a bounded
    move back: a file of backslashes still streams)."""
    run = len(data[:cut]) - len(data[:cut].rstrip(b"\\"))
    if run <= 2 * longest + 2:
        return cut - run
    after = len(data[cut:]) - len(data[cut:].lstrip(b"\\")) + run % 2
    missing = max(0, longest + 1 - after)
    return cut - run % 2 - 2 * ((missing + 1) // 2)


# -- the redactors of the running runs ---------------------------------------------------------

_installed: list[Redactor] = []
_lock = threading.Lock()


@contextlib.contextmanager
def installed(redactor: Redactor) -> Iterator[Redactor]:
    """Mask ``redactor``'s secrets in everything the store writes until the block ends."""
    install(redactor)
    try:
        yield redactor
    finally:
        uninstall(redactor)


def install(redactor: Redactor) -> None:
    """From now on the store's writers mask ``redactor``'s secrets too (a run's start)."""
    with _lock:
        _installed.append(redactor)


def uninstall(redactor: Redactor) -> None:
    """The run is over: its secrets are no longer its process's to mask."""
    with _lock:
        if any(item is redactor for item in _installed):
            del _installed[next(i for i, item in enumerate(_installed) if item is redactor)]


def active() -> Redactor:
    """Every installed run's secrets, plus those of this process's environment (a console
    command, or a write before the run installed its own): what a writer must mask."""
    with _lock:
        values = frozenset(value for redactor in _installed for value in redactor.values)
    return _combined(values | frozenset(secret_values(os.environ)))


@lru_cache(maxsize=8)
def _combined(values: frozenset[str]) -> Redactor:
    return Redactor(values)


# -- the terminal ------------------------------------------------------------------------------

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def printable(text: str) -> str:
    """``text`` safe for a terminal and for XML: every control character but newline and tab
    (C0, DEL, C1, so every escape sequence; line and paragraph separators; bidirectional
    overrides) shown as its escape (``\\x1b``), never sent; so is a lone surrogate (``\\ud800``
    in JSON), which no UTF-8 terminal or file can take."""
    return _CONTROL.sub(lambda match: match.group(0).encode("unicode_escape").decode("ascii"), text)


class RedactingFilter(logging.Filter):
    """Masks secrets in a log record's final message, exception text and stack.

    The message is formatted here (msg % args) and the args dropped, because an argument's
    ``str()`` may hold a secret (a failed ``docker run`` command line, for example).
    Attach it to handlers: logger-level filters do not see records from child loggers.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call; logging would print msg and args on its own
            message = f"{record.msg} {record.args!r}"
        record.msg = self.redactor.redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor.redact(record.stack_info)
        return True
