"""A workload's own accuracy target and repeats (``workloads[].accuracy_target``,
``workloads[].repeats``): each defaults to its catalog entry's where it gives one, else to the
``train:`` section's; the accuracy target reaches its runs' run specs, and a workload with fewer
repeats has no run in the rounds after its last, the rounds' order otherwise unchanged."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan
from embryo_bench.vocabulary.spec import RunSpec
from embryo_bench.workloads import catalog

TARGETS = [
    {"name": "a", "runner": "host", "cpus": 1},
    {"name": "b", "runner": "host", "cpus": 1},
    {"name": "c", "runner": "host", "cpus": 2},
]
MLP = {"name": "mnist-mlp", "data": "synthetic", "train_samples": 256, "test_samples": 64}
CNN = {"name": "mnist-cnn", "data": "synthetic", "train_samples": 256, "test_samples": 64}


def _plan(workloads, **more) -> Plan:
    config = {"outdir": "out", "targets": TARGETS, "workloads": workloads, **more}
    return Plan.from_config(copy.deepcopy(config), hardware_check="none", on_this_machine=False)


def _targets(plan: Plan, workload: str) -> dict[str, float]:
    """Target -> the accuracy target of its repeat-1 run of ``workload``."""
    return {t: plan.spec(t, 1, workload).accuracy_target for t in plan.targets}


def test_a_workloads_accuracy_target_reaches_its_run_specs_and_run_json():
    p = _plan([MLP, {**CNN, "accuracy_target": 0.97}], train={"accuracy_target": 0.6})
    assert _targets(p, "mnist-mlp") == {"a": 0.6, "b": 0.6, "c": 0.6}  # train's
    assert _targets(p, "mnist-cnn") == {"a": 0.97, "b": 0.97, "c": 0.97}  # its own
    written = json.loads(p.spec("b", 1, "mnist-cnn").to_json())
    assert written["accuracy_target"] == 0.97
    assert RunSpec.from_dict(written).accuracy_target == 0.97
    # Nothing else of the run changes.
    plain = _plan([MLP, CNN], train={"accuracy_target": 0.6}).spec("b", 1, "mnist-cnn")
    assert plain.replace(accuracy_target=0.97) == p.spec("b", 1, "mnist-cnn")


def test_the_papers_workload_may_set_its_own_accuracy_target_and_repeats():
    p = _plan([{"name": "paper", "accuracy_target": 0.9, "repeats": 2}, MLP])
    assert _targets(p, "paper") == {"a": 0.9, "b": 0.9, "c": 0.9}
    assert _targets(p, "mnist-mlp") == {"a": 0.85, "b": 0.85, "c": 0.85}  # the paper's 0.85
    assert [k for _, k in p.workload_runs("paper")] == [1, 1, 1, 2, 2, 2]
    assert [k for _, k in p.workload_runs("mnist-mlp")] == [1, 1, 1]
    pipeline = r"workloads\[0\] \(paper\): epochs set for a workload of the frames pipeline"
    with pytest.raises(ConfigError, match=pipeline):
        _plan([{"name": "paper", "epochs": 3}])


def test_a_catalog_entrys_accuracy_target_and_repeats_are_the_default(monkeypatch):
    """No catalog entry gives them today (each would change what a shipped configuration
    measures); one that does is the default, below the entry's own and above train:'s."""
    known = dict(catalog.catalog())
    known["mnist-cnn"] = dataclasses.replace(known["mnist-cnn"], accuracy_target=0.99, repeats=2)
    monkeypatch.setattr(catalog, "catalog", lambda: known)
    p = _plan([MLP, CNN, {**CNN, "name": "mine", "catalog": "mnist-cnn", "repeats": 1}])
    assert _targets(p, "mnist-cnn")["a"] == 0.99 and _targets(p, "mnist-mlp")["a"] == 0.85
    assert _targets(p, "mine")["a"] == 0.99  # a variant of it: its catalog entry's
    repeats = {w: max(k for _, k in p.workload_runs(w)) for w in p.workloads}
    assert repeats == {"mnist-mlp": 1, "mnist-cnn": 2, "mine": 1}
    assert _plan([{**CNN, "accuracy_target": 0.5}]).spec("a", 1, "mnist-cnn").accuracy_target == 0.5


def test_a_workload_with_fewer_repeats_has_no_run_in_the_later_rounds():
    p = _plan([{**MLP, "repeats": 3}, {**CNN, "repeats": 1}], compare={"order": "alternate"})
    assert p.first_rounds == 3
    assert p.planned_runs == [
        *[("mnist-mlp", t, 1) for t in "abc"],
        *[("mnist-cnn", t, 1) for t in "abc"],
        *[("mnist-mlp", t, 2) for t in "cba"],
        *[("mnist-mlp", t, 3) for t in "abc"],
    ]
    assert p.workload_runs("mnist-cnn") == [("a", 1), ("b", 1), ("c", 1)]
    # Round 1 as when both run three: later rounds only leave mnist-cnn's runs out.
    equal = _plan([{**MLP, "repeats": 3}, {**CNN, "repeats": 3}], compare={"order": "alternate"})
    assert [r for r in equal.planned_runs if r[0] == "mnist-mlp" or r[2] == 1] == p.planned_runs
    # Each run waits for the one planned before it, whatever its workload.
    assert p.previous_run("c", 2, "mnist-mlp") == ("c", 1, "mnist-cnn")


@pytest.mark.parametrize("order", ["balanced", "alternate", "shuffle"])
def test_repeats_all_equal_plan_what_train_repeats_plans(order):
    by_train = _plan([MLP, CNN], train={"repeats": 3}, compare={"order": order})
    by_workload = _plan([{**MLP, "repeats": 3}, {**CNN, "repeats": 3}], compare={"order": order})
    assert by_workload.planned_runs == by_train.planned_runs
    assert len(by_train.planned_runs) == 2 * 3 * 3
    for w, t, k in by_train.planned_runs:
        assert by_workload.spec(t, k, w) == by_train.spec(t, k, w)


def test_a_targets_own_repeats_win_over_its_workloads():
    targets = [{**TARGETS[0], "repeats": 2}, *TARGETS[1:]]
    config = {"outdir": "out", "targets": targets, "workloads": [{**MLP, "repeats": 1}]}
    p = Plan.from_config(config, hardware_check="none", on_this_machine=False)
    assert p.workload_runs("mnist-mlp") == [("a", 1), ("b", 1), ("c", 1), ("a", 2)]
    # The comparison base must run the most repeats of each workload it trains.
    config["compare"] = {"base": "b"}
    with pytest.raises(ConfigError) as err:
        Plan.from_config(config, hardware_check="none", on_this_machine=False)
    assert str(err.value) == (
        "compare.base b: 1 repeats of workload mnist-mlp, but a run more; each round needs "
        "the base target, so give it the most repeats"
    )


def test_rounds_that_compare_until_adds_hold_every_workload():
    """Rounds past the most repeats (compare.until's) run every workload on every target,
    so a workload with fewer repeats runs again there (its repeat numbers skip the rounds
    it had no run in)."""
    p = _plan(
        [{**MLP, "repeats": 2}, {**CNN, "repeats": 1}],
        compare={"until": 0.05, "max_rounds": 3},
    )
    assert p.first_rounds == 2 and p.max_rounds == 3
    assert [k for _, k in p.workload_runs("mnist-cnn", 3)] == [1, 1, 1, 3, 3, 3]
    assert [k for _, k in p.workload_runs("mnist-mlp", 3)] == [1, 1, 1, 2, 2, 2, 3, 3, 3]


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        ({"repeats": 0}, "workloads[0].repeats: 0 is less than the minimum of 1"),
        ({"accuracy_target": 1.5}, "workloads[0].accuracy_target: 1.5 is greater than the "
         "maximum of 1"),
        ({"accuracy_target": 0}, "workloads[0].accuracy_target: 0 is less than or equal to "
         "the minimum of 0"),
    ],
)  # fmt: skip
def test_an_impossible_accuracy_target_or_repeats_is_one_line(entry, line):
    with pytest.raises(ConfigError) as err:
        _plan([{**MLP, **entry}])
    assert str(err.value) == line
