"""benchmarks/bench_noise.py, which estimate of a run's speed varies least between identical
runs: each estimate read from what a run records, paired round by round."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from workflow_helpers import load_benchmark

bench = load_benchmark("bench_noise")


def made_up_run(folder: Path, target: str, k: int, images_per_s: float, cpu_share: float,
                gflops: float) -> None:  # fmt: skip
    """A run folder as the trainer writes it, with only what the estimates read: 3 epochs
    ending at t = 10, 20, 30 s, the trainer at ``cpu_share`` of its core between them."""
    run = folder / "train" / target / f"repeat-{k}"
    run.mkdir(parents=True)
    metrics = {
        "cpus": 1,
        "mean_images_per_s": images_per_s,
        "throughput_windows": {"median_images_per_s": images_per_s * 1.01},
        "calibration": {"before": {"gflops": gflops}, "after": {"gflops": gflops}},
        # what the neighbour took of the core, as the telemetry's interference says it
        "telemetry": {
            "interference": {"other_cpu_share_mean": 1 - cpu_share, "steal_percent_mean": 0.0}
        },
    }
    (run / "metrics.json").write_text(json.dumps(metrics))
    pd.DataFrame({"epoch": [1, 2, 3], "ended_unix_s": [10.0, 20.0, 30.0]}).to_csv(
        run / "history.csv", index=False
    )
    t = np.arange(1.0, 40.0)
    share = np.where((t > 10) & (t <= 30), 100 * cpu_share, 100.0)  # outside: not read
    pd.DataFrame({"unix_s": t, "cpu_percent_of_target": share}).to_csv(
        run / "telemetry.csv", index=False
    )


def test_per_cpu_second_divides_out_a_neighbour_that_took_the_core(tmp_path):
    """Copy b shares its core with another process in odd rounds (half its CPU time, half
    its speed): its epochs' images/s halve there, its images per CPU-second do not; the
    probe divides the machine's speed that minute out of both copies alike, so it leaves
    the neighbour in."""
    for k in range(1, 7):
        slowed = k % 2 == 1
        made_up_run(tmp_path, "host-1cpu-a", k, 100.0, 1.0, 50.0 + k)
        made_up_run(tmp_path, "host-1cpu-b", k, 50.0 if slowed else 100.0,
                    0.5 if slowed else 1.0, 50.0 + k)  # fmt: skip
    runs = bench.read_runs(tmp_path, "paper")
    assert len(runs) == 12 and set(runs["round"]) == set(range(1, 7))
    table = bench.summary(runs).set_index("estimate")
    assert table.loc["epochs", "pairs"] == 6
    assert table.loc["epochs", "sd"] == pytest.approx(np.std([np.log(0.5), 0] * 3, ddof=1))
    assert table.loc["cpu_seconds", "sd"] == pytest.approx(0.0, abs=1e-12)
    assert table.loc["windows", "sd"] == pytest.approx(table.loc["epochs", "sd"])
    assert table.loc["probe", "sd"] == pytest.approx(table.loc["epochs", "sd"])
    assert math.isnan(table.loc["cpu_seconds", "power_5pct_10_rounds"])  # sd 0: no t
    # Adjusted by either covariate (the trainer's share, the share interference left), the
    # neighbour is regressed out with a slope of 1 and the ratio is the copies' at equal
    # shares (1); a plain estimate has no slope.
    for covariate in ("share", "interference"):
        row = table.loc[f"epochs adjusted by {covariate}"]
        assert row["pairs"] == 6 and row["sd"] == pytest.approx(0.0, abs=1e-9)
        assert row["slope"] == pytest.approx(1.0) and row["mean_log_ratio"] == pytest.approx(0)
    assert math.isnan(table.loc["epochs", "slope"])
    # The telemetry's share is per core of the target already: a 2-core trainer with both
    # cores busy is at its epochs' speed per CPU-second, not half of it.
    made_up_run(tmp_path / "two", "host-2cpu", 1, 100.0, 1.0, 50.0)
    run = tmp_path / "two" / "train" / "host-2cpu" / "repeat-1"
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "cpus": 2}))
    assert bench.run_estimates(run)["cpu_seconds"] == pytest.approx(100.0)
    # The power of a paired t at 95 % in 10 rounds: about 98 % at an sd of 3.4 %, low at 8 %.
    assert bench.power(0.034) == pytest.approx(0.978, abs=0.01)
    assert bench.power(0.08) < 0.5


def test_a_covariate_adjustment_keeps_what_the_covariate_does_not_explain(tmp_path):
    """Copy b is 10 % faster in every round and its share moves at random, unrelated to its
    speed: the adjustment's slope is near 0 and the ratio stays 1.10 (the covariate takes
    nothing it does not explain)."""
    rng = np.random.default_rng(0)
    for k in range(1, 9):
        made_up_run(tmp_path, "host-1cpu-a", k, 100.0 * (1 + 0.01 * (k % 3)), 1.0, 50.0)
        made_up_run(tmp_path, "host-1cpu-b", k, 110.0 * (1 + 0.01 * (k % 3)),
                    float(rng.uniform(0.8, 1.0)), 50.0)  # fmt: skip
    table = bench.summary(bench.read_runs(tmp_path, "paper")).set_index("estimate")
    row = table.loc["epochs adjusted by share"]
    assert abs(row["slope"]) < 1e-9 and math.expm1(row["mean_log_ratio"]) == pytest.approx(0.10)
    # Too few pairs: no adjustment (NaN slope), not an error.
    logs, slope = bench.adjusted_logs(bench.read_runs(tmp_path, "paper").head(4), "share")
    assert len(logs) == 0 and math.isnan(slope)


def test_it_ends_with_the_epochs_sd_as_compare_noise(tmp_path, capsys):
    """compare.noise (until's floor) is the epochs' paired sd, printed to be copied."""
    for k in range(1, 7):
        made_up_run(tmp_path, "host-1cpu-a", k, 100.0, 1.0, 50.0)
        made_up_run(tmp_path, "host-1cpu-b", k, 100.0 * (1.05 if k % 2 else 0.97), 1.0, 50.0)
    assert bench.main([str(tmp_path)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    sd = np.std(np.log([1.05, 0.97] * 3), ddof=1)
    assert last.startswith(f"compare.noise: {sd:.3f} (the epochs' sd; 95 % interval ")
    assert last.endswith(" from 6 pairs)")
