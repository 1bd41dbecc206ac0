"""Keeping secret values (API keys, tokens) out of everything a run writes, logs or prints.

The plugin builds one :class:`Redactor` per run from the values it resolved and installs it
(:func:`installed`) for the run: the store's writers mask the final bytes of every file with
every installed redactor (:func:`active`), so no run file can be written unmasked. A secret is
matched raw and in any mix of the per-character encodings a host output can carry (JSON
``\\uXXXX`` and short escapes, URL ``%XX`` and ``+``, HTML character references), and as
base64; the mask ``***`` is valid wherever the match was (inside a JSON string, a URL, HTML).

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
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``, ``none``) would mask ordinary text everywhere."""
MAX_ZERO_PADDING = 16
"""Leading zeros an HTML character reference (``&#x0073;``) may carry and still be recognised:
bounded, so a streamed file's windows need overlap by a known number of bytes only."""
MIN_BASE64 = 8
"""Base64 cores shorter than this are not masked (too likely in unrelated text)."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_JSON_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
               "\t": "\\t"}
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


@lru_cache(maxsize=4096)
def _char_forms(char: str) -> tuple[tuple[str, int], ...]:
    """Every way one character may be written in a host output: (regex, most bytes it matches)."""
    code = ord(char)
    units = char.encode("utf-16-be")
    utf8 = char.encode("utf-8")
    forms = [
        (re.escape(char), len(utf8)),
        ("".join("\\\\u" + _any_case(units[i:i + 2].hex()) for i in range(0, len(units), 2)), 3 * len(units)),
        ("".join("%" + _any_case(f"{byte:02x}") for byte in utf8), 3 * len(utf8)),
        (f"&#0{{0,{MAX_ZERO_PADDING}}}{code}(?:;|(?![0-9]))", 3 + MAX_ZERO_PADDING + len(str(code))),
        (f"&#[xX]0{{0,{MAX_ZERO_PADDING}}}{_any_case(f'{code:x}')}(?:;|(?![0-9a-fA-F]))",
         4 + MAX_ZERO_PADDING + len(f"{code:x}")),
    ]
    if char in _JSON_SHORT:
        forms.append((re.escape(_JSON_SHORT[char]), 2))
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
        core = encoded[-(-4 * offset // 3):len(encoded) - 4]  # drop the padding's and the partial group's
        if len(core) >= MIN_BASE64:
            cores |= {core, core.translate(str.maketrans("+/", "-_"))}
    return cores


def _secret_pattern(secret: str) -> tuple[str, int]:
    """A regex for ``secret`` in any mix of per-character encodings (or as base64), and the
    most bytes a match can span."""
    per_char = [_char_forms(char) for char in secret]
    encoded = "".join("(?:" + "|".join(form for form, _ in forms) + ")" for forms in per_char)
    longest = sum(max(size for _, size in forms) for forms in per_char)
    cores = sorted(_base64_cores(secret.encode("utf-8")), key=len, reverse=True)
    return "|".join([encoded, *map(re.escape, cores)]), longest


# -- the redactor ------------------------------------------------------------------------------

class Redactor:
    """Replaces every known secret with ``***`` in one regex pass, whatever its encoding.

    Escaped backslashes (``\\\\``) are consumed whole as the text is scanned, so ``\\u0073``
    after one (literal text, not an escape) is not taken for a secret, and a mask never lands
    right after a lone backslash where it would break a JSON string.
    """

    def __init__(self, values: Iterable[str]) -> None:
        candidates = {value for value in values if value and len(value) >= MIN_SECRET_LENGTH}
        # Longest first so a secret that contains another is masked whole, not in pieces.
        self.values: tuple[str, ...] = tuple(sorted(candidates, key=lambda value: (-len(value), value)))
        patterns = [_secret_pattern(value) for value in self.values]
        self.longest = max((size for _, size in patterns), default=0)
        """Bytes a match can span at most: how much a chunked writer must hold back between chunks."""
        source = "(?P<secret>" + "|".join(pattern for pattern, _ in patterns) + r")|(?:\\\\)+"
        self._pattern = re.compile(source) if patterns else None
        self._bytes_pattern = re.compile(source.encode("utf-8")) if patterns else None

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


def stream_cut(data: bytes, cut: int) -> int:
    """Where a window of a streamed file may be cut (at or before ``cut``) so that the next
    window, which starts there, pairs escaped backslashes as the whole file does."""
    run = len(data[:cut]) - len(data[:cut].rstrip(b"\\"))
    return cut - (run % 2)


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

_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` safe for a terminal and for XML: every control character but newline and tab
    (C0, DEL, C1, so every escape sequence; line and paragraph separators; bidirectional
    overrides) shown as its escape (``\\x1b``), never sent."""
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
