"""Paired ratios to a base target (issue 23, item 2) on made-up numbers with a known truth:
the interval covers it, a drift of the machine biases a blocked order but not rounds, an A/A
comparison calls no difference."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embryo_bench.compare import compare, median_interval, noise, paired_ratios


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
