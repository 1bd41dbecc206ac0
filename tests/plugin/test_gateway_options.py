"""The gateway's options refused at start-up with one clear message naming the option, before
any run folder or container exists, serially and under xdist."""

from __future__ import annotations

from typing import Any

import pytest
from gaia2_testing import SHIPPED

ONE = f"--gaia2-scenarios={SHIPPED / 'search' / 'scenario_universe_21_7kww6e.json'}"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--gaia2-gateway=on",), "--gaia2-gateway=on: no provider key is configured to forward with"),
        (("--gaia2-scenario-cap=0.5",), "--gaia2-scenario-cap needs the model gateway, which is off for this run"),
        (("--gaia2-scenario-token-cap=1000",), "--gaia2-scenario-token-cap needs the model gateway"),
        (("--gaia2-gateway=sometimes",), "--gaia2-gateway"),
        (("--gaia2-scenario-token-cap=0",), "--gaia2-scenario-token-cap"),
    ],
    ids=["on-without-key", "scenario-cap-without-gateway", "token-cap-without-gateway", "bad-value", "zero-tokens"],
)
def test_a_gateway_option_that_cannot_hold_is_one_usage_error(
    pytester: pytest.Pytester,
    run_gaia2_inprocess: Any,
    clean_env: pytest.MonkeyPatch,
    workers: tuple[str, ...],
    args: tuple[str, ...],
    message: str,
) -> None:
    result = run_gaia2_inprocess(*workers, ONE, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.stderr.str().count(message) == 1, result.stderr.str()[-2000:]
    assert not (pytester.path / "out").exists()
