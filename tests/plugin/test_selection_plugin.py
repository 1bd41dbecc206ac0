"""Choosing scenarios through the plugin: seeded stratified samples, manifests, prefixes, splits,
id files and the Hugging Face dataset source, as a user drives them from the command line."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import datasets
import huggingface_hub.constants
import pytest
from gaia2_testing import DATA, SHIPPED, make_dataset_repo, run_folder

from pytest_gaia2.plan import dataset

MANY = DATA / "scenarios" / "many"
ITEM = re.compile(r"gaia2/([^:\s]+)::test_scenario\[([^\]]+)\]")


def collected(text: str) -> list[str]:
    """The ``<split>/<id>`` of every scenario item named in ``text`` (pytest's output), in order."""
    return [f"{split}/{scenario}" for split, scenario in ITEM.findall(text)]


def universe(test_id: str) -> str:
    return re.search(r"universe_\d+", test_id).group(0)  # type: ignore[union-attr]


def collect(check_gaia2, *args: str, output: str = "out") -> list[str]:
    """The scenario ids a collection in this process chooses (no engine, no subprocess)."""
    result = check_gaia2("--collect-only", "-q", *args, output=output)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    return collected(result.stdout.str())


def test_sample_is_stratified_by_split_and_universe(check_gaia2) -> None:
    by_split = collect(check_gaia2, f"--gaia2-scenarios={SHIPPED}", "--gaia2-sample=5", "--gaia2-seed=1")
    # 12 shipped scenarios, search has 4, every other split 2: 5 seats are one per split.
    assert sorted(test_id.split("/")[0] for test_id in by_split) == [
        "adaptability", "ambiguity", "execution", "search", "time"]
    by_universe = collect(check_gaia2, f"--gaia2-scenarios={MANY}", "--gaia2-sample=10", "--gaia2-seed=1")
    # 40 search scenarios, 4 in each of 10 universes: 10 seats are one per universe.
    assert Counter(map(universe, by_universe)) == {f"universe_{u}": 1 for u in range(21, 31)}


def test_sample_is_reproducible_and_depends_on_the_seed(check_gaia2) -> None:
    args = (f"--gaia2-scenarios={MANY}", f"--gaia2-scenarios={SHIPPED}", "--gaia2-sample=12")
    first = collect(check_gaia2, *args, "--gaia2-seed=7", output="a")
    again = collect(check_gaia2, *args, "--gaia2-seed=7", output="b")
    assert len(first) == 12 and first == again
    others = {tuple(collect(check_gaia2, *args, f"--gaia2-seed={seed}", output=f"s{seed}")) for seed in (8, 9)}
    assert others - {tuple(first)}, "three seeds chose the same sample"


SKIP_ALL_PLUGIN = '''
import pytest

def pytest_collection_finish(session):
    """Each process writes what it collected, so the test can compare them."""
    worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
    with open(f"collected-{worker}.txt", "w", encoding="utf-8") as handle:
        handle.write("\\n".join(item.nodeid for item in session.items))

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    pytest.skip("collection is what this run is about")  # before any fixture starts a container
'''


def test_sample_is_identical_on_two_workers(pytester: pytest.Pytester, run_gaia2, check_gaia2) -> None:
    """xdist stops a run whose workers collected different items; this one runs to the end.

    A plugin rather than a conftest skips the items: the scenario items live outside the
    test folder, where its conftest hooks do not reach."""
    pytester.makepyfile(skip_all=SKIP_ALL_PLUGIN)
    args = (f"--gaia2-scenarios={MANY}", f"--gaia2-scenarios={SHIPPED}", "--gaia2-sample=12", "--gaia2-seed=3")
    result = run_gaia2("-n", "2", "-p", "skip_all", *args)
    result.assert_outcomes(skipped=12)
    per_worker = {path.name: path.read_text(encoding="utf-8") for path in pytester.path.glob("collected-gw*.txt")}
    assert sorted(per_worker) == ["collected-gw0.txt", "collected-gw1.txt"]
    assert len(set(per_worker.values())) == 1
    single = collect(check_gaia2, *args, output="single")
    assert collected(per_worker["collected-gw0.txt"]) == single
    manifest = json.loads((run_folder(pytester.path / "out") / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(f"{s}/{i}" for s, ids in manifest["splits"].items() for i in ids) == sorted(single)


def test_sample_is_drawn_after_k_and_m(pytester: pytest.Pytester, run_gaia2_inprocess, check_gaia2) -> None:
    """-m search_split --gaia2-sample 4 runs 4 search scenarios; -k universe_21 with a sample as
    large as what matches runs all of them, and the manifest lists exactly what was planned."""
    pytester.makepyfile(skip_all=SKIP_ALL_PLUGIN)
    pytester.syspathinsert()  # -p skip_all, in this process
    roots = (f"--gaia2-scenarios={MANY}", f"--gaia2-scenarios={SHIPPED}")
    by_mark = collect(check_gaia2, *roots, "-m", "universe_22", "--gaia2-sample=3", "--gaia2-seed=5")
    assert len(by_mark) == 3 and all("universe_22" in test_id for test_id in by_mark)
    matching = [p for root in (MANY, SHIPPED) for p in root.rglob("*.json") if "universe_21_" in p.name]
    everything = collect(check_gaia2, *roots, "-k", "universe_21", f"--gaia2-sample={len(matching)}", output="k")
    assert len(everything) == len(matching) and all("universe_21" in test_id for test_id in everything)
    result = run_gaia2_inprocess("-p", "skip_all", *roots, "-m", "search_split", "--gaia2-sample=4", output="run")
    result.assert_outcomes(skipped=4)
    manifest = json.loads((run_folder(pytester.path / "run") / "manifest.json").read_text(encoding="utf-8"))
    assert len(manifest["splits"]["search"]) == 4 and set(manifest["splits"]) == {"search"}


def test_manifest_round_trips(pytester: pytest.Pytester, run_gaia2_inprocess, check_gaia2) -> None:
    pytester.makepyfile(skip_all=SKIP_ALL_PLUGIN)
    pytester.syspathinsert()  # -p skip_all, in this process
    roots = (f"--gaia2-scenarios={MANY}", f"--gaia2-scenarios={SHIPPED}")
    sampled = collect(check_gaia2, *roots, "--gaia2-sample=9", "--gaia2-seed=11", output="first")
    run_gaia2_inprocess("-p", "skip_all", *roots, "--gaia2-sample=9", "--gaia2-seed=11", output="first").assert_outcomes(skipped=9)
    manifest = run_folder(pytester.path / "first") / "manifest.json"
    assert set(json.loads(manifest.read_text(encoding="utf-8"))) == {"splits"}  # upstream's format
    again = collect(check_gaia2, *roots, f"--gaia2-subset={manifest}", output="second")
    assert sorted(again) == sorted(sampled)  # the plan; each run starts it in its own seeded order


def test_first_n_is_a_prefix_and_warns_about_universe_bias(pytester: pytest.Pytester, run_gaia2_inprocess) -> None:
    pytester.makepyfile(skip_all=SKIP_ALL_PLUGIN)
    pytester.syspathinsert()  # -p skip_all, in this process
    result = run_gaia2_inprocess("-p", "skip_all", "-v", f"--gaia2-scenarios={MANY}", "--gaia2-first-n=8")
    result.assert_outcomes(skipped=8)
    prefix = collected(result.stdout.str())
    assert Counter(map(universe, prefix)) == {"universe_21": 4, "universe_22": 4}
    result.stdout.fnmatch_lines(["gaia2: --gaia2-first-n takes the first N*universe*--gaia2-sample N*"])
    manifest = json.loads((run_folder(pytester.path / "out") / "manifest.json").read_text(encoding="utf-8"))
    assert sorted(f"search/{i}" for i in manifest["splits"]["search"]) == sorted(prefix)


def test_splits_option(check_gaia2) -> None:
    two = collect(check_gaia2, f"--gaia2-scenarios={SHIPPED}", "--gaia2-splits=time,execution")
    assert sorted(two) == sorted(f"{p.parent.name}/{p.stem}" for split in ("time", "execution")
                                 for p in (SHIPPED / split).glob("*.json"))
    assert len(collect(check_gaia2, f"--gaia2-scenarios={SHIPPED}", "--gaia2-splits=all")) == 12
    bad = check_gaia2("--collect-only", f"--gaia2-scenarios={SHIPPED}", "--gaia2-splits=serch")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--gaia2-splits: unknown split 'serch'*"])


def test_ids_file(pytester: pytest.Pytester, check_gaia2) -> None:
    wanted = ["search/scenario_universe_24_zqzvsf", "time/scenario_universe_26_quwx1e"]
    ids_file = pytester.path / "ids.txt"
    ids_file.write_text("# re-run these\nscenario_universe_24_zqzvsf\n\nscenario_universe_26_quwx1e  # flaky\n"
                        "scenario_universe_99_gone\n", encoding="utf-8")
    assert sorted(collect(check_gaia2, f"--gaia2-scenarios={SHIPPED}", f"--gaia2-ids-file={ids_file}")) == wanted
    result = check_gaia2("--collect-only", f"--gaia2-scenarios={SHIPPED}", f"--gaia2-ids-file={ids_file}")
    result.stdout.fnmatch_lines(["gaia2: 1 ids in ids.txt not found: scenario_universe_99_gone"])


DATASET_ID = "test-org/tiny-gaia2"
DATASET_SPLITS = ("search", "time")


@pytest.fixture
def dataset_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A complete local cache of a two-split dataset built from the shipped scenarios, as the
    plugin's own download would leave it; the runs below get it through ``$GAIA2_HF_CACHE``
    and may not reach the network."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-datasets-cache")
    configs = {split: [(p.stem, p.read_text(encoding="utf-8")) for p in sorted((SHIPPED / split).glob("*.json"))]
               for split in DATASET_SPLITS}
    repo = make_dataset_repo(tmp_path / "repo", configs)
    cache = tmp_path / "hf-cache"
    dataset.materialise(DATASET_ID, list(DATASET_SPLITS), cache, source=str(repo))
    monkeypatch.setenv(dataset.CACHE_ENV, str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # The runs are in this process, where both libraries read those variables at import already.
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    return cache


def test_dataset_source_from_a_complete_cache(dataset_cache: Path, check_gaia2) -> None:
    expected = sorted(f"{split}/{p.stem}" for split in DATASET_SPLITS for p in (SHIPPED / split).glob("*.json"))
    chosen = collect(check_gaia2, f"--gaia2-dataset={DATASET_ID}", "--gaia2-splits=search,time")
    assert sorted(chosen) == expected
    sampled = collect(check_gaia2, f"--gaia2-dataset={DATASET_ID}", "--gaia2-splits=search,time",
                      "--gaia2-sample=2", "--gaia2-seed=0")
    assert sorted(test_id.split("/")[0] for test_id in sampled) == ["search", "time"]


def test_dataset_split_missing_offline_is_one_message(dataset_cache: Path, check_gaia2) -> None:
    result = check_gaia2("--collect-only", f"--gaia2-dataset={DATASET_ID}", "--gaia2-splits=search,execution")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stderr.str()
    assert "split 'execution' is not in the cache" in text and "Traceback" not in text
    assert not (dataset_cache / "test-org_tiny-gaia2" / "execution" / dataset.MARKER).exists()


def test_shards_partition_what_k_and_the_sample_left(check_gaia2) -> None:
    """Three shards of a -k selection are disjoint, cover it, and each names its shard."""
    roots = (f"--gaia2-scenarios={MANY}", f"--gaia2-scenarios={SHIPPED}")
    whole = collect(check_gaia2, *roots, "-k", "not universe_21", "--gaia2-sample=20", "--gaia2-seed=2", output="whole")
    shards = [collect(check_gaia2, *roots, "-k", "not universe_21", "--gaia2-sample=20", "--gaia2-seed=2",
                      f"--gaia2-shard={k}/3", output=f"s{k}") for k in (1, 2, 3)]
    assert len(whole) == 20 and sorted(test_id for shard in shards for test_id in shard) == sorted(whole)
    assert sorted(map(len, shards)) == [6, 7, 7]


def test_a_shard_is_the_same_on_two_workers_and_recorded(pytester: pytest.Pytester, run_gaia2, check_gaia2) -> None:
    pytester.makepyfile(skip_all=SKIP_ALL_PLUGIN)
    args = (f"--gaia2-scenarios={MANY}", "--gaia2-shard=2/4", "--gaia2-repeat=2")
    result = run_gaia2("-n", "2", "-p", "skip_all", *args)
    result.assert_outcomes(skipped=20)  # 40 scenarios, 10 in shard 2, each twice
    result.stdout.fnmatch_lines(["gaia2: 20 planned (shard 2/4), run folder *"])
    per_worker = {path.read_text(encoding="utf-8") for path in pytester.path.glob("collected-gw*.txt")}
    assert len(per_worker) == 1
    assert sorted(collected(per_worker.pop())) == sorted(collect(check_gaia2, *args, output="single"))
    config = json.loads((run_folder(pytester.path / "out") / "run_config.json").read_text(encoding="utf-8"))
    assert config["provenance"]["shard"] == "2/4" and config["selection"]["shard"] == "2/4"
    assert len(config["planned"]) == 20


def test_a_bad_shard_is_one_usage_error(check_gaia2) -> None:
    bad = check_gaia2("--collect-only", f"--gaia2-scenarios={SHIPPED}", "--gaia2-shard=3/2")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--gaia2-shard: K must be between 1 and N in K/N, got '3/2'*"])
