"""Telemetry formulas and the paths without GPUs or NVML (no Docker daemon needed)."""

import sys

import pandas as pd
import pytest

from embryo_bench.recording import telemetry
from embryo_bench.runners.docker_runner import container_kwargs

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
    from embryo_bench.planning.targets import target_from_entry
    from embryo_bench.vocabulary.spec import Preprocessing

    train = {"epochs": 1, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0, "accuracy_target": 0.8,
             "probe_seconds": 0.2, "variant": "keras"}  # fmt: skip
    pp = Preprocessing(
        frame_size=96, crop_fraction=2 / 3, invert_centre=128, rotation_step=18.0, image_size=64
    )
    return target_from_entry({"runner": "docker", **entry}).spec(1, train, pp)


def test_container_kwargs_cpu_and_gpu_targets():
    image = {"tag": "embryo-bench/gpu:0.1.0", "image_id": "sha256:abc"}
    cpu = container_kwargs(_spec(name="c", cpus=2, memory="3g"), image, ["true"], "r1")
    assert cpu["nano_cpus"] == 2_000_000_000 and cpu["image"] == "sha256:abc"
    assert cpu["mem_limit"] == cpu["memswap_limit"] == "3g" and cpu["shm_size"] == "1g"
    assert "device_requests" not in cpu and cpu["labels"]["org.embryo-bench.run"] == "r1"
    gpu = container_kwargs(_spec(name="g", cpus=8, gpus=2, image="gpu"), image, ["true"], "r2")
    assert gpu["mem_limit"] == "4g"  # the default for docker targets, resolved in the plan
    (req,) = gpu["device_requests"]
    assert req["DeviceIDs"] == ["0", "1"] and req["Capabilities"] == [["gpu"]]
    assert gpu["environment"]["KERAS_BACKEND"] == "tensorflow"


def test_interference_finds_the_longest_stall_and_other_cpu():
    from embryo_bench.recording.telemetry import COLUMNS, interference

    cpu = [95, 98, 2, 1, 0.5, 97, 3, 99]  # a 3-sample stall, then a 1-sample dip
    df = pd.DataFrame(
        {
            "time_s": range(8),
            "cpu_percent": cpu,
            "other_cpu_percent": [20.0] * 8,
            "steal_percent": [1.0] * 8,
            "machine_cpu_percent": [120.0] * 8,
        },  # fmt: skip
        columns=COLUMNS,
    )
    seen = interference(df, cores=2)
    assert seen["stall_samples"] == 4 and seen["longest_stall_s"] == 3.0
    assert seen["other_cpu_share_mean"] == pytest.approx(0.10)  # 20 % of one core of 2
    assert seen["steal_percent_mean"] == 1.0
    # A GPU run whose CPU idles while its GPU works is not stalled.
    df["gpu_index"], df["gpu_util_percent"] = 0, 90.0
    assert interference(df, cores=2)["stall_samples"] == 0
    # Not sampled (a remote daemon's machine): said so, not zero.
    remote = interference(df.assign(other_cpu_percent=None, steal_percent=None), cores=None)
    assert remote["other_cpu_share_mean"].startswith("not measured")


def test_stability_verdict_names_each_reason():
    from embryo_bench.reporting.stability import assess, thresholds

    limits = thresholds()
    assert limits == {"probe_change": 0.10, "other_cpu_share": 0.10, "steal_percent": 5,
                      "stall_seconds": 3, "window_cv": 0.05, "baseline": ""}  # fmt: skip
    clean = {
        "diverged": None,
        "flops": {"probe_change": 0.02},
        "calibration": {"before": {"gflops": 40.0}, "after": {"gflops": 39.2}},
        "telemetry": {
            "interference": {
                "other_cpu_share_mean": 0.01,
                "steal_percent_mean": 0.5,
                "longest_stall_s": 1.0,
            }
        },
        "throughput_windows": {"window_steps": 10, "windows": 40, "cv": 0.03, "worst_ratio": 0.9},
    }  # fmt: skip
    assert assess(clean, limits) == {"clean": True, "flags": [], "reasons": [], "unchecked": []}
    bad = {
        "flops": {"probe_change": 0.25},
        "calibration": {"before": {"gflops": 40.0}, "after": {"gflops": 30.0}},
        "telemetry": {
            "interference": {
                "other_cpu_share_mean": 0.4,
                "steal_percent_mean": 9.0,
                "longest_stall_s": 12.0,
            }
        },  # fmt: skip
    }
    verdict = assess(bad, limits)
    assert not verdict["clean"] and verdict["flags"] == ["interfered", "drifted"]
    assert len(verdict["reasons"]) == 4  # interference first, then the drift
    assert "other processes used 40% of its cores" in verdict["reasons"][0]
    assert "steal time 9.0 % of its cores" in verdict["reasons"][1]
    assert "stalled 12 s idle" in verdict["reasons"][2]
    assert verdict["reasons"][3].startswith("calibration probes differ by 25% (40.0 -> 30.0")
    only_drift = {**clean, "flops": {"probe_change": 0.25}, "calibration": bad["calibration"]}
    assert assess(only_drift, limits)["flags"] == ["drifted"]
    # Thresholds come from the config; missing evidence is listed, not counted against it.
    loose = {"probe_change": 0.5, "other_cpu_share": 0.5, "steal_percent": 10, "stall_seconds": 20}
    assert assess(bad, thresholds(loose))["clean"]
    assert assess({}, limits)["unchecked"] == [
        "loss (divergence)", "calibration probes", "other processes' CPU", "steal time",
        "stalls", "throughput windows"]  # fmt: skip
    # The run's own throughput windows: noisy beyond window_cv, with the numbers.
    windows = {"window_steps": 10, "windows": 40, "cv": 0.18, "worst_ratio": 0.55}
    noisy = assess({**clean, "throughput_windows": windows}, limits)
    assert noisy["flags"] == ["noisy"] and noisy["reasons"] == [
        "its throughput varied by 18% (coefficient of variation over 40 windows of 10 "
        "steps; slowest 0.55 x the median; limit 5%)"]  # fmt: skip
    steady = {**windows, "cv": 0.03}
    assert assess({**clean, "throughput_windows": steady}, limits)["clean"]


def test_matmul_probe_and_model_flops():
    from embryo_bench.recording.calibrate import efficiency, matmul_probe, training_flops_per_image
    from embryo_bench.workloads.paper import build_model

    flops = training_flops_per_image(build_model(64))
    # conv1 2*5*5*1*32*64*64, conv2 2*5*5*32*64*32*32, fc1 2*16384*1024, logits 2*1024*4
    assert flops["per_layer"] == {"conv1": 6_553_600, "conv2": 104_857_600,
                                  "fc1": 33_554_432, "logits": 8_192}  # fmt: skip
    assert flops["training_flops"] == 3 * 144_973_824
    probe = matmul_probe(0.2, n=256)
    assert probe["gflops"] > 0 and probe["seconds"] >= 0.2 and probe["products"] >= 1
    # Two untimed warm-ups; every timed product's own time kept (the spread within a probe).
    assert probe["warmups"] == 2 and len(probe["product_seconds"]) == probe["products"]
    assert sum(probe["product_seconds"]) == pytest.approx(probe["seconds"], abs=1e-4)
    eff = efficiency(flops["training_flops"], 100.0, {"gflops": 50.0}, {"gflops": 40.0})
    assert eff["achieved_gflops"] == pytest.approx(43.49, abs=0.01)
    assert eff["efficiency"] == pytest.approx(43.49 / 45.0, abs=1e-3)
    assert eff["probe_change"] == pytest.approx(0.2)
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        matmul_probe(-1)
