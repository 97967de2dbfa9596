"""A configuration needs only what runs: ``outdir`` and ``targets`` (and ``workloads:``) make
a complete configuration; the paper's sections default to what the paper did, are bounded only
where its workload runs, and may still be given where it does not."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from embryo_bench.cli import main
from embryo_bench.errors import ConfigError
from embryo_bench.planning.plan import Plan
from embryo_bench.published import paper
from embryo_bench.vocabulary.config import load_config

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


def _shipped(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


def test_the_shipped_minimal_configurations_give_only_outdir_targets_and_workloads():
    for name in ("minimal.yaml", "my-model.yaml"):
        config = _shipped(name)
        assert sorted(config) == ["outdir", "targets", "workloads"], name
        assert [t["runner"] for t in config["targets"]] == ["host", "host"], name
        assert len(config["workloads"]) == 1, name


def test_the_example_model_of_ones_own_builds_and_trains_a_step():
    """config/my-model.yaml's builder (examples/my_model.py, on the tests' import path as
    its comment runs it) through the trainer's own build and checks, on its run's spec."""
    import numpy as np

    from embryo_bench.workloads.build import build_for_spec

    spec = _plan(_shipped("my-model.yaml")).spec("host-1cpu", 1, "my-model")
    assert (spec.workload.model, spec.workload.input_shape) == ("my_model:build", (28, 28, 1))
    assert (spec.epochs, spec.batch_size, spec.accuracy_target) == (5, 128, 0.95)
    model = build_for_spec(spec.workload, spec.learning_rate)
    # 3x3x1x16 + 16 (the convolution), then 13x13x16 = 2,704 features x 10 + 10 (the output).
    assert model.count_params() == 160 + 27_050
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (8, 28, 28, 1), dtype=np.uint8)
    loss = model.train_on_batch(x, rng.integers(0, 10, 8))
    assert np.isfinite(np.ravel(loss)[0])


@pytest.mark.slow
def test_the_minimal_configuration_runs_through_the_workflow(tmp_path):
    """config/minimal.yaml (outdir, two host targets, one catalog workload) at a few samples
    and one epoch, with the workload's own accuracy target: it passes check-config, trains on
    both targets and makes the workload's tables, with that target in every run's metrics and
    the results table. Two trainings and the figures (92 s on a loaded 2-core machine, most
    of it TensorFlow's start-up): in .ci/run's catalog-runs step, not in the suite's 10
    minutes."""
    from conftest import run_only_when_required
    from workflow_helpers import snakemake, workload_run_dir

    run_only_when_required("catalog-runs", "two trainings through the workflow")

    from embryo_bench.vocabulary import layout

    config = _shipped("minimal.yaml")
    config["outdir"] = str(tmp_path / "out")
    config["workloads"][0].update(train_samples=256, test_samples=64, epochs=1)
    config["workloads"][0]["accuracy_target"] = 0.5
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["check-config", str(path)]) == 0
    snakemake(tmp_path, config)
    for target in ("host-1cpu", "host-2cpu"):
        run = workload_run_dir(tmp_path / "out", "mnist-mlp", target)
        metrics = json.loads((run / layout.METRICS).read_text())
        assert (metrics["accuracy_target"], metrics["n_train"]) == (0.5, 256), target
    table = tmp_path / "out" / "workloads" / "mnist-mlp" / "figures" / "results_table.csv"
    results = pd.read_csv(table)
    assert sorted(results["target"]) == ["host-1cpu", "host-2cpu"]
    assert set(results["accuracy_target"]) == {0.5}
    assert not (tmp_path / "out" / "train").exists()  # no paper's runs: not listed
