"""The figures job's spec (issue 24, item 4): written from the plan, read back checked, and a
bad one refused in one line naming the file and the key."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embryo_bench.errors import DataError
from embryo_bench.figspec import FiguresSpec
from embryo_bench.plan import Plan

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())


def _spec() -> FiguresSpec:
    return Plan.from_config(copy.deepcopy(OFFLINE), probe=lambda t: None).figures_spec()


def test_the_spec_holds_the_runs_in_the_planned_order_and_round_trips(tmp_path):
    plan = Plan.from_config(copy.deepcopy(OFFLINE), probe=lambda t: None)
    spec = plan.figures_spec()
    assert spec.runs == [f"results/offline/train/{t}/repeat-{k}" for t, k in plan.runs]
    assert spec.cost_base == spec.compare_base == "host-1cpu" and spec.merge == []
    assert spec.targets["host-2cpu.bs120-t1"]["sweep"]["base"] == "host-2cpu"
    assert spec.stability["window_cv"] == 0.05 and spec.config["outdir"] == "results/offline"
    spec.write(tmp_path / "spec.json", log=tmp_path / "spec.log")
    assert FiguresSpec.read(tmp_path / "spec.json") == spec
    assert json.loads((tmp_path / "spec.json").read_text())["format"] == 1
    assert (tmp_path / "spec.log").read_text().endswith("8 runs, 8 targets, merge: none\n")


@pytest.mark.parametrize(
    "change, message",
    [
        ({"runs": "out/train/a/repeat-1"}, "runs is 'out/train/a/repeat-1'; expected a list"),
        ({"runs": []}, "runs is empty"),
        ({"merge": [3]}, r"merge must list folders \(strings\), got \[3\]"),
        ({"min_difference": "5 %"}, "min_difference is '5 %'; expected a float"),
        ({"targets": None}, "targets is None; expected a dict"),
        ({"format": 9}, "format 9 is newer than this embryo-bench reads"),
        ({"colour": "red"}, r"unknown keys \['colour'\]"),
    ],
)
def test_a_bad_spec_is_named(change, message):
    d = {**_spec().to_dict(), **change}
    with pytest.raises(DataError, match=f"s.json: {message}"):
        FiguresSpec.from_dict(d, "s.json")
    d = _spec().to_dict()
    del d["config"]
    with pytest.raises(DataError, match=r"s.json: missing keys \['config'\]"):
        FiguresSpec.from_dict(d, "s.json")


def test_the_figures_command_refuses_a_garbled_spec_in_one_line(tmp_path):
    (tmp_path / "spec.json").write_text('{"runs": ')
    spec = str(tmp_path / "spec.json")
    cmd = [sys.executable, "-m", "embryo_bench.cli", "figures", "--spec", spec, "--selection", "x",
           "--source-info", "x", "--shard", "x", "--out-dir", str(tmp_path)]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"embryo-bench: error: {tmp_path / 'spec.json'}: not valid JSON")
    assert len(proc.stderr.strip().splitlines()) == 1
