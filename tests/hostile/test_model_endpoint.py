"""The endpoint pre-flight against a hostile model server: one that drips its answer a byte at a
time, each byte well within the socket's timeout, is given up on after PING_SECONDS in all.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from pytest_gaia2.run import endpoints


@pytest.fixture
def dripping(request: pytest.FixtureRequest) -> Iterator[str]:
    """A model server on loopback that answers a byte every 0.2 s: of its head, or of a long body."""
    head_only = request.param == "head"
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)
                answer = b"HTTP/1.1 200 OK\r\nX-A: " + b"a" * 60_000 if head_only else b" " * 100_000
                if not head_only:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                for byte in answer:
                    if stop.wait(0.2):
                        break
                    try:
                        connection.sendall(bytes([byte]))
                    except OSError:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/v1"
    stop.set()
    server.close()


@pytest.mark.parametrize("dripping", ["head", "body"], indirect=True)
def test_the_ping_ends_on_a_server_that_drips_its_answer(dripping: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each byte comes well within the socket's timeout, which bounds one read only: the ping
    gives up after PING_SECONDS in all and says so, not after days."""
    monkeypatch.setattr(endpoints, "PING_SECONDS", 2.0)
    endpoint = endpoints.Endpoint("agent", dripping, "m", "sk-test", "--u", "--m", "--k")
    answers: list[endpoints.Answer] = []
    pinging = threading.Thread(
        target=lambda: answers.append(endpoints.ping(endpoint, proxy_env={}, ca_bundle=None)), daemon=True
    )
    pinging.start()
    pinging.join(6.0)  # so the test itself ends when the ping does not
    assert answers, "the ping still waits on the dripping server after 6 s"
    assert not answers[0].ok and answers[0].fatal and "no answer within 2 s" in answers[0].line
