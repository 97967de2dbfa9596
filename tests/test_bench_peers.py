"""benchmarks/bench_peers.py (issue 14): its order of runs, its summary, entries whose framework
is missing, and a tiny end-to-end run of every entry installed here."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from workflow_helpers import load_benchmark  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_peers.py"


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bench_peers")


def test_runs_are_interleaved_forward_then_backward(bench):
    order = bench.interleaved(["A", "B", "C"], 3)
    assert "".join(e for _, e in order) == "ABCCBAABC"
    assert [r for r, _ in order] == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_summary_medians_ratios_and_efficiency(bench):
    def run(entry, ips, rss):
        return {
            "entry": entry,
            "status": "ok",
            "steady_images_per_s": ips,
            "steady_images_per_cpu_s": 2 * ips,
            "peak_rss_mib": rss,
            "first_epoch_seconds": 2.0,
            "parameters": bench.PARAMETERS,
        }

    runs = [
        run("a", 10.0, 900.0),
        run("a", 30.0, 1000.0),
        run("a", 20.0, 950.0),
        run("b", 40.0, 500.0),
        {"entry": "c", "status": "not installed", "missing": "torch"},
        {"entry": "d", "status": "ok", "steady_images_per_s": float("nan")},
    ]
    rows = {r["entry"]: r for r in bench.summarise(["a", "b", "c", "d"], runs, 0.435e9, 50.0)}
    a = rows["a"]
    assert (a["images_per_s"], a["min"], a["max"], a["repeats"]) == (20.0, 10.0, 30.0, 3)
    assert a["ratio"] == pytest.approx(0.5) and rows["b"]["ratio"] == 1.0
    assert a["images_per_cpu_s"] == 40.0 and a["ratio_cpu"] == pytest.approx(0.5)
    assert a["peak_rss_mib"] == 1000.0
    assert a["achieved_gflops"] == pytest.approx(0.435 * 20)
    assert a["efficiency"] == pytest.approx(0.435 * 20 / 50)
    assert rows["c"]["status"] == "not installed (torch)" and "images_per_s" not in rows["c"]
    assert "images_per_s" not in rows["d"]  # a NaN speed is not a result
    text = bench.table(list(rows.values()))
    assert "not installed (torch)" in text and "0.500" in text


def test_an_entry_without_its_framework_is_not_installed(bench, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # find_spec then answers None
    args = argparse.Namespace(threads=1, steps=1, epochs=1, batch=2, seed=0)
    assert bench.run_entry("torch", args) == {
        "entry": "torch",
        "status": "not installed",
        "missing": "torch",
    }
    gone = bench.spawn("torch", args, python="/nonexistent/python")
    assert gone["status"].startswith("not installed (no interpreter")


@pytest.mark.ci_step("long-workflows", "every installed training entry timed (45 s on both cores)")
@pytest.mark.all_cores  # its two halves each take a core of their own
@pytest.mark.slow
def test_tiny_run_of_every_installed_entry(bench, tmp_path):
    """Every entry, one timed step after one excluded step of 8 images: the installed ones
    give positive, finite numbers on the paper model, the others say "not installed". Two
    benchmark runs side by side (TensorFlow's entries; the others), each on a core of its own
    where there are two, to halve the wait."""
    import os

    allowed = sorted(os.sched_getaffinity(0))
    halves = [
        ("embryo-bench,embryo-bench-xla,tf-original", allowed[0]),
        ("torch,keras-jax,keras-torch", allowed[-1]),
    ]
    procs = []
    for i, (entries, core) in enumerate(halves):
        cmd = [sys.executable, str(SCRIPT), "--steps", "1", "--epochs", "1", "--batch", "8"]
        cmd += ["--repeats", "1", "--sgemm-seconds", "0.2", "--entries", entries]
        cmd += ["--json", str(tmp_path / f"peers{i}.json")]
        procs.append(
            subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                preexec_fn=lambda core=core: os.sched_setaffinity(0, {core}),
            )
        )
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs, strict=True):
        assert p.returncode == 0, err[-2000:]
    records = [json.loads((tmp_path / f"peers{i}.json").read_text()) for i in range(2)]
    rows = {r["entry"]: r for record in records for r in record["summary"]}
    assert sorted(rows) == sorted(bench.ENTRIES)
    installed = {
        "embryo-bench": True,
        "embryo-bench-xla": True,
        "tf-original": True,
        "torch": importlib.util.find_spec("torch") is not None,
        "keras-jax": importlib.util.find_spec("jax") is not None,
        "keras-torch": importlib.util.find_spec("torch") is not None,
    }
    for entry, row in rows.items():
        if not installed[entry]:
            assert row["status"].startswith("not installed"), row
            continue
        assert row["status"] == "ok", row
        keys = ("images_per_s", "min", "max", "peak_rss_mib", "achieved_gflops", "ratio")
        for key in (*keys, "images_per_cpu_s", "ratio_cpu", "cpu_per_wall", "first_epoch_s"):
            assert math.isfinite(row[key]) and row[key] > 0, (entry, key, row[key])
        assert row["min"] <= row["images_per_s"] <= row["max"]
        assert 0 < row["efficiency"] < 10, row  # of a finite, positive sgemm speed
        assert row["parameters"] == 16_834_436, entry
    assert max(r.get("ratio", 0) for r in records[0]["summary"]) == 1.0
    assert records[0]["flops"]["training_flops_per_image"] == pytest.approx(0.435e9, rel=0.01)
    for record in records:
        assert record["sgemm"]["mean_gflops"] > 0
        for run in record["runs"]:
            if run["status"] == "ok":
                assert len(run["epoch_seconds"]) == len(run["epoch_cpu_seconds"]) == 2
                assert len(run["cores"]) == 1
            if run["entry"].startswith("embryo-bench"):  # XLA only where asked for
                assert run["jit_compile"] is run["entry"].endswith("-xla"), run["entry"]
    stdout = outputs[0][0]
    assert stdout.startswith("host: ")
    assert "x best" in stdout and "embryo-bench" in stdout


@pytest.mark.parametrize(
    ("jaxlib", "threads", "preset", "expected"),
    [
        ("0.10.2", 1, "", ["--xla_cpu_multi_thread_eigen=false", "YNN", "MEM"]),
        ("0.10.2", 2, "", ["YNN"]),
        ("0.9.0", 1, "", ["--xla_cpu_multi_thread_eigen=false"]),
        ("0.10.2", 2, "--xla_cpu_experimental_ynn_fusion_type=dot", []),
        ("0.10.2", 1, "--xla_cpu_multi_thread_eigen=true", ["YNN", "MEM"]),
        ("0.11.0", 1, "--xla_cpu_enable_concurrency_optimized_scheduler=true", ["E", "YNN"]),
    ],
)
def test_jax_xla_flags(monkeypatch, jaxlib, threads, preset, expected):
    """Keras on JAX gets XLA's own convolutions instead of YNNPACK's (issue 14: their filter
    gradients were 6-8x slower) and, on 1 thread, the memory-minimising schedule, only where
    jaxlib is known to have the flags (an unknown XLA flag aborts the process), and never
    against flags the user set."""
    import importlib.metadata as md

    from embryo_bench.training import backend

    real = md.version
    monkeypatch.setattr(md, "version", lambda d: jaxlib if d == "jaxlib" else real(d))
    names = {  # the flags as XLA spells them, written here (not the module's constants)
        "YNN": "--xla_cpu_experimental_ynn_fusion_type=-individual_convolution",
        "MEM": "--xla_cpu_enable_concurrency_optimized_scheduler=false",
        "E": "--xla_cpu_multi_thread_eigen=false",
    }
    want = [names.get(f, f) for f in expected]
    assert backend.jax_xla_flags(threads, preset) == want
