"""The figures job's spec: written from the plan, read back checked, and a
bad one refused in one line naming the file and the key."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from embryo_bench.errors import ConfigError, DataError
from embryo_bench.planning.plan import Plan
from embryo_bench.vocabulary.figspec import FiguresSpec

REPO = Path(__file__).resolve().parents[1]
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())


def _spec() -> FiguresSpec:
    return Plan.from_config(copy.deepcopy(OFFLINE), probe=lambda t: None).figures_spec()


def test_the_spec_holds_the_runs_in_the_planned_order_and_round_trips(tmp_path):
    plan = Plan.from_config(copy.deepcopy(OFFLINE), probe=lambda t: None)
    spec = plan.figures_spec()
    assert spec.runs == [
        f"results/offline/train/{t}/repeat-{k}" for t, k in plan.workload_runs("paper")
    ]
    assert spec.cost_base == spec.compare_base == "host-1cpu" and spec.merge == []
    assert spec.targets["host-2cpu.bs120-t1"]["sweep"]["base"] == "host-2cpu"
    assert spec.stability["window_cv"] == 0.05 and spec.config["outdir"] == "results/offline"
    spec.write(tmp_path / "spec.json", log=tmp_path / "spec.log")
    assert FiguresSpec.read(tmp_path / "spec.json") == spec
    assert json.loads((tmp_path / "spec.json").read_text())["format"] == 2
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


def _figures(spec: Path, out: Path) -> subprocess.CompletedProcess:
    """``embryo-bench figures`` on ``spec`` (the other inputs are never reached)."""
    args = ["--selection", "x", "--source-info", "x", "--shard", "x", "--out-dir", str(out)]
    cmd = [sys.executable, "-m", "embryo_bench.cli", "figures", "--spec", str(spec), *args]
    return subprocess.run(cmd, capture_output=True, text=True)


def test_the_figures_command_refuses_a_garbled_spec_in_one_line(tmp_path):
    (tmp_path / "spec.json").write_text('{"runs": ')
    proc = _figures(tmp_path / "spec.json", tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"embryo-bench: error: {tmp_path / 'spec.json'}: not valid JSON")
    assert len(proc.stderr.strip().splitlines()) == 1


def _edited(**changes) -> dict:
    """The plan's spec as written, with ``changes`` made by hand (its digest kept)."""
    return {**_spec().to_dict(), **changes}


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda d: {"runs": d["runs"] + d["runs"][:1]},
            "runs lists results/offline/train/host-1cpu/repeat-1 twice",
        ),
        (
            lambda d: {"runs": [*d["runs"], "results/offline/train/gone/repeat-1"]},
            "runs: results/offline/train/gone/repeat-1 is a run of target gone, which targets",
        ),
        (
            lambda d: {"compare_base": "no-such"},
            "compare_base 'no-such' is not the target of any of its runs",
        ),
        (
            lambda d: {"cost_base": "host-2cpu.bs120-t1", "runs": d["runs"][:1]},
            "cost_base 'host-2cpu.bs120-t1' is not the target of any of its runs",
        ),
        (
            lambda d: {"stability": {**d["stability"], "window_cv": "5%"}},
            "stability.window_cv: '5%' is not of type 'number'",
        ),
        (
            lambda d: {"stability": {**d["stability"], "baseline": 3}},
            "stability.baseline: 3 is not of type 'string'",
        ),
        (
            lambda d: {"stability": {**d["stability"], "colour": 1}},
            "stability.colour: unknown setting; expected one of probe_change",
        ),
        (lambda d: {"min_difference": -0.5}, "min_difference: -0.5 is less than the minimum"),
    ],
    ids=["run twice", "run of no target", "compare base", "cost base", "stability type",
         "baseline type", "stability key", "min_difference"],
)  # fmt: skip
def test_a_spec_that_makes_no_sense_is_named_not_a_traceback(change, message):
    d = _spec().to_dict()
    with pytest.raises(DataError) as exc:
        FiguresSpec.from_dict({**d, **change(d)}, "s.json")
    assert str(exc.value).startswith(f"s.json: {message}")


def test_a_spec_edited_by_hand_is_refused():
    d = _spec().to_dict()
    assert FiguresSpec.from_dict(d, "s.json") == _spec()
    prices = {**d["targets"], "host-1cpu": {**d["targets"]["host-1cpu"], "hourly_usd": 9.0}}
    with pytest.raises(DataError) as exc:
        FiguresSpec.from_dict({**d, "targets": prices}, "s.json")
    assert str(exc.value) == (
        "s.json was edited after the workflow wrote it (its digest does not match); edit the "
        "configuration instead"
    )
    with pytest.raises(DataError, match=r"s.json was edited .* \(it carries no digest\)"):
        FiguresSpec.from_dict({k: v for k, v in d.items() if k != "digest"}, "s.json")
    # Specs of format 1 carry none: read as they are (a merged folder made before digests).
    old = {k: v for k, v in d.items() if k != "digest"} | {"format": 1}
    assert FiguresSpec.from_dict(old, "s.json") == _spec()


def test_the_figures_job_reads_only_a_spec_of_the_format_the_workflow_writes(tmp_path):
    """An edit that also takes out the digest and the format (or sets format 1) would pass
    as a merged folder's old spec: the figures job's own spec is always of today's format."""
    d = _spec().to_dict()
    path = tmp_path / "figures-spec.json"
    path.write_text(json.dumps(d))
    assert FiguresSpec.read(path, current=True) == _spec()
    for old in ({"format": 1}, {}):
        edited = {k: v for k, v in d.items() if k not in ("digest", "format")} | old
        path.write_text(json.dumps(edited))
        assert FiguresSpec.read(path) == _spec()  # a merged folder's spec: read as it is
        with pytest.raises(DataError, match=r"figures-spec.json: format [01], not the 2 this "):
            FiguresSpec.read(path, current=True)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: {"runs": d["runs"] * 2}, "runs lists"),
        (lambda d: {"compare_base": "no-such"}, "compare_base 'no-such' is not the target"),
        (lambda d: {"stability": {**d["stability"], "stall_seconds": "3 s"}}, "stability.stall"),
        (lambda d: {"cost_note": "edited"}, "was edited after the workflow wrote it"),
    ],
)
def test_the_figures_command_names_a_bad_spec_in_one_line(tmp_path, change, message):
    d = _spec().to_dict()
    spec = tmp_path / "figures-spec.json"
    spec.write_text(json.dumps({**d, **change(d)}))
    proc = _figures(spec, tmp_path / "figures")
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"embryo-bench: error: {spec}") and message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "figures").exists()


def test_a_spec_edited_on_disk_is_refused_when_the_plan_is_made(tmp_path, monkeypatch):
    """The workflow rewrites the spec only when the configuration changes it: one edited by
    hand (or garbled) would reach the figures job; the plan names it first."""
    monkeypatch.chdir(tmp_path)
    config = copy.deepcopy(OFFLINE)
    spec = tmp_path / "results" / "offline" / "figures-spec.json"
    plan = Plan.from_config(config, probe=lambda t: None)
    plan.figures_spec().write(spec)
    Plan.from_config(config, probe=lambda t: None)  # as written: accepted
    d = json.loads(spec.read_text())
    spec.write_text(json.dumps({**d, "cost_note": "cheaper by hand"}))
    with pytest.raises(ConfigError) as exc:
        Plan.from_config(config, probe=lambda t: None)
    assert str(exc.value) == (
        "results/offline/figures-spec.json was edited after the workflow wrote it (its digest "
        "does not match); edit the configuration instead; delete "
        "results/offline/figures-spec.json to have the workflow write it again"
    )
    spec.write_text('{"runs": ')
    with pytest.raises(ConfigError, match=r"figures-spec.json: not valid JSON .*; delete "):
        Plan.from_config(config, probe=lambda t: None)
