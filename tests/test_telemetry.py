"""Telemetry formulas and the paths without GPUs or NVML (no Docker daemon needed)."""

import sys

import pandas as pd
import pytest

from embryo_bench import telemetry
from embryo_bench.docker_runner import container_kwargs

V1 = {  # docker stats on cgroup v1: 0.5 s of CPU in 1 s of system time across 2 cpus
    "cpu_stats": {
        "cpu_usage": {"total_usage": 2_500_000_000, "percpu_usage": [1, 2]},
        "system_cpu_usage": 20_000_000_000,
        "online_cpus": 2,
    },
    "precpu_stats": {
        "cpu_usage": {"total_usage": 2_000_000_000},
        "system_cpu_usage": 18_000_000_000,
    },
    "memory_stats": {"usage": 300 * 2**20, "stats": {"total_inactive_file": 100 * 2**20}},
}
V2 = {**V1, "memory_stats": {"usage": 300 * 2**20, "stats": {"inactive_file": 44 * 2**20}}}


def test_cpu_percent_docker_formula():
    # (0.5e9 / 2e9) * 2 online cpus * 100 = 50 % (half of one core)
    assert telemetry.cpu_percent(V1) == pytest.approx(50.0)
    assert telemetry.cpu_percent({"cpu_stats": V1["cpu_stats"], "precpu_stats": {}}) is None


def test_memory_minus_inactive_file_v1_and_v2():
    assert telemetry.memory_mib(V1) == pytest.approx(200.0)
    assert telemetry.memory_mib(V2) == pytest.approx(256.0)
    assert telemetry.memory_mib({"memory_stats": {}}) is None


def test_summary_without_gpus_says_not_measured():
    df = pd.DataFrame(
        [
            {
                "time_s": t,
                "cpu_percent": 90.0 + t,
                "cpu_percent_of_target": 45.0,
                "memory_mib": 100.0 * t,
            }
            for t in range(4)
        ],
        columns=telemetry.COLUMNS,
    )
    s = telemetry.summarise(df, images_trained=1000, gpus_expected=0)
    assert s["samples"] == 4 and s["cpu_percent_peak"] == 93.0
    assert s["memory_mib_mean"] == pytest.approx(150.0)
    assert s["energy_j"].startswith("not measured")
    assert s["images_per_joule"].startswith("not measured")


def test_summary_gpu_energy_and_images_per_joule():
    rows = [
        {
            "time_s": t,
            "cpu_percent": 100.0,
            "cpu_percent_of_target": 25.0,
            "memory_mib": 1.0,
            "gpu_index": g,
            "gpu_util_percent": 90.0,
            "gpu_memory_mib": 500.0,
            "gpu_power_w": 200.0 + g,
            "gpu_energy_j": 200.0 * t,
        }
        for t in range(3)
        for g in (0, 1)
    ]
    s = telemetry.summarise(pd.DataFrame(rows, columns=telemetry.COLUMNS), 8000, 2)
    assert s["samples"] == 3 and [g["gpu_index"] for g in s["gpus"]] == [0, 1]
    assert s["energy_j"] == pytest.approx(800.0)  # 400 J per GPU
    assert s["images_per_joule"] == pytest.approx(10.0)


def test_summary_gpu_expected_but_no_nvml_readings():
    df = pd.DataFrame([{"time_s": 0.0, "cpu_percent": 1.0}], columns=telemetry.COLUMNS)
    s = telemetry.summarise(df, 100, 1)
    assert "driver or pynvml absent" in s["energy_j"]


def test_nvml_absent_gives_no_readings(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml -> ImportError
    gpus = telemetry.NvmlGpus([0, 1])
    assert not gpus.available and gpus.read() == []
    gpus.close()


def _spec(**entry):
    from embryo_bench.plan import target_from_entry
    from embryo_bench.spec import Preprocessing

    train = {"epochs": 1, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0, "accuracy_target": 0.8}
    pp = Preprocessing(96, 2 / 3, 128, 18.0, 64)
    return target_from_entry({"runner": "docker", **entry}).spec(1, train, pp)


def test_container_kwargs_cpu_and_gpu_targets():
    image = {"tag": "embryo-bench/gpu:0.1.0", "image_id": "sha256:abc"}
    cpu = container_kwargs(_spec(name="c", cpus=2, memory="3g"), image, ["true"], "r1")
    assert cpu["nano_cpus"] == 2_000_000_000 and cpu["image"] == "sha256:abc"
    assert cpu["mem_limit"] == cpu["memswap_limit"] == "3g" and cpu["shm_size"] == "1g"
    assert "device_requests" not in cpu and cpu["labels"]["org.embryo-bench.run"] == "r1"
    gpu = container_kwargs(_spec(name="g", cpus=8, gpus=2), image, ["true"], "r2")
    assert gpu["mem_limit"] == "4g"  # the default for docker targets, resolved in the plan
    (req,) = gpu["device_requests"]
    assert req["DeviceIDs"] == ["0", "1"] and req["Capabilities"] == [["gpu"]]
    assert gpu["environment"]["KERAS_BACKEND"] == "tensorflow"
