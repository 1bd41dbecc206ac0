"""The Hugging Face scenario source, exercised with the real ``datasets`` loader on a local repo.

These machines cannot reach Hugging Face, so each test builds a small dataset repository
the way the hub lays one out (per-config parquet files and a README whose YAML front
matter declares the configs) and points ``source`` at it.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from pathlib import Path

import datasets
import pytest
from gaia2_testing import make_dataset_repo as make_repo

from pytest_gaia2.config import splits
from pytest_gaia2.config.splits import SPLITS
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan import dataset
from pytest_gaia2.plan.dataset import DatasetError, materialise
from pytest_gaia2.plan.scenarios import discover

DATASET_ID = "test-org/tiny-gaia2"


def scenario_text(scenario_id: str, task: str) -> str:
    return json.dumps(
        {"metadata": {"definition": {"scenario_id": scenario_id, "duration": 60}}, "events": [], "task": task},
        ensure_ascii=False,
    )


ROWS = {
    "search": [
        ("scenario_universe_21_aaaaaa", scenario_text("scenario_universe_21_aaaaaa", "Trouve le café — 東京")),
        ("scenario_universe_22_bbbbbb", scenario_text("scenario_universe_22_bbbbbb", "find the flat")),
        ("scenario_universe_23_cccccc", scenario_text("scenario_universe_23_cccccc", "who called?")),
    ],
    "time": [
        ("scenario_universe_24_dddddd", scenario_text("scenario_universe_24_dddddd", "wait 5 minutes")),
        ("scenario_universe_25_eeeeee", scenario_text("scenario_universe_25_eeeeee", "at noon")),
    ],
}


@pytest.fixture(autouse=True)
def private_datasets_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The datasets library caches local repos by file name and size, across tests: keep it per test."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", ROWS)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def files_of(split_dir: Path) -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(split_dir.glob("[!.]*.json"))}


def expected_files(split: str) -> dict[str, str]:
    return {f"{sid}.json": text for sid, text in ROWS[split]}


def test_two_splits_are_materialised_in_upstream_layout(repo: Path, cache: Path) -> None:
    dirs = materialise(DATASET_ID, ["search", "time"], cache, source=str(repo))

    assert dirs == [cache / "test-org_tiny-gaia2" / "search", cache / "test-org_tiny-gaia2" / "time"]
    for split_dir in dirs:
        assert files_of(split_dir) == expected_files(split_dir.name)
        assert dataset.is_complete(split_dir)
        marker = dataset.read_marker(split_dir)
        assert marker is not None
        assert marker["rows"] == len(ROWS[split_dir.name])
        assert marker["dataset"] == DATASET_ID and marker["config"] == split_dir.name
        assert marker["fingerprint"]
    scenarios, errors = discover(dirs)
    assert errors == []
    assert [(s.split, s.scenario_id) for s in scenarios] == [
        ("search", sid) for sid, _ in ROWS["search"]
    ] + [("time", sid) for sid, _ in ROWS["time"]]


def test_files_are_utf8(repo: Path, cache: Path) -> None:
    (search,) = materialise(DATASET_ID, ["search"], cache, source=str(repo))
    raw = (search / "scenario_universe_21_aaaaaa.json").read_bytes()
    assert "Trouve le café — 東京".encode() in raw


def test_a_complete_cache_is_used_without_loading_anything(repo: Path, cache: Path, tmp_path: Path) -> None:
    first = materialise(DATASET_ID, ["search", "time"], cache, source=str(repo))
    before = {p: p.stat().st_mtime_ns for d in first for p in d.iterdir()}

    # A source that cannot load proves the loader is not called for complete splits.
    again = materialise(DATASET_ID, ["time", "search"], cache, source=str(tmp_path / "no-such-repo"))

    assert again == [first[1], first[0]]
    assert {p: p.stat().st_mtime_ns for d in first for p in d.iterdir()} == before


def _drop_one_file(split_dir: Path) -> None:
    sorted(split_dir.glob("scenario_*.json"))[0].unlink()


def _add_stray_file(split_dir: Path) -> None:
    (split_dir / "scenario_universe_99_stray.json").write_text("{}", encoding="utf-8")


def _remove_marker(split_dir: Path) -> None:
    (split_dir / dataset.MARKER).unlink()


def _truncate_marker(split_dir: Path) -> None:
    (split_dir / dataset.MARKER).write_text('{"rows": 3, "scenario_id', encoding="utf-8")


@pytest.mark.parametrize("damage", [_drop_one_file, _add_stray_file, _remove_marker, _truncate_marker])
def test_a_half_written_split_is_refused_then_repaired(damage, repo: Path, cache: Path, tmp_path: Path) -> None:
    search, time_ = materialise(DATASET_ID, ["search", "time"], cache, source=str(repo))
    damage(search)
    (search / ".scenario_universe_21_aaaaaa.json.123.tmp").write_text("{", encoding="utf-8")
    assert not dataset.is_complete(search)
    assert dataset.is_complete(time_)

    # Never taken as whole: with no way to load, the damaged split is an error ...
    with pytest.raises(DatasetError, match="'search'"):
        materialise(DATASET_ID, ["search", "time"], cache, source=str(tmp_path / "no-such-repo"))

    # ... and with the source back it is re-materialised to exactly the dataset's rows.
    materialise(DATASET_ID, ["search", "time"], cache, source=str(repo))
    assert dataset.is_complete(search)
    assert files_of(search) == expected_files("search")
    assert not list(search.glob(".*.tmp"))


def test_concurrent_workers_materialise_once(repo: Path, cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="pytest_gaia2.plan.dataset")
    results: list[list[Path]] = []
    barrier = threading.Barrier(4)

    def worker() -> None:
        barrier.wait()
        results.append(materialise(DATASET_ID, ["search", "time"], cache, source=str(repo)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(results) == 4 and all(r == results[0] for r in results)
    loads = [r for r in caplog.records if r.getMessage().startswith("materialised")]
    assert sorted(r.getMessage().split()[3].rstrip(":") for r in loads) == ["search", "time"]


def test_offline_missing_split_is_one_clear_error(
    repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub_id = "pytest-gaia2-tests/never-published"
    materialise(hub_id, ["time"], cache, source=str(repo))  # one split already cached
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # what an unreachable hub looks like

    assert materialise(hub_id, ["time"], cache) == [cache / "pytest-gaia2-tests_never-published" / "time"]
    with pytest.raises(DatasetError) as info:
        materialise(hub_id, ["time", "search"], cache)

    message = str(info.value)
    split_dir = cache / "pytest-gaia2-tests_never-published" / "search"
    for part in (hub_id, "'search'", str(split_dir), "could not be reached", "HF_DATASETS_OFFLINE",
                 dataset.CACHE_ENV, "--gaia2-scenarios", "--collect-only"):
        assert part in message
    assert "'time'" not in message
    assert isinstance(info.value, OptionError)  # pytest shows it as a usage error, not a traceback


def test_missing_datasets_package_names_the_extra(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(DatasetError, match=r"pytest-gaia2\[dataset\]"):
        materialise(DATASET_ID, ["search"], cache, source="unused")


def test_missing_package_does_not_matter_for_a_complete_cache(
    repo: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dirs = materialise(DATASET_ID, ["search"], cache, source=str(repo))
    monkeypatch.setitem(sys.modules, "datasets", None)
    assert materialise(DATASET_ID, ["search"], cache) == dirs


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ([("../escape", "{}")], "not a usable file name"),
        ([(".hidden", "{}")], "not a usable file name"),
        ([("scenario_a", "{}"), ("scenario_a", "{}")], "duplicate scenario_id 'scenario_a'"),
    ],
)
def test_unusable_rows_stop_the_download(rows, problem: str, tmp_path: Path, cache: Path) -> None:
    source = make_repo(tmp_path / "bad", {"search": rows})
    with pytest.raises(DatasetError, match=problem):
        materialise(DATASET_ID, ["search"], cache, source=str(source))
    assert not dataset.is_complete(cache / "test-org_tiny-gaia2" / "search")


def test_a_dataset_with_other_columns_is_named(tmp_path: Path, cache: Path) -> None:
    source = make_repo(tmp_path / "other", {"search": [("x", "{}")]}, columns=("id", "data"))
    with pytest.raises(DatasetError, match=r"missing \['scenario', 'scenario_id'\]"):
        materialise(DATASET_ID, ["search"], cache, source=str(source))


@pytest.mark.parametrize("bad", ["gaia2-cli", "a/b/c", "/abs/path", "../x"])
def test_dataset_ids_must_be_org_slash_name(bad: str, cache: Path) -> None:
    with pytest.raises(DatasetError, match="ORG/NAME"):
        materialise(bad, ["search"], cache)


def test_cache_root_follows_gaia2_hf_cache(tmp_path: Path) -> None:
    assert dataset.cache_root({dataset.CACHE_ENV: str(tmp_path)}) == tmp_path
    assert dataset.cache_root({}) == Path.home() / ".cache" / "gaia2" / "hf_datasets"


@pytest.mark.parametrize(
    ("spec", "names"),
    [
        (None, list(SPLITS)),
        ("", list(SPLITS)),
        ("all", list(SPLITS)),
        (" ALL ", list(SPLITS)),
        ("time, Search,time", ["time", "search"]),
        (["ambiguity"], ["ambiguity"]),
    ],
)
def test_split_names(spec, names: list[str]) -> None:
    assert splits.split_names(spec) == names


@pytest.mark.parametrize(
    ("spec", "named"),
    [("search,serach", "'serach'"), ("all,search", "'all'"), ("train", "'train'")],
)
def test_split_names_rejects_bad_values_by_name(spec: str, named: str) -> None:
    with pytest.raises(OptionError, match=f"--gaia2-splits: .*{named}"):
        splits.split_names(spec)


def test_a_language_loads_its_own_configs_into_bare_split_folders(tmp_path: Path, cache: Path) -> None:
    repo = make_repo(tmp_path / "multilingual", {f"spa_Latn_{split}": rows for split, rows in ROWS.items()})
    dirs = materialise(DATASET_ID, ["search"], cache, source=str(repo), language="spa_Latn")
    assert dirs == [cache / "test-org_tiny-gaia2_spa_Latn" / "search"]
    assert files_of(dirs[0]) == expected_files("search")
    marker = dataset.read_marker(dirs[0])
    assert marker is not None and marker["config"] == "spa_Latn_search"
    with pytest.raises(DatasetError, match="split 'spa_Latn_execution' could not be loaded"):
        materialise(DATASET_ID, ["execution"], cache, source=str(repo), language="spa_Latn")


def test_a_split_cached_from_another_revision_is_loaded_again(repo: Path, cache: Path) -> None:
    [split_dir] = materialise(DATASET_ID, ["search"], cache, source=str(repo), revision="v1")
    assert dataset.is_complete(split_dir, "v1") and not dataset.is_complete(split_dir, "v2")
    materialise(DATASET_ID, ["search"], cache, source=str(repo), revision="v2")
    marker = dataset.read_marker(split_dir)
    assert marker is not None and marker["revision"] == "v2"
    assert dataset.is_complete(split_dir) and files_of(split_dir) == expected_files("search")


@pytest.mark.parametrize(
    ("language", "spec", "expected"),
    [("spa_Latn", None, ["execution", "search", "adaptability", "ambiguity"]), ("spa_Latn", "all", None),
     (None, None, list(SPLITS))],
)
def test_a_language_has_no_time_split(language: str | None, spec: str | None, expected: list[str] | None) -> None:
    assert splits.split_names(spec, language=language) == (expected or list(splits.TRANSLATED_SPLITS))
    if language:
        with pytest.raises(OptionError, match="split 'time' is not available in language 'spa_Latn'"):
            splits.split_names("search,time", language=language)
