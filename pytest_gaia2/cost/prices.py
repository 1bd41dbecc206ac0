"""What an attempt's tokens cost, in USD, and where that figure comes from.

Sources, first that knows the model wins:

1. the ``--gaia2-price-file`` (the team's own prices: discounts, a private deployment);
2. the provider's own figure, when every call that reported usage also reported a ``cost``
   (OpenRouter, LiteLLM): what was actually billed;
3. the ``genai-prices`` data (the ``cost`` extra), maintained by the pydantic team from the
   providers' price pages.

A model none of them knows is never given a guessed price: its cost is unknown (``usd`` is
``None``) and its name is kept in :attr:`PriceBook.unknown_models`, for one warning each.
Nor is a figure out of range: a trace whose usage holds a refused value, or a cost past
``ATTEMPT_USD_MAX``, is *refused* (``usd`` ``None``, the source saying why), never written as
an absurd or infinite amount, and never silently 0.
Long-context tiers use their base price, since a sum of calls no longer tells each call's size.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost.usage import Usage, usd_amount
from pytest_gaia2.store.safejson import JsonReadError, loads_bounded, read_regular_file

PRICE_FILE_MAX_BYTES = 16 * 2**20
PRICE_MAX = 100_000.0
"""USD per million tokens: ten cents a token, hundreds of times any listed price; more is a typo."""
ATTEMPT_USD_MAX = 1_000_000.0
"""USD for one attempt: a larger figure is garbage, refused rather than added to the run's spend."""
PRICE_FIELDS = ("input", "output", "cached_input", "cache_write")
PRICE_FILE = "price file"
REPORTED = "reported by the provider"
UNKNOWN = "unknown"
REFUSED = "refused"


@dataclass(frozen=True)
class Price:
    """USD per million tokens. Cache reads or writes without a rate of their own pay the input rate."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def usd(self, usage: Usage) -> float:
        cached = self.input if self.cached_input is None else self.cached_input
        written = self.input if self.cache_write is None else self.cache_write
        return (
            usage.uncached_input_tokens * self.input
            + usage.cached_input_tokens * cached
            + usage.cache_write_tokens * written
            + usage.output_tokens * self.output
        ) / 1_000_000


@dataclass(frozen=True)
class Cost:
    """An amount in USD, or ``None`` when unknown, and the source it came from."""

    usd: float | None
    source: str

    @property
    def priced(self) -> bool:
        return self.usd is not None

    @classmethod
    def checked(cls, usd: float, source: str) -> Cost:
        """``usd`` from ``source``, or refused when it is not a finite amount up to ``ATTEMPT_USD_MAX``."""
        if usd_amount(usd, ATTEMPT_USD_MAX) is None:
            return cls(
                None,
                f"{REFUSED}: ${usd:g} from the {source} is more than the ${ATTEMPT_USD_MAX:,.0f} an attempt can cost",
            )
        return cls(usd, source)

    def to_json(self) -> dict[str, Any]:
        return {"usd": self.usd, "priced": self.priced, "source": self.source}


class PriceBook:
    """Prices per model: a price file's first, then the provider's figure, then genai-prices."""

    def __init__(self, file_prices: Mapping[str, Price] | None = None) -> None:
        self.file_prices = {name.lower(): price for name, price in (file_prices or {}).items()}
        self.unknown_models: set[str] = set()

    @classmethod
    def load(cls, price_file: Path | None) -> PriceBook:
        """A price book with the prices of ``price_file`` (JSON, or TOML by its ``.toml`` suffix), if any."""
        return cls(read_price_file(price_file) if price_file is not None else None)

    def cost(self, usage: Usage, model: str | None = None) -> Cost:
        """What ``usage`` cost, priced as ``model`` (else the one model its calls named)."""
        if usage.refused:  # a count left out would make the cost look smaller than it was
            return Cost(None, f"{REFUSED}: {'; '.join(usage.refused)}")
        if not usage.usage_calls:
            return Cost(None, UNKNOWN)  # nothing reported: zero tokens would claim it was free
        names = [model] if model else []
        if len(usage.models) == 1 and not usage.other_models:  # several models cannot share one price
            names.append(usage.models[0])
        found = next(filter(None, map(self.file_prices.get, _candidates(names))), None)
        if found is not None:
            return Cost.checked(found.usd(usage), PRICE_FILE)
        if usage.reported_cost_calls == usage.usage_calls:
            return Cost.checked(usage.reported_cost_usd, REPORTED)
        for name in _candidates(names):
            if (package := _package_price(name)) is not None:
                return Cost.checked(package[0].usd(usage), package[1])
        self.unknown_models.update(names[:1])
        return Cost(None, UNKNOWN)


def _candidates(names: list[str]) -> Iterator[str]:
    """Each name as given, then with its routing prefixes dropped (``openrouter/openai/gpt-4o``,
    ``openai/gpt-4o``, ``gpt-4o``), lower-cased as both sources compare them."""
    for name in names:
        parts = name.strip().lower().split("/")
        yield from ("/".join(parts[start:]) for start in range(len(parts)))


def read_price_file(path: Path) -> dict[str, Price]:
    """``{model: {input, output[, cached_input, cache_write]}}`` in USD per million tokens.

    Raises :class:`OptionError` naming the file and the entry for anything that is not that.
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    where = f"--gaia2-price-file: {path}"
    try:
        data = read_regular_file(path, max_bytes=PRICE_FILE_MAX_BYTES)
        if path.suffix.lower() == ".toml":
            raw = tomllib.loads(data.decode("utf-8"))
        else:
            raw = loads_bounded(data, max_bytes=PRICE_FILE_MAX_BYTES)
    except (JsonReadError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise OptionError(f"{where}: {exc}") from None
    if not isinstance(raw, dict) or not raw:
        raise OptionError(f"{where}: expected a table of models, each with input and output prices")
    return {name: _price(f"{where}: {name!r}", entry) for name, entry in raw.items()}


def _price(where: str, entry: object) -> Price:
    if not isinstance(entry, dict) or not {"input", "output"} <= entry.keys():
        raise OptionError(f"{where}: expected input and output prices (USD per million tokens)")
    unknown = sorted(set(entry) - set(PRICE_FIELDS))
    if unknown:
        raise OptionError(f"{where}: unknown keys {', '.join(unknown)} (known: {', '.join(PRICE_FIELDS)})")
    amounts: dict[str, float] = {}
    for key, value in entry.items():
        if (amount := usd_amount(value, PRICE_MAX)) is None:
            raise OptionError(
                f"{where}: {key} must be a number of USD per million tokens from 0 to {PRICE_MAX:,.0f}, got {value!r}"
            )
        amounts[key] = amount
    return Price(**amounts)


@functools.cache
def _package_price(name: str) -> tuple[Price, str] | None:
    """genai-prices' current rates for ``name`` and the source line naming its version, if it knows it.

    A name with a slash is also tried as an OpenRouter model, whose catalogue uses such names.
    """
    try:
        import genai_prices
    except ImportError:  # the ``cost`` extra is not installed (or Python 3.10)
        return None
    for provider in (None, "openrouter") if "/" in name else (None,):
        try:
            rates = genai_prices.calc_price(genai_prices.Usage(), name, provider_id=provider).model_price
        except (LookupError, ValueError):
            continue
        given, made, cached, written = (
            _base_rate(getattr(rates, f"{key}_mtok")) for key in ("input", "output", "cache_read", "cache_write")
        )
        if given is not None and made is not None:
            return Price(given, made, cached, written), f"genai-prices {genai_prices.__version__}"
    return None


def _base_rate(rate: object) -> float | None:
    """A per-million rate as a float; a tiered rate's base tier."""
    rate = getattr(rate, "base", rate)
    return float(rate) if isinstance(rate, Decimal) else None
