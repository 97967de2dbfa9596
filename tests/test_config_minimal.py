"""A configuration needs only what runs: ``outdir`` and ``targets`` (and ``workloads:``) make
a complete configuration; the paper's sections default to what the paper did, are bounded only
where its workload runs, and may still be given where it does not."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from embryo_bench.cli import main
from embryo_bench.errors import ConfigError
from embryo_bench.planning.config import load_config
from embryo_bench.planning.plan import Plan
from embryo_bench.published import paper

REPO = Path(__file__).resolve().parents[1]
PAPER = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
OFFLINE = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
#: Two host targets: one core against two.
TARGETS = [
    {"name": "host-1cpu", "runner": "host", "cpus": 1},
    {"name": "host-2cpu", "runner": "host", "cpus": 2},
]
#: A catalog workload on a few SYNTHETIC samples.
MLP = {"name": "mnist-mlp", "data": "synthetic", "train_samples": 256, "test_samples": 64}
PAPER_SECTIONS = ("dataset", "split", "select", "preprocess", "train")


def _plan(config: dict) -> Plan:
    return Plan.from_config(copy.deepcopy(config), hardware_check="none", on_this_machine=False)


def test_outdir_and_targets_make_a_configuration_with_the_papers_settings():
    config = load_config({"outdir": "results/x", "targets": TARGETS})
    # No workloads: the paper's alone, as before.
    assert [w["name"] for w in config["workloads"]] == ["paper"]
    # Every setting config/config.yaml (the paper reproduction) gives is the default, but
    # the repeats it asks for (3; the schema's default stays 1).
    for section in PAPER_SECTIONS:
        given = {k: v for k, v in PAPER[section].items() if k != "repeats"}
        assert {k: config[section][k] for k in given} == given, section
    assert config["train"]["repeats"] == 1
    # ... which are the paper's own numbers.
    train = config["train"]
    assert (train["epochs"], train["batch_size"]) == (paper.EPOCHS, paper.BATCH_SIZE)
    assert train["accuracy_target"] == paper.TEST_ACCURACY
    assert config["preprocess"]["image_size"] == 64 and config["dataset"]["frame_size"] == 480
    # The url is the database's only where it is downloaded.
    synthetic = load_config({"outdir": "x", "targets": TARGETS, "dataset": {"kind": "synthetic"}})
    assert "url" not in synthetic["dataset"] and synthetic["dataset"]["frame_size"] == 480


def test_a_section_given_in_part_takes_the_rest_from_the_defaults():
    config = load_config({"outdir": "x", "targets": TARGETS, "train": {"epochs": 2}})
    assert config["train"]["epochs"] == 2 and config["train"]["batch_size"] == paper.BATCH_SIZE
    with pytest.raises(ConfigError, match=r"^dataset: 'path' is a required property$"):
        load_config({"outdir": "x", "targets": TARGETS, "dataset": {"kind": "local"}})


def test_outdir_targets_and_one_catalog_workload_pass_check_config(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"outdir": "out", "targets": TARGETS, "workloads": [MLP]}))
    assert main(["check-config", str(path)]) == 0
    assert capsys.readouterr().out == f"{path}: valid (2 targets, 1 workloads, outdir out)\n"


@pytest.mark.parametrize(
    ("config", "line"),
    [
        ({"outdir": "out"}, "config: 'targets' is a required property"),
        ({"targets": TARGETS}, "config: 'outdir' is a required property"),
        ({"outdir": "out", "targets": []}, "targets: [] should be non-empty"),
    ],
)
def test_a_missing_required_setting_is_one_line_naming_it(tmp_path, capsys, config, line):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({**config, "workloads": [MLP]}))
    assert main(["check-config", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"embryo-bench: error: {path}: {line}\n"


def test_a_paper_section_given_when_the_paper_does_not_run_is_fine():
    """The shipped studies' configurations gave them (the schema required them): they still
    validate, and change no run of another workload but by what every workload shares."""
    bare = _plan({"outdir": "out", "targets": TARGETS, "workloads": [MLP]})
    given = _plan({**OFFLINE, "targets": TARGETS, "sweeps": [], "cost": {}, "workloads": [MLP]})
    assert given.config["train"]["epochs"] == 2 and given.all_runs == bare.all_runs
    for run in bare.all_runs:
        assert given.spec(run[1], run[2], run[0]) == bare.spec(run[1], run[2], run[0])
    # An impossible one is still refused: the schema checks what is given.
    bad = {"outdir": "out", "targets": TARGETS, "workloads": [MLP], "split": {"test_mod": 1}}
    with pytest.raises(ConfigError, match=r"^split.test_mod: 1 is less than the minimum of 2$"):
        _plan(bad)


def test_the_papers_bounds_apply_only_where_its_workload_runs():
    """A container too small for the paper's trainer (61,280 images at the defaults) trains
    another workload; with the paper's workload listed it is refused, as before."""
    targets = [{"name": "small", "runner": "docker", "cpus": 1, "memory": "600m"}]
    alone = _plan({"outdir": "out", "targets": targets, "workloads": [MLP]})
    assert alone.all_runs == [("mnist-mlp", "small", 1)]
    with pytest.raises(ConfigError, match=r"^target small: its trainer would hold at least"):
        _plan({"outdir": "out", "targets": targets, "workloads": [{"name": "paper"}, MLP]})
