"""A machine baseline: back-to-back probes summarised as the machine's own
noise, the drift limit it gives a run of a given length, and the lengths it judges. How a
baseline is checked, taken and used is tests/test_baseline_checks.py's."""

from __future__ import annotations

import numpy as np
import pytest

from embryo_bench.recording.calibrate import (
    drift_limit,
    judged_lengths,
    lag_reaches,
    machine_baseline,
)


def _probes(gflops) -> list[dict]:
    return [{"gflops": float(g), "seconds": 2.0} for g in gflops]


def test_the_baseline_gives_the_change_between_probes_as_far_apart_as_a_run():
    # Alternating 50 / 60 GFLOP/s: neighbours differ by 1/6, probes 4 s apart not at all.
    base = machine_baseline(_probes([50.0, 60.0] * 50), lags_s=(2, 4, 1000))
    assert base["probes"] == 100 and base["probe_seconds"] == 2.0
    assert (base["gflops_min"], base["gflops_max"], base["gflops_mean"]) == (50.0, 60.0, 55.0)
    assert base["cv"] == pytest.approx(np.std([50.0, 60.0] * 50, ddof=1) / 55.0)
    two, four = base["changes"]  # 1000 s apart: fewer than 10 pairs, left out
    assert (two["lag_s"], two["pairs"], four["lag_s"]) == (2.0, 99, 4.0)
    assert two["median"] == pytest.approx(1 / 6) and two["share_over_10pct"] == 1.0
    assert four["p99"] == 0.0
    assert drift_limit(base, 3.5) == (0.0, 4.0)  # the nearest lag (on a log scale)
    assert drift_limit(base, 1.0) == (pytest.approx(1 / 6), 2.0)
    assert drift_limit(base, None) is None
    with pytest.raises(ValueError, match="at least 3 probes"):
        machine_baseline(_probes([1.0, 2.0]))


@pytest.mark.parametrize("lags", [(2, 10, 30, 60), (2, 4, 8), (60,), (1, 1000)])
def test_the_lengths_a_baseline_judges_are_those_its_nearest_lag_reaches(lags):
    """Before, the plan's note said a baseline of lags 2, 10, 30 and 60 s judges runs of
    1-120 s; a 4.5 s run's nearest lag is 10 s, which does not reach it."""
    base = {"changes": [{"lag_s": float(lag), "p99": 0.1} for lag in lags]}
    spans = judged_lengths(base)
    for seconds in np.geomspace(0.1, 5000, 4001):
        _, lag = drift_limit(base, seconds)
        inside = any(low <= seconds <= high for low, high in spans)
        assert inside == lag_reaches(lag, seconds), (seconds, lag, spans)
    if lags == (2, 10, 30, 60):
        assert spans == [(1.0, 4.0), (5.0, 120.0)]
    assert judged_lengths({"changes": []}) == []
