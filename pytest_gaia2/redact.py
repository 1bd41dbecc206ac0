"""Keeping secret values (API keys, tokens) out of everything a run writes or logs.

The plugin builds one :class:`Redactor` per run from the values it resolved; there is no
module-level registry, so two runs in one process (pytester) never share secrets.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Iterable, Mapping

MASK = "***"
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``, ``none``) would mask ordinary text everywhere."""

_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    """Whether a variable NAME suggests its value is a secret (``*_API_KEY``, ``*_TOKEN``, ...)."""
    return bool(_SECRET_NAME.search(name))


def secret_values(env: Mapping[str, str]) -> set[str]:
    """The values of every variable in ``env`` whose name looks secret."""
    return {value.strip() for name, value in env.items() if value and looks_secret(name)}


class Redactor:
    """Replaces every known secret value with ``***``, longest first, in one regex pass."""

    def __init__(self, values: Iterable[str]) -> None:
        candidates = {value for value in values if value and len(value) >= MIN_SECRET_LENGTH}
        # Longest first so a secret that contains another is masked whole, not in pieces.
        ordered = sorted(candidates, key=lambda value: (-len(value), value))
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        encoded = [value.encode("utf-8") for value in ordered]
        self._bytes_pattern = re.compile(b"|".join(map(re.escape, encoded))) if encoded else None
        self.longest = max(map(len, encoded), default=0)
        """Bytes of the longest secret: how much a chunked writer must hold back between chunks."""

    def redact(self, text: str) -> str:
        """``text`` with every secret replaced by ``***``."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(MASK, text)

    def redact_bytes(self, data: bytes) -> bytes:
        """``data`` with every secret's UTF-8 bytes replaced: files copied out of a container."""
        if self._bytes_pattern is None or not data:
            return data
        return self._bytes_pattern.sub(MASK.encode(), data)

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
