"""Keeping secret values (API keys, tokens) out of everything a run writes, logs or prints.

The plugin builds one :class:`Redactor` per run from the values it resolved and installs it
(:func:`installed`) for the run: the store's writers mask the final bytes of every file with
every installed redactor (:func:`active`), so no run file can be written unmasked. A secret is
matched raw and in any mix of the per-character encodings a host output can carry (JSON
``\\uXXXX`` and short escapes, also inside a JSON string inside a JSON string, a trace's
``raw_response``; URL ``%XX`` and ``+``; HTML character references); so are the forms an agent
holding the key can write it in (:func:`secret_forms`: reversed, rot13, fullwidth, UTF-16, hex,
base32, base64 and base64 of base64, base85 and ascii85, at any alignment in a longer text, each
letter optionally followed by a separator or zero-width character), and gzip+base64 blobs that
hold it. The mask ``***`` is valid wherever the match was (inside a JSON string, a URL, HTML).
No list of encodings is complete (docs/explanation/security.md says which are covered): a key the container
never holds is the real protection.

:func:`printable` is the other half: nothing from a container reaches a terminal (or a JUnit
XML file) with its control characters, so no escape sequence sets a title, the clipboard or
clears the screen.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import html.entities
import logging
import math
import os
import re
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any, AnyStr, NamedTuple, TypeVar, cast

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``, ``none``) would mask ordinary text everywhere."""
MAX_ZERO_PADDING = 16
"""Leading zeros an HTML character reference (``&#x0073;``) may carry and still be recognised:
bounded, so a streamed file's windows need overlap by a known number of bytes only."""
MIN_ENCODED = 8
"""Encoded cores (hex, base32, base64, base85) shorter than this are not masked (too likely in
unrelated text)."""
SEPARATORS = " .:,;|/_-\t\r\n\u00ad\u200b\u200c\u200d\u2060\ufeff"
"""What may stand between the letters of a secret's form (up to two, in any of their own
encodings): spaced or dotted letters, hex bytes split by colons, base64 wrapped at any column
with ``\\n`` or ``\\r\\n``, zero-width characters."""
MAX_GZIP = 2048
"""Bytes of a gzip+base64 blob after its ``H4sI`` magic (line breaks included) that are decoded
to look for a secret: bounded, so a streamed file's windows overlap by a known number of bytes."""
MAX_GUNZIP = 1 << 12
"""Bytes a gzip blob is inflated to at most (a small blob may inflate to a lot): a file of
blobs costs at most twice its size to look into."""
MAX_NESTING = 4
"""JSON strings inside JSON strings a JSON escape is recognised through: each level doubles the
backslashes before it (a trace's ``raw_response`` holds ``\\\\u0073`` for ``\\u0073``)."""
_MAX_BACKSLASHES: int = 2**MAX_NESTING
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


# -- the forms of a whole secret ---------------------------------------------------------------

_FULLWIDTH_LETTERS = {code: code + 0xFEE0 for code in range(0x21, 0x7F)}
_FULLWIDTH = _FULLWIDTH_LETTERS | {0x20: 0x3000}
"""Fullwidth, its space ideographic; a secret with a space is also masked with that space left
as it is (only the letters shifted, as a converter of ASCII's printable letters writes it)."""
_URL_SAFE = str.maketrans("+/", "-_")


def _bit_cores(data: bytes, encode: Callable[[bytes], bytes], bits: int) -> set[str]:
    """The characters of an encoding of ``bits`` bits a character (hex 4, base32 5, base64 6)
    that depend on ``data``'s bits alone: what encodes ``data`` whatever its alignment in a
    longer text (the characters it shares with its neighbours dropped)."""
    cores = set()
    for offset in range(math.lcm(8, bits) // 8):
        encoded = encode(b"\0" * offset + data + b"\0" * 8).decode("ascii")
        core = encoded[-(-8 * offset // bits) : 8 * (offset + len(data)) // bits]
        if len(core) >= MIN_ENCODED:
            cores.add(core)
    return cores


def _group_cores(data: bytes, encode: Callable[[bytes], bytes]) -> set[str]:
    """Like :func:`_bit_cores` for base85 and ascii85, which encode 4 bytes as 5 characters: the
    groups made of ``data``'s bytes alone, at each alignment."""
    cores = set()
    for offset in range(4):
        encoded = encode(b"\0" * offset + data + b"\0" * 4).decode("ascii")
        core = encoded[5 * -(-offset // 4) : 5 * ((offset + len(data)) // 4)]
        if len(core) >= MIN_ENCODED:
            cores.add(core)
    return cores


def _base64_cores(data: bytes) -> set[str]:
    """The base64 cores of ``data`` in the standard and the URL-safe alphabets."""
    cores = _bit_cores(data, base64.b64encode, 6)
    return cores | {core.translate(_URL_SAFE) for core in cores}


class Forms(NamedTuple):
    """The forms of secrets the redactor matches."""

    text: set[str]
    """The secret itself: each letter in any of its per-character encodings, with up to two
    separators or zero-width characters (raw or JSON-escaped) after it."""
    encoded: set[str]
    """The secret reversed, in rot13, in fullwidth letters, in UTF-16 (LE and BE, when that is
    UTF-8 text), in base64 (standard and URL-safe), base64 of base64, base85 and ascii85 at any
    alignment: each letter as it is (in its encodings where a JSON, URL or HTML writer would
    escape it), with a line break (raw or JSON-escaped) after it: wrapped at any column."""
    either_case: set[str]
    """Hex and base32 at any alignment (lower-cased here): in either case, each letter possibly
    followed by one of ``:.,-`` or a space (hex bytes written apart)."""
    raw: set[bytes]
    """UTF-16 of a secret that is not UTF-8 text that way: in final bytes only."""


def secret_forms(secret: str) -> Forms:
    """Every form of ``secret`` the redactor masks (docs/explanation/security.md lists them)."""
    data = secret.encode("utf-8", "surrogatepass")
    forms = Forms(
        {secret},
        {
            secret[::-1],
            codecs.encode(secret, "rot13"),
            secret.translate(_FULLWIDTH),
            secret.translate(_FULLWIDTH_LETTERS),
        },
        set(),
        set(),
    )
    for codec in ("utf-16-le", "utf-16-be"):
        # Without the zero bytes at its ends (an ASCII secret's two forms become one, and none
        # starts with a zero byte, tried at every position of a zero-filled file).
        wide = secret.encode(codec, "surrogatepass").strip(b"\0")
        try:
            forms.encoded.add(wide.decode("utf-8"))
        except UnicodeDecodeError:
            forms.raw.add(wide)
    forms.encoded.update(_base64_cores(data))
    for inner in (base64.b64encode(data), base64.urlsafe_b64encode(data)):
        forms.encoded.update(_base64_cores(inner.rstrip(b"=")))  # base64 of base64, padded or not
    forms.encoded.update(_group_cores(data, base64.b85encode))
    if b"\0" * 4 not in data:  # ascii85 writes four zero bytes as one "z": the groups would shift
        forms.encoded.update(_group_cores(data, base64.a85encode))
    cores = _bit_cores(data, base64.b16encode, 4) | _bit_cores(data, base64.b32encode, 5)
    forms.either_case.update(core.lower() for core in cores)
    forms.encoded.difference_update(forms.text)
    return forms


def _encoded_char(char: str) -> str:
    """A regex for ``char`` in any of its encodings."""
    return "(?:" + "|".join(form for form, _ in _char_forms(char)) + ")"


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:;!#$()*?@[]^`{|}~")
"""Characters no JSON, URL or HTML writer escapes: in an encoded form they are matched as they are."""


def _encoded_letter(char: str) -> str:
    """A regex for a letter of an encoded form (base64, base85): as it is when no writer escapes
    it, else in any of its encodings (``%2B`` in a URL, ``\\"`` in JSON, ``&lt;`` in HTML)."""
    return re.escape(char) if char in _PLAIN else _encoded_char(char)


def _either_case(char: str) -> str:
    """A regex for a letter of hex or base32, in either case."""
    return f"[{char.lower()}{char.upper()}]" if char.isalpha() else re.escape(char)


_SEPARATOR = (
    "(?:[ .:,;|/_\t\r\n-]|\u00ad|\u200b|\u200c|\u200d|\u2060|\ufeff"
    rf"|\\{{1,{_MAX_BACKSLASHES}}}(?:[ntr/]|u(?:00[aA][dD]|200[bBcCdD]|2060|[fF][eE][fF][fF]))){{0,2}}"
)
"""Up to two separators between the letters of the secret (raw or JSON-escaped; never a quote,
so a match never crosses a JSON string's end). Non-ASCII ones are alternatives, not a class:
the same source matches UTF-8 bytes, never half a character."""
_WRAP = rf"[\r\n\\rn]{{0,{2 * _MAX_BACKSLASHES + 2}}}"
"""A line break between the letters of an encoded form wrapped at any column, raw or
JSON-escaped (``\r\n`` as ``\\r\\n``, strings deep): short, as it follows every letter (it
may also take an ``r`` or ``n`` too many, inside a match only)."""
_HEX_SEPARATOR = "[ :.,-]?"
_BETWEEN_MOST = 2 * (_MAX_BACKSLASHES + 6)
"""Bytes a separator or a line break between two letters spans at most."""


def _longest(form: str) -> int:
    """The most bytes a match of ``form`` can span (the escaped backslashes before it and the
    separators between its letters included)."""
    cases = [{char.lower(), char.upper()} if char.isascii() else {char} for char in form]
    letters = sum(max(size for case in each for _, size in _char_forms(case)) for each in cases)
    return _MAX_BACKSLASHES + 4 + letters + _BETWEEN_MOST * (len(form) - 1)


_ESCAPES_START = "\\%&+"
"""What every encoded form of a character starts with (JSON, URL, HTML; ``+`` a URL's space)."""


def _escaped_char(char: str) -> str:
    """A regex for ``char`` in its encodings but the raw one (all of them when the raw one starts
    like an escape)."""
    raw = char in _ESCAPES_START
    return "(?:" + "|".join(form for form, _ in _char_forms(char) if raw or form != re.escape(char)) + ")"


def _first_char(char: str) -> str:
    """A regex for ``char`` in any encoding, the raw one tried first and the others only where
    the text holds an escape's start."""
    escaped = f"(?=[{re.escape(_ESCAPES_START)}]){_escaped_char(char)}"
    return escaped if char in _ESCAPES_START else f"(?:{re.escape(char)}|{escaped})"


def _trie(
    words: Iterable[str], unit: Callable[[str], str], between: str = "", first: Callable[[str], str] = re.escape
) -> str:
    """One regex for all ``words`` (the first character by ``first``, the others by ``unit``
    with ``between`` before each), their common starts shared, so a position of the text costs
    one try per distinct next character however many secrets there are. Where a word ends and a
    longer one goes on, the longer is tried first: a secret that starts another never masks it
    in pieces."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}
    return _branches(root, unit, between, first) if root else ""


def _guarded(trie: str, firsts: set[str], seconds: set[str] | None = None) -> str:
    """``trie`` after one check of the next character against ``firsts`` (and of the one after
    it against ``seconds``), where the trie's first letters would be tried one by one (ASCII
    ones only: the same source matches bytes)."""
    classes = [firsts, *([seconds] if seconds else [])]
    if not trie or not all(map(str.isascii, set().union(*classes))):
        return trie
    return "(?=" + "".join(f"[{re.escape(''.join(sorted(chars)))}]" for chars in classes) + ")" + trie


def _branches(
    node: dict[str, Any], unit: Callable[[str], str], between: str, head: Callable[[str], str] | None = None
) -> str:
    """The regex of a trie node: its letters by ``head`` (the first letter of a word), else by
    ``unit`` after ``between``."""
    branches = []
    for char in sorted(key for key in node if key):
        parts, child = [head(char) if head else between + unit(char)], node[char]
        while len(child) == 1 and "" not in child:  # a chain: no group, no recursion
            ((char, child),) = child.items()
            parts.append(between + unit(char))
        if child != {"": {}}:
            parts.append(_branches(child, unit, between))
        branches.append("".join(parts))
    if "" in node:
        branches.append("")
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


# -- the redactor ------------------------------------------------------------------------------

_PAIRS = rf"\\\\{{{_MAX_BACKSLASHES - 1}}}(?:\\{{{_MAX_BACKSLASHES}}})*(?=\\{{{_MAX_BACKSLASHES}}})|\\\\(?:\\\\)*"
"""Escaped backslashes, where no secret starts: a long run is stepped over in blocks of
``2**MAX_NESTING`` while as many are left (a block is whole escaped backslashes at every
nesting level), so the secret is tried after them with its escape's backslashes (one escape
``MAX_NESTING`` strings deep is 8); then all of a run's pairs at once. (Each starts with a
literal: an alternative that does not is entered at every position, a group's repeat with an
allocation.) A match never starts on a pair's second backslash, nor inside an escaped
backslash of a deeper string."""
_LEADING = f"\\\\{{1,{_MAX_BACKSLASHES}}}(?:u[0-9a-fA-F]{{0,3}}|)|(?<=\\\\)u[0-9a-fA-F]{{0,3}}|"
"""What a match may take before a secret: backslashes, a ``u`` after them and up to three hex
digits. Read as text, ``\\r8_...`` holds a key ``r8_...`` and ``\\u0080...`` a key ``80...``;
read as JSON they start with an escape: the mask takes the escape too, so both readings lose
the key and a JSON string stays valid."""
_GZIP_START = "H4sI"
"""A gzip stream's first three bytes (``1f 8b 08``) in base64."""
_GZIP = f"H4sI[A-Za-z0-9+/_=\\r\\n\\\\-]{{8,{MAX_GZIP}}}"
"""A gzip+base64 blob, wrapped or not (raw or in a JSON string: its escapes' backslashes are
in the class), at most ``MAX_GZIP`` bytes after the magic."""
_NOT_BASE64 = re.compile(rb"\\+[rn]|[^A-Za-z0-9+/_-]")
_BASE64_LETTER = re.compile(rb"\\+[rn]|([A-Za-z0-9+/_-])")
"""A letter of a blob (group 1), or a JSON-escaped line break (none, read as :data:`_NOT_BASE64` does)."""
_GZIP_TEXT = re.compile(_GZIP)
_GZIP_BYTES = re.compile(_GZIP.encode())

Span = tuple[int, int]
_Json = TypeVar("_Json")


_LEFT_OUT = b"\r\n\\rn" + b"\0u0%&#xX;"
"""What may stand between the letters an encoded form's literal (:func:`_literal`) is made of:
what :data:`_WRAP` takes (a line break, raw or JSON-escaped), and what a zero byte is written
with in any of its encodings (``\\u0000``, ``%00``, ``&#0;``, ``&#x0;``: UTF-16 of a key)."""
_HEX_SEPARATORS = b" :.,-"
"""What :data:`_HEX_SEPARATOR` takes between the letters of hex and base32."""
MIN_LITERAL = 6
"""Letters an encoded form's literal (:func:`_literal`) has at least: a form without one is in every pattern."""


def _literal(form: str) -> bytes | None:
    """The longest run of an encoded ``form``'s letters that no writer escapes (its pattern
    matches them as they are) and zero bytes, without the bytes of :data:`_LEFT_OUT`: whatever
    the form's pattern matches holds it once those bytes are left out of it too. None when
    shorter than :data:`MIN_LITERAL`."""
    runs = re.split("[^\0" + re.escape("".join(sorted(_PLAIN))) + "]", form)
    literal = max((run.encode().translate(None, _LEFT_OUT) for run in runs), key=len)
    return literal if len(literal) >= MIN_LITERAL else None


def _source(forms: Forms) -> str:
    """The regex of ``forms`` (but the raw ones): a secret's start (:data:`_LEADING`), then its forms' tries."""
    # Most encoded forms start with a letter no writer escapes: a literal first, tried fast at
    # every position, after one check of the next character against them all. The others (and
    # the secrets) start with their first letter raw or, after a check, encoded.
    plain = {form for form in forms.encoded if form[0] in _PLAIN}
    wide = {form for form in forms.encoded if not form[0].isascii()}  # fullwidth: no guard in bytes
    others = forms.encoded - plain - wide
    escapes = set(_ESCAPES_START)
    tries = [
        _guarded(_trie(forms.text, _encoded_char, _SEPARATOR, _first_char), {form[0] for form in forms.text} | escapes),
        _guarded(_trie(others, _encoded_letter, _WRAP, _first_char), {form[0] for form in others} | escapes),
        _trie(wide, _encoded_letter, _WRAP, _first_char),
        _guarded(
            _trie(plain, _encoded_letter, _WRAP),
            {form[0] for form in plain},
            {form[1] for form in plain} | set("\r\n\\rn") | escapes,  # a line break, or an escaped letter
        ),
        _guarded(
            _trie(forms.either_case, _either_case, _HEX_SEPARATOR, _either_case),
            {case for form in forms.either_case for case in (form[0].lower(), form[0].upper())},
            {case for form in forms.either_case for case in (form[1].lower(), form[1].upper())} | set(" :.,-"),
        ),
    ]
    return f"(?:{_LEADING})(?:{'|'.join(filter(None, tries))})"


class _Sources(NamedTuple):
    """What a redactor of a set of secrets is built from (once for a set: every writer of a run asks for the same)."""

    longest: int
    text: str | None
    """The text pattern."""
    whole: bytes | None
    """The bytes pattern: :attr:`text` in UTF-8 (but for the raw forms, in bytes as they are)."""
    short: bytes | None
    """:attr:`whole` without the encoded forms that have a literal, nor hex and base32: bytes that
    hold none of :attr:`literals` nor :attr:`hex_literals` are masked with it exactly as with the
    whole one (those forms match nowhere in them; the others are tried in the same order), and
    it compiles in a fraction of the time."""
    literals: tuple[bytes, ...]
    """The literals of the encoded forms :attr:`short` leaves out (:func:`_literal`)."""
    hex_literals: tuple[bytes, ...]
    """The hex and base32 forms (lower case): in bytes lower-cased, without :data:`_HEX_SEPARATORS`."""
    raw: bool
    """Whether some form is matched in final bytes only (:attr:`Forms.raw`)."""


@lru_cache(maxsize=32)
def _sources(values: tuple[str, ...]) -> _Sources:
    """The longest match and the patterns' sources of a redactor of ``values``."""
    if not values:
        return _Sources(0, None, None, None, (), (), raw=False)
    each = [secret_forms(value) for value in values]
    forms = Forms(*(set().union(*parts) for parts in zip(*each, strict=True)))
    gzip_blob = len(_GZIP_START) + MAX_GZIP
    longest = max([gzip_blob, *map(_longest, forms.text | forms.encoded | forms.either_case), *map(len, forms.raw)])
    literals = {form: _literal(form) for form in forms.encoded}
    kept = Forms(forms.text, {form for form, literal in literals.items() if literal is None}, set(), forms.raw)
    source = _source(forms)
    raw_text = "".join(f"|{re.escape(wide.decode('utf-8', 'surrogateescape'))}" for wide in sorted(forms.raw))
    raw_bytes = b"".join(b"|" + re.escape(wide) for wide in sorted(forms.raw))
    return _Sources(
        longest,
        f"(?P<secret>{source}{raw_text})|{_PAIRS}",
        b"(?P<secret>" + source.encode() + raw_bytes + b")|" + _PAIRS.encode(),
        b"(?P<secret>" + _source(kept).encode() + raw_bytes + b")|" + _PAIRS.encode(),
        tuple(sorted({literal for literal in literals.values() if literal})),
        tuple(sorted(form.encode() for form in forms.either_case)),
        raw=bool(forms.raw),
    )


class Redactor:
    """Replaces every known secret with ``***``, whatever its form (:func:`secret_forms`) and
    encoding, in one regex pass (and a look into every gzip+base64 blob).

    A match never starts inside a JSON escape: one that would (a key ``000000`` in the hex
    digits of ``\\u0080000000``, a key ``r8_...`` after the backslash of ``\\r8_...``) takes the
    escape's start with it, and escaped backslashes are stepped over in whole escapes; so a mask
    never lands after a lone backslash or within an escape, where it would break a JSON string.
    """

    def __init__(self, values: Iterable[str]) -> None:
        candidates = {value for value in values if value and len(value) >= MIN_SECRET_LENGTH}
        # A stable order (the trie, not this order, tries a longer secret before one it starts with).
        self.values: tuple[str, ...] = tuple(sorted(candidates, key=lambda value: (-len(value), value)))
        sources = _sources(self.values)
        self.longest = sources.longest
        """Bytes a match can span at most: how much a chunked writer must hold back between chunks."""
        self._sources = sources

    @property
    def _pattern(self) -> re.Pattern[str] | None:
        """Compiled on first use (re keeps it): only text that is no UTF-8 needs it (:meth:`redact`)."""
        return None if self._sources.text is None else re.compile(self._sources.text)

    def _bytes_pattern_for(self, data: bytes) -> re.Pattern[bytes]:
        """The pattern ``data`` is masked with: the short one (:attr:`_Sources.short`, compiled on
        first use) when ``data`` holds no literal of an encoded form it leaves out, so that a
        process whose outputs hold no encoded key never compiles the whole one."""
        sources = self._sources
        assert sources.whole is not None and sources.short is not None
        stripped = data.translate(None, _LEFT_OUT)
        if any(literal in stripped for literal in sources.literals):
            return re.compile(sources.whole)
        del stripped  # a copy of ``data``: one at a time
        lowered = data.lower().translate(None, _HEX_SEPARATORS)
        if any(form in lowered for form in sources.hex_literals):
            return re.compile(sources.whole)
        return re.compile(sources.short)

    def _gzip_secret(self, blob: bytes) -> int:
        """How many bytes of a gzip+base64 blob (from its start) hold a secret: those its gzip
        stream takes (to its end, or all when it is cut short), when it inflates (to
        :data:`MAX_GUNZIP` bytes at most) to a secret; else 0."""
        letters = _NOT_BASE64.sub(b"", blob).translate(bytes.maketrans(b"-_", b"+/"))
        inflate = zlib.decompressobj(wbits=31)
        try:
            stream = base64.b64decode(letters[: len(letters) // 4 * 4])
            data = inflate.decompress(stream, MAX_GUNZIP)
        except (zlib.error, ValueError):
            return 0
        if not any(match.group("secret") is not None for match in self._bytes_pattern_for(data).finditer(data)):
            return 0
        used = -(-4 * (len(stream) - len(inflate.unused_data)) // 3) if inflate.eof else len(letters)
        ends = [match.end() for match in _BASE64_LETTER.finditer(blob) if match.group(1)]
        return ends[min(used, len(ends)) - 1]

    def _spans(self, data: Any, stop: int) -> list[Span]:
        """Where ``data`` (text or bytes) holds a secret: the spans of the matches that start
        before ``stop``, overlapping ones joined."""
        pattern = self._pattern if isinstance(data, str) else self._bytes_pattern_for(data)
        assert pattern is not None
        gzip, start = (_GZIP_TEXT, _GZIP_START) if isinstance(data, str) else (_GZIP_BYTES, _GZIP_START.encode())
        spans: list[Span] = []
        at = data.find(start)
        while 0 <= at < stop:
            blob = gzip.match(data, at)
            found = blob.group(0) if blob else b""
            size = self._gzip_secret(found if isinstance(found, bytes) else found.encode("ascii")) if found else 0
            if size:
                spans.append((at, at + size))
            # Past the blob: a text of "H4sI"s is inflated once per blob, never once per magic.
            at = data.find(start, at + max(len(found), 1))
        for match in pattern.finditer(data):
            if match.start() >= stop:
                break
            if match.group("secret") is not None:
                spans.append(match.span())
        joined: list[Span] = []
        for begin, end in sorted(spans):
            if joined and begin < joined[-1][1]:
                joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
            else:
                joined.append((begin, end))
        return joined

    @staticmethod
    def _masked(data: AnyStr, spans: list[Span], end: int) -> AnyStr:
        """``data[:end]`` with every span replaced by the mask (a span may end after ``end``)."""
        mask = MASK if isinstance(data, str) else MASK.encode()
        pieces: list[AnyStr] = []
        done = 0
        for begin, stop in spans:
            pieces += [data[done:begin], mask]
            done = stop
        pieces.append(data[done : max(done, end)])
        return data[:0].join(pieces)

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``.

        Masked as its UTF-8 bytes, so a process compiles one pattern, not two (the compile is
        most of a redactor's cost): the bytes pattern is the text one's source, and on UTF-8 it
        matches whole characters only, where the text one matches. Not so for a raw form (no
        UTF-8: its bytes may sit inside a character), nor for text with a lone surrogate (no
        UTF-8 at all): those are masked as text."""
        if self._sources.text is None or not text:
            return text
        if text.isascii() or not self._sources.raw:
            with contextlib.suppress(UnicodeEncodeError):
                return self.redact_bytes(text.encode("utf-8")).decode("utf-8")
        return self._as_text(text)

    def _as_text(self, text: str) -> str:
        """``text`` masked with the text pattern."""
        return self._masked(text, self._spans(text, len(text)), len(text))

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every secret's UTF-8 bytes (in any encoding) replaced: final file bytes."""
        if self._sources.whole is None or not data:
            return data
        return self._masked(data, self._spans(data, len(data)), len(data))

    def redact_chunks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """A file streamed in ``chunks``, masked to exactly the bytes :meth:`redact_bytes` gives
        for the whole: the end of each window (:attr:`longest` bytes, or more, see
        :func:`stream_cut`) is carried unmasked into the next, so a secret a boundary splits is
        seen whole and nothing near the end is masked before what follows is known."""
        if self._sources.whole is None:
            yield from chunks
            return
        carry = b""
        for chunk in chunks:
            data = carry + chunk
            cut = stream_cut(data, max(0, len(data) - self.longest), self.longest)
            spans = self._spans(data, cut)  # each started before the cut: it is whole
            done = max(cut, spans[-1][1]) if spans else cut
            yield self._masked(data, spans, cut)
            carry = data[done:]
        yield self.redact_bytes(carry)

    def redact_obj(self, obj: _Json) -> _Json:
        """A copy of a JSON-able structure, of the same shape, with secrets masked in every
        string, keys included."""
        copy: object = obj
        if isinstance(obj, str):
            copy = self.redact(obj)
        elif isinstance(obj, dict):
            copy = {self.redact_obj(key): self.redact_obj(value) for key, value in obj.items()}
        elif isinstance(obj, list):
            copy = [self.redact_obj(item) for item in obj]
        elif isinstance(obj, tuple):
            copy = tuple(self.redact_obj(item) for item in obj)
        return cast(_Json, copy)


def stream_cut(data: bytes, cut: int, longest: int) -> int:
    """Where a window of a streamed file may be cut (at or before ``cut``) so that the next
    window, which starts there, is scanned as the whole file is, for matches of at most
    ``longest`` bytes (:attr:`Redactor.longest`).

    A run of backslashes just before ``cut`` goes to the next window whole when it is short (a
    match may start with it); a long one is cut between the blocks :data:`_PAIRS` steps over,
    leaving the next window more of it than a match can take, so neither window starts a match
    inside the run (a bounded move back: a file of backslashes still streams)."""
    block = _MAX_BACKSLASHES
    run = len(data[:cut]) - len(data[:cut].rstrip(b"\\"))
    if run <= 2 * longest + 2 * block:
        return cut - run
    after = len(data[cut:]) - len(data[cut:].lstrip(b"\\")) + run % block
    missing = max(0, longest + 1 - after)
    return cut - run % block - block * -(-missing // block)


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
