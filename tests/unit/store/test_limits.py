"""The effective timeout: upstream's rule (declared duration + 60 s) by default, the slack an option."""

from __future__ import annotations

import pytest

from pytest_gaia2.config import options
from pytest_gaia2.config.settings import limits_of
from pytest_gaia2.store.limits import Limits


def _limits(**cli: str) -> Limits:
    return limits_of(options.resolve(cli, {}, {}))


@pytest.mark.parametrize(
    ("cli", "duration", "expected"),
    [
        ({}, None, 600.0),  # no declared duration: the configured timeout
        ({}, 1000.0, 1060.0),  # upstream: duration + 60 s
        ({}, 30.0, 600.0),  # the larger of the two
        ({"timeout": "10"}, 30.0, 90.0),
        ({"timeout": "1", "duration_slack": "4"}, 1.0, 5.0),
        ({"timeout": "1", "duration_slack": "0"}, 20.0, 20.0),
    ],
)
def test_the_effective_timeout_is_the_larger_of_timeout_and_duration_plus_slack(
    cli: dict[str, str], duration: float | None, expected: float
) -> None:
    assert _limits(**cli).effective_timeout(duration) == expected


@pytest.mark.parametrize("raw", ["-1", "nan", "inf", "soon"])
def test_a_bad_slack_is_one_error_naming_the_option(raw: str) -> None:
    with pytest.raises(options.OptionError, match="--gaia2-duration-slack"):
        _limits(duration_slack=raw)
