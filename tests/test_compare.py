"""Paired ratios to a base target (issue 23, item 2) on made-up numbers with a known truth:
the interval covers it, a drift of the machine biases a blocked order but not rounds, an A/A
comparison calls no difference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embryo_bench.reporting.compare import (
    compare,
    comparison_table,
    in_planned_order,
    median_interval,
    noise,
    paired_ratios,
)
from embryo_bench.reporting.stability import flag_runs


def _runs(order: list[str], truth: dict[str, float], drift: float, sd: float, seed: int = 0):
    """Runs made one after another in ``order`` (a target name each), the k-th run of a
    target in round k; the machine's speed grows by ``drift`` per run and each run adds
    log-normal noise ``sd``: throughput = truth x speed x noise."""
    rng = np.random.default_rng(seed)
    rows, seen = [], {}
    for t, target in enumerate(order):
        seen[target] = seen.get(target, 0) + 1
        speed = 1 + drift * t
        rate = truth[target] * speed * float(np.exp(rng.normal(0, sd)))
        rows.append({"target": target, "round": seen[target], "images_per_s": rate})
    return pd.DataFrame(rows)


TRUTH = {"A": 100.0, "B": 90.0}  # B is 10 % slower


def test_rounds_recover_the_true_ratio_through_a_drift():
    order = [x for k in range(10) for x in (("A", "B") if k % 2 == 0 else ("B", "A"))]
    result = compare(_runs(order, TRUTH, drift=0.03, sd=0.02), "A", machine_noise=0.05)
    (row,) = result.to_dict("records")
    assert row["pairs"] == 10
    assert row["ratio_low"] < 0.9 < row["ratio_high"]  # the interval covers the truth
    assert row["ratio_median"] == pytest.approx(0.9, abs=0.02)
    assert row["verdict"] == "slower"


def test_a_blocked_order_under_drift_is_biased_rounds_are_not():
    blocked = ["A"] * 10 + ["B"] * 10  # every A first: B ran on a faster machine
    rounds = [x for k in range(10) for x in (("A", "B") if k % 2 == 0 else ("B", "A"))]
    ratio = {
        name: compare(_runs(order, TRUTH, drift=0.03, sd=0.0), "A", 0.05)["ratio_median"][0]
        for name, order in (("blocked", blocked), ("rounds", rounds))
    }
    assert ratio["blocked"] > 1.1  # 10 % slower, reported faster: the drift's doing
    assert ratio["rounds"] == pytest.approx(0.9, abs=0.03)


def test_an_a_a_comparison_calls_no_difference():
    order = [x for k in range(5) for x in (("A", "A2") if k % 2 == 0 else ("A2", "A"))]
    truth = {"A": 100.0, "A2": 100.0}  # the same target entered twice
    for seed in range(20):
        (row,) = compare(_runs(order, truth, 0.01, 0.05, seed), "A", 0.05).to_dict("records")
        assert row["verdict"] == "no measured difference", (seed, row)


def test_a_difference_inside_the_machines_noise_is_not_called():
    # 3 % slower, measured precisely (tiny noise): the interval excludes 1, yet a machine
    # that varies by 5 % between runs cannot tell 3 % from its own noise.
    order = [x for k in range(10) for x in (("A", "B") if k % 2 == 0 else ("B", "A"))]
    truth = {"A": 100.0, "B": 97.0}
    (row,) = compare(_runs(order, truth, 0.0, 0.002), "A", 0.05).to_dict("records")
    assert row["ratio_high"] < 1 and row["verdict"] == "no measured difference"
    (row,) = compare(_runs(order, truth, 0.0, 0.002), "A", 0.01).to_dict("records")
    assert row["verdict"] == "slower"


def test_pairs_need_the_base_in_the_same_round():
    runs = pd.DataFrame(
        {
            "target": ["A", "B", "B", "A", "B"],
            "round": [1, 1, 2, 2, 3],  # round 3 has no base run
            "images_per_s": [100.0, 50.0, 60.0, 120.0, 70.0],
        }
    )
    pairs = paired_ratios(runs, "A")
    assert pairs.to_dict("list") == {"target": ["B", "B"], "round": [1, 2], "ratio": [0.5, 0.5]}
    (row,) = compare(runs.iloc[:2], "A", 0.05).to_dict("records")
    assert (row["pairs"], row["verdict"]) == (1, "one pair: no interval")


def test_bad_input_is_named():
    runs = pd.DataFrame({"target": ["A", "A"], "round": [1, 1], "images_per_s": [1.0, 2.0]})
    with pytest.raises(ValueError, match="target 'A' has more than one run in round 1"):
        paired_ratios(runs, "A")
    with pytest.raises(ValueError, match="base target 'Z' has no run"):
        paired_ratios(runs, "Z")
    with pytest.raises(ValueError, match="positive and finite"):
        median_interval([1.0, 0.0])
    with pytest.raises(ValueError, match="positive and finite"):
        median_interval([])


def test_an_interval_is_symmetric_for_a_ratio_and_its_reciprocal():
    r = [0.8, 0.9, 1.1, 0.95, 0.85]
    med, low, high = median_interval(r)
    med_inv, low_inv, high_inv = median_interval([1 / x for x in r])
    assert (med, low, high) == pytest.approx((1 / med_inv, 1 / high_inv, 1 / low_inv))
    assert median_interval([1.2]) == (1.2, 1.2, 1.2)


def test_noise_is_a_robust_standard_deviation_of_the_logarithm():
    rng = np.random.default_rng(1)
    values = np.exp(rng.normal(0, 0.05, 2000))
    assert noise(values) == pytest.approx(0.05, rel=0.1)
    assert noise(np.append(values[:99], 1e6)) == pytest.approx(0.05, rel=0.2)  # one outlier
    assert noise([3.0]) == 0.0


def _table(rates: dict[str, list[float]], tta: dict[str, list[float]] | None = None):
    """A results table: target -> one throughput per round (and time to accuracy); runs
    slower than 80 images/s are flagged."""
    rows = []
    for target, values in rates.items():
        for k, v in enumerate(values, start=1):
            t = (tta or {}).get(target, [np.nan] * len(values))[k - 1]
            flags = "drifted" if v < 80 else ""
            rows.append({"target": target, "repeat": k, "images_per_s": v,
                         "time_to_accuracy_s": t, "flags": flags})  # fmt: skip
    return pd.DataFrame(rows)


def test_flags_are_counted_by_name():
    flags = pd.Series(["", "interfered, drifted", "drifted", None, "noisy"])
    assert flag_runs(flags) == {"flagged_runs": 3, "diverged_runs": 0, "interfered_runs": 1,
                                "drifted_runs": 2, "noisy_runs": 1}  # fmt: skip


def test_the_comparison_table_leads_with_the_base_and_turns_time_into_speed():
    table = comparison_table(
        _table(
            {"B": [80.0, 82.0, 79.0, 81.0, 80.0], "A": [100.0, 101.0, 99.0, 100.0, 102.0]},
            {"A": [10.0] * 5, "B": [20.0, 20.0, 19.0, 21.0, 20.0]},
        ),
        base="A",
        min_difference=0.05,
    )
    assert list(table["target"]) == ["A", "B"]  # the base first
    assert list(table["flagged_runs"]) == [0, 1]  # counted, and still in the ratio
    a, b = table.iloc[0], table.iloc[1]
    assert a["throughput_verdict"] == "base" and a["throughput_ratio"] == 1.0
    assert b["throughput_pairs"] == 5 and b["throughput_verdict"] == "slower"
    assert b["throughput_ratio"] == pytest.approx(0.8, abs=0.01)
    assert b["throughput_low"] <= b["throughput_ratio"] <= b["throughput_high"] < 1
    # Twice the base's time to accuracy is half its speed.
    assert b["time_to_accuracy_ratio"] == pytest.approx(0.5)
    assert b["time_to_accuracy_verdict"] == "slower"


def test_a_base_that_never_reached_the_accuracy_gives_no_pair():
    table = comparison_table(
        _table({"A": [100.0, 100.0], "B": [90.0, 91.0]}, {"B": [5.0, 5.0]}), "A", 0.05
    )
    a, b = table.set_index("target").loc["A"], table.set_index("target").loc["B"]
    assert b["time_to_accuracy_verdict"] == "no pair" and b["time_to_accuracy_pairs"] == 0
    assert a["time_to_accuracy_verdict"] == "base: not reached"
    assert a["throughput_verdict"] == "base" and a["throughput_pairs"] == 2
    assert (b["throughput_pairs"], b["throughput_verdict"]) == (2, "slower")
    with pytest.raises(ValueError, match="compare.base 'C' has no run"):
        comparison_table(_table({"A": [1.0]}), "C", 0.05)


def _timed(order: list[tuple[str, int]], gap: float = 1.0) -> pd.DataFrame:
    rows = [{"target": t, "repeat": k, "started_unix_s": 10.0 * i,
             "ended_unix_s": 10.0 * i + 10.0 - gap} for i, (t, k) in enumerate(order)]  # fmt: skip
    return pd.DataFrame(rows)


def test_the_order_check_finds_another_order_overlaps_and_missing_times():
    planned = [("A", 1), ("B", 1), ("B", 2), ("A", 2)]
    ok, why = in_planned_order(_timed(planned), planned)
    assert ok is True and why == "4 runs ran one after another in the planned order"
    ok, why = in_planned_order(_timed([("A", 1), ("B", 1), ("A", 2), ("B", 2)]), planned)
    assert ok is False and why.endswith("A#1, B#1, A#2, B#2")
    ok, why = in_planned_order(_timed(planned, gap=-2.0), planned)
    assert ok is False and why == "timed runs overlapped: B#1 started before A#1 ended"
    old = _timed(planned).assign(started_unix_s=[0.0, np.nan, 20.0, 30.0])
    assert in_planned_order(old, planned) == (
        None, "order not checked: 1 of 4 runs recorded no start time")  # fmt: skip
