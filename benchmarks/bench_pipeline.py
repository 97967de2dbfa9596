"""Benchmark: preprocessing throughput and training data-path efficiency (not a test).

1. Preprocessing: N synthetic 480x480 frames (default 3,064, the paper's selection) in the
   database layout are run through the workflow's own crop -> invert -> augment jobs
   (equalise + |p - 128|, 20 rotations, 64 px) by a real ``snakemake --cores W`` invocation,
   so per-job interpreter start-up and imports are paid as in a real run. Frame generation
   and indexing are not timed. Prints source frames/s and the wall time (target: all 3,064
   in < 60 s on 2 cores).
2. Training data path: :func:`embryo_bench.train.run_training` (the train rule's code: shards
   loaded by :func:`embryo_bench.stages.load_dataset`, one ``fit`` with the test split scored
   after each epoch, training and scoring timed apart) on some of those shards, vs the same
   model fitted by :func:`embryo_bench.train.fit_epochs` on in-memory random arrays of the
   same shape and dtype in the same process. Both sides drop their first epoch (tracing) and
   compare steady-state images/s; ``--repeats`` pairs run in alternating order. Each side
   carries the evidence a run carries (calibration probes before and after, the machine
   sampled every second) and gets the stability verdict (:mod:`embryo_bench.stability`,
   the schema's default thresholds); the reported ratio is the median over pairs whose two
   sides are both stable, and every dropped pair is printed with its reasons (target >= 0.95).

Usage: python benchmarks/bench_pipeline.py [--frames 3064] [--cores 2] [--shards 16]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
PROBE_SECONDS = 2  # each calibration probe, before and after each side (s)


def bench_preprocessing(frames: int, cores: int, shards: int, work: Path) -> dict:
    from embryo_bench.select import assign_shards
    from embryo_bench.sources import index_db
    from embryo_bench.synthetic import generate_db

    per_embryo = 40
    t = time.perf_counter()
    generate_db(
        work / "db", embryos=-(-frames // per_embryo), frames_per_embryo=per_embryo, frame_size=480
    )
    gen_s = time.perf_counter() - t
    manifest, _ = index_db(work / "db", 480)
    out = work / "out"
    (out / "select").mkdir(parents=True)
    assign_shards(manifest.iloc[:frames].reset_index(drop=True), shards).to_csv(
        out / "select/selected.csv", index=False
    )
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config.update(outdir=str(out), on_missing_hardware="skip")
    config["dataset"] = {"kind": "local", "path": str(work / "db"), "frame_size": 480}
    config["select"]["shards"] = shards
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [str(out / f"augment/shard-{k}.npz") for k in range(shards)]
    cmd = [sys.executable, "-m", "snakemake", *targets, "-s", str(REPO / "Snakefile")]
    cmd += ["--configfile", str(work / "config.yaml"), "--cores", str(cores)]
    cmd += ["--allowed-rules", "crop", "invert", "augment", "--quiet", "all"]
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    samples = sum(len(np.load(p)["cells"]) for p in targets)
    return {
        "frames": frames,
        "frame_size": 480,
        "cores": cores,
        "shards": shards,
        "jobs": 3 * shards,
        "samples_out": samples,
        "wall_s": round(wall, 2),
        "source_frames_per_s": round(frames / wall, 1),
        "target": f"{frames} frames in < 60 s",
        "met": wall < 60,
        "generation_s_untimed": round(gen_s, 1),
    }


def _pipeline_ips(work: Path, shard_files: list[str], threads: int, epochs: int, i: int):
    """Steady-state images/s of run_training (the train rule's code) on the shards."""
    from embryo_bench.plan import target_from_entry
    from embryo_bench.spec import Preprocessing
    from embryo_bench.stages import shard_settings
    from embryo_bench.train import run_training

    train = {"epochs": epochs, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0,
             "accuracy_target": 0.85, "batch_size": 480, "repeats": 1,
             "probe_seconds": PROBE_SECONDS}  # fmt: skip
    target = target_from_entry({"name": "bench", "runner": "host", "cpus": threads}, train)
    # The settings the shards were made with (config/config.yaml's), as the train rule's are.
    made_with = shard_settings(shard_files[0])["preprocessing"]
    spec = target.spec(1, train, Preprocessing(**made_with))
    metrics = run_training(
        spec, shard_files, {"synthetic": True, "sha256": "synthetic"}, work / f"run-{i}"
    )
    return (
        metrics["mean_images_per_s"],
        metrics["first_epoch_seconds"],
        metrics["n_train"],
        metrics,
    )


def _random_ips(n: int, epochs: int, threads: int, probe_seconds: float):
    """Steady-state images/s of the same model on in-memory random arrays (same shape), with
    the run's evidence: probes before and after and the machine sampled around them, as
    :func:`embryo_bench.train.run_training` does. Returns (images/s, first epoch s, verdict
    input shaped like metrics.json)."""
    import keras  # initialised, with the thread limits, by run_training

    from embryo_bench.calibrate import efficiency, matmul_probe
    from embryo_bench.model import build_model, compile_model
    from embryo_bench.telemetry import Measurement, ProcessSampler, interference
    from embryo_bench.train import fit_epochs

    rng = np.random.default_rng(0)
    x = rng.integers(0, 129, (n, 64, 64, 1), dtype=np.uint8)
    y = rng.integers(0, 4, n).astype(np.int32)
    keras.utils.set_random_seed(0)
    model = compile_model(build_model(64))
    cores = sorted(os.sched_getaffinity(0))  # pinned by run_training
    with Measurement(ProcessSampler(float(threads), [], cores)) as measurement:
        before = matmul_probe(probe_seconds)
        rows = fit_epochs(model, (x, y), (x[:480], y[:480]), batch_size=480, epochs=epochs)
        after = matmul_probe(probe_seconds)
    seconds = [r["epoch_seconds"] for r in rows]
    evidence = {
        "calibration": {"before": before, "after": after},
        "flops": efficiency(0, 0.0, before, after),
        "telemetry": {"interference": interference(measurement.frame(), len(cores))},
    }
    return n / float(np.mean(seconds[1:])), seconds[0], evidence


def bench_training(work: Path, shards: int, threads: int, epochs: int, repeats: int) -> dict:
    """Pipeline vs random-array throughput, ``repeats`` pairs in alternating order (ABBA...),
    so that a change in host speed during the benchmark (this project's VMs change speed in
    steps) hits both sides. A pair counts only when both sides are stable
    (:func:`embryo_bench.stability.assess`); the ratio reported is the median of the counted
    pairs' ratios (None when no pair is stable)."""
    import keras

    from embryo_bench.stability import assess, thresholds

    limits = thresholds()
    shard_files = [str(work / f"out/augment/shard-{k}.npz") for k in range(shards)]
    pairs = []
    n = None
    for i in range(repeats):
        if i % 2 == 0 or n is None:
            pipe, pipe_first, n, pipe_metrics = _pipeline_ips(work, shard_files, threads, epochs, i)
            rand, rand_first, rand_metrics = _random_ips(n, epochs, threads, PROBE_SECONDS)
        else:
            rand, rand_first, rand_metrics = _random_ips(n, epochs, threads, PROBE_SECONDS)
            pipe, pipe_first, n, pipe_metrics = _pipeline_ips(work, shard_files, threads, epochs, i)
        verdicts = {
            "pipeline": assess(pipe_metrics, limits),
            "random": assess(rand_metrics, limits),
        }
        pair = {
            "order": "pipeline first" if i % 2 == 0 else "random first",
            "pipeline_images_per_s": round(pipe, 1),
            "random_arrays_images_per_s": round(rand, 1),
            "pipeline_first_epoch_s": round(pipe_first, 2),
            "random_first_epoch_s": round(rand_first, 2),
            "ratio": round(pipe / rand, 3),
            "stable": all(v["stable"] for v in verdicts.values()),
            "unstable_because": {k: v["reasons"] for k, v in verdicts.items() if v["reasons"]},
        }
        pairs.append(pair)
        print(f"pair {i + 1}/{repeats}:", json.dumps(pair), flush=True)
    kept = [p["ratio"] for p in pairs if p["stable"]]
    ratio = round(float(np.median(kept)), 3) if kept else None
    return {
        "train_images_per_epoch": n,
        "epochs": epochs,
        "threads": threads,
        "pairs_stable": len(kept),
        "pairs_dropped": len(pairs) - len(kept),
        "dropped_because": [p["unstable_because"] for p in pairs if not p["stable"]],
        "ratio": ratio,
        "ratio_all_pairs": round(float(np.median([p["ratio"] for p in pairs])), 3),
        "target": ">= 0.95 (median of the stable pairs)",
        "met": ratio is not None and ratio >= 0.95,
        "stability_thresholds": limits,
        "keras_backend": keras.backend.backend(),
    }


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=3064)
    p.add_argument("--cores", type=int, default=cores, help="snakemake --cores")
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--threads", type=int, default=cores, help="training threads")
    p.add_argument(
        "--train-shards",
        type=int,
        default=3,
        help="augmented shards used for the training comparison",
    )
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument(
        "--repeats", type=int, default=3, help="pipeline/random pairs, in alternating order"
    )
    p.add_argument("--skip-training", action="store_true")
    a = p.parse_args()
    from embryo_bench.hardware import cpu_model

    print(f"# host: {cpu_model()}, {cores} visible cores; data: SYNTHETIC frames", flush=True)
    with tempfile.TemporaryDirectory(prefix="embryo-bench-bench-") as tmp:
        work = Path(tmp)
        print(
            "preprocessing:",
            json.dumps(bench_preprocessing(a.frames, a.cores, a.shards, work)),
            flush=True,
        )
        if not a.skip_training:
            print(
                "training data path:",
                json.dumps(bench_training(work, a.train_shards, a.threads, a.epochs, a.repeats)),
                flush=True,
            )


if __name__ == "__main__":
    main()
