"""One run's model gateway (:mod:`~pytest_gaia2.run.gateway`) from start-up to its stop: the routes
it would serve (or why it is off), the per-scenario caps that need it, its start on the controller
where this engine's containers reach the host, what xdist workers are handed, and its stop.

Apart from the run's context because the gateway's life spans the run's stages: planned while the
options are checked, started before any worker, its port handed to pre-flight and its address to
the workers, its fact written to run_config.json, and stopped, with every token, when the run closes.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_gaia2.config import options
from pytest_gaia2.config.settings import RunSettings
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost.budget import Ledger
from pytest_gaia2.engine.pool import EnginePool
from pytest_gaia2.run import gateway as gateway_mod


class RunGateway:
    """The run's gateway on this process: on the controller (or the only process) the gateway
    itself while the run lasts; on an xdist worker only the access it was handed."""

    def __init__(self, access: dict[str, Any] | None) -> None:
        self.routes: dict[str, gateway_mod.Upstream] = {}
        self.notes: list[str] = []
        """Why the gateway is off, or what of it is (the header's notes, run_config.json's ``off``)."""
        self.gateway: gateway_mod.Gateway | None = None
        self.access = access
        """What a process needs to ask the gateway for tokens: handed to xdist workers."""

    def plan(self, settings: RunSettings, values: options.Options) -> list[str]:
        """The routes for this run and the notes for the header; a per-scenario cap without the
        gateway is a usage error naming the option and why the gateway is off."""
        self.routes, self.notes = gateway_mod.plan(settings, values.gateway)
        for cap, value in (
            ("scenario-cap", values.scenario_cap),
            ("scenario-token-cap", values.scenario_token_cap),
        ):
            if value is not None and not self.routes:
                raise OptionError(
                    f"--gaia2-{cap} needs the model gateway, which is off for this run "
                    f"({'; '.join(self.notes) or 'no provider key is configured'})"
                )
        return self.notes

    def start(
        self,
        folder: Path,
        values: options.Options,
        settings: RunSettings,
        *,
        engines: EnginePool,
        path: Callable[[str | Path], Path],
        workers: int,
        redact: Callable[[str], str],
    ) -> str | None:
        """Listen where this engine's containers reach the host, before any worker starts; the
        header's note, or None when the gateway is off. A bad price file is a usage error (masked);
        a gateway that cannot listen raises :class:`~pytest_gaia2.run.gateway.GatewayError`."""
        if not self.routes:
            return None
        from pytest_gaia2.cost.prices import PriceBook
        from pytest_gaia2.engine.errors import EngineError
        from pytest_gaia2.run.pacer import Pacer

        try:
            candidate = engines.engine().host_gateway_address()
        except EngineError:
            candidate = None  # pre-flight names the engine's trouble
        try:
            prices = PriceBook.load(path(values.price_file) if values.price_file else None)
            self.gateway = gateway_mod.Gateway(
                self.routes,
                prices=prices,
                run_folder=folder,
                bind_host=gateway_mod.listen_host(candidate),
                run_cap=values.budget_cap,
                spent_before=Ledger(folder).total() if values.resume else 0.0,
                ca_bundle=settings.ca_bundle,
                pacer=Pacer(
                    folder,
                    values.max_starts_per_minute,
                    adaptive=values.pacing == "adaptive",
                    workers=workers,
                ),
            )
            self.gateway.start()
        except OptionError as exc:
            raise OptionError(redact(str(exc))) from None
        except gateway_mod.GatewayError:
            self.gateway = None
            raise
        self.access = self.gateway.access()
        return (
            f"model gateway on at {self.gateway.bind_host}:{self.gateway.port} ({', '.join(self.routes)}): "
            "containers get a per-scenario token, never a provider key; money is measured on the wire (wire.jsonl)"
        )

    @property
    def port(self) -> int | None:
        """Where the started gateway listens, for pre-flight's check that containers reach it."""
        return self.gateway.port if self.gateway is not None else None

    def client(self) -> gateway_mod.GatewayClient | None:
        """This process's handle on the gateway (None: the run has none)."""
        return gateway_mod.GatewayClient.of(self.access) if self.access else None

    def fact(self) -> dict[str, Any]:
        """run_config.json's ``gateway``."""
        return gateway_mod.run_fact(self.routes, self.notes)

    def stop(self) -> None:
        """The gateway stops, every token with it."""
        if self.gateway is not None:
            self.gateway.stop()
            self.gateway = None
