"""One run's options and what is read from them once: the option values (a gaia2-runner TOML given
with --gaia2-config first, then what the plugin merges in), paths anchored where pytest started,
whether scenarios are collected at all, and, when first asked for, the settings (.env read), the
redactor of their secrets, the price file and the budget.

Apart from the run's context because every other part starts from it and it is the part that may
touch nothing: reading the options starts no engine and creates no file, and a run that collects
no scenario never reads .env.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_gaia2.config import options
from pytest_gaia2.config import settings as settings_mod
from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost.budget import Budget
from pytest_gaia2.cost.prices import PriceBook
from pytest_gaia2.run import hooked_env
from pytest_gaia2.run.terms import Invocation


class RunOptions:
    """The option values of one run and the settings, secrets and prices they name."""

    def __init__(
        self, invocation: Invocation, read: Callable[[Mapping[str, Any]], options.Options], notes: list[str]
    ) -> None:
        """``read``: the run's option values from the parsed TOML config's (the plugin merges its
        command line and ini file in); ``notes``: the run's notes, which the TOML adds to."""
        self.base = invocation.base
        self.notes = notes
        self.upstream_config: dict[str, Any] | None = None
        """The gaia2-runner TOML this run read and what of it was replaced (run_config.json)."""
        self.config_secrets: dict[str, str] = {}
        self.values = self._read_values(invocation.config_file, read)
        self.output = self.path(self.values.output)
        self.active = self._is_active(invocation.explicit_test_paths)

    def path(self, raw: str | Path) -> Path:
        """A path option's value; relative ones are relative to where pytest was started."""
        path = Path(os.path.expanduser(str(raw)))
        return path if path.is_absolute() else self.base / path

    def _read_values(
        self, config_file: str | None, read: Callable[[Mapping[str, Any]], options.Options]
    ) -> options.Options:
        toml: dict[str, Any] = {}
        if config_file:
            from pytest_gaia2.config import upstream_config

            loaded = upstream_config.load(self.path(config_file), os.environ)
            toml = dict(loaded.options)
            self.notes.extend(loaded.notes)
            self.upstream_config = {"file": str(loaded.path), "replaced": loaded.replaced}
            self.config_secrets = loaded.secret_environ()
        return read(toml)

    def _is_active(self, explicit_test_paths: bool) -> bool:
        """Scenarios are collected when asked for, or by default when no test paths were given."""
        if self.values.scenarios or self.values.dataset:
            return True
        return not explicit_test_paths and (self.base / "scenarios").is_dir()

    @cached_property
    def settings(self) -> settings_mod.RunSettings:
        """Resolved on first use: a run that collects no scenario never reads .env."""
        from pytest_gaia2.reference import build

        return settings_mod.RunSettings.from_options(
            self.values,
            rootdir=self.base,
            environ={**os.environ, **self.config_secrets},
            reference_image=build.image_name(),
        )

    def check_urls(self) -> None:
        """A model URL that cannot be used is a usage error, before any engine is asked."""
        from pytest_gaia2.run import preflight

        try:
            preflight.check_urls(self.settings)
        except preflight.PreflightError as exc:
            raise OptionError(str(exc)) from None

    @cached_property
    def redactor(self) -> hooked_env.LearningRedactor:
        return hooked_env.LearningRedactor(self.settings.secret_values() if self.active else ())

    @cached_property
    def prices(self) -> PriceBook:
        """--gaia2-price-file, read once per process at start-up (a bad file is a usage error)."""
        raw = self.values.price_file
        return PriceBook.load(self.path(raw) if raw else None)

    @property
    def budget(self) -> Budget:
        return Budget(
            halt=self.values.budget_halt,
            cap=self.values.budget_cap,
            token_halt=self.values.token_halt,
            max_errors=self.values.max_errors,
        )
