"""Reading dotenv files (API keys for the agent and the judge) without extra dependencies.

Supports the syntax people actually write: blank lines, ``#`` comments, ``export KEY=...``,
unquoted values with `` # inline comments``, single quotes (literal) and double quotes
(with ``\\n``, ``\\t``, ``\\"`` escapes), both of which may span lines. ``${VAR}``
expansion is not supported: values are taken literally.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

_ASSIGNMENT = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_.]*)[ \t]*(=[ \t]*)?")
_INLINE_COMMENT = re.compile(r"(?:^|[ \t])#")
_AFTER_QUOTE = re.compile(r"[ \t]*(?:#[^\n]*)?(?:\n|\Z)")
_DOUBLE_QUOTE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_SINGLE_QUOTE_ESCAPES = {"'": "'", "\\": "\\"}


@dataclass(frozen=True)
class DotEnv:
    """The assignments of one dotenv file, and the line numbers that could not be read."""

    values: dict[str, str] = field(default_factory=dict)
    bad_lines: tuple[int, ...] = ()


def _quoted(text: str, start: int) -> tuple[str, int] | None:
    """The value of a quoted string opening at ``text[start]`` and the index after it."""
    quote = text[start]
    escapes = _DOUBLE_QUOTE_ESCAPES if quote == '"' else _SINGLE_QUOTE_ESCAPES
    chars: list[str] = []
    index = start + 1
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in escapes:
            chars.append(escapes[text[index + 1]])
            index += 2
            continue
        if char == quote:
            return "".join(chars), index + 1
        chars.append(char)
        index += 1
    return None


def parse(text: str) -> DotEnv:
    """Parse dotenv text; later assignments of a key win, unreadable lines are skipped."""
    values: dict[str, str] = {}
    bad_lines: list[int] = []
    pos = 0
    while pos < len(text):
        line_end = text.find("\n", pos)
        line_end = len(text) if line_end == -1 else line_end
        line = text[pos:line_end]
        line_number = text.count("\n", 0, pos) + 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            pos = line_end + 1
            continue
        match = _ASSIGNMENT.match(text, pos, line_end)
        if not match:
            bad_lines.append(line_number)
            pos = line_end + 1
            continue
        key, has_value = match.group(1), match.group(2) is not None
        value_start = match.end()
        if value_start < line_end and text[value_start] in "'\"":
            quoted = _quoted(text, value_start)
            tail = _AFTER_QUOTE.match(text, quoted[1]) if quoted else None
            if quoted is None or tail is None:
                bad_lines.append(line_number)
                pos = line_end + 1
                continue
            values[key] = quoted[0]
            pos = tail.end()
            continue
        rest = text[value_start:line_end]
        if not has_value and rest.strip() and not rest.lstrip().startswith("#"):
            bad_lines.append(line_number)  # "KEY junk": neither an assignment nor a bare key
            pos = line_end + 1
            continue
        comment = _INLINE_COMMENT.search(rest)
        values[key] = (rest[: comment.start()] if comment else rest).strip()
        pos = line_end + 1
    return DotEnv(values, tuple(bad_lines))


def load(path: Path) -> DotEnv:
    """Parse the dotenv file at ``path`` (UTF-8, a leading BOM tolerated)."""
    return parse(path.read_text(encoding="utf-8-sig"))
