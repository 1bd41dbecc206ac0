"""Costs: genai-prices' rates, a price file that wins, provider-reported costs, unknown models."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_gaia2.config.values import OptionError
from pytest_gaia2.cost import prices
from pytest_gaia2.cost.prices import Cost, Price, PriceBook, read_price_file
from pytest_gaia2.cost.usage import Usage

USAGE = Usage(calls=3, usage_calls=3, input_tokens=12_000, output_tokens=900, cached_input_tokens=8_000,
              models=("gpt-4o-2024-08-06",))


@pytest.fixture
def genai_prices() -> ModuleType:
    module: ModuleType = pytest.importorskip("genai_prices")
    return module


@pytest.fixture
def no_package(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """As without the ``cost`` extra (or on Python 3.10)."""
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    prices._package_price.cache_clear()
    yield
    prices._package_price.cache_clear()


def package_rates(genai_prices: ModuleType, model: str) -> Any:
    return genai_prices.calc_price(genai_prices.Usage(), model).model_price


def price_file(tmp_path: Path, entries: Any, name: str = "prices.json") -> Path:
    path = tmp_path / name
    path.write_text(entries if isinstance(entries, str) else json.dumps(entries), encoding="utf-8")
    return path


def test_package_price_is_tokens_times_its_own_rates(genai_prices: ModuleType) -> None:
    rates = package_rates(genai_prices, "gpt-4o")
    expected = (4_000 * rates.input_mtok + 8_000 * rates.cache_read_mtok + 900 * rates.output_mtok) / 1_000_000
    cost = PriceBook.load(None).cost(USAGE, "gpt-4o")
    assert cost.usd == pytest.approx(float(expected))
    assert (cost.priced, cost.source) == (True, f"genai-prices {genai_prices.__version__}")


def test_package_price_agrees_with_the_package_itself(genai_prices: ModuleType) -> None:
    same = genai_prices.Usage(input_tokens=12_000, cache_read_tokens=8_000, output_tokens=900)
    assert PriceBook().cost(USAGE, "gpt-4o").usd == pytest.approx(float(
        genai_prices.calc_price(same, "gpt-4o").total_price))


def test_cache_writes_pay_their_own_rate(genai_prices: ModuleType) -> None:
    usage = Usage(calls=1, usage_calls=1, input_tokens=5_000, output_tokens=100, cached_input_tokens=1_000,
                  cache_write_tokens=3_000)
    rates = package_rates(genai_prices, "claude-sonnet-4-5")
    expected = (1_000 * rates.input_mtok.base + 1_000 * rates.cache_read_mtok.base
                + 3_000 * rates.cache_write_mtok.base + 100 * rates.output_mtok.base) / 1_000_000
    assert PriceBook().cost(usage, "claude-sonnet-4-5").usd == pytest.approx(float(expected))


def test_summed_calls_past_a_long_context_tier_keep_the_base_rate(genai_prices: ModuleType) -> None:
    """Fifty 20k-token calls are not one 1M-token call: the tier price would double the cost."""
    usage = Usage(calls=50, usage_calls=50, input_tokens=1_000_000)
    rates = package_rates(genai_prices, "claude-sonnet-4-5")
    assert rates.input_mtok.tiers, "the package no longer tiers this model: pick another"
    assert PriceBook().cost(usage, "claude-sonnet-4-5").usd == pytest.approx(float(rates.input_mtok.base))


@pytest.mark.parametrize("model", [None, "GPT-4o", "openai/gpt-4o", "openrouter/openai/gpt-4o"])
def test_model_names_as_agents_and_routers_spell_them(genai_prices: ModuleType, model: str | None) -> None:
    assert PriceBook().cost(USAGE, model).usd == pytest.approx(PriceBook().cost(USAGE, "gpt-4o").usd)


def test_an_openrouter_only_model(genai_prices: ModuleType) -> None:
    usage = Usage(calls=1, usage_calls=1, input_tokens=1_000_000, models=("qwen/qwen3-235b-a22b",))
    rates = genai_prices.calc_price(genai_prices.Usage(), "qwen/qwen3-235b-a22b", provider_id="openrouter")
    assert PriceBook().cost(usage).usd == pytest.approx(float(rates.model_price.input_mtok))


def test_unknown_model_has_unknown_cost(genai_prices: ModuleType) -> None:
    book = PriceBook()
    usage = Usage(calls=1, usage_calls=1, input_tokens=100, output_tokens=10, models=("acme-local-7b",))
    assert book.cost(usage) == Cost(None, "unknown")
    assert not book.cost(usage, "acme-local-7b").priced
    assert book.unknown_models == {"acme-local-7b"}


def test_without_the_package_only_the_file_and_the_provider_price(tmp_path: Path, no_package: None) -> None:
    assert PriceBook().cost(USAGE, "gpt-4o") == Cost(None, "unknown")
    book = PriceBook.load(price_file(tmp_path, {"gpt-4o": {"input": 1, "output": 1}}))
    assert book.cost(USAGE, "gpt-4o") == Cost(12_900 / 1_000_000, "price file")


def test_price_file_wins_over_the_package(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"GPT-4o": {"input": 2.0, "output": 8.0, "cached_input": 0.5}}))
    cost = book.cost(USAGE, "gpt-4o")
    assert cost.usd == pytest.approx((4_000 * 2.0 + 8_000 * 0.5 + 900 * 8.0) / 1_000_000)
    assert cost.to_json() == {"usd": cost.usd, "priced": True, "source": "price file"}


def test_price_file_matches_the_model_the_trace_names(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"gpt-4o-2024-08-06": {"input": 1, "output": 1}}))
    assert book.cost(USAGE, "my-deployment").source == "price file"


def test_toml_price_file_and_cached_tokens_without_a_rate_pay_input(tmp_path: Path) -> None:
    text = '["acme/local-7b"]\ninput = 0.2\noutput = 0.6\ncache_write = 0.25\n'
    book = PriceBook.load(price_file(tmp_path, text, "prices.toml"))
    usage = Usage(calls=1, usage_calls=1, input_tokens=1_000_000, output_tokens=1_000_000,
                  cached_input_tokens=500_000, cache_write_tokens=100_000)
    assert book.cost(usage, "acme/local-7b").usd == pytest.approx(0.4 * 0.2 + 0.5 * 0.2 + 0.1 * 0.25 + 0.6)


def test_provider_reported_cost_when_every_call_reported_one() -> None:
    usage = Usage(calls=3, usage_calls=2, input_tokens=100, reported_cost_usd=0.42, reported_cost_calls=2,
                  models=("acme-local-7b",))
    book = PriceBook()
    assert book.cost(usage) == Cost(0.42, "reported by the provider")
    assert book.unknown_models == set()


def test_partly_reported_cost_is_not_the_cost(genai_prices: ModuleType) -> None:
    usage = Usage(calls=2, usage_calls=2, input_tokens=100, reported_cost_usd=0.42, reported_cost_calls=1,
                  models=("gpt-4o",))
    assert PriceBook().cost(usage).source.startswith("genai-prices ")
    assert PriceBook().cost(replace(usage, models=("acme-local-7b",))).usd is None


def test_price_file_wins_over_the_reported_cost(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"acme-local-7b": {"input": 0, "output": 0}}))
    usage = Usage(calls=1, usage_calls=1, input_tokens=100, reported_cost_usd=0.42, reported_cost_calls=1,
                  models=("acme-local-7b",))
    assert book.cost(usage) == Cost(0.0, "price file")


def test_no_reported_usage_is_no_cost() -> None:
    usage = Usage(calls=4, models=("gpt-4o",))
    assert PriceBook().cost(usage, "gpt-4o") == Cost(None, "unknown")


def test_several_models_share_no_price(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"a": {"input": 1, "output": 1}, "b": {"input": 2, "output": 2}}))
    usage = Usage(calls=2, usage_calls=2, input_tokens=10, models=("a", "b"))
    assert book.cost(usage) == Cost(None, "unknown")
    assert book.cost(usage, "b").usd == pytest.approx(20 / 1_000_000)


@pytest.mark.parametrize(("content", "match"), [
    ("[]", "expected a table of models"),
    ("{}", "expected a table of models"),
    ('{"m": 3}', "expected input and output prices"),
    ('{"m": {"input": 1}}', "expected input and output prices"),
    ('{"m": {"input": 1, "output": 2, "cached": 1}}', "unknown keys cached"),
    ('{"m": {"input": -1, "output": 2}}', "input must be a number of USD per million tokens from 0 to 100,000"),
    ('{"m": {"input": 1, "output": true}}', "output must be a number of USD per million tokens from 0 to 100,000"),
    ('{"m": {"input": "1", "output": 2}}', "input must be a number of USD per million tokens from 0 to 100,000"),
    ('{"m": {"input": 1e999, "output": 2}}', "input must be a number of USD per million tokens from 0 to 100,000"),
    ('{"m": {"input": 1, "output": 1e308}}', "output must be a number of USD per million tokens from 0 to 100,000"),
    ('{"m": {"input": 1,', "not valid JSON"),
])
def test_bad_price_files_stop_the_run(tmp_path: Path, content: str, match: str) -> None:
    with pytest.raises(OptionError, match=match):
        read_price_file(price_file(tmp_path, content))


def test_bad_toml_and_missing_files_stop_the_run(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="--gaia2-price-file: .*prices.toml"):
        read_price_file(price_file(tmp_path, "[m\ninput = 1", "prices.toml"))
    with pytest.raises(OptionError, match="no such file"):
        PriceBook.load(tmp_path / "absent.json")
    with pytest.raises(OptionError, match="not a regular file"):
        read_price_file(tmp_path)


def test_price_file_prices() -> None:
    assert Price(input=3.0, output=15.0, cached_input=0.3).usd(USAGE) == pytest.approx(
        (4_000 * 3.0 + 8_000 * 0.3 + 900 * 15.0) / 1_000_000)


def test_a_cost_past_the_ceiling_is_refused_never_infinite(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"m": {"input": prices.PRICE_MAX, "output": prices.PRICE_MAX}}))
    usage = Usage(calls=2, usage_calls=2, input_tokens=2 * 10**12, output_tokens=2 * 10**12, models=("m",))
    cost = book.cost(usage)
    assert cost.usd is None and cost.source.startswith("refused: $4e+11 from the price file is more than")
    assert book.cost(replace(usage, input_tokens=1000, output_tokens=0)).usd == pytest.approx(100.0)


def test_a_reported_cost_past_the_ceiling_is_refused() -> None:
    usage = Usage(calls=3, usage_calls=3, reported_cost_usd=3 * 999_999.0, reported_cost_calls=3, models=("x",))
    assert PriceBook().cost(usage).source.startswith("refused: $3e+06 from the reported by the provider")


def test_usage_with_a_refused_value_has_no_cost_rather_than_a_smaller_one(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"m": {"input": 1, "output": 1}}))
    refused = ("trace.jsonl, llm_call 2: usage.prompt_tokens is 1e+308, not a token count",)
    usage = Usage(calls=2, usage_calls=2, input_tokens=10, models=("m",), refused=refused)
    assert book.cost(usage) == Cost(None, f"refused: {refused[0]}")
    assert book.unknown_models == set()  # not a missing price: no "no price for" warning


def test_several_models_past_the_kept_names_share_no_price(tmp_path: Path) -> None:
    book = PriceBook.load(price_file(tmp_path, {"a": {"input": 1, "output": 1}}))
    usage = Usage(calls=2, usage_calls=2, input_tokens=10, models=("a",), other_models=1)
    assert book.cost(usage) == Cost(None, "unknown")
