"""The package's templates (``report/templates``): the jinja2 environment every page is rendered
with, its compiled templates kept in the user's cache folder so that a fresh process loads them
instead of compiling them again (every page's templates: 0.12 CPU-s compiled, 0.004 s loaded).

This module imports jinja2: import it where a page is rendered, not at a module's top, so that a
process that renders nothing never loads jinja2.

Cached bytecode is code this process runs, so it is kept only in a folder that is the user's own
(:func:`pytest_gaia2.store.user_cache.private_folder`); anywhere else, and when the cache cannot be
read or written, the page is compiled from source: the same bytes, only slower. jinja2 keys each
file by the template's name and the checksum of its source, so a changed template is compiled again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from jinja2.bccache import Bucket

from pytest_gaia2.store.user_cache import private_folder

TEMPLATES = Path(__file__).with_name("templates")
CACHE_FOLDER = "templates"
"""The compiled templates' folder in the user's cache folder."""
ESCAPED = ("html.j2",)
NOT_ESCAPED = ("md.j2",)
"""Autoescaping by the template's kind: on for HTML and for any other (and for a template from a
string: the fallback page), off for Markdown, which puts free text in code spans instead."""


@dataclass(frozen=True)
class Kind:
    """How a kind of output is compiled. The compiled code depends on it, so the cache keeps one
    copy of a template per kind (wire.html.j2 is included in report.html and in index.html)."""

    name: str
    keep_trailing_newline: bool


DOCUMENT = Kind("document", keep_trailing_newline=True)
"""report.md and report.html: files ending with their last line's newline."""
PAGE = Kind("page", keep_trailing_newline=False)
"""trace.html, index.html and the output folder's index.html of runs."""


class _Cache(jinja2.FileSystemBytecodeCache):
    """jinja2's file cache, except that a file that cannot be read or written is no error: the
    template is compiled (and the page rendered) as if there were no cache."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # noqa: BLE001 - an unreadable or cut file (jinja2 lets pickle's errors out) is compiled again
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError:
            pass  # a read-only or full cache folder costs the next process the compile, nothing more


def _settings(kind: Kind) -> dict[str, Any]:
    return {"trim_blocks": True, "lstrip_blocks": True, "keep_trailing_newline": kind.keep_trailing_newline}


def _cache(kind: Kind) -> _Cache | None:
    """The bytecode cache, its files named by the kind and a hash of everything the compiled code
    depends on besides the source (settings, escaping rule, jinja2's version)."""
    folder = private_folder(CACHE_FOLDER)
    if folder is None:
        return None
    depends = repr((sorted(_settings(kind).items()), ESCAPED, NOT_ESCAPED, jinja2.__version__))
    return _Cache(str(folder), f"{kind.name}-{hashlib.sha256(depends.encode()).hexdigest()[:16]}-%s.cache")


def environment(
    kind: Kind, filters: Mapping[str, Callable[..., Any]], templates: Path = TEMPLATES
) -> jinja2.Environment:
    """An environment over ``templates`` for pages of ``kind``, with the caller's ``filters``.
    Undefined names raise; blocks are trimmed. Build it once per process where pages repeat:
    it keeps the templates it has loaded."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(templates),
        undefined=jinja2.StrictUndefined,
        autoescape=jinja2.select_autoescape(
            enabled_extensions=ESCAPED, disabled_extensions=NOT_ESCAPED, default_for_string=True, default=True
        ),
        bytecode_cache=_cache(kind),
        **_settings(kind),
    )
    env.filters.update(filters)
    return env
