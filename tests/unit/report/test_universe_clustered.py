"""The universe-clustered interval and design effect, worked by hand (Miller 2024, eq. 4)."""

from __future__ import annotations

import math

import pytest
from gaia2_records import record

from pytest_gaia2.report.stats import summarise


def test_clustered_interval_and_design_effect_by_hand() -> None:
    # u1: P P P, u2: F F F, u3: P F and an error. Strict: n = 9, p = 4/9.
    letters = {"u1": "PPP", "u2": "FFF", "u3": "PFE"}
    names = {"P": "passed", "F": "failed", "E": "error"}
    records = [
        record(
            f"{universe}_{i}",
            names[letter],
            universe=universe,
            error_category="daemon_error" if letter == "E" else None,
        )
        for universe, pattern in letters.items()
        for i, letter in enumerate(pattern)
    ]
    summary = summarise(records)
    strict = summary.clustered_strict
    assert strict is not None and (strict.clusters, strict.n) == (3, 9)
    p = 4 / 9
    # residual sums per universe: 3(1 - p), -3p, (1 - p) - 2p
    variance = ((3 * (1 - p)) ** 2 + (3 * p) ** 2 + (1 - 3 * p) ** 2) / 81
    assert strict.value == pytest.approx(p)
    half = 1.959964 * math.sqrt(variance)
    assert p - half < 0  # wider than the rate allows: clipped at 0
    assert (strict.low, strict.high) == pytest.approx((0.0, p + half), abs=1e-6)
    assert strict.design_effect == pytest.approx(variance / (p * (1 - p) / 9))
    # Judged-only: the error is left out. n = 8, p = 1/2, sums 1.5, -1.5, 0: variance 4.5 / 64,
    # design effect (4.5 / 64) / (0.25 / 8) = 2.25.
    judged = summary.clustered_judged
    assert judged is not None and judged.n == 8
    assert judged.design_effect == pytest.approx(2.25)
    assert 1.959964 * math.sqrt(4.5 / 64) > 0.5 and (judged.low, judged.high) == (0.0, 1.0)  # +-52 points, clipped
    data = summary.to_dict()["universe_clustered"]
    assert data["judged"]["design_effect"] == pytest.approx(2.25)
    assert data["strict"]["interval"] == "universe-clustered"


def test_independent_universes_have_a_design_effect_near_one() -> None:
    # One scenario per universe: every cluster is a single result, so the clustered variance is
    # sum((x - p)^2) / n^2 = p (1 - p) / n exactly.
    records = [record(f"s{i}", "passed" if i % 3 else "failed", universe=f"universe_{i}") for i in range(30)]
    clustered = summarise(records).clustered_strict
    assert clustered is not None and clustered.design_effect == pytest.approx(1.0)


def test_one_universe_gives_no_clustered_interval() -> None:
    summary = summarise([record("a", "passed", universe="u1"), record("b", "failed", universe="u1")])
    assert summary.clustered_strict is None and summary.to_dict()["universe_clustered"] is None
