"""benchmarks/bench_verdicts.py, the simulation of the project's verdicts: its arithmetic is
the workflow's (comparison_table gives the same words), and at next to no noise it finds
what is there and calls identical targets the same."""

from __future__ import annotations

import json

import numpy as np
import pytest
from workflow_helpers import load_benchmark

bench = load_benchmark("bench_verdicts")


def test_its_verdicts_are_the_comparison_tables():
    rng = np.random.default_rng(1)
    for rounds in (3, 6):
        logs = bench.paired_logs(rng, np.array([0.0, np.log1p(0.08)]), rounds, 0.06, 0.1, 0.05)
        bench.check_against_table(logs, 0.05)


def test_the_check_sees_a_verdict_the_table_would_not_give(monkeypatch):
    logs = bench.paired_logs(np.random.default_rng(2), np.zeros(1), 5, 0.06, 0.1, 0.0)
    monkeypatch.setattr(bench, "_verdicts", lambda *a: [(1.0, 0.9, 1.1, "faster")])
    with pytest.raises(AssertionError, match="comparison_table says"):
        bench.check_against_table(logs, 0.05)


def test_at_next_to_no_noise_it_finds_the_difference_and_the_sameness(tmp_path):
    out = tmp_path / "v.json"
    args = ["--experiments", "20", "--cv", "0.001", "--rounds", "5", "--rows", "2",
            "--session", "0", "--sessions", "3", "--goals", "0.03", "--drift", "0",
            "--json", str(out)]  # fmt: skip
    assert bench.main(args) == 0
    result = json.loads(out.read_text())
    (paired,) = result["paired"]
    # An interval that excludes 1 says "faster" or "slower" however narrow (5 % of A/As at
    # any noise); every other identical row is "the same within", none unresolved.
    assert paired["aa_same"] >= 0.8 and paired["aa_familywise"] <= 0.3
    assert paired["power_0.02"] == paired["power_0.1"] == 1
    (across,) = result["across"]
    assert across["coverage"] >= 0.8
    (until,) = result["until"]
    assert until["aa"]["rounds_mean"] == 5  # the goal is met at once: MIN_ROUNDS_TO_STOP
    assert until["aa"]["stopped_early"] == 1  # every A/A stopped before the cap
    assert until["true5"]["faster"] == 1
    assert across["controlled_coverage"] >= 0.8 and across["controlled_power_0.05"] == 1
    # Against a reference written from 3 sessions: identical sessions pass, a 20 % slowdown
    # does not; a hand-written entry at the truth passes too.
    (ref,) = result["reference"]
    assert ref["written_aa_regression"] == 0 and ref["hand_aa_regression"] == 0
    assert ref["written_power_0.2"] == 1 and ref["tolerance_mean"] == pytest.approx(0.05)


def test_a_session_effect_misleads_the_plain_row_and_divides_out_of_the_controlled_one():
    # Sessions 20 % apart (sd), next to no other noise: the plain unpaired row calls most
    # A/As different; relative to the control, the session divides out.
    args = bench.argparse.Namespace(experiments=40, drift=0.0, outliers=0.0, min_difference=0.05)
    cell = bench.across_cell(np.random.default_rng(3), 0.001, 0.2, 5, args)
    assert cell["aa_called"] >= 0.5 and cell["coverage"] <= 0.5
    assert cell["controlled_aa_called"] <= 0.15 and cell["controlled_coverage"] >= 0.85
    assert cell["controlled_power_0.05"] == 1


def test_a_session_effect_of_each_target_is_not_divided_out_by_the_control():
    # Each target its own session effect (sd 20 %), next to no other noise: the control
    # shares none of it, so the controlled row calls most A/As different as the plain one does.
    args = bench.argparse.Namespace(experiments=40, drift=0.0, outliers=0.0, min_difference=0.05)
    cell = bench.across_cell(np.random.default_rng(3), 0.001, 0.0, 5, args, target_session=0.2)
    assert cell["controlled_aa_called"] >= 0.5 and cell["controlled_coverage"] <= 0.5


def test_a_written_reference_holds_the_sessions_spread():
    # Sessions 10 % apart (sd) write a wide tolerance: a new session of the same machine is
    # rarely a regression against it; against a hand-written entry at the true speed with a
    # 5 % tolerance, a third of such sessions are.
    args = bench.argparse.Namespace(experiments=60, drift=0.0, outliers=0.0, min_difference=0.05)
    cell = bench.reference_cell(np.random.default_rng(4), 0.01, 0.1, 5, 5, args)
    assert cell["tolerance_mean"] > 0.2
    assert cell["written_aa_regression"] <= 0.1 and cell["hand_aa_regression"] >= 0.2


def test_compare_noise_keeps_until_from_stopping_on_a_small_sample_sd():
    # compare.noise far above the noise: no interval is ever as narrow as the goal would be
    # at that noise, so every experiment runs to max_rounds; unset, a goal wider than the
    # noise stops at 5.
    args = bench.argparse.Namespace(experiments=20, drift=0.0, outliers=0.0, min_difference=0.05)
    cell = bench.until_cell(np.random.default_rng(5), 0.03, 0.005, args, floor=50.0)
    assert cell["aa"]["rounds_mean"] == 10 and cell["aa"]["stopped_early"] == 0
    assert bench.until_cell(np.random.default_rng(5), 0.03, 0.005, args)["aa"]["rounds_mean"] == 5


def test_the_sd_bound_what_if_takes_more_rounds_the_higher_its_level():
    # At a CV of 1.5 % a 3 % goal is met by the rounds' own width at 5 rounds in most
    # experiments; with their sd at its 90 % upper bound (x 1.94 at 5 pairs) later.
    args = bench.argparse.Namespace(experiments=40, drift=0.0, outliers=0.0, min_difference=0.05)
    rounds = [
        bench.until_cell(np.random.default_rng(5), 0.03, 0.015, args, level=level)["aa"][
            "rounds_mean"
        ]
        for level in (0.0, 0.75, 0.9)
    ]
    assert rounds[0] < rounds[1] < rounds[2], rounds
