"""benchmarks/bench_gpu_records.py: the GPU figures printed from a session folder's records,
on hand-made records whose every number is known (no GPU is needed to check the arithmetic)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workflow_helpers import load_benchmark

from embryo_bench.published import paper

records = load_benchmark("bench_gpu_records")


def _run(folder: Path, target: str, workload: str = "paper", **metrics) -> None:
    base = {
        "target": target,
        "workload": workload,
        "backend": "jax",
        "precision": "float32",
        "cpus": 8,
        "gpus": 1,
        "epochs": 20,
        "images_per_epoch": paper.TRAIN_IMAGES,
        "training_seconds": 600.0,
        "mean_images_per_s": 2000.0,
        "steady_epoch_seconds": 24.5,
        "final_test_accuracy": 0.8,
        "gpu_energy_per_epoch_j": 3000.0,
        "device_memory_peak_mib": 5000.0,
        "batch_size": 480,
        "telemetry": {"gpus": [{"gpu_index": 0, "gpu_util_percent_mean": 90.0}]},
    }
    where = folder / ("" if workload == "paper" else f"workloads/{workload}")
    path = where / f"train/{target}/repeat-1/metrics.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(base | metrics))


@pytest.fixture
def session(tmp_path) -> Path:
    folder = tmp_path / "2026-12-01-h100"
    folder.mkdir()
    gpu = {"name": "NVIDIA H100 80GB HBM3", "memory_total_mib": 81559.0,
           "driver_version": "580.159.04", "cuda_driver_version": "13.0",
           "compute_capability": "9.0"}  # fmt: skip
    (folder / "session-paper.json").write_text(
        json.dumps(
            {
                "devices": {"nvml": [gpu]},
                "cpu_count": 16,
                "parts": ["paper"],
                "started": "2026-12-01T10:00:00+00:00",
                "left_out": [],
            }
        )  # fmt: skip
    )
    _run(folder / "gpu", "gpu-jax")
    _run(folder / "gpu", "gpu-jax-bf16", precision="mixed_bfloat16", mean_images_per_s=3200.0,
         final_test_accuracy=0.79)  # fmt: skip
    _run(folder / "gpu", "gpu-jax-1cpu", cpus=1, mean_images_per_s=1900.0)
    _run(folder / "gpu-workloads", "gpu-jax", "catsdogs-cnn-files", input_mode="files",
         input_wait={"share": 0.62}, mean_images_per_s=950.0)  # fmt: skip
    (folder / "peers").mkdir()
    summary = [{"entry": "keras-jax", "images_per_s": 1800.0, "status": "ok"},
               {"entry": "jax", "images_per_s": 2000.0, "status": "ok"},
               {"entry": "torch", "images_per_s": 1500.0, "status": "ok"}]  # fmt: skip
    (folder / "peers/peers.json").write_text(json.dumps({"complete": True, "summary": summary}))
    return folder


def test_the_paper_cnn_rows_against_the_papers_systems_per_image(session):
    rows = {r["target"]: r for r in records.paper_rows(records.metrics_under(session / "gpu"))}
    r = rows["gpu-jax"]
    # 600 s for the paper's 49,024 images x 20 epochs: the laptop's 309 min is 30.9 times it.
    assert r["training_min"] == 10.0
    assert r["laptop_ratio"] == pytest.approx(309 / 10)
    assert r["desktop_ratio"] == pytest.approx(134 / 10)
    m = json.loads((session / "gpu/train/gpu-jax/repeat-1/metrics.json").read_text())
    half = records.paper_rows([m | {"epochs": 10}])  # half the images in the same time
    assert half[0]["laptop_ratio"] == pytest.approx(309 / 10 / 2)
    assert r["gpu_util_percent"] == 90.0 and r["energy_per_epoch_j"] == 3000.0


def test_the_report_prints_every_figure_and_judges_each_goal(session, tmp_path):
    text = records.report(session, None)
    assert "NVIDIA H100 80GB HBM3, 81,559 MiB, driver 580.159.04, CUDA 13.0" in text
    assert (
        "bfloat16 / float32 on jax (gpu-jax-bf16 / gpu-jax): 1.600x images/s, accuracy -0.010"
        in text
    )
    assert "1 core(s) / 8 feeding the device (gpu-jax-1cpu / gpu-jax): 0.950x images/s" in text
    assert "catsdogs-cnn-files" in text and "62%" in text
    assert "ours (keras-jax) / best plain loop (jax): 0.900" in text
    assert "our trainer / best plain loop on the device: 0.9 (goal >= 0.9: met)" in text
    assert "bfloat16 / float32 on the paper CNN (best backend): 1.6 (goal >= 1.5: met)" in text
    assert "not computed (no 2-core runs given: --cpu-results)" in text
    # With this machine's 2-core runs of the same data: 3,200 / 40 = 80x, short of 100x.
    _run(tmp_path / "here", "laptop-2cpu", cpus=2, gpus=0, mean_images_per_s=40.0)
    text = records.report(session, tmp_path / "here")
    assert "80 (goal >= 100: NOT met) (laptop-2cpu: 40 images/s)" in text


def test_no_measurement_yet_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(records, "MEASUREMENTS", tmp_path / "none")
    assert records.main([]) == 1
    assert "no GPU measurement under" in capsys.readouterr().out


COMMITTED = sorted(p for p in records.MEASUREMENTS.glob("*") if p.is_dir())


@pytest.mark.parametrize("folder", COMMITTED, ids=[p.name for p in COMMITTED])
def test_each_committed_gpu_session_reads_and_its_runs_ran_on_its_gpu(folder):
    """The records brought back from the lent machine: each run's device record names the GPU
    its session file names, every run of the paper CNN is read as a row, and its run spec
    reads as one (config/gpu-here.yaml merges them)."""
    from embryo_bench.vocabulary.spec import RunSpec

    sessions = [json.loads(p.read_text()) for p in folder.glob("session-*.json")]
    assert sessions, f"{folder}: no session-*.json"
    gpus = {g["name"] for s in sessions for g in s["devices"]["nvml"]}
    metrics = records.metrics_under(folder / "gpu")
    assert metrics, f"{folder}/gpu: no finished run"
    for m in metrics:
        assert m["gpus"] >= 1 and m["parameter_count"] == 16_834_436  # the paper CNN's
        used = m["provenance"]["devices"]
        assert {g["name"] for g in used["gpus"]} <= gpus and used["backend"]["platform"] == "gpu"
        assert 0.0 <= m["final_test_accuracy"] <= 1.0 and m["mean_images_per_s"] > 0
    rows = records.paper_rows(metrics)
    assert {r["target"] for r in rows} == {m["target"] for m in metrics}
    text = records.report(folder, None)
    for name in gpus:
        assert name in text
    for run_json in (folder / "gpu/train").glob("*/repeat-*/run.json"):
        if (run_json.parent / "metrics.json").is_file():
            assert RunSpec.read(run_json).gpus >= 1


def test_a_sweep_stopped_by_its_budget_says_it_found_no_limit():
    """Only a search that ran out of memory has found the largest batch that fits; one that
    spent its time budget has found a batch that fitted (the H100 sweeps of 2026-11-27)."""
    trials = [{"batch_size": 480, "fits": True, "images_per_s": 100.0},
              {"batch_size": 960, "fits": True, "images_per_s": 150.0},
              {"batch_size": 1920, "fits": False, "images_per_s": None}]  # fmt: skip
    stopped = {"reason": "budget", "text": "the time budget (150 s) was spent"}
    budget = {"largest_batch_size": 960, "trials": trials, "stopped": stopped}
    text = records.batch_limit_text(budget)
    assert text.startswith("largest tried that fitted (no limit found) 960 (150 images/s)")
    oom = budget | {"stopped": {"reason": "out_of_memory", "text": "batch 1920 ran out"}}
    assert records.batch_limit_text(oom).startswith("largest that fits 960 (150 images/s)")
