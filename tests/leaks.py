"""Finding a secret in bytes however it was written: raw, or after undoing (nested, a few levels
deep) the encodings a host output can carry: JSON string escapes, URL ``%XX`` and ``+``, HTML
character references; then in each result read reversed, in rot13, fullwidth folded (NFKC),
without separators or zero-width characters, without NULs (UTF-16 of ASCII), and the bytes of
every run of hex, base32, base64 (wrapped or not, and base64 inside it), base85 and ascii85
characters at each alignment, gzip inflated, and UTF-16 decoded.

Written independently of :mod:`pytest_gaia2.store.redact` (it decodes, where the redactor matches
encoded forms), so a test that uses it does not prove the redactor with the redactor.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import functools
import html
import re
import unicodedata
import zlib
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


_SEPARATORS = re.compile("[ .:,;|/_\t\r\n\u00ad\u200b\u200c\u200d\u2060\ufeff-]")
_LINE_BREAKS = re.compile(r"\r?\n|(?:\\+[rn])+")
_RUNS: tuple[tuple[re.Pattern[str], int, float, Callable[[str], bytes]], ...] = (
    (re.compile(r"[0-9a-fA-F]{8,}"), 2, 2, lambda run: bytes.fromhex(run[: len(run) // 2 * 2])),
    (re.compile(r"[A-Za-z2-7]{8,}"), 8, 1.6,
     lambda run: base64.b32decode(run[: len(run) - len(run) % 8 if len(run) % 8 in (1, 3, 6) else len(run)].upper()
                                  + "=" * (-len(run) % 8 if len(run) % 8 not in (1, 3, 6) else 0))),
    (re.compile(r"[0-9A-Za-z!#$%&()*+\-;<=>?@^_`{|}~]{10,}"), 5, 1.25, base64.b85decode),
    (re.compile(r"[!-u]{10,}"), 5, 1.25, base64.a85decode),
)
"""Runs of an encoding's characters, its group size, its characters per byte, and its decoder."""


def _base64_decodings(text: str, size: int = 0) -> Iterable[bytes]:
    """The bytes of every run of base64 characters (long enough for ``size`` bytes), at each of
    the four group alignments and in both alphabets (a secret encoded inside a longer blob is
    found whole at one of them)."""
    for run in _BASE64_RUN.findall(text):
        if len(run) >= size * 4 // 3:
            yield from _base64_run(run)


def _base64_run(run: str) -> Iterator[bytes]:
    """What one run of base64 characters decodes to, at each alignment and in both alphabets."""
    for start in range(4):
        part = run[start:]
        groups = part[:len(part) - len(part) % 4]
        padded = part[:len(part) - (len(part) % 4 == 1)]
        for whole in {groups, padded + "=" * (-len(padded) % 4)}:
            for alphabet in (whole.translate(str.maketrans("-_", "+/")), whole):
                try:
                    yield base64.b64decode(alphabet, validate=False)
                except (binascii.Error, ValueError):
                    continue


def _gunzipped(data: bytes) -> bytes:
    try:
        return zlib.decompressobj(wbits=31).decompress(data, 1 << 20) if data[:2] == b"\x1f\x8b" else b""
    except zlib.error:
        return b""


@functools.lru_cache(maxsize=1 << 16)
def _run_holds(kind: int, run: str, needles: tuple[bytes, ...]) -> bool:
    """Whether a run of an encoding's characters (``kind``: an index into :data:`_RUNS`, or -1
    for base64) decodes to bytes holding one of ``needles`` at any alignment: base64 also inside
    base64 and gzip inflated. Remembered: the decodings of one file (each escape undone, each
    separator dropped) hold the same runs again and again, and decoding them is the cost."""
    size = len(needles[0])
    if kind < 0:
        found: Iterable[bytes] = (
            form for data in _base64_run(run)
            for form in (data, _gunzipped(data), *_base64_decodings(data.decode("latin-1"), size)))
        return any(needle in data for data in found for needle in needles)
    _, group, _, decode = _RUNS[kind]
    for start in range(group):
        for end in range(group):  # a partial last group, and what follows the form
            try:
                data = decode(run[start:len(run) - end])
            except (binascii.Error, ValueError):
                continue
            if any(needle in data for needle in needles):
                return True
    return False


def _binary_holds(text: str, needles: tuple[bytes, ...]) -> bool:
    """Whether the bytes of some run of hex, base32, base64, base85 or ascii85 characters in
    ``text`` long enough to hold the first needle hold one of ``needles`` at some alignment."""
    size = len(needles[0])
    for plain in {text, _LINE_BREAKS.sub("", text)}:
        if any(_run_holds(-1, run, needles) for run in _BASE64_RUN.findall(plain) if len(run) >= size * 4 // 3):
            return True
        for kind, (pattern, _, ratio, _) in enumerate(_RUNS):
            if any(_run_holds(kind, run, needles) for run in pattern.findall(plain) if len(run) >= size * ratio):
                return True
    return False


def _apart(text: str, secret: str) -> str:
    """``text`` without the separators the secret does not hold itself."""
    return _SEPARATORS.sub(lambda match: match.group(0) if match.group(0) in secret else "", text)


def _views(text: str, secret: str) -> Iterator[str]:
    """``text`` and the ways it may hold a secret's letters rearranged."""
    for view in (text, _apart(text, secret)):
        yield from (view, view[::-1], codecs.encode(view, "rot13"), unicodedata.normalize("NFKC", view),
                    view.replace("\0", ""))


def holds(data: bytes | str, secret: str) -> bool:
    """Whether ``secret`` can be read from ``data`` raw or through any chain of the decoders."""
    raw = data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass")
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    needle = secret.encode("utf-8")
    wide = [secret.encode(codec) for codec in ("utf-16-le", "utf-16-be")]
    if any(form in raw for form in wide):
        return True
    for decoded in decodings(text):
        for view in _views(decoded, secret):
            if secret in view:
                return True
        for view in (decoded, _apart(decoded, secret)):
            if _binary_holds(view, (needle, *wide)):
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
