"""gaia2-runner's cluster TOML as a team brings it: an Apptainer runtime and a shard, run on the
engine, serially and under xdist; the replacement is said under ``-q`` and kept in the run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gaia2_testing import SHIPPED, gaia2_containers, results_of, run_folder, run_id_of, run_pytest

SEARCH_IDS = sorted(path.stem for path in (SHIPPED / "search").glob("*.json"))
REPLACED = (
    "gaia2: [agent].runtime = 'apptainer' was replaced: the run used the container engine's API (Docker or Podman)"
)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_an_apptainer_shard_config_runs_on_the_engine_and_says_what_it_replaced(
    workers: list[str], tmp_path: Path
) -> None:
    (tmp_path / "eval.toml").write_text(
        f"""
[target]
dataset_root = "{SHIPPED}"
splits = ["search"]

[agent]
runtime = "apptainer"
image_sif = "/scratch/gaia2-oracle.sif"

[run]
timeout = 600
shard_id = 1
num_shards = 2
""",
        encoding="utf-8",
    )
    result = run_pytest(tmp_path, *workers, "-q", "--gaia2-config=eval.toml")
    assert result.ret == 0, "\n".join(result.outlines + result.errlines)
    assert REPLACED in result.outlines
    assert any(
        line.startswith("gaia2: [agent].image_sif = '/scratch/gaia2-oracle.sif' was replaced")
        for line in result.outlines
    )
    output = tmp_path / "out"
    assert gaia2_containers(run_id_of(output)) == []
    ran = sorted(record["scenario_id"] for record in results_of(output))
    assert len(ran) == len(SEARCH_IDS) // 2 and set(ran) < set(SEARCH_IDS)  # shard 2 of 2: half of the split
    config = json.loads((run_folder(output) / "run_config.json").read_text(encoding="utf-8"))
    assert config["selection"]["shard"] == "2/2"
    assert [entry["key"] for entry in config["upstream_config"]["replaced"]] == ["[agent].runtime", "[agent].image_sif"]
    assert config["upstream_config"]["file"] == str(tmp_path / "eval.toml")
