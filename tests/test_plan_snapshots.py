"""Every shipped configuration plans what it planned before a change to the planning code:
the same runs in the same order, the same run specs and the same figures specs
(tests/plan_snapshot.py wrote tests/data/plans/ from the code before)."""

import json

import pytest
from plan_snapshot import SNAPSHOTS, plan_of, shipped_configs


@pytest.mark.parametrize("path", shipped_configs(), ids=lambda p: p.name)
def test_a_shipped_configuration_plans_what_it_planned(path):
    kept = json.loads((SNAPSHOTS / f"{path.stem}.json").read_text())
    now = json.loads(json.dumps(plan_of(path)))
    assert now["files"] == kept["files"]
    assert now["targets"] == kept["targets"] and now["skipped"] == kept["skipped"]
    assert now["planned_runs"] == kept["planned_runs"]
    assert sorted(now["specs"]) == sorted(kept["specs"])
    for run, spec in kept["specs"].items():
        assert now["specs"][run] == spec, f"{path.name}: the run spec of {run} changed"
    assert now["figures_specs"] == kept["figures_specs"]


def test_every_shipped_configuration_has_a_snapshot():
    # A new configuration is added with its snapshot (python tests/plan_snapshot.py --write).
    assert sorted(p.stem for p in SNAPSHOTS.glob("*.json")) == sorted(
        p.stem for p in shipped_configs()
    )


def test_a_changed_setting_changes_the_plan(tmp_path):
    # The comparison sees a change: one epoch more for the offline demo changes its run specs.
    import yaml

    from embryo_bench.planning.plan import Plan

    path = SNAPSHOTS.parents[2] / "config" / "offline.yaml"
    config = yaml.safe_load(path.read_text())
    config["train"]["epochs"] += 1
    plan = Plan.from_config(config, hardware_check="none", on_this_machine=False)
    kept = json.loads((SNAPSHOTS / "offline.json").read_text())
    w, t, k = plan.all_runs[0]
    assert json.loads(plan.spec(t, k, w).to_json()) != kept["specs"][f"{w}/{t}/{k}"]
