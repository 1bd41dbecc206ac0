"""The engines of one process, connected on first use (which engine is whose: :mod:`.spec`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_gaia2.engine.spec import EngineSpec, facts, in_use, notes, spec_for

if TYPE_CHECKING:
    from pytest_gaia2.engine.client import Engine


@dataclass
class EnginePool:
    """The engines of one process, connected on first use: a worker's one, or every engine the
    controller's run uses (pre-flight on each, and each one swept at the end)."""

    specs: Sequence[EngineSpec]
    run_id: str
    worker: str
    owner_pid: int
    given: Sequence[EngineSpec] = ()
    """Every engine the user named (the assignment is made over all of them)."""
    workers: int = 1
    distributed: bool = False
    _engines: dict[int, Engine] = field(default_factory=dict)

    @classmethod
    def of_process(
        cls,
        given: Sequence[EngineSpec],
        worker_input: Mapping[str, Any],
        *,
        workers: int,
        distributed: bool,
        run_id: str,
        worker: str,
        owner_pid: int,
    ) -> EnginePool:
        """A worker's engine as its controller chose it; else the engines this run uses."""
        given = list(given) or [EngineSpec()]
        handed = worker_input.get("gaia2_engine")
        specs = [EngineSpec.from_json(handed)] if handed else in_use(given, workers, distributed)
        return cls(specs, run_id, worker, owner_pid, given, workers, distributed)

    def handover(self, worker: str) -> dict[str, Any]:
        """What the controller puts in a worker's ``workerinput``: that worker's engine."""
        return {"gaia2_engine": spec_for(self.given, worker).to_json()}

    def notes(self) -> list[str]:
        return notes(self.given, self.workers, self.distributed)

    def facts(self) -> list[dict[str, Any]]:
        return facts(self.given, self.workers, self.distributed)

    @property
    def connected(self) -> bool:
        return bool(self._engines)

    def engine(self, index: int = 0) -> Engine:
        """One engine (the first: a worker's or a serial run's); EngineError names it when it does not answer."""
        if index not in self._engines:
            from pytest_gaia2.engine.client import Engine, connect

            spec = self.specs[index]
            self._engines[index] = Engine(
                connect(url=spec.url),
                run_id=self.run_id,
                worker=self.worker,
                owner_pid=self.owner_pid,
                address=spec.url,
                reach=spec.reach,
            )
        return self._engines[index]

    def engines(self) -> list[Engine]:
        return [self.engine(index) for index in range(len(self.specs))]

    def remove_run(self, worker: str | None = None) -> None:
        """The run's containers (one worker's, or all) on every engine; an engine that is down is skipped."""
        from pytest_gaia2.engine.errors import EngineError, sdk_errors

        for index in range(len(self.specs)):
            try:
                self.engine(index).remove_run(worker=worker)
            except (EngineError,) + sdk_errors():
                pass

    def close(self) -> None:
        for engine in self._engines.values():
            engine.client.close()
