"""Several engines, as pure logic: URL forms, capacity, which worker gets which engine, the
warnings, the hand-over to workers, and the exec adapter client's reading of curl's output."""

from __future__ import annotations

from collections import Counter

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.engine import adapter
from pytest_gaia2.engine import spec as engines
from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.engine.spec import EngineSpec, in_use, parse, slots, spec_for

A = EngineSpec("unix:///var/run/docker.sock", 1)
B = EngineSpec("unix:///var/run/gaia2-docker2.sock", 1)


@pytest.mark.parametrize(("raw", "url", "capacity", "reach", "local"), [
    ("unix:///var/run/docker.sock", "unix:///var/run/docker.sock", 1, "ports", True),
    ("unix:///run/d.sock#4", "unix:///run/d.sock", 4, "ports", True),
    ("unix:///run/d.sock#2,api", "unix:///run/d.sock", 2, "api", True),
    ("unix:///run/d.sock#api", "unix:///run/d.sock", 1, "api", True),
    ("tcp://127.0.0.1:2375", "tcp://127.0.0.1:2375", 1, "ports", True),
    ("tcp://localhost:2376#3", "tcp://localhost:2376", 3, "ports", True),
    ("tcp://[::1]:2375", "tcp://[::1]:2375", 1, "ports", True),
    ("tcp://build-7.example.com:2376#8", "tcp://build-7.example.com:2376", 8, "api", False),
    ("tcp://10.0.0.5:2375#2,ports", "tcp://10.0.0.5:2375", 2, "ports", False),
    ("ssh://ci@runner.example.com", "ssh://ci@runner.example.com", 1, "api", False),
    ("ssh://ci@runner.example.com:2222/#2", "ssh://ci@runner.example.com:2222", 2, "api", False),
    ("ssh://localhost", "ssh://localhost", 1, "ports", True),
])
def test_engine_urls(raw: str, url: str, capacity: int, reach: str, local: bool) -> None:
    spec = parse(raw)
    assert (spec.url, spec.capacity, spec.reach, spec.local) == (url, capacity, reach, local)
    assert EngineSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(("raw", "why"), [
    ("http://host:2375", "expected unix:///path.sock"),
    ("/var/run/docker.sock", "expected unix:///path.sock"),
    ("unix://var/run/docker.sock", "three slashes"),
    ("tcp://host", "needs a port"),
    ("tcp://host:99999", "port is not a number"),
    ("tcp://host:http", "port is not a number"),
    ("tcp://me@host:2375", "no user"),
    ("tcp://host:2375/v1.41", "no path"),
    ("tcp://ho$t:2375", "plain host"),
    ("ssh://me:hunter2@host", "password"),
    ("ssh://me@host?x=1", "query"),
    ("ssh://m'e@host", "plain name"),
    ("unix:///d.sock#0", "capacity"),
    ("unix:///d.sock#-1", "capacity"),
    ("unix:///d.sock#two", "capacity"),
    ("unix:///d.sock#2,3", "capacity"),
    ("unix:///d.sock#api,ports", "capacity"),
    ("unix:///d.sock#", "capacity"),
])
def test_bad_engine_urls_are_refused_naming_the_option(raw: str, why: str) -> None:
    with pytest.raises(OptionError) as raised:
        options.resolve({"engine": ["unix:///var/run/docker.sock", raw]}, {}, {})
    message = str(raised.value)
    assert message.startswith("--gaia2-engine ") and why in message, message
    assert "hunter2" not in message


def test_the_ini_lines_and_the_default() -> None:
    assert options.resolve({}, {}, {}).engine == ()
    assert options.resolve({}, {}, {"engine": [" unix:///a.sock#2 ", "ssh://h"]}).engine == (
        EngineSpec("unix:///a.sock", 2), EngineSpec("ssh://h"))


@pytest.mark.parametrize(("capacities", "expected"), [
    ((1, 1), [0, 1]),
    ((2, 2), [0, 1, 0, 1]),
    ((3, 1), [0, 0, 1, 0]),
    ((1, 2), [1, 0, 1]),
    ((2, 1, 1), [0, 1, 2, 0]),
])
def test_slots_follow_capacity_and_interleave(capacities: tuple[int, ...], expected: list[int]) -> None:
    specs = [EngineSpec(f"unix:///e{i}.sock", c) for i, c in enumerate(capacities)]
    order = slots(specs)
    assert order == expected
    assert Counter(order) == {i: c for i, c in enumerate(capacities)}


def test_workers_get_engines_by_capacity_deterministically() -> None:
    big, small = EngineSpec("unix:///big.sock", 3), EngineSpec("unix:///small.sock", 1)
    chosen = [spec_for([big, small], f"gw{k}") for k in range(8)]
    assert Counter(chosen) == {big: 6, small: 2}  # beyond the total, the same round robin again
    assert chosen == [spec_for([big, small], f"gw{k}") for k in range(8)]
    assert spec_for([A, B], "gw0") == A and spec_for([A, B], "gw1") == B
    assert spec_for([A, B], "main") == A  # a serial run: the first


def test_engines_in_use_and_warnings() -> None:
    assert in_use([A, B], 2, distributed=True) == [A, B]
    assert in_use([A, B], 1, distributed=True) == [A]
    assert in_use([A, B], 4, distributed=False) == [A]
    assert engines.notes([A], 8, True) == []
    assert engines.notes([A, B], 2, True) == []
    [serial] = engines.notes([A, B], 1, False)
    assert "serial" in serial and A.url in serial
    [over] = engines.notes([A, B], 3, True)
    assert "-n 3" in over and "total capacity 2" in over


def test_the_controller_hands_each_worker_its_engine() -> None:
    controller = EnginePool.of_process((A, B), {}, workers=2, distributed=True, run_id="r", worker="main", owner_pid=1)
    assert controller.specs == [A, B]
    for worker, spec in (("gw0", A), ("gw1", B)):
        worker_input = {"workerid": worker, **controller.handover(worker)}
        pool = EnginePool.of_process((A, B), worker_input, workers=2, distributed=True, run_id="r",
                                     worker=worker, owner_pid=1)
        assert pool.specs == [spec]
    assert controller.facts() == [
        {"address": A.url, "capacity": 1, "reach": "ports", "workers": ["gw0"]},
        {"address": B.url, "capacity": 1, "reach": "ports", "workers": ["gw1"]},
    ]
    default = EnginePool.of_process((), {}, workers=1, distributed=False, run_id="r", worker="main", owner_pid=1)
    assert default.specs == [EngineSpec()] and default.specs[0].reach == "ports"
    assert not default.connected


class _Curl:
    """What ``Container.exec`` returns for curl run inside: (exit code, output)."""

    def __init__(self, *answers: tuple[int, str]) -> None:
        self.answers = list(answers)
        self.commands: list[list[str]] = []

    def exec(self, cmd: list[str], user: str = "") -> tuple[int, str]:
        self.commands.append(cmd)
        return self.answers.pop(0)


def test_the_exec_client_reads_curl_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapter, "EXEC_SPACING", 0.0)
    curl = _Curl((0, '{"connected": true}\n200'), (0, '{"ok": true}\n200'), (0, '{"error": "x"}\n503'),
                 (0, "<html>\n502"), (7, "\n000"), (0, '{"status": "running"}\n200'))
    client = adapter.ExecAdapterClient(curl, 8090)  # type: ignore[arg-type]
    assert client.connected()
    client.notify("find the answer")
    assert curl.commands[1][-2:] == ["--data-binary", '{"message": "find the answer"}']
    assert "http://127.0.0.1:8090/notify" in curl.commands[1] and "POST" in curl.commands[1]
    for expected in ("HTTP 503", "not JSON", "exited with 7"):
        with pytest.raises(adapter.AdapterUnavailable, match=expected):
            client.status()
    assert client.status() == {"status": "running"}
