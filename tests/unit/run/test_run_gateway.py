"""One run's model gateway from its plan to its stop: a cap that needs it is refused when it is off,
an off gateway starts nothing, a started one listens on this host's loopback when the engine does
not answer, hands its access on, and stops with the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_gateway_plan import hermes

from pytest_gaia2.config import options
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.engine.spec import EngineSpec
from pytest_gaia2.run.run_gateway import RunGateway

DOWN = EngineSpec(url="unix:///nonexistent/gaia2-engine.sock")


def engines() -> EnginePool:
    return EnginePool.of_process([DOWN], {}, workers=1, distributed=False, run_id="r", worker="main", owner_pid=1)


def started(gateway: RunGateway, tmp_path: Path, values: options.Options, pool: EnginePool) -> str | None:
    return gateway.start(tmp_path, values, hermes(tmp_path), engines=pool, path=lambda raw: tmp_path / raw,
                         workers=1, redact=lambda text: text)


@pytest.mark.parametrize("cli", [{"scenario_cap": "0.5"}, {"scenario_token_cap": "10"}])
def test_a_cap_without_the_gateway_is_refused_saying_why_it_is_off(tmp_path: Path, cli: dict[str, Any]) -> None:
    gateway = RunGateway(None)
    with pytest.raises(OptionError, match=r"needs the model gateway, which is off for this run \(.*environment"):
        gateway.plan(hermes(tmp_path), options.resolve({"gateway": "off", **cli}, {}, {}))


def test_an_off_gateway_starts_nothing_and_asks_no_engine(tmp_path: Path) -> None:
    values = options.resolve({"gateway": "off"}, {}, {})
    gateway, pool = RunGateway(None), engines()
    assert gateway.plan(hermes(tmp_path), values) == gateway.notes and gateway.notes
    assert started(gateway, tmp_path, values, pool) is None and not pool.connected
    assert (gateway.port, gateway.client(), gateway.fact()["on"]) == (None, None, False)
    gateway.stop()


def test_a_worker_asks_the_gateway_it_was_handed(tmp_path: Path) -> None:
    access = {"admin": "http://127.0.0.1:1/admin", "secret": "s", "urls": {"agent": "http://x/agent"}}
    client = RunGateway(access).client()
    assert client is not None and (client.admin, client.urls) == (access["admin"], access["urls"])


def test_a_started_gateway_listens_on_loopback_hands_its_access_on_and_stops(tmp_path: Path) -> None:
    values = options.resolve({}, {}, {})
    gateway = RunGateway(None)
    gateway.plan(hermes(tmp_path), values)
    assert gateway.fact() == {"on": True, "routes": ["agent", "judge"], "off": None}
    note = started(gateway, tmp_path, values, engines())
    try:
        assert gateway.port and note is not None and note.startswith(f"model gateway on at 127.0.0.1:{gateway.port}")
        assert gateway.access is not None and set(gateway.access["urls"]) == {"agent", "judge"}
    finally:
        gateway.stop()
    assert gateway.gateway is None and gateway.port is None
