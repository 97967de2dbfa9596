"""A host-runner run on a GPU: trained from its run.json on whichever installed Keras backend
sees the GPU, sampled through NVML. Runs only where NVML shows a GPU (skipped elsewhere,
e.g. in CI); tests/test_docker.py covers GPU containers where the NVIDIA runtime exists."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from conftest import require_gpu
from workflow_helpers import REPO, train_command, write_spec

from embryo_bench.data import stages
from embryo_bench.data.select import assign_shards
from embryo_bench.data.sources import index_db
from embryo_bench.data.synthetic import generate_db
from embryo_bench.io import write_json
from embryo_bench.recording.hardware import gpu_names

SEES_GPU = {
    "tensorflow": "import tensorflow as tf; print(bool(tf.config.list_physical_devices('GPU')))",
    "jax": "import jax; print(any(d.platform == 'gpu' for d in jax.devices()))",
    "torch": "import torch; print(torch.cuda.is_available())",
}


def _gpu_backend() -> str | None:
    """The first Keras backend that is installed and sees a GPU (asked in a subprocess, so
    this process loads no framework)."""
    for backend, probe in SEES_GPU.items():
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        if proc.returncode == 0 and proc.stdout.strip().endswith("True"):
            return backend
    return None


@pytest.mark.alone
@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_host_run_on_a_gpu_is_sampled_through_nvml(tmp_path):
    require_gpu()
    names = gpu_names()
    assert names, "nvidia-smi lists GPUs, NVML (hardware.gpu_names) none"
    backend = _gpu_backend()
    assert backend, "a GPU is here, and no installed Keras backend (tf, jax, torch) sees it"
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    out = tmp_path / "out"
    generate_db(tmp_path / "db", embryos=10, frames_per_embryo=24, frame_size=96, seed=0)
    manifest, _ = index_db(tmp_path / "db", 96)
    assign_shards(manifest, 1).to_csv(tmp_path / "selected.csv", index=False)
    stages.crop_shard(tmp_path / "selected.csv", 0, 96, 0.6666666667, tmp_path / "c.npz")
    stages.invert_shard(tmp_path / "c.npz", 128, tmp_path / "i.npz")
    stages.augment_shard(tmp_path / "i.npz", 18.0, 64, out / "augment" / "shard-0.npz")
    write_json(out / "manifest" / "source.json", {"synthetic": True, "sha256": "synthetic"})
    target = {"name": "host-1gpu", "runner": "host", "cpus": 2, "gpus": 1, "backend": backend}
    write_spec(tmp_path / "run.json", config, target, epochs=3)
    proc = subprocess.run(
        train_command(tmp_path / "run.json", out, tmp_path / "run"), capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    metrics = json.loads((tmp_path / "run/metrics.json").read_text())
    assert metrics["gpus"] == 1 and metrics["backend"] == backend
    assert metrics["provenance"]["gpus"] == names and metrics["provenance"]["gpu_driver"]
    # What trained: NVML's identity of the GPU given and the framework's own view of it.
    (given,) = metrics["provenance"]["devices"]["gpus"]
    assert given["index"] == 0 and given["name"] == names[0] and given["memory_total_mib"] > 0
    assert given["compute_capability"] and given["cuda_driver_version"]
    assert metrics["provenance"]["devices"]["backend"]["platform"] == "gpu"
    assert metrics["device_memory_peak_mib"] > 0  # the framework's own allocator peak
    (gpu,) = metrics["telemetry"]["gpus"]
    assert gpu["gpu_index"] == 0 and gpu["gpu_memory_mib_peak"] > 0
    tel = pd.read_csv(tmp_path / "run/telemetry.csv")
    assert tel["gpu_index"].eq(0).all() and tel["gpu_memory_mib"].notna().all()
    assert tel["gpu_util_percent"].max() > 0  # the GPU did the training
    energy = metrics["telemetry"]["energy_j"]
    if isinstance(energy, float):  # NVML's energy counter (Volta and newer)
        assert energy > 0 and metrics["telemetry"]["images_per_joule"] > 0
        history = pd.read_csv(tmp_path / "run/history.csv")
        assert (history["gpu_energy_j"] > 0).all() and metrics["gpu_energy_per_epoch_j"] > 0
    else:
        assert energy.startswith("not measured")
    print(json.dumps({k: metrics["telemetry"][k] for k in ("gpus", "energy_j")}, indent=1))
    print(f"backend {backend}, {metrics['mean_images_per_s']:.0f} images/s steady state")
