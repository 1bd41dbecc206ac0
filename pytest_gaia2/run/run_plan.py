"""One run's plan: the scenarios found, the items chosen from them, --gaia2-sequence's chains,
the probe, and --gaia2-stop-when-decided's baseline and decision.

Apart from the run's context because it is the part every process must compute the same way
(the controller and each xdist worker collect the same items, in the same order, and choose the
same probe), and because it needs no engine, no run folder of its own and no terminal: the
context hands it the option values, and the run folder when it asks for a decision.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_gaia2.config import options, splits
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.plan import items as plan_mod
from pytest_gaia2.plan import selection, sequence
from pytest_gaia2.report.sequential import Baseline, Decision
from pytest_gaia2.store import folder as store

if TYPE_CHECKING:
    from pytest_gaia2.config.settings import RunSettings
    from pytest_gaia2.plan.scenarios import Scenario, ScenarioError


class RunPlan:
    """What the run collects and in which order, from its option values; discovery and the
    baseline are read once, on the controller (or the only process), and handed to xdist workers."""

    def __init__(
        self,
        values: options.Options,
        *,
        active: bool,
        base: Path,
        path: Callable[[str | Path], Path],
        handed_over: Mapping[str, Any],
        settings: Callable[[], RunSettings],
        notes: list[str],
    ) -> None:
        """``path`` anchors a path option's value; ``settings``: the run's settings, resolved when
        first asked for; ``notes``: the run's notes, which the selection adds to."""
        self.values = values
        self.active = active
        self.base = base
        self.path = path
        self.handed_over = handed_over
        self.settings = settings
        self.notes = notes
        self.probe_keys: set[str] = set()
        self.order: list[str] = []
        """The planned keys in start order, on every process: the sequence the stop-when-decided
        test reads its pairs in (:mod:`~pytest_gaia2.report.sequential`)."""

    def roots(self) -> list[Path]:
        """Where the scenarios are: --gaia2-dataset's files, --gaia2-scenarios, or ``scenarios/``."""
        language = self.values.language
        if self.values.dataset:
            from pytest_gaia2.plan import dataset

            return dataset.materialise(
                self.values.dataset,
                splits.split_names(self.values.splits, language=language),
                language=language,
                revision=self.values.dataset_revision,
            )
        for name, value in (("language", language), ("dataset-revision", self.values.dataset_revision)):
            if value:
                raise OptionError(f"--gaia2-{name} applies to --gaia2-dataset only")
        given = [self.path(raw) for raw in self.values.scenarios]
        missing = [str(path) for path in given if not os.path.lexists(path)]
        if missing:
            raise OptionError(f"--gaia2-scenarios: no such file or folder: {', '.join(missing)}")
        return given or [self.base / "scenarios"]

    @cached_property
    def discovered(self) -> tuple[list[Scenario], list[ScenarioError]]:
        """Every scenario file found: discovered once, on the controller (or the only process);
        xdist workers get the controller's result through ``workerinput``."""
        from pytest_gaia2.plan import scenarios

        shipment = self.handed_over.get("gaia2_discovered")
        if shipment is not None:
            return scenarios.unshipped(shipment)
        return scenarios.discover(self.roots(), index_path=scenarios.index_path())

    @cached_property
    def _items(self) -> list[plan_mod.PlannedItem]:
        scenarios, errors = self.discovered
        chosen = plan_mod.filtered(scenarios, self.values, self.path)
        self.notes.extend(chosen.notes)
        return plan_mod.build(
            chosen.scenarios,
            errors,
            repeats=self.values.repeat,
            limits=self.settings().limits,
            attempts=self.values.retries + 1,
            chains=self._chains(),
        )

    def _chains(self) -> list[sequence.Chain] | None:
        """--gaia2-sequence's chains, refused with the options that would break a chain apart."""
        raw = self.values.sequence
        if not raw:
            return None
        clashes = [
            option
            for option, given in (
                ("--gaia2-repeat", self.values.repeat > 1),
                ("--gaia2-sample", self.values.sample is not None),
                ("--gaia2-first-n", self.values.first_n is not None),
                ("--gaia2-shard", self.values.shard is not None),
                ("--gaia2-smoke", self.values.smoke),
                (f"--gaia2-in-flight {self.values.in_flight}", self.values.in_flight > 1),
            )
            if given
        ]
        if clashes:
            raise OptionError(f"--gaia2-sequence runs whole chains; it cannot be combined with {', '.join(clashes)}")
        return sequence.load(self.path(raw))

    def items(self) -> list[plan_mod.PlannedItem]:
        """Every item to collect, identical on every worker: the same files, order and filters."""
        return self._items if self.active else []

    def hashes(self) -> dict[str, str | None]:
        """Each planned scenario's file hash, by item key: a verdict counts for the file it judged."""
        return {item.key: item.scenario.sha256 for item in self.items() if item.scenario is not None}

    def scenario_files(self, planned: list[str]) -> dict[str, tuple[str, str | None, tuple[str, ...]]]:
        """Each planned scenario's file, its hash and its apps, by item key: what the run's files
        say of a scenario that has no record."""
        chosen = set(planned)
        return {
            item.key: (str(item.scenario.path), item.scenario.sha256, tuple(dict.fromkeys(item.scenario.apps)))
            for item in self.items()
            if item.scenario is not None and item.key in chosen
        }

    def first_scenario(self, planned: list[str]) -> bytes | None:
        """The first planned scenario's bytes, for pre-flight's isolation probe (None: none readable)."""
        files = self.scenario_files(planned)
        for key in planned:
            entry = files.get(key)
            if entry is None:
                continue
            try:
                return Path(entry[0]).read_bytes()
            except OSError:
                continue
        return None

    def narrow(self, planned: list[plan_mod.PlannedItem]) -> set[str]:
        """Keys kept by the sample or prefix, drawn from what -k, -m and --deselect left; with
        --gaia2-smoke and neither, the midsmoke rung's stratified sample."""
        sample = self.values.sample
        if self.values.smoke and sample is None and self.values.first_n is None:
            sample = selection.smoke_sample(len({item.name for item in planned if item.scenario}))
        return plan_mod.narrow(
            planned,
            sample=sample,
            seed=self.values.seed,
            first_n=self.values.first_n,
            shard=self.values.shard,
        )

    def choose_probe(self, items: list[plan_mod.PlannedItem]) -> set[str]:
        """The --gaia2-probe scenarios among what will run: the same on every worker and the controller."""
        count = self.values.probe
        self.probe_keys = plan_mod.probe_keys(items, count, self.values.seed) if count else set()
        return self.probe_keys

    @cached_property
    def baseline(self) -> Baseline | None:
        """--gaia2-stop-when-decided's run folder, read once on the controller (bounded, strict);
        xdist workers get the controller's through ``workerinput``."""
        raw = self.values.stop_when_decided
        if not raw:
            return None
        shipment = self.handed_over.get("gaia2_baseline")
        if shipment is not None:
            return Baseline.unshipped(shipment)
        try:
            return Baseline.load(self.path(raw))
        except store.StoreError as exc:
            raise OptionError(f"--gaia2-stop-when-decided: {exc}") from None

    def check_baseline(self, folder: store.RunFolder | None, planned: list[str]) -> None:
        """Refuse a baseline that is the folder this run writes into, or that judged none of ``planned``."""
        if self.baseline is None:
            return
        if folder is not None and store.same_folder(self.baseline.path, folder.path):
            raise OptionError(
                f"--gaia2-stop-when-decided: {self.baseline.path} is the run folder this run writes into; "
                "the baseline is an earlier run"
            )
        if not self.baseline.shared(planned):
            raise OptionError(
                f"--gaia2-stop-when-decided: the baseline {self.baseline.path} judged none of the "
                f"{len(planned)} planned scenarios; there is nothing to compare"
            )

    def decision(self, folder: store.RunFolder | None) -> Decision | None:
        """The comparison with the baseline on every verdict in ``folder`` so far (every worker's,
        every session's), in start order; None without a baseline or a folder, or while undecided."""
        if self.baseline is None or folder is None:
            return None
        return self.baseline.decide(self.order, folder.records(), self.values.decision_level, self.hashes())
