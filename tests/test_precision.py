"""Precision as a run dimension: a target's Keras dtype policy reaches run.json (left out at
float32, so older runs keep their cached spec), a sweep over precisions names its points, the
trainer builds the model under the policy on every backend and records it, and the tables
carry it beside threads and batch size."""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_workload_train import _arrays, _metrics, _spec, _train

from embryo_bench.errors import ConfigError
from embryo_bench.planning.targets import expand_sweeps, target_from_entry
from embryo_bench.reporting import summary
from embryo_bench.vocabulary.spec import PRECISIONS, RunSpec

MLP = {"name": "mnist-mlp", "data": "synthetic", "epochs": 2, "batch_size": 32}


def test_a_targets_precision_reaches_its_run_spec_and_float32_is_left_out():
    spec = _spec(MLP)
    assert spec.precision == "float32" and "precision" not in spec.to_dict()
    bf16 = spec.replace(precision="mixed_bfloat16")
    d = bf16.to_dict()
    assert d["precision"] == "mixed_bfloat16"
    assert RunSpec.from_dict(d) == bf16
    target = target_from_entry(
        {"name": "t", "runner": "host", "cpus": 1, "precision": "mixed_float16"}
    )
    assert target.precision == "mixed_float16"


def test_a_precision_keras_does_not_name_is_refused_in_one_line():
    d = _spec(MLP).replace(precision="mixed_bfloat16").to_dict()
    d["precision"] = "float8"
    with pytest.raises(ConfigError, match=r"run.json: precision 'float8': expected one of"):
        RunSpec.from_dict(d, "run.json")
    with pytest.raises(ConfigError, match="precision"):
        target_from_entry({"name": "t", "runner": "host", "cpus": 1, "precision": "half"})


def test_a_precision_sweep_names_its_points_and_other_sweeps_keep_their_names():
    base = target_from_entry({"name": "t", "runner": "host", "cpus": 2})
    entry = {"target": "t", "precision": ["float32", "mixed_bfloat16"], "repeats": 1}
    points = expand_sweeps([entry], {"t": base})
    assert list(points) == ["t.bs480-t2-float32", "t.bs480-t2-mixed_bfloat16"]
    p = points["t.bs480-t2-mixed_bfloat16"]
    assert p.precision == "mixed_bfloat16"
    assert p.sweep == {"base": "t", "batch_size": 480, "threads": 2, "precision": "mixed_bfloat16"}
    # A sweep that lists no precision: its points' names and sweep records as before.
    plain = expand_sweeps([{"target": "t", "threads": [1], "repeats": 1}], {"t": base})
    assert list(plain) == ["t.bs480-t1"]
    assert plain["t.bs480-t1"].sweep == {"base": "t", "batch_size": 480, "threads": 1}


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
@pytest.mark.slow
@pytest.mark.parametrize("backend", ["jax", "torch", "tensorflow"])
def test_the_trainer_builds_the_model_under_the_runs_precision(tmp_path, backend):
    """mixed_bfloat16 on every backend: the model computes in bfloat16 with float32
    weights, trains (finite losses), and metrics.json says so; float32 is recorded too."""
    pytest.importorskip(backend)
    spec = _spec(MLP).replace(backend=backend, precision="mixed_bfloat16")
    arrays = _arrays(tmp_path, spec)
    proc = _train(tmp_path, spec, arrays, "bf16")
    assert proc.returncode == 0, proc.stderr[-2000:]
    m = _metrics(tmp_path, "bf16")
    assert m["precision"] == "mixed_bfloat16" and m["backend"] == backend
    assert m["final_test_accuracy"] is not None and not m["diverged"]
    assert m["device_memory_peak_mib"] is None  # no GPU here: the process's peak is telemetry's
    devices = m["provenance"]["devices"]
    assert devices["gpus"] == [] and devices["backend"]["platform"] == "cpu"
    assert "mixed_bfloat16" in proc.stderr  # the start line names the precision
    model = tmp_path / "bf16" / "model.keras"
    check = (
        "import keras, sys; m = keras.saving.load_model(sys.argv[1], compile=False); "
        "print(m.layers[-1].dtype_policy.name, m.layers[-1].kernel.dtype)"
    )
    out = subprocess.run(
        [sys.executable, "-c", check, str(model)],
        capture_output=True,
        text=True,
        env={"KERAS_BACKEND": backend, "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-2:] == ["mixed_bfloat16", "float32"]


def test_the_tables_carry_the_precision_beside_threads_and_batch_size():
    from test_report import _run

    bf16 = _run("cheap", 1, 100.0, 0.5)
    bf16.metrics["precision"] = "mixed_bfloat16"
    old = _run("fast", 1, 50.0, 0.5)  # recorded before precision was: float32
    gpu = _run("owned", 1, 10.0, 0.5)
    gpu.metrics |= {"gpus": 1, "device_memory_peak_mib": 2048.0}
    gpu.metrics["telemetry"]["gpus"] = [
        {"gpu_index": 0, "gpu_util_percent_mean": 80.0},
        {"gpu_index": 1, "gpu_util_percent_mean": 60.0},
    ]
    table = summary.run_table([bf16, old, gpu], {}, "hand-made")
    assert list(table["precision"]) == ["mixed_bfloat16", "float32", "float32"]
    assert table["gpu_util_percent_mean"].tolist()[2] == 70.0
    assert table["gpu_util_percent_mean"].isna().tolist()[:2] == [True, True]
    assert table["device_memory_peak_mib"].tolist()[2] == 2048.0
    summ = summary.target_summary(table)
    assert list(summ["precision"]) == ["mixed_bfloat16", "float32", "float32"]


def test_precisions_are_the_schemas():
    from embryo_bench.vocabulary.config import load_schema

    item = load_schema()["properties"]["targets"]["items"]["properties"]["precision"]
    assert tuple(item["enum"]) == PRECISIONS and item["default"] == "float32"
