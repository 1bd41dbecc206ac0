"""How the container engine fails: the plugin's own errors, and which SDK exceptions mean one.

Shared by :mod:`engine` and :mod:`container`. ``docker`` and ``requests`` are imported only
inside :func:`sdk_errors`, when a failure is being caught, so importing this costs nothing.
"""

from __future__ import annotations

LOG_TAIL_LINES = 20


class EngineError(Exception):
    """The engine cannot be reached or refused an operation."""


class ContainerExited(EngineError):
    """The container's main process ended (a wrong image, a missing entrypoint script, an
    entrypoint that exits): raised by :meth:`Engine.launch` when it ended before its port was
    published, returned by :meth:`Container.exited` after that. ``logs`` is the whole output."""

    def __init__(self, image: str, exit_code: int | None, logs: str) -> None:
        self.exit_code = exit_code
        self.logs = logs
        self.tail = "\n".join(logs.rstrip().splitlines()[-LOG_TAIL_LINES:])
        super().__init__(
            f"the main process of the container ({image}) exited with code {exit_code}; "
            f"last log lines:\n{self.tail or '(no output)'}"
        )


def sdk_errors() -> tuple[type[Exception], ...]:
    """What the SDK raises when the engine or its connection fails (evaluated only on failure);
    OSError too: over ssh:// the transport raises BrokenPipeError when a stream closes."""
    import docker.errors
    import requests

    return docker.errors.DockerException, requests.RequestException, OSError
