"""Which devices a run trains on: a CPU run is given no GPU (JAX and PyTorch take one whenever
it is there), a GPU run its first ``gpus`` of those it may use, in NVML's order; a GPU run
whose backend sees no GPU is refused in one line before anything is written; each GPU given is
recorded by NVML's identity (a stand-in NVML here: this machine has no GPU)."""

from __future__ import annotations

import json
import subprocess
import sys
import types

import pytest
import yaml
from workflow_helpers import REPO, train_command, write_spec

from embryo_bench.errors import ConfigError
from embryo_bench.recording import hardware
from embryo_bench.training import backend


@pytest.fixture
def env(monkeypatch):
    for var in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "JAX_PLATFORMS"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_a_cpu_run_is_given_no_gpu_and_jax_its_cpu(env):
    assert backend.select_gpus(0, "jax") == []
    import os

    assert os.environ["CUDA_VISIBLE_DEVICES"] == ""
    assert os.environ["JAX_PLATFORMS"] == "cpu"
    env.delenv("JAX_PLATFORMS")
    assert backend.select_gpus(0, "torch") == []
    assert "JAX_PLATFORMS" not in os.environ  # only JAX needs its platform named


def test_a_gpu_run_is_given_the_first_gpus_it_may_use_in_nvml_order(env):
    import os

    assert backend.select_gpus(2, "torch") == [0, 1]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert os.environ["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    env.setenv("CUDA_VISIBLE_DEVICES", "3,5,6")  # as Slurm or a container gives them
    assert backend.select_gpus(1, "jax") == [3]
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert "JAX_PLATFORMS" not in os.environ


def test_more_gpus_than_the_process_may_use_is_refused_naming_the_variable(env):
    env.setenv("CUDA_VISIBLE_DEVICES", "2")
    with pytest.raises(ConfigError, match=r"run h100: gpus 2, but CUDA_VISIBLE_DEVICES='2'"):
        backend.select_gpus(2, "jax", "run h100")


def test_a_gpu_uuid_is_found_by_nvml(env, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    env.setenv("CUDA_VISIBLE_DEVICES", "GPU-b")
    assert backend.select_gpus(1, "torch") == [1]


class FakeNvml(types.ModuleType):
    """NVML as pynvml gives it, for two GPUs, an H100 and an A100 (what an H100 machine's
    driver 580 reports: CUDA 13.0, compute capability 9.0, 81,559 MiB)."""

    GPUS = [
        ("NVIDIA H100 80GB HBM3", "GPU-a", 81_559, (9, 0)),
        ("NVIDIA A100-SXM4-40GB", "GPU-b", 40_960, (8, 0)),
    ]

    def __init__(self):
        super().__init__("pynvml")
        self.shut = 0

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        self.shut += 1

    def nvmlDeviceGetCount(self):
        return len(self.GPUS)

    def nvmlDeviceGetHandleByIndex(self, i):
        if not 0 <= i < len(self.GPUS):
            raise RuntimeError("Invalid Argument")
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return [g[1] for g in self.GPUS].index(uuid)

    def nvmlDeviceGetIndex(self, h):
        return h

    def nvmlDeviceGetName(self, h):
        return self.GPUS[h][0].encode()  # older pynvml gives bytes

    def nvmlDeviceGetUUID(self, h):
        return self.GPUS[h][1]

    def nvmlDeviceGetMemoryInfo(self, h):
        return types.SimpleNamespace(total=self.GPUS[h][2] * 2**20, used=0)

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self.GPUS[h][3]

    def nvmlSystemGetDriverVersion(self):
        return "580.159.04"

    def nvmlSystemGetCudaDriverVersion(self):
        return 13000


def test_each_gpu_given_is_recorded_by_nvmls_identity(monkeypatch):
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    h100, missing = hardware.gpu_identity([0, 7])
    assert h100 == {
        "index": 0,
        "name": "NVIDIA H100 80GB HBM3",
        "uuid": "GPU-a",
        "memory_total_mib": 81_559.0,
        "compute_capability": "9.0",
        "driver_version": "580.159.04",
        "cuda_driver_version": "13.0",
    }
    assert missing["index"] == 7 and "NVML has no GPU 7" in missing["error"]
    assert fake.shut == 1  # NVML closed again
    assert hardware.gpu_identity([]) == []


def test_without_nvml_no_identity_is_invented(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert hardware.gpu_identity([0]) == []
    assert hardware.nvml_index_of("GPU-a") is None


@pytest.mark.parametrize("name", ["jax", "torch"])
def test_the_backend_says_it_trains_on_the_cpu_here(monkeypatch, name):
    pytest.importorskip(name)
    monkeypatch.setenv("KERAS_BACKEND", name)
    info = backend.backend_devices(0)
    assert info["platform"] == "cpu" and info["backend"] == name
    with pytest.raises(ConfigError, match=rf"h100-{name}: gpus 1, but Keras on {name} sees 0 GPU"):
        backend.backend_devices(1, f"h100-{name}")
    assert backend.device_memory_peak_mib() is None  # no GPU: no device memory to report


@pytest.mark.ci_step("workflows", "an end-to-end workflow run (minutes)")
@pytest.mark.slow
def test_a_gpu_run_where_the_backend_sees_no_gpu_is_refused_before_any_output(tmp_path):
    """``embryo-bench train`` of a ``gpus: 1`` target on a machine whose JAX has no GPU (this
    one): one line naming the run, the backend and what it sees; no run folder that looks
    complete (no metrics.json, history.csv or model)."""
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    target = {"name": "h100-jax", "runner": "host", "cpus": 1, "gpus": 1, "backend": "jax"}
    write_spec(tmp_path / "run.json", config, target, epochs=1)
    out = tmp_path / "out"
    (out / "augment").mkdir(parents=True)
    # never read: the GPUs are checked before the data is loaded
    (out / "augment" / "shard-0.npz").write_bytes(b"")
    (out / "manifest").mkdir()
    (out / "manifest/source.json").write_text(json.dumps({"synthetic": True}))
    proc = subprocess.run(
        train_command(tmp_path / "run.json", out, tmp_path / "run"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert "run h100-jax repeat 1: gpus 1, but Keras on jax sees 0 GPU(s) (cpu)" in last, last
    assert not (tmp_path / "run" / "metrics.json").exists()
    assert not (tmp_path / "run" / "model.keras").exists()


def test_the_gpus_energy_counter_is_summed_over_gpus_from_its_first_reading(monkeypatch):
    from embryo_bench.recording.telemetry import NvmlGpus

    fake = FakeNvml()
    readings = {0: iter([1_000_000.0, 1_250_000.0]), 1: iter([7_000.0, 57_000.0])}  # mJ
    fake.nvmlDeviceGetTotalEnergyConsumption = lambda h: next(readings[h])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    gpus = NvmlGpus([0, 1])
    assert gpus.energy_j() == 0.0  # J since the first reading
    assert gpus.energy_j() == pytest.approx(250.0 + 50.0)
    fake.nvmlDeviceGetTotalEnergyConsumption = lambda h: (_ for _ in ()).throw(RuntimeError())
    assert gpus.energy_j() is None  # a GPU without the counter: no energy, none invented
    assert NvmlGpus([]).energy_j() is None


def test_each_epochs_training_energy_is_read_around_it_and_summarised():
    """The counter read where each epoch's training starts and where it ends (before the
    scoring): 0 -> 5, 5 -> 12, 12 -> 20 J give 5, 7, 8 J, and the run's energy per epoch
    leaves the first (compilation) out: 7.5 J."""
    import numpy as np
    import pandas as pd

    from embryo_bench.training.epochs import HISTORY_COLUMNS, fit_epochs
    from embryo_bench.training.history import summarise
    from embryo_bench.workloads.paper import build_model, compile_model

    model = compile_model(build_model(16), 1e-3)
    x = np.random.default_rng(0).integers(0, 129, (16, 16, 16, 1), dtype=np.uint8)
    y = np.arange(16, dtype=np.int32) % 4
    readings = iter([0.0, 5.0, 5.0, 12.0, 12.0, 20.0])
    rows = fit_epochs(model, (x, y), (x, y), batch_size=8, epochs=3, energy=lambda: next(readings))
    assert [r["gpu_energy_j"] for r in rows] == [5.0, 7.0, 8.0]
    history = pd.DataFrame(rows, columns=HISTORY_COLUMNS)
    assert summarise(history, 16, 0.85)["gpu_energy_per_epoch_j"] == 7.5
    cpu = fit_epochs(model, (x, y), (x, y), batch_size=8, epochs=2)
    assert all(np.isnan(r["gpu_energy_j"]) for r in cpu)
    assert (
        summarise(pd.DataFrame(cpu, columns=HISTORY_COLUMNS), 16, 0.85)["gpu_energy_per_epoch_j"]
        is None
    )
