"""The engine's container list, read as it comes (one list call, no inspect per container)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_gaia2.engine.client import RUN_LABEL, Engine, Listed
from pytest_gaia2.engine.errors import EngineError


@given(st.dictionaries(st.sampled_from(["Id", "Names", "Labels", "State"]),
                       st.one_of(st.none(), st.text(max_size=5), st.lists(st.text(max_size=5), max_size=2),
                                 st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2))))
def test_a_listed_container_is_read_from_any_list_entry(entry: dict[str, Any]) -> None:
    """The engine's list entry becomes strings only, whatever its shape (no inspect call to fill gaps)."""
    listed = Listed.of(entry)
    assert isinstance(listed.id, str) and isinstance(listed.name, str)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in listed.labels.items())
    if isinstance(entry.get("Names"), list) and entry["Names"]:
        assert listed.name == entry["Names"][0].lstrip("/")


def test_a_listed_container_keeps_its_name_and_labels() -> None:
    entry = {"Id": "abc", "Names": ["/gaia2-x"], "Labels": {RUN_LABEL: "r1"}}
    assert Listed.of(entry) == Listed("abc", "gaia2-x", {RUN_LABEL: "r1"})


def test_an_engine_that_stops_answering_makes_listing_an_engine_error(tmp_path: Path) -> None:
    """A list call to an engine gone mid-run (its socket refuses) is an EngineError naming the
    address, which pre-flight turns into a usage error, not a traceback from the SDK."""
    import docker

    socket_path = tmp_path / "gone.sock"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(socket_path))  # bound but never listening: every connect is refused
        client = docker.DockerClient(base_url=f"unix://{socket_path}", version="1.41", timeout=5)
        engine = Engine(client, run_id="r1", worker="gw0", owner_pid=1, address=f"unix://{socket_path}")
        with pytest.raises(EngineError, match=f"could not list containers on unix://{socket_path}"):
            engine.containers()
        with pytest.raises(EngineError, match="could not list containers"):
            engine.reap_orphans(0, lambda pid: False)
        client.close()
