"""A machine baseline (issue 23, item 5): back-to-back probes summarised as the machine's own
noise, used for the drift flag; the probe's warm-ups and per-product times."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from embryo_bench.baseline import load_baseline
from embryo_bench.calibrate import drift_limit, judged_lengths, lag_reaches, machine_baseline
from embryo_bench.errors import ConfigError
from embryo_bench.stability import assess, thresholds


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


#: The machine and settings of the hand-made baselines and runs here (they fit each other).
MACHINE = {"hostname": "vm-a", "cpu_model": "Some CPU"}
SETTINGS = {"backend": "tensorflow", "threads": 1, "cpus": 1}


def _run(change: float, seconds: float) -> dict:
    return {
        **SETTINGS,
        "gpus": 0,
        "provenance": MACHINE,
        "diverged": None,
        "flops": {"probe_change": change},
        "calibration": {"before": {"gflops": 60.0}, "after": {"gflops": 60.0 * (1 - change)}},
        "wall_clock": {"started_unix_s": 100.0, "ended_unix_s": 100.0 + seconds},
    }


def test_with_a_baseline_a_run_drifts_only_beyond_the_machines_own_noise():
    rng = np.random.default_rng(0)
    noisy_machine = machine_baseline(_probes(60.0 * np.exp(rng.normal(0, 0.09, 200))))
    noisy_machine |= {"machine": MACHINE, "settings": SETTINGS}
    limits = thresholds()
    run = _run(0.15, 50.0)  # over the 10 % default, inside this machine's noise at 50 s
    assert assess(run, limits)["flags"] == ["drifted"]
    limit, lag = drift_limit(noisy_machine, 50.0)
    assert limit > 0.15 and lag == pytest.approx(60.0, abs=2.1)
    assert "drifted" not in assess(run, limits, noisy_machine)["flags"]
    far = assess(_run(limit + 0.05, 50.0), limits, noisy_machine)
    assert far["flags"] == ["drifted"]
    assert "this machine's quiet probes 60 s apart differ by up to that" in far["reasons"][0]


def test_a_file_that_is_not_a_baseline_is_named(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps({"probes": 3}))
    with pytest.raises(ConfigError, match=r"b.json: not a machine baseline \('probe_seconds'"):
        load_baseline(bad)
    with pytest.raises(ConfigError, match="missing.json: file not found"):
        load_baseline(tmp_path / "missing.json")


def _calibrate(*args: str):
    cmd = [sys.executable, "-m", "embryo_bench.cli", "calibrate", *args]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_calibrate_refuses_bad_settings_in_one_line(tmp_path):
    proc = _calibrate("--probes", "2", "--out", str(tmp_path / "m.json"))
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "embryo-bench: error: calibrate: --probes 2: a baseline gives the change between "
        "probes a lag apart only from 10 pairs that far apart, so it needs at least 11 probes "
        "(default 100)")  # fmt: skip
    proc = _calibrate("--threads", "2", "--cpus", "1", "--out", str(tmp_path / "m.json"))
    assert "calibrate: --threads 2 --cpus 1: more threads than cpus would share" in proc.stderr
    assert not (tmp_path / "m.json").exists()


@pytest.mark.slow
def test_calibrate_writes_a_baseline_of_warm_probes(tmp_path):
    out = tmp_path / "machine.json"
    proc = _calibrate("--probes", "12", "--seconds", "0.05", "--out", str(out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    base = load_baseline(out)
    assert base["probes"] == 12 and len(base["gflops"]) == 12
    assert base["settings"]["threads"] == 1 and len(base["settings"]["cores"]) == 1
    assert base["changes"] and base["changes"][0]["pairs"] >= 10
    assert proc.stdout.startswith("12 probes of 0.") and "written" in proc.stdout
