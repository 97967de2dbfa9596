"""Ratios to a base target on made-up numbers
with a known truth: the interval covers it, a drift of the machine biases a blocked order but
not rounds, an A/A comparison calls no difference at 3 rounds and more, twice as slow is
slower at every min_difference, and runs that share no round get a wider, unpaired interval
that still covers the truth."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from test_figures import _run as made_up_run

from embryo_bench.reporting import (
    comparison_figures,
    figures,
    readable_tables,
    utilisation,
)
from embryo_bench.reporting.compare import (
    MIN_PAIRS,
    SAME,
    UNRESOLVED,
    compare,
    comparison_table,
    direction,
    more_rounds,
    noise,
    paired_ratios,
    ratio_interval,
    simultaneous_confidence,
    unpaired_interval,
    verdict,
)
from embryo_bench.reporting.run_order import in_planned_order
from embryo_bench.reporting.stability import flag_runs
from embryo_bench.vocabulary.config import load_schema


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
    assert row["ratio"] == pytest.approx(0.9, abs=0.02)
    assert row["verdict"] == "at least 5 % slower"  # the whole interval below 1 / 1.05


def test_a_blocked_order_under_drift_is_biased_rounds_are_not():
    blocked = ["A"] * 10 + ["B"] * 10  # every A first: B ran on a faster machine
    rounds = [x for k in range(10) for x in (("A", "B") if k % 2 == 0 else ("B", "A"))]
    ratio = {
        name: compare(_runs(order, TRUTH, drift=0.03, sd=0.0), "A", 0.05)["ratio"][0]
        for name, order in (("blocked", blocked), ("rounds", rounds))
    }
    assert ratio["blocked"] > 1.1  # 10 % slower, reported faster: the drift's doing
    assert ratio["rounds"] == pytest.approx(0.9, abs=0.03)


def test_an_a_a_comparison_calls_no_difference():
    """The same target entered twice: never faster or slower; the same within the noise
    where the interval fits inside it, else unresolved with how many more rounds."""
    order = [x for k in range(5) for x in (("A", "A2") if k % 2 == 0 else ("A2", "A"))]
    truth = {"A": 100.0, "A2": 100.0}  # the same target entered twice
    said = set()
    for seed in range(20):
        (row,) = compare(_runs(order, truth, 0.01, 0.05, seed), "A", 0.05).to_dict("records")
        said.add(direction(row["verdict"]))
        assert direction(row["verdict"]) in (SAME, UNRESOLVED), (seed, row)
        if direction(row["verdict"]) == SAME:
            assert row["verdict"] == "the same within ±5 %"
            assert row["ratio_low"] >= 1 / 1.05 and row["ratio_high"] <= 1.05
        else:
            assert re.fullmatch(r"unresolved: about \d+ more rounds would likely resolve it",
                                row["verdict"]), row  # fmt: skip
    assert said == {SAME, UNRESOLVED}  # 5 rounds at 5 % noise: some are, some not yet


def test_a_difference_inside_the_machines_noise_is_slower_but_not_at_least_the_noise():
    # 3 % slower, measured precisely (tiny noise): the interval excludes 1, so it is slower,
    # but not "at least 5 %" slower: the interval decides, not the point estimate.
    order = [x for k in range(10) for x in (("A", "B") if k % 2 == 0 else ("B", "A"))]
    truth = {"A": 100.0, "B": 97.0}
    (row,) = compare(_runs(order, truth, 0.0, 0.002), "A", 0.05).to_dict("records")
    assert row["ratio_high"] < 1 and row["verdict"] == "slower"
    (row,) = compare(_runs(order, truth, 0.0, 0.002), "A", 0.01).to_dict("records")
    assert row["verdict"] == "at least 1 % slower"


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
    with pytest.raises(ValueError, match="ratios must be positive and finite"):
        ratio_interval([1.0, 0.0])
    with pytest.raises(ValueError, match="ratios must be positive and finite"):
        ratio_interval([])
    with pytest.raises(ValueError, match="base values must be positive and finite"):
        unpaired_interval([1.0, 2.0], [])


def test_an_interval_is_symmetric_for_a_ratio_and_its_reciprocal():
    r = [0.8, 0.9, 1.1, 0.95, 0.85]
    for interval, args, inverse in (
        (ratio_interval, (r,), ([1 / x for x in r],)),
        (unpaired_interval, (r, [1.0, 1.1, 0.9]), ([1.0, 1.1, 0.9], r)),
    ):
        mid, low, high = interval(*args)
        mid_inv, low_inv, high_inv = interval(*inverse)
        assert (mid, low, high) == pytest.approx((1 / mid_inv, 1 / high_inv, 1 / low_inv))
    assert ratio_interval([1.2]) == (1.2, 1.2, 1.2)
    # The geometric mean, and the t distribution's n - 1 degrees of freedom: 2 pairs give
    # log 4 +- t(0.975, 1) x (sd of the logs / sqrt 2) = log 4 +- 12.7 x log 2.
    half = stats.t.ppf(0.975, 1) * np.log(2.0)
    assert ratio_interval([2.0, 8.0]) == pytest.approx((4.0, 4 * np.exp(-half), 4 * np.exp(half)))


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


def test_a_paired_row_gives_its_pairs_sd_the_noise_compare_until_can_be_floored_at():
    """The sd of the paired ratios' logarithms (n - 1): for a copy of the base (an A/A), the
    machine's paired noise compare.noise asks for; NaN for the base, an unpaired row and one
    pair."""
    a, copy = [100.0, 104.0, 97.0, 101.0], [103.0, 99.0, 98.0, 106.0]
    table = comparison_table(_table({"A": a, "A2": copy, "B": [90.0]}), "A", 0.05)
    rows = table.set_index("target")
    logs = np.log(np.array(copy) / np.array(a))
    assert rows.loc["A2", "throughput_paired_sd"] == pytest.approx(logs.std(ddof=1))
    assert np.isnan(rows.loc["A", "throughput_paired_sd"])
    assert np.isnan(rows.loc["B", "throughput_paired_sd"])  # one pair
    unpaired = comparison_table(_table({"A": a, "A2": copy}), "A", 0.05, elsewhere={"A2"})
    assert np.isnan(unpaired.set_index("target").loc["A2", "throughput_paired_sd"])


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
    assert list(table["pairing"]) == ["base", "paired"]
    assert list(table["flagged_runs"]) == [0, 1]  # counted, and still in the ratio
    a, b = table.iloc[0], table.iloc[1]
    assert a["throughput_verdict"] == "base" and a["throughput_ratio"] == 1.0
    assert b["throughput_pairs"] == 5 and b["throughput_verdict"] == "at least 5 % slower"
    assert b["throughput_ratio"] == pytest.approx(0.8, abs=0.01)
    assert b["throughput_low"] <= b["throughput_ratio"] <= b["throughput_high"] < 1
    # Twice the base's time to accuracy is half its speed.
    assert b["time_to_accuracy_ratio"] == pytest.approx(0.5, abs=0.01)
    assert b["time_to_accuracy_verdict"] == "at least 5 % slower"


def test_a_missing_time_to_accuracy_says_who_reached_it():
    table = comparison_table(
        _table(
            {"A": [100.0] * 3, "B": [90.0, 91.0, 89.0], "C": [100.0, 99.0, 101.0]},
            {"A": [12.0, 13.0, 14.0], "C": [11.0, np.nan, 12.0]},
        ),  # fmt: skip
        "A",
        0.05,
    ).set_index("target")
    # B never reached it while the base did (was "no pair").
    assert table.loc["B", "time_to_accuracy_verdict"] == "never reached (base: 13 s)"
    assert (table.loc["B", "time_to_accuracy_runs"], table.loc["B", "throughput_runs"]) == (0, 3)
    assert table.loc["C", "time_to_accuracy_pairs"] == 2  # the round C did not reach: no pair
    table = comparison_table(
        _table({"A": [100.0, 100.0], "B": [90.0, 91.0]}, {"B": [5.0, 5.0]}), "A", 0.05
    ).set_index("target")
    a, b = table.loc["A"], table.loc["B"]
    assert b["time_to_accuracy_verdict"] == "base never reached (this target: 5 s)"
    assert b["time_to_accuracy_pairs"] == 0 and np.isnan(b["time_to_accuracy_ratio"])
    assert a["time_to_accuracy_verdict"] == "base: not reached"
    assert a["throughput_verdict"] == "base" and a["throughput_pairs"] == 2
    # 10 % slower in both rounds, but 2 pairs are too few for a verdict.
    assert b["throughput_ratio"] == pytest.approx(0.905, rel=1e-3)
    assert (b["throughput_pairs"], b["throughput_verdict"]) == (
        2, f"2 pairs: too few for a verdict ({MIN_PAIRS} needed)")  # fmt: skip
    neither = comparison_table(_table({"A": [100.0], "B": [90.0]}), "A", 0.05)
    assert neither["time_to_accuracy_verdict"].tolist() == [
        "base: not reached", "never reached, nor the base"]  # fmt: skip
    with pytest.raises(ValueError, match="compare.base 'C' has no run"):
        comparison_table(_table({"A": [1.0]}), "C", 0.05)


def _experiment(truth: dict[str, float], rounds: int, seed: int, run_sd=None, round_sd=0.1):
    """A made-up results table with a shared machine's noise: round k runs every target once
    (alternating order); each round's speed is log-normal (``round_sd``, shared by the runs
    of that round) and each run adds its own log-normal noise (``run_sd``; default: drawn
    between 3 and 9 % per experiment, as this project's VMs measured)."""
    rng = np.random.default_rng(seed)
    run_sd = rng.uniform(0.03, 0.09) if run_sd is None else run_sd
    rows = []
    for k in range(1, rounds + 1):
        speed = np.exp(rng.normal(0, round_sd))
        order = list(truth) if k % 2 else list(truth)[::-1]
        for target in order:
            rate = truth[target] * speed * np.exp(rng.normal(0, run_sd))
            rows.append({"target": target, "repeat": k, "images_per_s": rate,
                         "time_to_accuracy_s": np.nan, "flags": ""})  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("rounds", [3, 5, 10])
def test_an_a_a_comparison_calls_no_difference_in_95_percent_of_experiments(rounds):
    # A percentile bootstrap of 3 pairs called an A/A pair "slower". The t interval
    # of the log ratios holds its level at 3 rounds.
    verdicts = []
    for seed in range(200):
        table = _experiment({"A": 100.0, "A2": 100.0}, rounds, seed).pivot(
            index="repeat", columns="target", values="images_per_s"
        )
        ratios = table["A2"] / table["A"]  # the pairs, as paired_ratios makes them
        verdicts.append(verdict(rounds, *ratio_interval(ratios), machine_noise=0.05))
    calls = pd.Series([direction(v) for v in verdicts]).value_counts()
    # Called faster or slower in about 5 %: the interval's own level, no gate on top (two
    # standard errors of 200 experiments above it; across rows, more: see the benchmark).
    assert calls.get("faster", 0) + calls.get("slower", 0) <= (0.05 + 2 * 0.0154) * 200, calls


def test_a_table_of_identical_targets_calls_one_different_in_at_most_5_percent():
    """Three targets identical to the base, 5 rounds: with each row at 95 % some row is
    called faster or slower in about 14 % of tables; with the table's intervals holding
    together (simultaneous_confidence) in at most 5 % (two standard errors of 200 above)."""
    truth = {"A": 100.0, "B": 100.0, "C": 100.0, "D": 100.0}
    per_row = together = 0
    for seed in range(200):
        runs = _experiment(truth, 5, seed).rename(columns={"repeat": "round"})
        alone = compare(runs, "A", 0.05)
        joint = compare(runs, "A", 0.05, confidence=simultaneous_confidence(3))
        per_row += any(direction(v) in ("faster", "slower") for v in alone["verdict"])
        together += any(direction(v) in ("faster", "slower") for v in joint["verdict"])
    assert together <= (0.05 + 2 * 0.0154) * 200, (together, per_row)
    assert per_row > together


def test_the_table_widens_throughput_to_its_rows_and_leaves_time_to_accuracy_at_95():
    table = _experiment({"A": 100.0, "B": 120.0, "C": 90.0}, 5, seed=4)
    table["time_to_accuracy_s"] = 1000.0 / table["images_per_s"]
    out = comparison_table(table, "A", 0.05).set_index("target")
    assert out.loc["B", "throughput_confidence"] == pytest.approx(1 - 0.05 / 2)
    assert out.loc["B", "time_to_accuracy_confidence"] == 0.95
    alone = compare(table.rename(columns={"repeat": "round"}), "A", 0.05).set_index("target")
    assert out.loc["B", "throughput_low"] < alone.loc["B", "ratio_low"]
    assert out.loc["B", "throughput_high"] > alone.loc["B", "ratio_high"]
    assert simultaneous_confidence(1) == simultaneous_confidence(0) == 0.95


def test_after_an_early_stop_the_table_holds_its_rows_at_99_percent_and_says_so(tmp_path):
    """compare.until stopped early (planning.rounds.EARLY_STOP_CONFIDENCE): the throughput
    intervals hold together at 99 %, each row at 99 % / rows; the readable tables and the
    note say 99 %, not 95 %, and count the rows from the 99 % (one row is no family)."""
    from embryo_bench.reporting import readable_tables

    one = _experiment({"A": 100.0, "B": 120.0}, 6, seed=4)
    out = comparison_table(one, "A", 0.05, confidence=0.99).set_index("target")
    assert out.loc["B", "throughput_confidence"] == pytest.approx(0.99)
    assert out.loc["B", "throughput_family_confidence"] == 0.99
    assert out.loc["B", "time_to_accuracy_family_confidence"] == 0.95
    plain = comparison_table(one, "A", 0.05).set_index("target")
    assert out.loc["B", "throughput_low"] < plain.loc["B", "throughput_low"]
    levels = readable_tables.table_levels(out.reset_index())
    assert readable_tables.family_rows(*levels) == 1
    assert readable_tables.interval_label(*levels) == "99 % interval"
    three = _experiment({"A": 100.0, "B": 120.0, "C": 90.0}, 6, seed=4)
    joint = comparison_table(three, "A", 0.05, confidence=0.99)
    levels = readable_tables.table_levels(joint)
    assert levels[0] == pytest.approx(0.995) and readable_tables.family_rows(*levels) == 2
    assert readable_tables.interval_label(*levels) == "99 % simultaneous interval"
    assert "99 % for all 2 compared rows" in readable_tables.comparison_note(joint)
    # Before this column existed, a table's level alone said its rows (at 95 %).
    assert (
        readable_tables.table_levels(joint.drop(columns="throughput_family_confidence"))[1] == 0.95
    )


def _min_difference_bounds() -> tuple[float, float]:
    """compare.min_difference's allowed range, from the schema."""
    spec = load_schema()["properties"]["compare"]["properties"]["min_difference"]
    return spec["minimum"], spec["maximum"]


def test_twice_as_slow_is_slower_at_every_min_difference_and_mirrors_twice_as_fast():
    low, high = _min_difference_bounds()
    table = _experiment({"A": 100.0, "slow": 50.0}, 10, seed=3, run_sd=0.03)
    # "fast": in each round exactly as much faster than A as "slow" is slower.
    a, slow = (table[table["target"] == t].set_index("repeat") for t in ("A", "slow"))
    fast = slow.assign(target="fast", images_per_s=a["images_per_s"] ** 2 / slow["images_per_s"])
    table = pd.concat([table, fast.reset_index()])
    for d in np.linspace(low, high, 11):
        verdicts = comparison_table(table, "A", d).set_index("target")["throughput_verdict"]
        # A threshold of |median - 1| > d once made twice as fast "faster" and half as fast
        # "no measured difference" at d = 0.5. On the log scale the two are judged alike at
        # every d: the same words, mirrored.
        assert verdicts["fast"] == verdicts["slow"].replace("slower", "faster"), (d, verdicts)
        assert direction(verdicts["slow"]) == "slower", (d, verdicts)
        if 0 < d < high:  # no band at 0; at the schema's maximum, 1, the band is 2x itself
            assert verdicts["slow"].startswith("at least "), (d, verdicts)


def test_unpaired_intervals_cover_a_known_ratio_between_two_machines():
    # Two machines, one 0.6 times as fast as the other, measured on different days (no
    # shared round): over 400 made-up pairs of result folders, Welch's 95 % interval covers
    # 0.6 in about 95 % of them at 3, 5 and 10 runs a side. A two-sample percentile bootstrap
    # of the same numbers (scipy.stats.bootstrap, each side resampled on its own; the first
    # 100) covers it far less often: why unpaired_interval is not one.
    for n in (3, 5, 10):
        covered, bootstrap_covered = [], []
        for seed in range(400):
            rng = np.random.default_rng(seed)
            sd = rng.uniform(0.03, 0.09)
            fast = 100.0 * np.exp(rng.normal(0, sd, n))
            slow = 60.0 * np.exp(rng.normal(0, sd, n))
            _, lo, hi = unpaired_interval(slow, fast)
            covered.append(lo < 0.6 < hi)
            if seed < 100:
                res = stats.bootstrap(
                    (np.log(slow), np.log(fast)),
                    _mean_difference,
                    method="percentile",
                    n_resamples=999,
                    random_state=rng,
                )
                lo, hi = np.exp(res.confidence_interval)
                bootstrap_covered.append(lo < 0.6 < hi)
        assert np.mean(covered) >= 0.93, (n, np.mean(covered))
        assert np.mean(bootstrap_covered) < 0.9, (n, np.mean(bootstrap_covered))


def _mean_difference(x, y, axis=-1):
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def test_an_a_a_across_two_folders_is_unpaired_no_difference_and_wider_than_paired():
    # The same made-up numbers read twice: as one workflow's rounds (paired) and as a folder
    # merged from elsewhere (the A2 runs' rounds are not ours: unpaired).
    truth, widths = {"A": 100.0, "A2": 100.0}, []
    for seed in range(20):
        table = _experiment(truth, 5, seed)
        paired = comparison_table(table, "A", 0.05).set_index("target").loc["A2"]
        unpaired = comparison_table(table, "A", 0.05, elsewhere={"A2"}).set_index("target")
        assert unpaired.loc["A", "pairing"] == "base"
        row = unpaired.loc["A2"]
        assert (row["pairing"], row["throughput_pairs"], row["throughput_runs"]) == (
            "unpaired", 0, 5)  # fmt: skip
        assert direction(row["throughput_verdict"]) in (SAME, UNRESOLVED), (seed, row)
        assert paired["pairing"] == "paired"
        widths.append(
            np.log(row["throughput_high"] / row["throughput_low"])
            / np.log(paired["throughput_high"] / paired["throughput_low"])
        )
    # The rounds' speeds (10 %) no longer cancel: wider in most experiments, about twice as
    # wide in the median (not in all: the paired t has fewer degrees of freedom than Welch's).
    assert np.median(widths) > 1.5 and np.mean(np.array(widths) > 1) >= 0.75, widths


def test_targets_with_no_round_of_the_base_are_unpaired_and_a_clear_difference_is_called():
    # Another machine 40 % slower (merged), and one of ours that ran only in rounds the
    # base did not (no common round): both unpaired, with a verdict.
    runs = _table({"A": [100.0, 104.0, 98.0, 101.0]})
    other = _table({"B@other": [61.0, 59.0, 60.0, 62.0]})
    late = _table({"C": [100.0, 99.0]}).assign(repeat=[5, 6])
    table = comparison_table(pd.concat([runs, other, late]), "A", 0.05, elsewhere={"B@other"})
    table = table.set_index("target")
    assert table["pairing"].tolist() == ["base", "unpaired", "unpaired"]
    b = table.loc["B@other"]
    assert b["throughput_ratio"] == pytest.approx(60.5 / 100.7, rel=0.01)
    assert b["throughput_low"] < 0.6 < b["throughput_high"] < 0.65
    assert b["throughput_verdict"] == "at least 5 % slower"
    assert table.loc["C", "throughput_verdict"] == (
        f"2 runs on a side: too few for a verdict ({MIN_PAIRS} needed)")  # fmt: skip
    readable = readable_tables.readable_comparison(table.reset_index()).set_index("target")
    assert readable.loc["B@other", "pairing"] == "unpaired"


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


def test_merged_runs_are_compared_unpaired_in_the_tables(tmp_path, monkeypatch):
    # The figures job (figures.make_all): an A/A pair of ours over 3 rounds, and a folder
    # merged from a machine 40 % slower whose repeat numbers are also 1, 2, 3 (not our rounds).
    for module in (figures, comparison_figures, utilisation):
        monkeypatch.setattr(
            module, "save_named_figure", lambda fig, *args, **kwargs: figures.plt.close(fig)
        )
    jitter = np.exp(np.random.default_rng(0).normal(0, 0.03, 9))
    own = [made_up_run(t, k, 60.0 * jitter[2 * k + i - 2]) for k in (1, 2, 3)
           for i, t in enumerate(("A", "A2"))]  # fmt: skip
    merged = [made_up_run("A@other", k, 100.0 * jitter[5 + k]) for k in (1, 2, 3)]
    figures.make_all(own, {}, {"label": "made-up"}, None, None, tmp_path, merged=merged)
    table = pd.read_csv(tmp_path / "comparison_table.csv").set_index("target")
    assert table["pairing"].to_dict() == {"A": "base", "A2": "paired", "A@other": "unpaired"}
    assert direction(table.loc["A2", "throughput_verdict"]) in (SAME, UNRESOLVED)
    other = table.loc["A@other"]
    assert other["throughput_pairs"] == 0
    assert other["throughput_verdict"] == "at least 5 % slower"
    assert other["throughput_low"] < 0.6 < other["throughput_high"]
    md = (tmp_path / "summary_table.md").read_text()
    assert "slower unpaired" in md and "Welch's 95 % t interval" in md
    # The figures command's --confidence after an early stop: its tables say 99 %.
    figures.make_all(own, {}, {"label": "made-up"}, None, None, tmp_path / "early",
                     merged=merged, confidence=0.99, rounds_note="stopped early")  # fmt: skip
    md = (tmp_path / "early" / "comparison_table.md").read_text()
    assert "Welch's 99 % t interval" in md and "99 % simultaneous interval" in md
    assert "95 %" not in md.split("Time to accuracy is a secondary")[0]


def test_the_interval_alone_decides_among_the_verdicts():
    """At 5 % noise: beyond the band, outside 1, inside the band, or neither (with about how
    many more rounds would resolve it); a ratio and its reciprocal mirror each other."""
    v = lambda ratio, low, high, n=5: verdict(n, ratio, low, high, 0.05)  # noqa: E731
    assert v(1.10, 1.06, 1.14) == "at least 5 % faster"
    assert v(1 / 1.10, 1 / 1.14, 1 / 1.06) == "at least 5 % slower"
    assert v(1.04, 1.01, 1.07) == "faster"  # excludes 1, reaches into the noise
    assert v(1.01, 0.98, 1.04) == "the same within ±5 %"
    assert v(1.03, 0.99, 1.07).startswith("unresolved: about ")
    assert v(1.03, 0.99, 1.07, n=2) == "2 pairs: too few for a verdict (3 needed)"
    assert verdict(5, 1.03, 0.99, 1.07, 0.05, paired=False).endswith(
        "more runs on each side would likely resolve it"
    )
    assert verdict(5, 1.04, 1.01, 1.07, 0.0) == "faster"  # no band: no "at least", no "same"


@pytest.mark.parametrize("seed", range(5))
def test_the_rounds_an_unresolved_ratio_needs_resolve_it_at_the_same_spread(seed):
    """The estimate holds the logarithms' spread as it is: an interval of that many more
    pairs with the same mean and spread is resolved, one of a pair fewer not yet."""
    rng = np.random.default_rng(seed)
    logs = rng.normal(np.log(1.03), 0.05, 4)
    n, (ratio, low, high) = len(logs), ratio_interval(np.exp(logs))
    more = more_rounds(n, ratio, low, high, 0.05)
    assert more is not None and more >= 1

    def resolved(m):
        sd = np.std(logs, ddof=1)
        half = stats.t.ppf(0.975, m - 1) * sd / np.sqrt(m)
        lo, hi = np.log(ratio) - half, np.log(ratio) + half
        band = np.log1p(0.05)
        return lo > 0 or hi < 0 or (-band <= lo and hi <= band)

    assert resolved(n + more) and (more == 1 or not resolved(n + more - 1))


def test_an_unpaired_verdict_names_what_its_sides_count():
    """A ratio of ratios counts rounds with its control on each side, not runs: the words
    say so in every form (they were rewritten by a pattern over the runs' words before)."""
    sides = ("round with the control", "rounds with the control")
    assert verdict(1, 1.0, 1.0, 1.0, 0.05, paired=False, sides=sides) == (
        "one round with the control on a side: no interval"
    )
    assert verdict(2, 1.0, 0.9, 1.1, 0.05, paired=False, sides=sides) == (
        f"2 rounds with the control on a side: too few for a verdict ({MIN_PAIRS} needed)"
    )
    words = verdict(5, 1.02, 0.96, 1.08, 0.05, paired=False, sides=sides)
    assert words.startswith("unresolved: about ") and words.endswith(
        " more rounds with the control on each side would likely resolve it"
    )
    # The runs' words are unchanged.
    assert verdict(5, 1.02, 0.96, 1.08, 0.05, paired=False).endswith(
        " more runs on each side would likely resolve it"
    )
