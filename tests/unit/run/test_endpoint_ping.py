"""The pre-flight's one-token completion against scripted model servers on loopback (standard
library, started here): what each kind of trouble reads like, the CA bundle and proxy the
containers get, and one request per endpoint and model."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_gaia2.run.endpoints import Endpoint, ping
from pytest_gaia2.run.preflight import PreflightOutcome, _ping_endpoints

SERVED = ("served-model", "other-model")
KEY = "sk-test-right"


class ModelServer:
    """An OpenAI-compatible server: /v1/models lists SERVED; /v1/chat/completions answers a
    completion for a served model and the right key, else 401 or 404 as real servers do."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                outer.requests.append(("GET", self.path, {}))
                self._answer(200, {"object": "list", "data": [{"id": model} for model in SERVED]})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(("POST", self.path, body))
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    self._answer(401, {"error": {"message": "Incorrect API key provided: sk-te****"}})
                elif body.get("model") not in SERVED:
                    self._answer(404, {"error": {"message": f"The model `{body.get('model')}` does not exist"}})
                else:
                    self._answer(200, {"choices": [{"message": {"role": "assistant", "content": "p"}}]})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def url(self, scheme: str = "http", host: str = "127.0.0.1") -> str:
        return f"{scheme}://{host}:{self.port}/v1"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[ModelServer]:
    running = ModelServer()
    yield running
    running.close()


def _endpoint(url: str, model: str = "served-model", key: str = KEY, role: str = "agent") -> Endpoint:
    return Endpoint(role, url, model, key, "--gaia2-base-url", "--gaia2-model", "OPENAI_API_KEY")


def _ping(endpoint: Endpoint, **kwargs: Any):  # noqa: ANN202
    return ping(endpoint, proxy_env=kwargs.get("proxy_env", {}), ca_bundle=kwargs.get("ca_bundle"))


def test_a_served_model_and_the_right_key_get_a_one_token_completion(server: ModelServer) -> None:
    answer = _ping(_endpoint(server.url()))
    assert answer.ok and "completion came back" in answer.line
    method, path, body = server.requests[-1]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert body["model"] == "served-model" and body["max_tokens"] == 1


def test_a_wrong_model_id_names_the_ids_the_server_lists(server: ModelServer) -> None:
    answer = _ping(_endpoint(server.url(), model="served-model-v2"))
    assert not answer.ok and answer.fatal
    assert f"agent endpoint 127.0.0.1:{server.port} (model 'served-model-v2')" in answer.line
    assert "does not serve this model id (HTTP 404); it lists: served-model, other-model" in answer.line
    assert "set --gaia2-model to one of them exactly" in answer.line
    assert "\n" not in answer.line


def test_a_refused_key_says_which_variable_and_never_the_server_text(server: ModelServer) -> None:
    answer = _ping(_endpoint(server.url(), key="sk-test-wrong"))
    assert not answer.ok and answer.fatal
    assert answer.line.endswith("the key was refused (HTTP 401); check the variable OPENAI_API_KEY names")
    assert "Incorrect" not in answer.line and "sk-test" not in answer.line


def test_a_refused_connection_is_one_line() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    answer = _ping(_endpoint(f"http://127.0.0.1:{port}/v1"))
    assert not answer.ok and answer.fatal
    assert answer.line == (
        f"agent endpoint 127.0.0.1:{port} (model 'served-model'): connection refused (is the server up? --gaia2-base-url)"
    )


def test_host_docker_internal_is_asked_on_this_host(server: ModelServer) -> None:
    answer = _ping(_endpoint(server.url(host="host.docker.internal")))
    assert answer.ok, answer.line
    assert f"host.docker.internal:{server.port}" in answer.line


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
        + ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_tls_interception_is_named_and_the_containers_ca_bundle_fixes_it(certificate: tuple[Path, Path]) -> None:
    cert, key = certificate
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    running = ModelServer(tls=context)
    try:
        refused = _ping(_endpoint(running.url("https")))
        assert not refused.ok and refused.fatal
        assert "TLS failed (SSLCertVerificationError)" in refused.line and "GAIA2_CA_BUNDLE" in refused.line
        assert _ping(_endpoint(running.url("https")), ca_bundle=cert).ok
    finally:
        running.close()


def test_the_containers_proxy_carries_the_ping_unless_no_proxy_names_the_host(server: ModelServer) -> None:
    proxy = {"http_proxy": f"http://127.0.0.1:{server.port}"}
    answer = _ping(_endpoint("http://model.invalid:9/v1"), proxy_env=proxy)
    assert answer.ok, answer.line
    assert server.requests[-1][1] == "http://model.invalid:9/v1/chat/completions"  # the proxy's request line
    bypassed = _ping(_endpoint("http://model.invalid:9/v1"), proxy_env={**proxy, "NO_PROXY": "model.invalid"})
    assert not bypassed.ok and "does not resolve" in bypassed.line


class _Settings:
    """The fields of RunSettings the pre-flight's endpoint check reads."""

    def __init__(self, url: str, judge_model: str) -> None:
        from pytest_gaia2.config.container_env import profile_for

        self.profile = profile_for("gaia2-hermes")
        self.base_url = url
        self.model = "served-model"
        self.agent_provider = "openai"
        self.judge_base_url = url
        self.judge_model = judge_model
        self.judge_provider = "openai"
        self.proxy_env = ()
        self.ca_bundle = None

        class Secrets:
            agent_key = judge_key = KEY
            agent_key_source = judge_key_source = "OPENAI_API_KEY"

        self.secrets = Secrets()


def test_agent_and_judge_on_one_endpoint_and_model_are_asked_once(server: ModelServer) -> None:
    outcome = PreflightOutcome()
    assert _ping_endpoints(_Settings(server.url(), "served-model"), outcome) == []  # type: ignore[arg-type]
    assert [request[0] for request in server.requests] == ["POST"]
    assert outcome.ok and len(outcome.lines) == 1


def test_every_failing_endpoint_is_its_own_line(server: ModelServer) -> None:
    outcome = PreflightOutcome()
    failed = _ping_endpoints(_Settings(server.url(), "judge-typo"), outcome)  # type: ignore[arg-type]
    assert len(failed) == 1 and failed[0].startswith("judge endpoint") and "--gaia2-judge-model" in failed[0]
    assert not outcome.ok and any("[ok] agent endpoint" in line for line in outcome.lines)
