"""Free text (ids, paths, values read from run folders) made inert in Markdown.

A value from a results folder may hold a newline (a new table row, a heading), a pipe (a new
cell), backticks, brackets (a link) or HTML (a script in a renderer that allows it). These two
helpers put such text on one line with every one of those characters shown, not obeyed, and
every control character as its escape (``\\x1b``): ``cat report.md`` sends no escape sequence.
"""

from __future__ import annotations

import re

from pytest_gaia2.store.redact import printable

_MARKUP = re.compile(r"([\\`*\[\]|<>&])")
_ENTITIES = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}


def one_line(text: object) -> str:
    """Every run of whitespace (newlines, tabs, other line separators) as one space, every other
    control character escaped."""
    return printable(" ".join(str(text).split()))


def plain(text: object) -> str:
    """Text shown as itself in Markdown, table cells included: HTML characters as entities,
    Markdown's (backslash, backtick, emphasis, link brackets, pipe) backslash-escaped."""
    return _MARKUP.sub(lambda found: _ENTITIES.get(found[1], "\\" + found[1]), one_line(text))


def code_span(text: object) -> str:
    """Text as a code span that survives a table cell: a fence longer than any backtick run
    inside, pipes escaped (GFM), one line."""
    value = one_line(text).replace("|", "\\|")
    fence = "`" * (max((len(run) for run in re.findall("`+", value)), default=0) + 1)
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"
