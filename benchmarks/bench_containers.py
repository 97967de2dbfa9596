"""Benchmark: container overhead and CPU-quota scaling of the docker runner (not a test).

Same data (synthetic frames through the pipeline's own stage functions), same model, same
settings, one training process each: the host runner (`embryo-bench train`, pinned to N
cores, N threads) against the docker runner (the cpu image, `nano_cpus` = N, N threads).
Prints steady-state training throughput (images/s, epochs 2..E) of each, the container/host
ratio at equal cpus (target >= 0.97), and the container's 2-cpu/1-cpu scaling. Runs are
interleaved (host, container, host, container, ...) so drift in the machine's speed hits
both alike; each configuration runs --repeats times. Every run carries its evidence
(calibration probes, the machine sampled beside it) and gets the stability verdict
(:mod:`embryo_bench.reporting.stability`, the schema's default thresholds). A flag is a warning,
not a
gate: a ratio is the median over every pair (a repeat's two runs) with its 95 %
bootstrap interval (:func:`embryo_bench.reporting.compare.median_interval`), the flagged pairs are
counted and printed with why, and the median over the clean pairs alone is given beside.

Needs a Docker daemon and a built cpu image (e.g. after
`snakemake --cores all --configfile config/offline.yaml`: results/offline/images/cpu.json).

Usage: python benchmarks/bench_containers.py [--image-record PATH] [--epochs 4] [--repeats 2]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN = {"learning_rate": 1e-4, "dropout": 0.5, "seed": 0, "accuracy_target": 0.85,
         "batch_size": 480, "repeats": 1, "probe_seconds": 2}  # fmt: skip


def make_shards(work: Path, embryos: int) -> tuple[list[str], str]:
    from embryo_bench.data import stages
    from embryo_bench.data.select import assign_shards
    from embryo_bench.data.sources import index_db
    from embryo_bench.data.synthetic import generate_db
    from embryo_bench.io import write_json

    generate_db(work / "db", embryos=embryos, frames_per_embryo=40, frame_size=96)
    manifest, _ = index_db(work / "db", 96)
    sel = work / "selected.csv"
    assign_shards(manifest, 2).to_csv(sel, index=False)
    shards = []
    for k in range(2):
        stages.crop_shard(sel, k, 96, 2 / 3, work / f"c{k}.npz")
        stages.invert_shard(work / f"c{k}.npz", 128, work / f"i{k}.npz")
        stages.augment_shard(work / f"i{k}.npz", 18, 64, work / f"a{k}.npz")
        shards.append(str(work / f"a{k}.npz"))
    write_json(work / "source.json", {"synthetic": True, "sha256": "synthetic"})
    return shards, str(work / "source.json")


def train(runner: str, cpus: int, shards, source, out: Path, epochs: int, image: str) -> dict:
    """One training run through the CLI; returns its metrics.json."""
    from embryo_bench.planning.targets import target_from_entry
    from embryo_bench.vocabulary.spec import Preprocessing

    entry = {"name": f"{runner}-{cpus}cpu", "runner": runner, "cpus": cpus}
    if runner == "docker":
        entry["memory"] = "6g"
    train = {**TRAIN, "epochs": epochs}
    spec = target_from_entry(entry, train).spec(
        1,
        train,
        Preprocessing(
            frame_size=96, crop_fraction=2 / 3, invert_centre=128, rotation_step=18.0, image_size=64
        ),
    )
    spec.write(out.parent / f"{out.name}.run.json")
    cmd = [
        sys.executable,
        "-m",
        "embryo_bench.cli",
        "train",
        "--spec",
        str(out.parent / f"{out.name}.run.json"),
        "--shards",
        *shards,
        "--out-dir",
        str(out),
        "--source-info",
        source,
    ]
    if runner == "docker":
        cmd += ["--image-record", image]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{runner} {cpus} cpus failed:\n{proc.stderr[-3000:]}")
    return json.loads((out / "metrics.json").read_text())


def ratio(runs: dict, top: str, bottom: str, repeats: int) -> dict:
    """``top``/``bottom`` throughput per repeat: the median over every pair with its 95 %
    bootstrap interval, the flagged pairs with why, and the clean pairs' median beside."""
    from embryo_bench.reporting.compare import median_interval

    every, clean, flagged = [], [], []
    for rep in range(repeats):
        a, b = runs[top][rep], runs[bottom][rep]
        every.append(a["images_per_s"] / b["images_per_s"])
        if a["clean"] and b["clean"]:
            clean.append(every[-1])
        else:
            why = {k: r["reasons"] for k, r in ((top, a), (bottom, b)) if r["reasons"]}
            flagged.append({"repeat": rep + 1, "flagged_because": why})
    med, low, high = median_interval(every)
    return {
        "ratio": round(med, 3),
        "interval_95": [round(low, 3), round(high, 3)],
        "pairs": len(every),
        "pairs_flagged": flagged,
        "ratio_clean_pairs": round(statistics.median(clean), 3) if clean else None,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--image-record", default="results/offline/images/cpu.json")
    p.add_argument("--embryos", type=int, default=12, help="40 frames each, x20 rotations")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--repeats", type=int, default=2)
    a = p.parse_args()
    from embryo_bench.recording.hardware import cpu_model
    from embryo_bench.reporting.stability import assess, thresholds
    from embryo_bench.runners.docker_api import docker_client

    client = docker_client()
    image = json.loads(Path(a.image_record).read_text())
    print(
        f"# host: {cpu_model()}, daemon {client.version()['Version']}, image {image['tag']} "
        f"({image['image_id'][:19]}); data: SYNTHETIC frames",
        flush=True,
    )
    limits = thresholds()
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="embryo-bench-bench-") as tmp:
        work = Path(tmp)
        shards, source = make_shards(work, a.embryos)
        plan = [("host", 1), ("docker", 1), ("host", 2), ("docker", 2)]
        for rep in range(a.repeats):
            for runner, cpus in plan:
                metrics = train(
                    runner,
                    cpus,
                    shards,
                    source,
                    work / f"{runner}{cpus}-{rep}",
                    a.epochs,
                    a.image_record,
                )
                verdict = assess(metrics, limits)
                run = {"images_per_s": metrics["mean_images_per_s"], **verdict}
                runs.setdefault(f"{runner}_{cpus}cpu", []).append(run)
                state = "clean" if verdict["clean"] else "FLAGGED: " + "; ".join(verdict["reasons"])
                print(
                    f"run {rep + 1}/{a.repeats} {runner} {cpus} cpu: "
                    f"{run['images_per_s']:.1f} images/s ({state})",
                    flush=True,
                )
    summary = {
        "images_per_s_median": {
            k: round(statistics.median(r["images_per_s"] for r in v), 1) for k, v in runs.items()
        },
        "runs_flagged": {k: sum(not r["clean"] for r in v) for k, v in runs.items()},
        "container_over_host_1cpu": ratio(runs, "docker_1cpu", "host_1cpu", a.repeats),
        "container_over_host_2cpu": ratio(runs, "docker_2cpu", "host_2cpu", a.repeats),
        "target": ">= 0.97 (median over every pair)",
        "container_2cpu_over_1cpu": ratio(runs, "docker_2cpu", "docker_1cpu", a.repeats),
        "host_2cpu_over_1cpu": ratio(runs, "host_2cpu", "host_1cpu", a.repeats),
        "epochs": a.epochs,
        "repeats": a.repeats,
        "stability_thresholds": limits,
    }
    print("summary:", json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
