"""Workloads other than the paper's through the workflow (what "workloads are
done" means), at tiny
sizes: three workloads of the catalog on SYNTHETIC data (one from memory, one from image
files, one without a test split) trained on the host and in a container, each with its
tables; an edit to one workload's settings reruns only its jobs; a model of one's own by
module path trains, and a path that does not import is one line before any job; the paper's
runs are planned as before beside another workload; result folders written before
workloads existed merge as the paper's workload."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from embryo_bench.planning.plan import Plan
from embryo_bench.reporting import readable_tables, summary
from embryo_bench.reporting.merge import merge_runs
from embryo_bench.vocabulary import layout

sys.path.insert(0, str(Path(__file__).parent))
from conftest import copy_run, require_or_skip, run_only_when_required  # noqa: E402
from workflow_helpers import (  # noqa: E402
    docker_unreachable,
    job_counts,
    offline_config,
    planned_jobs,
    snakemake,
    workload_run_dir,
    workloads_config,
)

#: One workload of each kind: arrays in memory, image files decoded per batch, no test split.
#: A few hundred synthetic samples, one epoch each.
WORKLOADS = [
    {"name": "mnist-mlp", "data": "synthetic", "train_samples": 256, "test_samples": 64,
     "epochs": 1},
    {"name": "catsdogs-cnn", "data": "synthetic", "input": "files", "train_samples": 96,
     "test_samples": 32, "epochs": 1},
    {"name": "lstm-text-generation", "data": "synthetic", "train_samples": 256,
     "test_samples": 0, "epochs": 1},
]  # fmt: skip
#: Their catalog parameter counts at these shapes (tests/test_catalog.py checks the catalog).
PARAMETERS = {"mnist-mlp": 669_706, "catsdogs-cnn": 813_217, "lstm-text-generation": 102_585}
TARGETS = ("host-1cpu", "docker-1cpu")


@pytest.fixture(scope="module")
def workloads_run(tmp_path_factory):
    """:data:`WORKLOADS` on host-1cpu and docker-1cpu, run: (work dir, config). Its outdir
    is relative ("out"), so :func:`conftest.copy_run` gives a test a finished copy.
    Six trainings and their figures (about 100 s): in .ci/run's catalog-runs step, beside
    tests/test_catalog_runs.py, not in the suite's 10 minutes."""
    run_only_when_required("catalog-runs", "six trainings through the workflow")
    if why := docker_unreachable():
        require_or_skip("docker", why)
    work = tmp_path_factory.mktemp("workloads")
    config = workloads_config(Path("out"), WORKLOADS)
    snakemake(work, config)
    return work, config


@pytest.mark.ci_step("catalog-runs", "a catalog workload trained through the workflow")
@pytest.mark.slow
def test_every_workload_trains_on_the_host_and_in_a_container(workloads_run):
    work, _ = workloads_run
    out = work / "out"
    for entry in WORKLOADS:
        name, mode = entry["name"], entry.get("input", "memory")
        for target in TARGETS:
            run = workload_run_dir(out, name, target)
            m = metrics_of(out, name, target)
            where = f"{name} on {target}"
            assert (m["workload"], m["input_mode"], m["target"]) == (name, mode, target), where
            assert m["runner"] == target.split("-")[0], where
            assert m["n_train"] == entry["train_samples"], where
            assert m["n_test"] == entry["test_samples"], where
            assert m["parameter_count"] == PARAMETERS[name], where
            assert m["mean_images_per_s"] > 0, where
            history = pd.read_csv(run / layout.HISTORY)
            assert "input_wait_seconds" in history.columns, where
            waited = history["input_wait_seconds"]
            if mode == "files":  # timed per epoch; memory input has nothing to wait for
                assert (waited >= 0).all() and waited.notna().all(), where
                assert m["input_wait"]["seconds"] >= 0, where
            else:
                assert waited.isna().all() and m["input_wait"]["seconds"] is None, where
        table = (out / "workloads" / name / "figures" / "results_table.md").read_text()
        assert "SYNTHETIC" in table, name
        results = pd.read_csv(out / "workloads" / name / "figures" / "results_table.csv")
        assert sorted(results["target"]) == sorted(TARGETS), name
        assert set(results["workload"]) == {name} and set(results["input"]) == {mode}, name
        rows = [line for line in table.splitlines() if line.startswith("| host-1cpu")]
        assert len(rows) == 1 and f"| {mode} " in rows[0], table
    # No paper's runs: it is not listed.
    assert not (out / "train").exists()


def metrics_of(out: Path, workload: str, target: str) -> dict:
    """metrics.json of repeat 1 of ``workload`` on ``target`` under the outdir ``out``."""
    return json.loads((workload_run_dir(out, workload, target) / layout.METRICS).read_text())


def mtimes(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` and its modification time (ns)."""
    return {str(p): p.stat().st_mtime_ns for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.ci_step("catalog-runs", "a catalog workload trained through the workflow")
@pytest.mark.slow
def test_an_edit_to_one_workloads_settings_reruns_only_its_jobs(workloads_run, tmp_path):
    work, config = workloads_run
    work = copy_run(work, tmp_path / "work")
    edited = copy.deepcopy(config)
    edited["workloads"][0]["batch_size"] = 32  # mnist-mlp: 128 by its recipe
    dry = snakemake(work, edited, "-n").stdout
    jobs = planned_jobs(dry)
    # Besides its own jobs, only the views over every workload (study/ours.csv and
    # the workload x target view) are made again: they hold its runs.
    every = {"all", "study_ours", "workload_view"}
    assert {w.get("workload") for rule, w in jobs if rule not in every} == {"mnist-mlp"}, dry
    assert job_counts(dry) == {
        "run_spec": 2,
        "train": 2,
        "figures_spec": 1,
        "figures": 1,
        "study_ours": 1,
        "workload_view": 1,
        "all": 1,
    }, dry
    others = {e["name"]: mtimes(work / "out/workloads" / e["name"]) for e in WORKLOADS[1:]}
    snakemake(work, edited)
    for target in TARGETS:
        m = metrics_of(work / "out", "mnist-mlp", target)
        assert m["batch_size"] == 32
    assert "Nothing to be done" in snakemake(work, edited, "-n").stdout
    for name, before in others.items():  # their runs, figures and tables untouched
        assert mtimes(work / "out/workloads" / name) == before, name


USER_MODULE = """
    import keras

    def small(input_shape, classes):
        return keras.Sequential([keras.Input(input_shape), keras.layers.Rescaling(1 / 255),
                                 keras.layers.Flatten(), keras.layers.Dense(classes)])
"""
#: The user's model on MNIST's 28 x 28 x 1: 784 x 10 + 10.
USER_PARAMETERS = 7_850


def user_workload(model: str) -> list[dict]:
    return [{"name": "mine", "model": model, "dataset": "mnist", "data": "synthetic",
             "train_samples": 64, "test_samples": 32, "epochs": 1, "batch_size": 16,
             "learning_rate": 0.01}]  # fmt: skip


@pytest.mark.ci_step("catalog-runs", "a catalog workload trained through the workflow")
@pytest.mark.slow
def test_a_users_model_by_module_path_trains_on_the_host(tmp_path):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "mymodels.py").write_text(textwrap.dedent(USER_MODULE))
    config = workloads_config(tmp_path / "out", user_workload("mymodels:small"), docker=False)
    snakemake(tmp_path, config, env={"PYTHONPATH": str(modules)})
    m = metrics_of(tmp_path / "out", "mine", "host-1cpu")
    assert (m["workload"], m["parameter_count"]) == ("mine", USER_PARAMETERS)
    assert m["mean_images_per_s"] > 0 and m["n_train"] == 64


@pytest.mark.parametrize(
    ("model", "message"),
    [
        ("nomodels.here:small", "model 'nomodels.here:small': module nomodels.here cannot be "
         "imported (No module named 'nomodels'); expected a module importable where the runs "
         "train"),
        ("mymodels:large", "model 'mymodels:large': {modules}/mymodels.py defines no large; "
         "expected a function (def) returning a Keras model for (input_shape, classes)"),
    ],
)  # fmt: skip
def test_a_model_path_that_does_not_import_is_one_line(tmp_path, model, message):
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "mymodels.py").write_text(textwrap.dedent(USER_MODULE))
    env = {"PYTHONPATH": str(modules)}
    line = f"workloads[0] (mine): {message.format(modules=modules)}"
    config = workloads_config(tmp_path / "out", user_workload(model), docker=False)
    proc = snakemake(tmp_path, config, "-n", check=False, env=env)
    said = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "WorkflowError in file" in said and line in said.splitlines(), said[-3000:]
    # Snakemake names where its WorkflowError was raised (common.smk), and nothing deeper.
    assert "Traceback" not in said and "src/embryo_bench/" not in said, said[-3000:]
    assert said.count('File "') <= 1, said[-3000:]
    check = subprocess.run(
        [sys.executable, "-m", "embryo_bench.cli", "check-config", str(tmp_path / "config.yaml")],
        capture_output=True, text=True, env={**os.environ, **env},
    )  # fmt: skip
    assert check.returncode == 2
    assert check.stderr.splitlines()[-1] == (
        f"embryo-bench: error: {tmp_path / 'config.yaml'}: {line}"
    ), check.stderr
    assert not (tmp_path / "out").exists()


def test_the_papers_runs_are_planned_as_before_beside_another_workload():
    """Listing another workload beside the paper's changes none of the paper's run.json
    texts (so none of its runs is run again) and none of its run folders."""
    config = offline_config(Path("results/offline"), docker=True, full=True)
    alone = Plan.from_config(config, probe=lambda target: None)
    both = Plan.from_config(
        {**config, "workloads": [{"name": "paper"}, WORKLOADS[0]]}, probe=lambda target: None
    )
    assert alone.workload_runs("paper") and both.workload_runs("paper") == alone.workload_runs(
        "paper"
    )
    assert both.workload_run_dirs("paper") == alone.workload_run_dirs("paper")
    for target, repeat in alone.workload_runs("paper"):
        before = alone.spec(target, repeat).to_json()
        assert both.spec(target, repeat).to_json() == before, (target, repeat)
        assert both.spec(target, repeat, layout.PAPER_WORKLOAD).to_json() == before
    assert "workload" not in json.loads(before)
    assert both.workload_runs("mnist-mlp") and both.workload_run_dirs("mnist-mlp")[0].startswith(
        f"{both.outdir}/workloads/mnist-mlp/"
    )


#: The rules that make the paper's runs and what they train on.
PAPER_RUN_RULES = {"download", "extract", "synthesize", "index", "select", "crop", "invert",
                   "augment", "run_spec", "train"}  # fmt: skip


@pytest.mark.ci_step("catalog-runs", "a catalog workload trained through the workflow")
@pytest.mark.slow
def test_adding_a_workload_to_a_finished_paper_run_runs_only_the_new_workload(offline_run):
    """A finished offline run (the paper's workload) with mnist-mlp added: the dry run has
    none of the paper's runs, nor anything they are made from."""
    work, config, _, _ = offline_run
    both = {**config, "workloads": [{"name": "paper"}, WORKLOADS[0]]}
    dry = snakemake(work, both, "-n").stdout
    jobs = planned_jobs(dry)
    # The rules every workload shares (run_spec, train) plan only mnist-mlp's jobs.
    assert all(w.get("workload") == "mnist-mlp" for rule, w in jobs if rule in PAPER_RUN_RULES), dry
    assert {rule for rule, w in jobs if w.get("workload") == "mnist-mlp"} == {
        "workload_data", "run_spec", "train", "figures_spec", "figures"}, dry  # fmt: skip


@pytest.mark.ci_step("catalog-runs", "a catalog workload trained through the workflow")
@pytest.mark.slow
def test_result_folders_from_before_workloads_merge_as_the_papers_workload(offline_run, tmp_path):
    """The offline run's train/<target>/repeat-k (run.json format 1 without a workload), its
    metrics.json without the keys workloads added, as another machine's result folder."""
    _, config, out, _ = offline_run
    old = tmp_path / "old"
    shutil.copytree(out / "train", old / "train")
    shutil.copytree(out / "figures", old / "figures")
    for metrics in old.glob("train/*/repeat-*/metrics.json"):
        m = json.loads(metrics.read_text())
        for key in ("workload", "input_mode", "input_wait"):
            m.pop(key, None)
        metrics.write_text(json.dumps(m))
    for spec in old.glob("train/*/repeat-*/run.json"):
        s = json.loads(spec.read_text())
        assert s["format"] == 1 and "workload" not in s, spec
    merged = {**config, "outdir": str(tmp_path / "out"), "merge": [str(old)],
              "workloads": [{"name": "paper"}, WORKLOADS[0]]}  # fmt: skip
    plan = Plan.from_config(merged, probe=lambda target: None)
    runs = sorted(str(p.parent) for p in old.glob("train/*/repeat-*/metrics.json"))
    assert runs and plan.merged_run_dirs == runs
    assert plan.figures_spec(layout.PAPER_WORKLOAD).merge == [str(old)]
    assert plan.figures_spec("mnist-mlp").merge == []
    read, targets = merge_runs([str(old)], [], plan.report_targets())
    table = summary.run_table(read, targets, "SYNTHETIC")
    assert len(table) == len(runs)
    assert set(table["workload"]) == {layout.PAPER_WORKLOAD} and set(table["input"]) == {"memory"}
    assert set(readable_tables.readable_runs(table)["input"]) == {"memory"}
