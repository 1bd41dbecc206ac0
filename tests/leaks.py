"""Finding a secret in bytes however it was written: raw, or after undoing (nested, a few levels
deep) the encodings a host output can carry: JSON string escapes, URL ``%XX`` and ``+``, HTML
character references, and base64 anywhere in a run of base64 characters.

Written independently of :mod:`pytest_gaia2.store.redact` (it decodes, where the redactor matches
encoded forms), so a test that uses it does not prove the redactor with the redactor.
"""

from __future__ import annotations

import base64
import binascii
import html
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from urllib.parse import unquote, unquote_plus

DEPTH = 3
"""Encodings undone one over another: a JSON string inside a JSON string (a trace's
``raw_response``) is two levels; three leaves a margin."""

_JSON_ESCAPE = re.compile(r'\\(u[0-9a-fA-F]{4}|["\\/bfnrt])')
_JSON_SHORT = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{8,}")


def json_unescape(text: str) -> str:
    """Every JSON escape in ``text`` undone, left to right as a JSON parser reads a string
    (``\\\\`` is one backslash, so ``\\\\u0073`` is the text ``\\u0073``); surrogate pairs joined."""
    def one(match: re.Match[str]) -> str:
        token = match.group(1)
        return chr(int(token[1:], 16)) if token[0] == "u" else _JSON_SHORT[token]

    decoded = _JSON_ESCAPE.sub(one, text)
    return decoded.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


DECODERS: tuple[Callable[[str], str], ...] = (json_unescape, unquote, unquote_plus, html.unescape)


def decodings(text: str, depth: int = DEPTH) -> Iterator[str]:
    """``text`` and what every chain of up to ``depth`` decoders makes of it (each once)."""
    seen = {hash(text)}
    level = [text]
    yield text
    for _ in range(depth):
        following = []
        for item in level:
            for decode in DECODERS:
                decoded = decode(item)
                if hash(decoded) not in seen:
                    seen.add(hash(decoded))
                    following.append(decoded)
                    yield decoded
        level = following


def _base64_decodings(text: str) -> Iterable[bytes]:
    """The bytes of every run of base64 characters, at each of the four group alignments and
    in both alphabets (a secret encoded inside a longer blob is found whole at one of them)."""
    for run in _BASE64_RUN.findall(text):
        for start in range(4):
            part = run[start:]
            part = part[:len(part) - len(part) % 4]
            for alphabet in (part.translate(str.maketrans("-_", "+/")), part):
                try:
                    yield base64.b64decode(alphabet, validate=False)
                except (binascii.Error, ValueError):
                    continue


def holds(data: bytes | str, secret: str) -> bool:
    """Whether ``secret`` can be read from ``data`` raw or through any chain of the decoders."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    needle = secret.encode("utf-8")
    for decoded in decodings(text):
        if secret in decoded or any(needle in raw for raw in _base64_decodings(decoded)):
            return True
    return False


def leaks_in(root: Path, secrets: Iterable[str], skip: Iterable[str] = ()) -> list[str]:
    """Every regular file under ``root`` (but the relative paths in ``skip``) from which one of
    ``secrets`` can be read, with the secret found."""
    skipped = set(skip)
    wanted = list(secrets)
    found = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        name = path.relative_to(root).as_posix()
        if name not in skipped:
            data = path.read_bytes()
            found += [f"{name}: {secret!r}" for secret in wanted if holds(data, secret)]
    return found
