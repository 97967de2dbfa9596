"""Benchmark: the catalog's workloads on one machine, through embryo-bench's own
commands, without Snakemake: for a machine that has Python and Keras but no workflow tools
(a lent GPU machine, say). Not a test.

For each workload: its synthetic arrays (``embryo-bench workload-data``, the dataset's shape
and class count, ``--train`` / ``--test`` samples), then ``embryo-bench train`` of the run the
plan makes for one host target of ``--cpus`` cores, ``--gpus`` GPUs and ``--backend``, each
run in a fresh process, ``--repeats`` times in interleaved order (ABC ABC ...). Printed per
workload: steady-state images/s (the training images of epochs 2.. over their training
seconds, the first epoch with its compilation left out), median over repeats with the min
and max, and the parameter count. Accuracy is meaningless (synthetic data); speed is valid.

Usage:
    python benchmarks/bench_workloads.py --backend jax --gpus 1 --cpus 16 \\
        --workloads mnist-mlp,imdb-bilstm --train 4096 --test 512 --epochs 3 --repeats 2 \\
        [--json out.json] [--work DIR]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from embryo_bench.planning.plan import Plan  # noqa: E402 (the checkout's package, put first above)


def plan_for(args) -> Plan:
    """The plan of config/offline.yaml with one host target and the asked workloads."""
    config = yaml.safe_load((REPO / "config" / "offline.yaml").read_text())
    config = copy.deepcopy(config) | {"sweeps": [], "hardware_check": "none"}
    config["compare"] = {"order": "alternate"}
    config["cost"] = {"base_target": ""}
    config["train"] |= {"epochs": args.epochs, "probe_seconds": 0, "repeats": args.repeats}
    target = {"name": "bench", "runner": "host", "cpus": args.cpus, "gpus": args.gpus,
              "backend": args.backend, "memory": "64g"}  # fmt: skip
    config["targets"] = [target]
    config["workloads"] = [
        {"name": w, "data": "synthetic", "train_samples": args.train, "test_samples": args.test,
         "epochs": args.epochs, **({"batch_size": args.batch} if args.batch else {})}
        for w in args.workloads.split(",")
    ]  # fmt: skip
    return Plan.from_config(config, probe=lambda t: None)


def cli(*argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}:{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "embryo_bench.cli", *argv], env=env,
                          capture_output=True, text=True)  # fmt: skip


def steady_images_per_s(run: Path) -> float:
    """Training images of epochs 2.. over their training seconds (images/s)."""
    import pandas as pd

    h = pd.read_csv(run / "history.csv")
    m = json.loads((run / "metrics.json").read_text())
    later = h[h["epoch"] > 1]
    return m["images_per_epoch"] * len(later) / later["epoch_seconds"].sum()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="tensorflow")
    p.add_argument("--cpus", type=int, default=1)
    p.add_argument("--gpus", type=int, default=0)
    p.add_argument("--workloads", required=True, help="catalog names, comma-separated")
    p.add_argument("--train", type=int, default=2048)
    p.add_argument("--test", type=int, default=256)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=0, help="batch size (default: the study's)")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--work", default="", help="folder for arrays and runs (default: a temp one)")
    p.add_argument("--json", default="")
    args = p.parse_args()
    plan = plan_for(args)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-workloads-"))
    results: dict[str, dict] = {}
    for name in plan.workloads:
        d = work / name
        d.mkdir(parents=True, exist_ok=True)
        proc = cli("workload-data", "--workload", name, "--data",
                   json.dumps(plan.data_params(name)), "--out", str(d / "arrays.npz"),
                   "--info", str(d / "info.json"))  # fmt: skip
        if proc.returncode:
            results[name] = {"error": proc.stderr.strip().splitlines()[-1]}
    for w, t, k in plan.all_runs:
        if "error" in results.get(w, {}):
            continue
        d = work / w
        spec = plan.spec(t, k, w)
        spec.write(d / f"run-{k}.json")
        run = d / f"repeat-{k}"
        proc = cli("train", "--spec", str(d / f"run-{k}.json"), "--arrays", str(d / "arrays.npz"),
                   "--source-info", str(d / "info.json"), "--out-dir", str(run))  # fmt: skip
        entry = results.setdefault(w, {"images_per_s": []})
        if proc.returncode:
            entry["error"] = proc.stderr.strip().splitlines()[-1]
            continue
        entry["images_per_s"].append(steady_images_per_s(run))
        entry["parameters"] = json.loads((run / "metrics.json").read_text())["parameter_count"]
        entry["batch_size"] = spec.batch_size
        print(f"{w} repeat {k}: {entry['images_per_s'][-1]:.1f} images/s", flush=True)
    print(f"\nbackend {args.backend}, {args.cpus} cpus, {args.gpus} gpus; synthetic data, "
          f"{args.train} training samples, {args.epochs} epochs (the first left out)")  # fmt: skip
    print(f"{'workload':<24} {'batch':>6} {'parameters':>12} {'images/s median (min-max)':>30}")
    for w, e in results.items():
        if "error" in e:
            print(f"{w:<24} failed: {e['error']}")
            continue
        v = e["images_per_s"]
        print(f"{w:<24} {e['batch_size']:>6} {e['parameters']:>12,} "
              f"{statistics.median(v):>14.1f} ({min(v):.1f}-{max(v):.1f})")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps({"args": vars(args), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
