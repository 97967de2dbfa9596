"""Benchmark: preprocessing throughput and training data-path efficiency (not a test).

1. Preprocessing: N synthetic 480x480 frames (default 3,064, the paper's selection) in the
   database layout are run through the workflow's own crop -> invert -> augment jobs
   (equalise + |p - 128|, 20 rotations, 64 px) by a real ``snakemake --cores W`` invocation,
   so per-job interpreter start-up and imports are paid as in a real run. Frame generation
   and indexing are not timed. Prints source frames/s and the wall time (target:
   all 3,064 in < 10 s on 2 cores, i.e. >= 306.4 frames/s, met or not) and a breakdown of the
   run's CPU time (Snakemake's planning, job start-up, PNG decoding, equalisation, rotation,
   resizing, .npz I/O). ``--baseline CHECKOUT`` pairs each run (``--preprocess-repeats``)
   with one of another checkout's workflow on the same frames, alternating which goes
   first, and compares their outputs pixel by pixel.
2. Training data path: :func:`embryo_bench.training.train.run_training` (the train rule's code:
shards
   loaded by :func:`embryo_bench.data.stages.load_dataset`, one ``fit`` with the test split scored
   after each epoch, training and scoring timed apart) on some of those shards, vs the same
   model fitted by :func:`embryo_bench.training.epochs.fit_epochs` on in-memory random arrays of the
   same shape and dtype in the same process. Both sides drop their first epoch (tracing) and
   compare steady-state images/s; ``--repeats`` pairs run in alternating order. Each side
   carries the evidence a run carries (calibration probes before and after, the machine
   sampled every second) and gets the stability verdict (:mod:`embryo_bench.reporting.stability`,
   the schema's default thresholds); the reported ratio is the median over every pair with
   its 95 % bootstrap interval, every flagged pair printed with its reasons, the clean pairs'
   median beside (target >= 0.95).

Usage: python benchmarks/bench_pipeline.py [--frames 3064] [--cores 2] [--shards 16]
       [--preprocess-repeats N] [--baseline CHECKOUT] [--skip-training]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
PROBE_SECONDS = 2  # each calibration probe, before and after each side (s)


#: The target: the paper's 3,064 frames through crop -> invert -> augment in under 10 s
#: on 2 cores, i.e. at least 306.4 source frames/s.
TARGET_FRAMES, TARGET_SECONDS, TARGET_CORES = 3064, 10.0, 2
TARGET_FPS = TARGET_FRAMES / TARGET_SECONDS


def _run_cpu(cmd: list[str], **kwargs) -> tuple[subprocess.CompletedProcess, float]:
    """``subprocess.run(cmd, capture_output=True, **kwargs)`` and the CPU seconds (user +
    system) it and every process it waited for used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _stage_run(repo: Path, work: Path, name: str, db: Path, cores: int, shards: int):
    """One ``snakemake --cores`` run of crop/invert/augment in ``repo``'s workflow on the
    selection in ``work/select``: a fresh output folder ``work/name``. Returns (wall s, CPU s
    of snakemake and all its jobs, augment shard paths)."""
    out = work / name
    (out / "select").mkdir(parents=True)
    shutil.copy(work / "select/selected.csv", out / "select/selected.csv")
    config = yaml.safe_load((repo / "config/config.yaml").read_text())
    config.update(outdir=str(out), on_missing_hardware="skip")
    # Only preprocessing runs: one host target, so no Docker daemon need answer the plan
    # (config/config.yaml's targets are all docker ones).
    host = {"name": "host", "runner": "host", "cpus": 1, "hourly_usd": 0.0}
    config["targets"] = [host]
    config.pop("sweeps", None)
    config.pop("cost", None)
    config["dataset"] = {"kind": "local", "path": str(db), "frame_size": 480}
    config["select"]["shards"] = shards
    (out / "config.yaml").write_text(yaml.safe_dump(config))
    targets = [str(out / f"augment/shard-{k}.npz") for k in range(shards)]
    cmd = [sys.executable, "-m", "snakemake", *targets, "-s", str(repo / "Snakefile")]
    cmd += ["--configfile", str(out / "config.yaml"), "--cores", str(cores)]
    cmd += ["--allowed-rules", "crop", "invert", "augment"]
    t = time.perf_counter()
    proc, cpu = _run_cpu(cmd, cwd=out, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"snakemake failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return wall, cpu, targets


def _scontrol_seconds() -> float | None:
    """Seconds ``scontrol show config`` takes here (None: no scontrol). The Slurm executor
    plugin (2.8) runs it whenever snakemake starts, if it is installed: with Slurm's tools
    present and no controller answering, that is about 9 s of every run's wall time."""
    if shutil.which("scontrol") is None:
        return None
    t = time.perf_counter()
    subprocess.run(["scontrol", "show", "config"], capture_output=True)
    return round(time.perf_counter() - t, 2)


def _difference(ours: list[str], theirs: list[str]) -> dict:
    """How the augment shards of two runs differ: images compared pixel by pixel."""
    a = np.concatenate([np.load(p)["images"] for p in ours]).astype(np.int16)
    b = np.concatenate([np.load(p)["images"] for p in theirs]).astype(np.int16)
    if a.shape != b.shape:
        return {"shapes": [list(a.shape), list(b.shape)]}
    diff = np.abs(a - b)
    return {
        "pixels": int(diff.size),
        "identical": bool((diff == 0).all()),
        "max_abs_diff": int(diff.max()),
        "mean_abs_diff": float(diff.mean()),
        "fraction_differing": float((diff > 0).mean()),
        "samples_differing": int((diff.reshape(len(diff), -1) > 0).any(axis=1).sum()),
    }


def _child_cpu(cmd: list[str], env: dict) -> float:
    """CPU seconds (user + system) of a subprocess that must succeed."""
    return _run_cpu(cmd, env=env, check=True)[1]


def _breakdown(work: Path, run: str, frames: int, shards: int, cores: int) -> dict:
    """Where the CPU time of a run goes, in CPU seconds for the whole run, estimated from one
    shard: Snakemake's planning (a dry run of the finished run: parsing, DAG, code hashes),
    each job's interpreter start-up and imports (what a job imports before its work, run in a
    fresh interpreter, times the jobs), and each step's work measured on shard 0 in this
    process, single-threaded, scaled to every frame."""
    from embryo_bench.data import preprocess
    from embryo_bench.io import load_arrays, save_arrays

    out = work / run
    targets = [str(out / f"augment/shard-{k}.npz") for k in range(shards)]
    cmd = [sys.executable, "-m", "snakemake", *targets, "-s", str(REPO / "Snakefile")]
    cmd += ["--configfile", str(out / "config.yaml"), "--cores", str(cores), "-n", "--quiet"]
    cmd += ["--allowed-rules", "crop", "invert", "augment"]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    cpu = {"snakemake_planning": _child_cpu(cmd, env)}
    # A job's environment: Snakemake sets these to the job's threads (1 here).
    env.update({v: "1" for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")})
    start = "import embryo_bench.cli, embryo_bench.data.stages"
    imports = {
        "crop": start,
        "invert": f"{start}, cv2",
        "augment": f"{start}; embryo_bench.data.preprocess._opencv_rotates_like_pillow()",
    }
    for stage, code in imports.items():
        once = min(_child_cpu([sys.executable, "-c", code], env) for _ in range(3))
        cpu[f"job_startup_{stage}"] = once * shards
    with open(out / "select/selected.csv", newline="") as fh:
        paths = [row["path"] for row in csv.DictReader(fh) if row["shard"] == "0"]
    scale = frames / len(paths)
    steps: dict[str, float] = {}

    def timed(step, fn, *args):
        t = time.process_time()
        result = fn(*args)
        steps[step] = steps.get(step, 0.0) + (time.process_time() - t) * scale
        return result

    tmp = work / "breakdown.npz"
    frames_ = timed("decode_png", lambda: [preprocess.read_frame(p, 480) for p in paths])
    crops = timed("crop", lambda: np.stack([preprocess.centre_crop(f, 2 / 3) for f in frames_]))
    timed("npz_write_read", lambda: (save_arrays(tmp, images=crops), load_arrays(tmp)))
    inv = timed("equalise_invert", lambda: np.stack([preprocess.equalize_invert(c) for c in crops]))
    timed("npz_write_read", lambda: (save_arrays(tmp, images=inv), load_arrays(tmp)))
    angles = preprocess.rotation_angles(18)
    small = timed("rotate_resize", preprocess.rotate_resize_many, inv, angles, 64)
    timed("npz_write_read", lambda: (save_arrays(tmp, images=small), load_arrays(tmp)))
    # rotate_resize split: the rotations alone, as the augment stage makes them (it rotates
    # 4 of 20 angles, the others are quarter turns of those).
    planes = [preprocess._to_planes(inv[i : i + 4]) for i in range(0, len(inv), 4)]
    bases = [a for a in angles if 0 < a < 90]
    t = time.process_time()
    for p in planes:
        preprocess._rotate_opencv(p, bases)
    warps = (time.process_time() - t) * scale
    cpu.update(steps)
    total = sum(cpu.values())
    return {
        "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
        "cpu_s_total": round(total, 1),
        "share": {k: f"{100 * v / total:.0f} %" for k, v in cpu.items()},
        "rotate_resize_of_which_warps_cpu_s": round(warps, 2),
        "note": "estimated CPU seconds for the whole run (see _breakdown); compare with "
        "cores x wall",
    }


def bench_preprocessing(
    frames: int,
    cores: int,
    shards: int,
    work: Path,
    repeats: int,
    baseline: Path | None,
    db: Path | None = None,
) -> dict:
    """Synthetic frames through the crop/invert/augment jobs of a real ``snakemake --cores``
    run, ``repeats`` times; with ``baseline`` (another checkout, e.g. the code before a
    change) each run is paired with one of that checkout's workflow on the same frames, in
    alternating order, and the outputs of the two are compared. ``db``: where the synthetic
    database is kept (generated there unless it holds one of enough frames)."""
    from embryo_bench.data.select import assign_shards
    from embryo_bench.data.sources import index_db
    from embryo_bench.data.synthetic import generate_db

    per_embryo = 40
    embryos = -(-frames // per_embryo)
    db = db or work / "db"
    t = time.perf_counter()
    if not (db / f"E{embryos - 1:02d}").is_dir():
        generate_db(db, embryos=embryos, frames_per_embryo=per_embryo, frame_size=480)
    gen_s = time.perf_counter() - t
    manifest, _ = index_db(db, 480)
    (work / "select").mkdir()
    assign_shards(manifest.iloc[:frames].reset_index(drop=True), shards).to_csv(
        work / "select/selected.csv", index=False
    )
    scontrol_s = _scontrol_seconds()
    walls, base_walls, pairs, difference, loads = [], [], [], None, []
    cpus: dict[str, list[float]] = {"this": [], "baseline": []}
    for i in range(max(repeats, 1)):
        sides = [("this", REPO)] + ([("baseline", baseline)] if baseline else [])
        wall, cpu = {}, {}
        for side, repo in sides if i % 2 == 0 else sides[::-1]:
            wall[side], cpu[side], targets = _stage_run(
                repo, work, f"{side}-{i}", db, cores, shards
            )
            # Other processes on the machine slow a run: the load average says how busy it was.
            loads.append(round(os.getloadavg()[0], 1))
            cpus[side].append(round(cpu[side], 1))
            print(f"  run {i + 1}/{repeats} {side}: {wall[side]:.2f} s, CPU {cpu[side]:.1f} s "
                  f"({cpu[side] / wall[side] / cores:.0%} of {cores} cores), "
                  f"load average {loads[-1]}", flush=True)  # fmt: skip
            if side == "this":
                ours = targets
            else:
                theirs = targets
        walls.append(wall["this"])
        if baseline:
            base_walls.append(wall["baseline"])
            pairs.append(round(wall["baseline"] / wall["this"], 2))
            if difference is None:
                difference = _difference(ours, theirs)
    samples = sum(len(np.load(p)["cells"]) for p in ours)
    wall = float(np.median(walls))
    result = {
        "frames": frames,
        "frame_size": 480,
        "cores": cores,
        "shards": shards,
        "jobs": 3 * shards,
        "samples_out": samples,
        "wall_s": round(wall, 2),
        "wall_s_runs": [round(w, 2) for w in walls],
        "cpu_s_runs": cpus["this"],
        "source_frames_per_s": round(frames / wall, 1),
        "target": f"{TARGET_FRAMES} frames in < {TARGET_SECONDS:.0f} s on {TARGET_CORES} cores "
        f"(>= {TARGET_FPS:.1f} source frames/s; median run)",
        "met": frames / wall >= TARGET_FPS,
        "generation_s_untimed": round(gen_s, 1),
        "load_average_after_each_run": loads,
        "scontrol_show_config_s": scontrol_s,
    }
    if scontrol_s is not None and scontrol_s > 1:
        result["scontrol_note"] = (
            f"'scontrol show config' took {scontrol_s} s: the Slurm executor plugin runs it at "
            "every snakemake start, so each run's wall time includes it (start the controller, "
            "or uninstall snakemake-executor-plugin-slurm where Slurm is not used)"
        )
    if cores != TARGET_CORES or frames != TARGET_FRAMES:
        result["target_note"] = (
            f"the target is for {TARGET_FRAMES} frames on {TARGET_CORES} cores; "
            f"this run: {frames} frames on {cores}"
        )
    if baseline:
        result["baseline"] = {
            "repo": str(baseline),
            "wall_s_runs": [round(w, 2) for w in base_walls],
            "cpu_s_runs": cpus["baseline"],
            "source_frames_per_s": round(frames / float(np.median(base_walls)), 1),
            "speedup_per_pair": pairs,
            "outputs_vs_baseline": difference,
        }
    result["breakdown"] = _breakdown(work, "this-0", frames, shards, cores)
    return result


def _pipeline_ips(work: Path, shard_files: list[str], threads: int, epochs: int, i: int):
    """Steady-state images/s of run_training (the train rule's code) on the shards."""
    from embryo_bench.data.stages import shard_settings
    from embryo_bench.planning.targets import target_from_entry
    from embryo_bench.training.train import run_training
    from embryo_bench.vocabulary.spec import INPUT_SHARDS, Preprocessing
    from embryo_bench.vocabulary.training_input import TrainingInput

    train = {"epochs": epochs, "learning_rate": 1e-4, "dropout": 0.5, "seed": 0,
             "accuracy_target": 0.85, "batch_size": 480, "repeats": 1,
             "probe_seconds": PROBE_SECONDS}  # fmt: skip
    target = target_from_entry({"name": "bench", "runner": "host", "cpus": threads}, train)
    # The settings the shards were made with (config/config.yaml's), as the train rule's are.
    made_with = shard_settings(shard_files[0])["preprocessing"]
    spec = target.spec(1, train, Preprocessing(**made_with))
    metrics = run_training(
        spec,
        TrainingInput(INPUT_SHARDS, tuple(shard_files)),
        {"synthetic": True, "sha256": "synthetic"},
        work / f"run-{i}",
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
    :func:`embryo_bench.training.train.run_training` does. Returns (images/s, first epoch s, verdict
    input shaped like metrics.json)."""
    import keras  # initialised, with the thread limits, by run_training

    from embryo_bench.recording.calibrate import efficiency, matmul_probe
    from embryo_bench.recording.telemetry import Measurement, ProcessSampler, interference
    from embryo_bench.training.epochs import fit_epochs
    from embryo_bench.workloads.paper import build_model, compile_model

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
    steps) hits both sides. Every pair counts (a flag is a warning, not a gate); the
    ratio reported is the median of every pair's ratio with its 95 % bootstrap interval
    (:func:`embryo_bench.reporting.compare.median_interval`), the flagged pairs (either side
    flagged by
    :func:`embryo_bench.reporting.stability.assess`) counted with why, the clean pairs' median
    beside."""
    import keras

    from embryo_bench.reporting.compare import median_interval
    from embryo_bench.reporting.stability import assess, thresholds

    limits = thresholds()
    shard_files = [str(work / f"this-0/augment/shard-{k}.npz") for k in range(shards)]
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
            "clean": all(v["clean"] for v in verdicts.values()),
            "flagged_because": {k: v["reasons"] for k, v in verdicts.items() if v["reasons"]},
        }
        pairs.append(pair)
        print(f"pair {i + 1}/{repeats}:", json.dumps(pair), flush=True)
    clean = [p["ratio"] for p in pairs if p["clean"]]
    med, low, high = median_interval([p["ratio"] for p in pairs])
    return {
        "train_images_per_epoch": n,
        "epochs": epochs,
        "threads": threads,
        "pairs": len(pairs),
        "pairs_flagged": len(pairs) - len(clean),
        "flagged_because": [p["flagged_because"] for p in pairs if not p["clean"]],
        "ratio": round(med, 3),
        "interval_95": [round(low, 3), round(high, 3)],
        "ratio_clean_pairs": round(float(np.median(clean)), 3) if clean else None,
        "target": ">= 0.95 (median of every pair)",
        "met": med >= 0.95,
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
    p.add_argument(
        "--preprocess-repeats", type=int, default=1, help="preprocessing runs (median reported)"
    )
    p.add_argument(
        "--baseline",
        type=Path,
        help="another checkout (e.g. the code before a change): each preprocessing run is "
        "paired with one of its workflow on the same frames, in alternating order, and the "
        "outputs compared",
    )
    p.add_argument(
        "--db", type=Path, help="keep the synthetic database here (reused when it is there)"
    )
    p.add_argument("--skip-training", action="store_true")
    a = p.parse_args()
    from embryo_bench.recording.hardware import cpu_model

    print(f"# host: {cpu_model()}, {cores} visible cores; data: SYNTHETIC frames", flush=True)
    with tempfile.TemporaryDirectory(prefix="embryo-bench-bench-") as tmp:
        work = Path(tmp)
        print(
            "preprocessing:",
            json.dumps(
                bench_preprocessing(
                    a.frames, a.cores, a.shards, work, a.preprocess_repeats, a.baseline, a.db
                )
            ),
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
