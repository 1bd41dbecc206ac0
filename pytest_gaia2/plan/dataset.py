"""The Hugging Face dataset ``meta-agents-research-environments/gaia2-cli`` as a scenario source.

Each split is a dataset *config*; its rows (``scenario_id``, ``scenario``) are written once
per machine into upstream's cache layout ``<cache>/<org>_<name>/<split>/<scenario_id>.json``,
so every xdist worker (and gaia2-runner itself) reads the same plain files.

Unlike upstream, a split only counts as cached when its completion marker agrees with the
files on disk: a download interrupted half-way is repaired, never run as if it were whole.
A complete split is used without touching the network, so an offline machine with a filled
cache works; a missing split on such a machine is one clear error.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.store.folder import write_text

DEFAULT_DATASET = "meta-agents-research-environments/gaia2-cli"
CACHE_ENV = "GAIA2_HF_CACHE"
HF_SPLIT = "test"
"""Every config of the dataset holds its scenarios in the Hugging Face split ``test``."""
MARKER = ".complete.json"
INSTALL_HINT = "pip install 'pytest-gaia2[dataset]'"

_SAFE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_DATASET_ID = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_LOCK = ".lock"

log = logging.getLogger(__name__)


class DatasetError(OptionError):
    """The dataset cannot be provided; a usage error so pytest prints one message, not a traceback."""


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$GAIA2_HF_CACHE``, else ``~/.cache/gaia2/hf_datasets`` (upstream's default)."""
    env = os.environ if environ is None else environ
    configured = (env.get(CACHE_ENV) or "").strip()
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "gaia2" / "hf_datasets"


def dataset_dir(dataset_id: str, cache_dir: Path | None = None, language: str | None = None) -> Path:
    """``<cache>/<org>_<name>`` (``_<language>`` for a per-language config): the folder upstream's
    runner uses for the same dataset."""
    if not _DATASET_ID.fullmatch(dataset_id) or dataset_id.startswith("."):  # ./x is a path
        raise DatasetError(
            f"--gaia2-dataset: expected a Hugging Face dataset id ORG/NAME (e.g. {DEFAULT_DATASET}), got {dataset_id!r}"
        )
    name = dataset_id.replace("/", "_") + (f"_{language}" if language else "")
    return (cache_dir if cache_dir is not None else cache_root()) / name


def _scenario_files(split_dir: Path) -> set[str]:
    """Scenario ids present as finished files; hidden temporaries do not count."""
    return {p.stem for p in split_dir.glob("*.json") if not p.name.startswith(".")}


def read_marker(split_dir: Path) -> dict[str, Any] | None:
    """The completion marker of a split folder, if it exists and is readable."""
    try:
        data = json.loads((split_dir / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_complete(split_dir: Path, revision: str | None = None) -> bool:
    """A split is whole only when its marker exists and names exactly the files on disk (and,
    when a revision is asked for, was made from that revision)."""
    marker = read_marker(split_dir)
    if marker is None or not isinstance(marker.get("scenario_ids"), list):
        return False
    if revision is not None and marker.get("revision") != revision:
        return False
    expected = set(marker["scenario_ids"])
    return marker.get("rows") == len(expected) and _scenario_files(split_dir) == expected


def _offline_message(dataset_id: str, split: str, split_dir: Path, cause: BaseException) -> str:
    detail = next(iter(str(cause).splitlines()), "")
    return (
        f"dataset {dataset_id}: split {split!r} is not in the cache ({split_dir}) and Hugging Face "
        f"could not be reached ({type(cause).__name__}: {detail}). "
        f"To run without network, pre-populate the cache: on a machine with network run "
        f"`pytest --gaia2-dataset {dataset_id} --gaia2-splits {split} --collect-only` and copy "
        f"{split_dir.parent} (with its {MARKER} files) to the same place here, or set {CACHE_ENV} "
        f"to a copy of it; if the datasets library cache (~/.cache/huggingface) already holds the "
        f"dataset, set HF_DATASETS_OFFLINE=1 to load it from there. A folder of scenario files "
        f"without {MARKER} (e.g. one written by gaia2-runner) can be run directly with "
        f"--gaia2-scenarios <folder>."
    )


def _load_rows(
    source: str, dataset_id: str, split: str, split_dir: Path, revision: str | None = None
) -> tuple[list[tuple[str, str]], str | None]:
    """The (scenario_id, scenario JSON) rows of one config (``split`` is the config's name), and
    the data's fingerprint."""
    try:
        import datasets
    except ImportError:
        raise DatasetError(
            f"dataset {dataset_id}: the optional 'datasets' package is needed to download "
            f"split {split!r} into {split_dir}; install it with {INSTALL_HINT}"
        ) from None
    try:
        table = datasets.load_dataset(source, split, split=HF_SPLIT, revision=revision)
    except ConnectionError as exc:  # also what datasets raises in offline mode
        raise DatasetError(_offline_message(dataset_id, split, split_dir, exc)) from None
    except Exception as exc:  # noqa: BLE001 - any library failure becomes one usage message
        raise DatasetError(
            f"dataset {dataset_id}: split {split!r} could not be loaded from {source} ({type(exc).__name__}: {exc})"
        ) from None
    missing = {"scenario_id", "scenario"} - set(table.column_names)
    if missing:
        raise DatasetError(
            f"dataset {dataset_id}: split {split!r} has columns {sorted(table.column_names)}, "
            f"missing {sorted(missing)} (expected the gaia2-cli layout: scenario_id, scenario)"
        )
    rows = [(row["scenario_id"], row["scenario"]) for row in table]
    return rows, getattr(table, "_fingerprint", None)


def _checked_ids(rows: Iterable[tuple[Any, Any]], dataset_id: str, split: str) -> dict[str, str]:
    """Rows keyed by id; an id that is not a safe file name, or repeats, stops the download."""
    by_id: dict[str, str] = {}
    for index, (scenario_id, text) in enumerate(rows):
        where = f"dataset {dataset_id}: split {split!r} row {index}"
        if not isinstance(scenario_id, str) or not _SAFE_NAME.fullmatch(scenario_id):
            raise DatasetError(f"{where}: scenario_id {scenario_id!r} is not a usable file name")
        if not isinstance(text, str):
            raise DatasetError(f"{where} ({scenario_id}): scenario is {type(text).__name__}, expected a JSON string")
        if scenario_id in by_id:
            raise DatasetError(f"{where}: duplicate scenario_id {scenario_id!r}")
        by_id[scenario_id] = text
    return by_id


def _materialise_split(source: str, dataset_id: str, config: str, split_dir: Path, revision: str | None = None) -> None:
    """(Re)write one split from its dataset config: files first, stale leftovers removed, the marker last."""
    rows, fingerprint = _load_rows(source, dataset_id, config, split_dir, revision)
    by_id = _checked_ids(rows, dataset_id, config)
    split_dir.mkdir(parents=True, exist_ok=True)
    (split_dir / MARKER).unlink(missing_ok=True)
    for leftover in split_dir.glob(".*.tmp"):
        leftover.unlink()
    for stale in _scenario_files(split_dir) - set(by_id):
        (split_dir / f"{stale}.json").unlink()
    for scenario_id, text in by_id.items():
        write_text(split_dir / f"{scenario_id}.json", text)
    marker = {
        "dataset": dataset_id,
        "source": source,
        "config": config,
        "revision": revision,
        "hf_split": HF_SPLIT,
        "rows": len(by_id),
        "fingerprint": fingerprint,
        "materialised_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "scenario_ids": sorted(by_id),
    }
    write_text(split_dir / MARKER, json.dumps(marker, indent=2) + "\n")
    log.info("materialised %s config %s: %d scenarios in %s", dataset_id, config, len(by_id), split_dir)


def materialise(
    dataset_id: str,
    splits: Sequence[str],
    cache_dir: Path | None = None,
    *,
    source: str | None = None,
    language: str | None = None,
    revision: str | None = None,
) -> list[Path]:
    """The folder of each split of ``dataset_id``, downloading the ones not cached whole.

    ``source`` is what ``datasets.load_dataset`` loads (default: ``dataset_id`` on the hub);
    the cache layout is always keyed by ``dataset_id`` (and ``language``). With a ``language``
    each split comes from the config ``<language>_<split>`` into a folder named after the bare
    split, as upstream lays it out. Complete splits (of ``revision``, when one is given) never
    reach the network. Downloads happen under one file lock per dataset, so concurrent workers
    wait for the first and then find the split complete.
    """
    root = dataset_dir(dataset_id, cache_dir, language)
    for split in splits:
        if not _SAFE_NAME.fullmatch(split):
            raise DatasetError(f"dataset {dataset_id}: {split!r} is not a usable split name")
    split_dirs = [root / split for split in splits]
    missing = [d for d in split_dirs if not is_complete(d, revision)]
    if missing:
        root.mkdir(parents=True, exist_ok=True)
        with FileLock(str(root / _LOCK)):
            for split_dir in missing:
                if not is_complete(split_dir, revision):  # another process may have finished it meanwhile
                    config = f"{language}_{split_dir.name}" if language else split_dir.name
                    _materialise_split(source or dataset_id, dataset_id, config, split_dir, revision)
    return split_dirs
