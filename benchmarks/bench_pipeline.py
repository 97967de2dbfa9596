"""Benchmark: preprocessing throughput and training-data-path efficiency (not a test).

1. Preprocessing: N synthetic 480x480 frames (default 3,064, the paper's selection) in the
   database layout go through the pipeline's stage functions crop -> invert (equalise +
   |p - 128|) -> augment (20 rotations, 64 px), shard by shard on ``--workers`` processes, as
   ``snakemake --cores W`` runs the per-shard jobs. Prints source frames/s and the total wall
   time (target: all 3,064 in < 60 s on 2 cores). Frame generation is not timed.
2. Training data path: the paper CNN trained with the pipeline's own epoch call
   (:func:`embryo_bench.train.fit_epoch`) on the augmented arrays loaded by
   :func:`embryo_bench.stages.load_dataset`, vs the same model fitted on in-memory random
   arrays of the same shape and dtype in the same process. Prints images/s of both and their
   ratio (target >= 0.95).

Usage: python benchmarks/bench_pipeline.py [--frames 3064] [--workers 2] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np


def _shard_job(args):
    from embryo_bench import stages

    selection, shard, work = args
    crop, inv, aug = (f"{work}/{s}/shard-{shard}.npz" for s in ("crop", "invert", "augment"))
    stages.crop_shard(selection, shard, 480, 2 / 3, crop)
    stages.invert_shard(crop, 128, inv)
    return stages.augment_shard(inv, 18, 64, aug)


def bench_preprocessing(frames: int, workers: int, shards: int, work: Path) -> dict:
    from embryo_bench.select import assign_shards
    from embryo_bench.sources import index_db
    from embryo_bench.synthetic import generate_db

    per_embryo = 40
    embryos = -(-frames // per_embryo)
    t = time.perf_counter()
    generate_db(work / "db", embryos=embryos, frames_per_embryo=per_embryo, frame_size=480)
    gen_s = time.perf_counter() - t
    manifest, _ = index_db(work / "db", 480)
    selection = assign_shards(manifest.iloc[:frames].reset_index(drop=True), shards)
    sel_path = work / "selected.csv"
    selection.to_csv(sel_path, index=False)
    t = time.perf_counter()
    with ProcessPoolExecutor(workers) as pool:
        samples = sum(pool.map(_shard_job, [(sel_path, k, work) for k in range(shards)]))
    wall = time.perf_counter() - t
    return {
        "frames": frames,
        "frame_size": 480,
        "workers": workers,
        "shards": shards,
        "samples_out": samples,
        "wall_s": round(wall, 2),
        "source_frames_per_s": round(frames / wall, 1),
        "target": "all frames in < 60 s",
        "met": wall < 60,
        "generation_s_untimed": round(gen_s, 1),
    }


def bench_training(work: Path, shards: int, threads: int, images: int, epochs: int) -> dict:
    from embryo_bench.backend import limit_threads

    limit_threads(threads)
    import keras

    from embryo_bench.model import build_model, compile_model
    from embryo_bench.stages import load_dataset
    from embryo_bench.train import fit_epoch

    data = load_dataset([work / f"augment/shard-{k}.npz" for k in range(shards)])
    x, y = data["x_train"][:images], data["y_train"][:images]
    rng = np.random.default_rng(0)
    x_rand = rng.integers(0, 129, x.shape, dtype=np.uint8)
    y_rand = rng.integers(0, 4, y.shape).astype(np.int32)
    results = {}
    # Alternate the two so drift in machine speed affects both alike.
    models = {}
    for name in ("pipeline", "random"):
        keras.utils.set_random_seed(0)
        models[name] = compile_model(build_model(64))
        fit_epoch(models[name], x[:960], y[:960], 480)  # warm-up: tracing, allocation
        results[name] = []
    for _ in range(epochs):
        results["pipeline"].append(fit_epoch(models["pipeline"], x, y, 480)[0])
        results["random"].append(fit_epoch(models["random"], x_rand, y_rand, 480)[0])
    ips = {k: len(x) / float(np.median(v)) for k, v in results.items()}
    return {
        "train_images_per_epoch": len(x),
        "epochs_timed": epochs,
        "threads": threads,
        "pipeline_images_per_s": round(ips["pipeline"], 1),
        "random_arrays_images_per_s": round(ips["random"], 1),
        "ratio": round(ips["pipeline"] / ips["random"], 3),
        "target": ">= 0.95",
        "met": ips["pipeline"] / ips["random"] >= 0.95,
        "keras_backend": keras.backend.backend(),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--frames", type=int, default=3064)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    p.add_argument("--train-images", type=int, default=9600)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--skip-training", action="store_true")
    a = p.parse_args()
    from embryo_bench.provenance import cpu_model, visible_cores

    print(f"# host: {cpu_model()}, {visible_cores()} visible cores; data: SYNTHETIC frames")
    with tempfile.TemporaryDirectory(prefix="embryo-bench-bench-") as tmp:
        work = Path(tmp)
        pre = bench_preprocessing(a.frames, a.workers, a.shards, work)
        print("preprocessing:", json.dumps(pre))
        if not a.skip_training:
            tr = bench_training(work, a.shards, a.threads, a.train_images, a.epochs)
            print("training data path:", json.dumps(tr))


if __name__ == "__main__":
    main()
