"""benchmarks/bench_peers.py: its order of runs, its summary, entries whose framework
is missing or which see no GPU, the plain JAX loop's network, a tiny run of the JAX entries
with TensorFlow hidden, and a tiny end-to-end run of every entry installed here."""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
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
    assert "peak GPU" not in text  # no row measured one (the CPU)
    runs[3]["peak_gpu_mib"] = 1234.0
    rows = bench.summarise(["a", "b"], runs[:4], 0.435e9, 50.0)
    assert rows[1]["peak_gpu_mib"] == 1234.0 and rows[0]["peak_gpu_mib"] is None
    text = bench.table(rows, "device gpu (H), precision mixed_bfloat16")
    assert text.splitlines()[0] == "device gpu (H), precision mixed_bfloat16"
    assert "peak GPU" in text and " 1234 MiB" in text


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
    monkeypatch.setitem(sys.modules, "optax", None)  # the jax entry needs optax too
    assert bench.run_entry("jax", args)["missing"] in ("jax", "optax")


def test_job_environment_keeps_cpu_runs_off_the_gpu(bench):
    """--device cpu hides every GPU from each entry's process (so a GPU machine's CPU numbers
    are its CPU's); --device gpu leaves them visible; the FLOPs count never needs one and runs
    on a Keras backend that is installed."""
    base = {"PATH": "/bin", "KERAS_BACKEND": "torch", "PYTHONPATH": "/x"}

    def env(job, device):
        args = argparse.Namespace(threads=3, device=device)
        return bench.job_env(job, args, base)

    cpu = env("torch", "cpu")
    assert (cpu["CUDA_VISIBLE_DEVICES"], cpu["JAX_PLATFORMS"]) == ("", "cpu")
    assert cpu["OMP_NUM_THREADS"] == "3" and "KERAS_BACKEND" not in cpu
    assert (
        cpu["PYTHONPATH"].startswith(str(SCRIPT.parents[1] / "src")) and "/x" in cpu["PYTHONPATH"]
    )
    gpu = env("keras-jax", "gpu")
    assert "CUDA_VISIBLE_DEVICES" not in gpu and "JAX_PLATFORMS" not in gpu
    flops = env("flops", "gpu")
    assert flops["CUDA_VISIBLE_DEVICES"] == "" and flops["JAX_PLATFORMS"] == "cpu"
    assert flops["KERAS_BACKEND"] == bench.flops_backend()


@pytest.mark.parametrize(("entry", "framework"), [("jax", "jax"), ("torch", "torch")])
def test_gpu_entry_without_a_gpu_says_so(bench, monkeypatch, entry, framework):
    """--device gpu where the framework sees no GPU (hidden here, so on any machine): the entry
    reports why instead of training on the CPU."""
    if bench.missing_module(entry):
        pytest.skip(f"{bench.missing_module(entry)} is not installed")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    monkeypatch.setenv("JAX_PLATFORMS", "cpu")
    args = argparse.Namespace(
        threads=1, steps=1, epochs=1, batch=2, seed=0, sgemm_seconds=0.1, timeout=300
    )
    args.device, args.precision = "gpu", "float32"
    run = bench.spawn(entry, args)
    assert run["status"].startswith(f"no GPU visible to {framework}"), run
    assert bench.final(run["status"])  # its other repeats are not run
    rows = bench.summarise([entry], [run], 0.435e9, None)
    assert rows[0]["status"] == run["status"] and "images_per_s" not in rows[0]


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
def test_plain_jax_network_and_its_bfloat16_forward(bench):
    """The jax entry's network: the paper CNN's parameter count and Keras's Glorot-uniform
    bounds; mixed_bfloat16 computes in bfloat16 yet gives float32 logits, float32 gradients
    for the float32 parameters, and a loss within bfloat16's rounding of float32's."""
    if bench.missing_module("jax"):
        pytest.skip(f"{bench.missing_module('jax')} is not installed")
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    params = bench.jax_paper_cnn(jax.random.key(0))
    assert sum(a.size for a in jax.tree.leaves(params)) == bench.PARAMETERS
    assert all(a.dtype == jnp.float32 for a in jax.tree.leaves(params))
    limit = np.sqrt(6 / (25 * 32 + 25 * 64))  # conv2's fans
    assert limit * 0.99 < float(jnp.abs(params["w2"]).max()) <= limit
    assert not params["b3"].any()
    x, y = bench.make_data(1, 4, 0)[:2]
    key = jax.random.key(1)

    def loss(p, dtype):
        logits = bench.jax_forward(p, x, key, dtype)
        assert logits.dtype == jnp.float32 and logits.shape == (4, bench.CLASSES)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    # jitted: one compilation each, where op-by-op dispatch of the gradient took half a minute
    value_and_grad = jax.jit(jax.value_and_grad(loss), static_argnums=1)
    full, grads = value_and_grad(params, jnp.float32)
    mixed, mixed_grads = value_and_grad(params, jnp.bfloat16)
    assert all(g.dtype == jnp.float32 for g in jax.tree.leaves(mixed_grads))
    assert float(mixed) == pytest.approx(float(full), rel=0.05) and float(mixed) != float(full)
    assert float(jnp.abs(mixed_grads["w4"]).sum()) > 0


HIDE_TENSORFLOW = """
import importlib.machinery, os, sys

_find_spec = importlib.machinery.PathFinder.find_spec.__func__


def _hidden(cls, fullname, path=None, target=None):
    # TensorFlow as on a machine without it: not found, so not in sys.modules either (Keras
    # asks whether 'tensorflow' in sys.modules); imports are logged, find_spec probes too.
    if fullname.split(".")[0] == "tensorflow":
        frame, kind = sys._getframe(1), "import"
        while frame is not None:
            if frame.f_code.co_filename == "<frozen importlib.util>":
                kind = "probe"
                break
            frame = frame.f_back
        with open(os.environ["HIDDEN_TF_LOG"], "a") as fh:
            fh.write(f"{kind} {fullname} {sys.argv[1:3]}\\n")
        return None
    return _find_spec(cls, fullname, path, target)


importlib.machinery.PathFinder.find_spec = classmethod(_hidden)
"""


@pytest.mark.ci_step("trainings", "trains for a minute or more on 2 busy cores")
def test_jax_entries_run_without_tensorflow(bench, tmp_path):
    """The plain JAX loop and our trainer on Keras's JAX backend, one timed step of 8 images
    after one excluded, on the CPU, in an interpreter that cannot see TensorFlow (as the GPU
    machine's): both give a positive speed on the paper model, on the CPU, and nothing
    imports TensorFlow."""
    for entry in ("jax", "keras-jax"):
        if bench.missing_module(entry):
            pytest.skip(f"{bench.missing_module(entry)} is not installed (entry {entry})")
    (tmp_path / "hide" / "sitecustomize.py").parent.mkdir()
    (tmp_path / "hide" / "sitecustomize.py").write_text(HIDE_TENSORFLOW)
    log = tmp_path / "tensorflow.log"
    env = {**os.environ, "HIDDEN_TF_LOG": str(log)}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(tmp_path / "hide"), env.get("PYTHONPATH", "")) if p
    )
    # The hiding itself works: this interpreter finds no TensorFlow and logs the look-up.
    probe = "import importlib.util; print(importlib.util.find_spec('tensorflow'))"
    hidden = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60
    )
    assert hidden.stdout.strip() == "None" and not hidden.stderr.strip(), hidden
    assert log.read_text().split() == ["probe", "tensorflow", "[]"]
    log.unlink()
    cmd = [sys.executable, str(SCRIPT), "--entries", "jax,keras-jax", "--steps", "1"]
    cmd += ["--epochs", "1", "--batch", "8", "--repeats", "1", "--sgemm-seconds", "0.1"]
    cmd += ["--json", str(tmp_path / "peers.json")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads((tmp_path / "peers.json").read_text())
    rows = {r["entry"]: r for r in record["summary"]}
    assert sorted(rows) == ["jax", "keras-jax"]
    for entry, row in rows.items():
        assert row["status"] == "ok", row
        assert math.isfinite(row["images_per_s"]) and row["images_per_s"] > 0, row
        assert row["parameters"] == bench.PARAMETERS, entry
        assert row["placement"]["kind"] == "cpu", row
    runs = {r["entry"]: r for r in record["runs"]}
    assert runs["keras-jax"]["dtype_policy"] == "float32"
    assert runs["jax"]["precision"] == "float32" and runs["jax"]["device"] == "cpu"
    assert record["device"]["kind"] == "cpu" and record["sgemm"]["mean_gflops"] > 0
    assert record["complete"] is True  # the last write, over the one after each run
    imports = (
        [line for line in log.read_text().splitlines() if line.startswith("import")]
        if log.exists()
        else []
    )
    assert not imports, imports
    assert "device cpu" in proc.stdout and "precision float32" in proc.stdout


@pytest.mark.ci_step(
    "long-workflows", "every installed training entry timed (130 s on 2 cores shared with others)"
)
@pytest.mark.all_cores  # its two halves each take a core of their own
@pytest.mark.slow
def test_tiny_run_of_every_installed_entry(bench, tmp_path):
    """Every entry, one timed step after one excluded step of 8 images: the installed ones
    give positive, finite numbers on the paper model, the others say "not installed". Two
    benchmark runs side by side (TensorFlow's entries; the others), each on a core of its own
    where there are two, to halve the wait."""

    allowed = sorted(os.sched_getaffinity(0))
    halves = [
        ("embryo-bench,embryo-bench-xla,tf-original", allowed[0]),
        ("torch,jax,keras-jax,keras-torch", allowed[-1]),
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
        "jax": not bench.missing_module("jax"),
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
    """Keras on JAX gets XLA's own convolutions instead of YNNPACK's (their filter
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
