"""Rounds until the answer is sure: with ``compare.until`` the repeats run
first, then one round more after each round whose check finds an interval wider than the goal,
up to ``compare.max_rounds``; the comparison table says why the rounds stopped; finished
rounds are never rerun, and a rerun after the stop has nothing to do."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml
from scipy import stats
from workflow_helpers import job_counts, offline_config, planned_jobs, snakemake

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.planning.plan import Plan
from embryo_bench.planning.rounds import decide
from embryo_bench.reporting.rounds import half_width, measure, noise_half_width
from embryo_bench.vocabulary.round_check import check_path, read_check

REPO = Path(__file__).resolve().parents[1]
ROUNDS = yaml.safe_load((REPO / "config" / "offline-rounds.yaml").read_text())
BASE, AGAIN, DOCKER = (t["name"] for t in ROUNDS["targets"])


def plan(config=ROUNDS, **compare) -> Plan:
    config = copy.deepcopy(config)
    config["compare"].update(compare)
    return Plan.from_config(config, probe=lambda target: None)


def made_up_check(widths: dict[str, dict[str, float | None]], pairs: int = 10) -> dict:
    """A round check (as embryo-bench round-check writes it) with these half-widths:
    workload -> target -> half-width, each from ``pairs`` pairs."""
    return {
        "workloads": {
            w: {
                "base": BASE,
                "targets": {t: {"half_width": x, "pairs": pairs} for t, x in ts.items()},
            }
            for w, ts in widths.items()
        }
    }


def one_target(width: float | None, pairs: int = 10) -> dict:
    """A round check of one workload "w" with one target "b" besides the base."""
    return {"workloads": {"w": {"targets": {"b": {"half_width": width, "pairs": pairs}}}}}


def checks(paper: dict[int, float], docker: dict[int, float] | None = None):
    """read_check for Plan.rounds_wanted: round -> a check whose docker-1cpu (and, with
    ``docker``, host-1cpu-again) half-width is the round's value; records the rounds read."""
    read = []

    def read_check(k):
        read.append(k)
        return made_up_check({"paper": {DOCKER: paper[k], AGAIN: (docker or paper)[k]}}, k)

    return read_check, read


# --- the decision, on made-up checks ---------------------------------------------------------


def test_rounds_are_added_until_every_interval_is_as_narrow_as_the_goal():
    p = plan(until=0.03, max_rounds=10)
    assert (p.first_rounds, p.max_rounds) == (5, 10)
    widths = {5: 0.08, 6: 0.05, 7: 0.028, 8: 0.02}
    read_check, read = checks(widths, {k: 0.01 for k in widths})
    rounds, decision = p.rounds_wanted(read_check, finished=lambda k: False)
    assert rounds == 7 and read == [5, 6, 7]  # round 8 is never asked for
    assert decision.why == "goal" and not decision.more
    assert decision.note("paper").startswith(
        "compare.until 3 %: half-width 2.8 % after 7 rounds (widest: docker-1cpu); stopped "
        "before max_rounds 10, so the throughput intervals are at 99 %, not 95 %"
    )
    assert decision.stopped_early and decision.confidence == 0.99


def test_only_a_stop_before_max_rounds_is_judged_at_99_percent():
    """Stopping on a narrow interval picks rounds whose spread is small by chance, and the
    same mean over a small spread is a large t: simulated with this machine's noise, 95 %
    at such a stop called 5.1-7.3 % of A/A pairs different (docs/results.md). A goal met
    at max_rounds, or max_rounds reached, is no such selection: the table's own 95 %."""
    check = one_target(0.01)
    early, at_cap = decide(check, 6, 0.03, 10), decide(check, 10, 0.03, 10)
    assert (early.why, early.confidence) == ("goal", 0.99)
    assert (at_cap.why, at_cap.confidence, at_cap.stopped_early) == ("goal", None, False)
    assert "99 %" not in at_cap.note("w")
    wide = one_target(0.2)
    assert decide(wide, 10, 0.03, 10).confidence is None
    # What the figures job is told: the note, and the level only after an early stop.
    assert early.figures_options("w") == ["--rounds-note", early.note("w"), "--confidence", "0.99"]
    assert at_cap.figures_options("w") == ["--rounds-note", at_cap.note("w")]


def test_with_compare_noise_a_stop_is_decided_on_the_width_that_noise_gives_where_wider():
    """A stop on the rounds' own width selects rounds whose spread is small by chance
    (simulated at this machine's noise: the few early stops at goals of 2-3 % and a CV of
    6 % called A/A pairs different in 22-56 % of them, docs/results.md). compare.noise, the
    machine's paired noise measured apart from these rounds, floors the width the stop is
    decided on: t(n - 1) x noise / sqrt(n) at the table's level."""
    p = plan(until=0.03, max_rounds=10, noise=0.06)
    # 2 % as measured from 6 pairs; 6 % noise gives 6.3 % at 6 pairs (t = 2.57), 4.3 % at
    # 10 (t = 2.26): the goal is not met at 6, and at 10 max_rounds stops it, saying both.
    read_check, read = checks({k: 0.02 for k in range(5, 11)})
    rounds, decision = p.rounds_wanted(read_check, finished=lambda k: False)
    assert rounds == 10 and read == list(range(5, 11)) and decision.why == "max_rounds"
    floor = noise_half_width(0.06, 10, 2)  # two targets besides the base: at 97.5 % each
    assert floor == pytest.approx(stats.t.ppf(1 - 0.025 / 2, 9) * 0.06 / math.sqrt(10))
    assert decision.floored["paper"] == pytest.approx(floor)
    assert decision.note("paper").startswith(
        f"compare.until 3 %: max_rounds 10 reached: 2 % ({100 * floor:.1f} % at compare.noise "
        "6 %) (widest: "
    )
    # Where the rounds' own width is the wider, it decides: 1 % noise, met at 5 rounds.
    quiet = decide(made_up_check({"paper": {DOCKER: 0.02}}, 5), 5, 0.03, 10, noise=0.01)
    assert quiet.why == "goal" and "compare.noise" not in quiet.note("paper")
    # Unset (0), the rounds' own width alone: the same check stops at 5.
    assert decide(made_up_check({"paper": {DOCKER: 0.02}}, 5), 5, 0.03, 10).why == "goal"
    assert decide(made_up_check({"paper": {DOCKER: 0.02}}, 5), 5, 0.03, 10, 0.06).more


def test_a_check_without_its_pairs_is_one_line(tmp_path):
    path = tmp_path / "round-6.json"
    path.write_text(
        json.dumps({"format": 1, "round": 6, "workloads": {"paper": {"base": BASE, "targets": {
            DOCKER: {"half_width": 0.02}}}}})
    )  # fmt: skip
    with pytest.raises(DataError, match=f"{path}: no workloads with targets, half-widths and "
                       "pairs; delete"):  # fmt: skip
        read_check(path, 6)


def test_rounds_stop_at_max_rounds_and_say_how_wide_the_widest_interval_is():
    p = plan(until=0.03, max_rounds=10)
    read_check, read = checks({k: 0.041 for k in range(1, 11)})
    rounds, decision = p.rounds_wanted(read_check, finished=lambda k: False)
    assert rounds == 10 and read == list(range(5, 11))
    assert decision.why == "max_rounds"
    assert decision.note("paper").startswith("compare.until 3 %: max_rounds 10 reached: 4.1 %")


def test_an_interval_that_cannot_be_drawn_is_never_sure():
    """One pair gives no interval (None): more rounds, and the note says so."""
    p = plan(until=0.5, max_rounds=6)
    read_check, _ = checks({5: None, 6: None})
    rounds, decision = p.rounds_wanted(read_check, finished=lambda k: False)
    assert rounds == 6 and "max_rounds 6 reached: no interval" in decision.note("paper")


def test_every_workload_must_be_sure_and_a_sure_one_names_the_one_that_was_not():
    check = made_up_check({"paper": {DOCKER: 0.02}, "mnist-mlp": {DOCKER: 0.05}})
    assert decide(check, 5, 0.03, 10).more
    last = decide(check, 10, 0.03, 10)
    assert last.why == "max_rounds"
    assert last.note("paper").endswith("2 % (widest: docker-1cpu); not reached in mnist-mlp")
    assert last.note("mnist-mlp").endswith("max_rounds 10 reached: 5 % (widest: docker-1cpu)")


def test_a_goal_met_early_still_runs_five_rounds():
    """An interval narrow enough after 3 rounds is not yet a stop: its width is itself
    uncertain at 3 or 4 rounds; 5 rounds (or max_rounds, if fewer) first."""
    check = one_target(0.01)
    assert [decide(check, k, 0.03, 10).more for k in (3, 4, 5)] == [True, True, False]
    assert decide(check, 5, 0.03, 10).why == "goal"
    assert decide(check, 4, 0.03, 4).why == "goal"  # max_rounds 4: stops at 4


def test_rounds_already_finished_are_kept_when_the_goal_is_loosened():
    """until loosened after 8 rounds ran: the goal is met at 6, but rounds 7 and 8 are on
    disk; they stay in the comparison (no measured run is dropped), and nothing runs."""
    p = plan(until=0.05, max_rounds=10)
    read_check, read = checks({5: 0.08, 6: 0.045, 7: 0.04, 8: 0.035})
    rounds, decision = p.rounds_wanted(read_check, finished=lambda k: k <= 8)
    assert rounds == 8 and read == [5, 6, 7, 8] and decision.why == "goal"
    assert "half-width 3.5 % after 8 rounds" in decision.note("paper")


def test_without_until_the_repeats_run_and_no_check_is_read():
    p = plan()
    assert p.rounds_wanted(lambda k: pytest.fail("no check without compare.until")) == (5, None)
    assert p.max_rounds == p.first_rounds == 5


# --- the plan: the rounds added, in order --------------------------------------------------


def test_added_rounds_hold_every_target_in_the_planned_order_after_the_first_ones():
    config = copy.deepcopy(ROUNDS)
    config["targets"][2]["repeats"] = 2  # docker-1cpu: fewer repeats than the base
    config["compare"]["order"] = "alternate"  # ABC CBA: the added rounds' order by eye
    without = plan(config)
    p = plan(config, until=0.03, max_rounds=7)
    assert p.all_runs == without.all_runs  # the first rounds are planned as before
    assert p.round_runs(5) == without.all_runs
    added = p.round_runs(7)[len(without.all_runs) :]
    assert added == [("paper", t, 6) for t in (DOCKER, AGAIN, BASE)] + [
        ("paper", t, 7) for t in (BASE, AGAIN, DOCKER)
    ]  # ABC CBA ...: round 6 reversed, round 7 in configuration order
    assert p.previous_run(DOCKER, 6) == (AGAIN, 5, "paper")  # round 5: host-1cpu, again
    assert p.previous_run(BASE, 7) == (BASE, 6, "paper")
    with pytest.raises(KeyError, match="no run host-1cpu repeat 8"):
        p.previous_run(BASE, 8)
    assert p.figures_spec(rounds=6).runs[-3:] == [
        f"{p.outdir}/train/{t}/repeat-6" for t in (DOCKER, AGAIN, BASE)
    ]


def test_the_round_check_reads_every_workloads_runs_up_to_its_round():
    config = copy.deepcopy(ROUNDS)
    config["workloads"] = [{"name": "paper"}, {"name": "mnist-mlp", "data": "synthetic"}]
    config["compare"].update(until=0.03, max_rounds=7)
    p = plan(config)
    params = p.round_check_params(6)
    assert set(params["workloads"]) == {"paper", "mnist-mlp"}
    mnist = params["workloads"]["mnist-mlp"]
    assert mnist["base"] == BASE and len(mnist["runs"]) == 3 * 6
    assert mnist["runs"][-1].endswith("workloads/mnist-mlp/train/host-1cpu/repeat-6")
    assert len(p.round_run_dirs(6)) == 2 * 3 * 6


def test_max_rounds_below_the_repeats_is_one_line_at_plan_time():
    with pytest.raises(ConfigError, match=r"compare.max_rounds 3: fewer than the 5 rounds that "
                       r"run first \(the repeats of target host-1cpu\)"):  # fmt: skip
        plan(until=0.03, max_rounds=3)
    assert plan(max_rounds=3).max_rounds == 5  # unused without until


# --- measuring a round -----------------------------------------------------------------------


def test_the_half_width_is_that_of_the_comparisons_interval_on_the_log_scale():
    runs = pd.DataFrame(
        [(BASE, k, 100.0) for k in range(1, 6)]
        + [(DOCKER, k, v) for k, v in enumerate([90.0, 93.0, 88.0, 91.0, 95.0], 1)]
        + [(AGAIN, 1, 101.0)],
        columns=["target", "round", "images_per_s"],
    )
    got = measure(runs, BASE, 0.05)
    docker = got[DOCKER]
    assert docker["pairs"] == 5 and docker["low"] < docker["ratio"] < docker["high"]
    assert docker["half_width"] == pytest.approx(
        (math.log(docker["high"]) - math.log(docker["low"])) / 2
    )
    assert got[AGAIN]["pairs"] == 1 and got[AGAIN]["half_width"] is None
    assert half_width(0.9, 0.9) is None and half_width(float("nan"), 1.0) is None


def test_a_damaged_round_check_is_one_line_naming_the_file_before_any_job(tmp_path):
    config = copy.deepcopy(ROUNDS)
    config["outdir"] = str(tmp_path)
    path = tmp_path / check_path(6)
    path.parent.mkdir()
    path.write_text("{not json")
    plan(config)  # without compare.until no check is read
    with pytest.raises(ConfigError, match=rf"{path}: not valid JSON .*; delete {path} to have "
                       "the workflow measure round 6 again"):  # fmt: skip
        plan(config, until=0.03, max_rounds=10)
    path.write_text('{"format": 1, "round": 2, "workloads": {}}')
    with pytest.raises(DataError, match="a check of round 2, not 6"):
        read_check(path, 6)


# --- the workflow ----------------------------------------------------------------------------


@pytest.mark.ci_step("long-workflows", "3 rounds of 2 targets through the workflow")
@pytest.mark.slow
def test_the_workflow_adds_rounds_stops_and_then_has_nothing_to_do(tmp_path):
    """Two host targets (an A/A pair) at the tiny settings, 2 repeats, a goal no interval
    meets and max_rounds 3: round 3 is added, the table says max_rounds stopped it, and a
    rerun has nothing to do. A goal loosened then is met after the 3 rounds that ran: only
    the figures are made again; a tighter one with max_rounds 4 plans round 4 alone."""
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "out"
    config = offline_config(out, tiny=True)
    config.pop("cost", None)
    one = copy.deepcopy(config["targets"][0])
    config["targets"] = [one, {**one, "name": "host-1cpu-again"}]
    config["train"].update(repeats=2, probe_seconds=0)
    config["compare"] = {"base": "host-1cpu", "until": 1e-6, "max_rounds": 3}

    snakemake(work, config)
    for t in ("host-1cpu", "host-1cpu-again"):
        assert (out / "train" / t / "repeat-3" / "metrics.json").is_file()
        assert not (out / "train" / t / "repeat-4").exists()
    assert sorted(p.name for p in (out / "rounds").iterdir()) == ["round-2.json", "round-3.json"]
    table = (out / "figures" / "comparison_table.md").read_text()
    assert "compare.until 0.0001 %: max_rounds 3 reached: " in table
    assert "Nothing to be done" in snakemake(work, config, "-n").stdout

    # Loosened to just above the widest interval round 3 measured (a fixed 0.9 was not
    # always enough: tiny runs beside other tests can be that noisy). Three tiny A/A pairs on
    # a loaded machine can be wider than any goal the schema allows (below 100 %; 186 % was
    # seen with the demo and two other jobs on the 2 cores): then another goal still unmet,
    # the rounds kept at 3, which must equally rerun the figures alone.
    checked = json.loads((out / "rounds" / "round-3.json").read_text())["workloads"]["paper"]
    widest = max(t["half_width"] for t in checked["targets"].values())
    if widest < 0.99:
        # max_rounds 3: a goal met at 3 rounds stops there (at most max_rounds, and fewer
        # than planning.rounds.MIN_ROUNDS_TO_STOP only where max_rounds says so).
        config["compare"].update(until=min(widest * 1.001 + 1e-9, 0.999), max_rounds=3)
        said = "after 3 rounds (widest: host-1cpu-again)"  # round 3 is kept
    else:
        config["compare"].update(until=0.5)
        said = "compare.until 50 %: max_rounds 3 reached: "
    jobs = {rule for rule, _ in planned_jobs(snakemake(work, config, "-n").stdout)}
    # No run and no check: the figures say why the rounds stopped (and record the setting).
    assert jobs == {"figures_spec", "figures", "all"}
    snakemake(work, config)
    table = (out / "figures" / "comparison_table.md").read_text()
    assert said in table, (widest, table)
    assert "Nothing to be done" in snakemake(work, config, "-n").stdout

    # A goal tightened again with room for one more round: that round's runs only.
    config["compare"].update(until=1e-6, max_rounds=4)
    dry = snakemake(work, config, "-n").stdout
    assert sorted((w["target"], w["repeat"]) for r, w in planned_jobs(dry) if r == "train") == [
        ("host-1cpu", "4"),
        ("host-1cpu-again", "4"),
    ]
    assert job_counts(dry)["round_check"] == 1  # round 4's: the checks of 2 and 3 stand
