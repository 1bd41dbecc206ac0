"""The typed Options and the OPTIONS table stay in step: one field per row, typed from its kind."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, Literal

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.values import Shard
from pytest_gaia2.engine.spec import EngineSpec

NAMES = {"EngineSpec": EngineSpec, "Shard": Shard, "Literal": Literal}


def expected_type(option: options.Option) -> Any:
    """What a row's value is once parsed: its parser's result, a tuple of them when repeatable,
    a bool for a flag, one of its choices; None too when it has no default."""
    parsed = typing.get_type_hints(option.parse, localns=NAMES)["return"]
    if option.multiple:
        return tuple[parsed, ...]
    if option.flag:
        return bool
    kind = Literal[tuple(option.choices)] if option.choices else parsed
    return kind | None if option.default is None else kind


def fields() -> dict[str, Any]:
    return typing.get_type_hints(options.Options, localns=NAMES)


def test_every_row_has_a_field_and_every_field_a_row() -> None:
    rows = [option.key for option in options.OPTIONS]
    assert [field.name for field in dataclasses.fields(options.Options)] == rows


@pytest.mark.parametrize("option", options.OPTIONS, ids=lambda option: option.key)
def test_each_field_is_typed_from_its_row(option: options.Option) -> None:
    expected = expected_type(option)
    assert fields()[option.key] == expected, f"Options.{option.key} should be {expected}"


def test_the_defaults_have_their_fields_types() -> None:
    """A row's default is a value of its own field's type (what an unset option reads as)."""
    values = options.resolve({}, {}, {})
    for option in options.OPTIONS:
        value = getattr(values, option.key)
        expected = expected_type(option)
        allowed = typing.get_args(expected) if typing.get_origin(expected) in (typing.Union, type(int | None)) else (
            expected,)
        assert any(_is(value, kind) for kind in allowed), f"{option.key}: default {value!r} is not {expected}"


def _is(value: Any, kind: Any) -> bool:
    if kind is type(None):
        return value is None
    if typing.get_origin(kind) is Literal:
        return value in typing.get_args(kind)
    origin = typing.get_origin(kind)
    return isinstance(value, origin or kind)


def test_options_are_frozen() -> None:
    values = options.resolve({}, {}, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        values.timeout = 1.0  # type: ignore[misc]  # the point of the test
