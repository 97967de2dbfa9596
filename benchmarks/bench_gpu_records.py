"""Benchmark report: the GPU figures of the committed GPU measurements, printed from their
records (not a test, and nothing here is measured again).

Reads each session folder under ``benchmarks/gpu_measurements/`` (or the folders given), as
``benchmarks/gpu_session.py unpack`` leaves it: ``session-*.json`` (the machine, the GPU, what
ran), ``gpu/`` (the paper's runs: config/gpu.yaml), ``gpu-workloads/`` (the catalog's
workloads), ``batch-limit/*/batch_limit.json`` and ``peers/peers.json``. Prints:

* the machine: GPU (NVML's name, memory, driver, CUDA, compute capability), date, label;
* the paper CNN, one row per target: backend, precision, cores, the 20 epochs' training time
  (fit only, s and min) against the paper's 2-core laptop (309 min) and 4-core desktop (134
  min), steady images/s, final test accuracy (SYNTHETIC frames), the GPUs' energy per epoch
  (J, their own counter), peak device memory (MiB), mean GPU utilisation (%);
* bfloat16 over float32 per backend (images/s ratio, accuracy difference) and 1 core over 8
  feeding the GPU;
* every workload on the GPU: batch, steady images/s, epoch s, energy per epoch, GPU
  utilisation, the share of training time spent waiting for input (files input);
* the batch-size sweep: the largest batch that fits (the largest tried, where no limit was
  found), its images/s, the best images/s;
* the peers (bench_peers on the GPU): each entry's median images/s, ours over the best plain
  loop;
* the goals the GPU measurement set, as measured whichever way they fall: our trainer >= 0.9x
  the best plain loop; the GPU >= 100x this machine's 2-core images/s on the paper CNN (with
  ``--cpu-results``: a result folder of this machine's runs of the same data, e.g.
  ``results/gpu-here``; without it the ratio is not computed); bfloat16 >= 1.5x float32.

Usage:
    python benchmarks/bench_gpu_records.py [FOLDER ...] [--cpu-results results/gpu-here]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from embryo_bench.published import paper  # noqa: E402 (the checkout's package, put first above)
from embryo_bench.reporting.batch_limit import limit_words  # noqa: E402

MEASUREMENTS = REPO / "benchmarks" / "gpu_measurements"
#: The goals the GPU measurement set (reported as measured, whichever way they fall).
GOAL_PEERS = 0.9
GOAL_GPU_OVER_CPU = 100.0
GOAL_BF16 = 1.5


def metrics_under(folder: Path) -> list[dict]:
    """Every finished run's metrics.json under ``folder`` (``train/*/repeat-*`` and
    ``workloads/*/train/*/repeat-*``), in path order."""
    found = sorted(folder.glob("train/*/repeat-*/metrics.json"))
    found += sorted(folder.glob("workloads/*/train/*/repeat-*/metrics.json"))
    return [json.loads(p.read_text()) for p in found]


def _num(value) -> float:
    return (
        float(value)
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else math.nan
    )


def gpu_util(m: dict) -> float:
    """The mean over a run's GPUs of NVML's utilisation (%), NaN where not recorded."""
    values = [_num(g.get("gpu_util_percent_mean")) for g in m.get("telemetry", {}).get("gpus", [])]
    values = [v for v in values if not math.isnan(v)]
    return statistics.fmean(values) if values else math.nan


def paper_rows(runs: list[dict]) -> list[dict]:
    """One row per run of the paper's workload: target, backend, precision, cpus, gpus,
    epochs, training_s (fit only, s), training_min, train_images (an epoch's), laptop_ratio
    and desktop_ratio (the paper's 309 and 134 min over ours, per image trained: how many
    times faster), images_per_s (steady),
    accuracy (final test), energy_per_epoch_j (J), device_memory_mib, gpu_util_percent."""
    rows = []
    for m in runs:
        if m.get("workload", "paper") != "paper":
            continue
        minutes = m["training_seconds"] / 60
        # per image trained: the paper's minutes for its 49,024 images x 20 epochs over ours
        # for ours (the same where a run is the paper's size)
        scale = (paper.TRAIN_IMAGES * paper.EPOCHS) / (m["images_per_epoch"] * m["epochs"])
        rows.append(
            {
                "target": m["target"],
                "backend": m["backend"],
                "precision": m.get("precision", "float32"),
                "cpus": m["cpus"],
                "gpus": m["gpus"],
                "epochs": m["epochs"],
                "training_s": m["training_seconds"],
                "training_min": minutes,
                "train_images": m["images_per_epoch"],
                "laptop_ratio": paper.TRAINING_MINUTES["2-core laptop"] / (minutes * scale),
                "desktop_ratio": paper.TRAINING_MINUTES["4-core desktop"] / (minutes * scale),
                "images_per_s": m["mean_images_per_s"],
                "accuracy": _num(m.get("final_test_accuracy")),
                "energy_per_epoch_j": _num(m.get("gpu_energy_per_epoch_j")),
                "device_memory_mib": _num(m.get("device_memory_peak_mib")),
                "gpu_util_percent": gpu_util(m),
            }
        )
    return rows


def precision_pairs(rows: list[dict]) -> list[dict]:
    """bfloat16 over float32 on each backend: each mixed_bfloat16 target beside the float32
    target of its name less ``-bf16`` (config/gpu.yaml's pairs), else the first float32 target
    of its backend and cores. Returns rows: backend, cpus, targets ("bf16 / float32"),
    speedup (images/s ratio), accuracy_change (bf16 - float32, final test accuracy)."""
    out = []
    for r in rows:
        if r["precision"] != "mixed_bfloat16":
            continue
        same = [f for f in rows if f["precision"] == "float32" and f["backend"] == r["backend"]]
        named = [f for f in same if f["target"] == r["target"].replace("-bf16", "")]
        match = named or [f for f in same if f["cpus"] == r["cpus"]]
        if match:
            f = match[0]
            out.append(
                {
                    "backend": r["backend"],
                    "cpus": r["cpus"],
                    "targets": f"{r['target']} / {f['target']}",
                    "speedup": r["images_per_s"] / f["images_per_s"],
                    "accuracy_change": r["accuracy"] - f["accuracy"],
                }
            )
    return out


def workload_rows(runs: list[dict]) -> list[dict]:
    """One row per workload run: workload, target, input, batch, images_per_s (steady),
    epoch_s (steady), energy_per_epoch_j, gpu_util_percent, input_wait_share (files input)."""
    return [
        {
            "workload": m["workload"],
            "target": m["target"],
            "input": m.get("input_mode", "memory"),
            "batch": m["batch_size"],
            "images_per_s": m["mean_images_per_s"],
            "epoch_s": _num(m.get("steady_epoch_seconds")),
            "energy_per_epoch_j": _num(m.get("gpu_energy_per_epoch_j")),
            "gpu_util_percent": gpu_util(m),
            "input_wait_share": _num((m.get("input_wait") or {}).get("share")),
        }
        for m in runs
        if m.get("workload", "paper") != "paper"
    ]


def batch_limits(folder: Path) -> list[dict]:
    """The batch-size sweeps (``batch-limit/*/``): each folder's name, its ``batch_limit.json``
    (largest_batch_size, stopped, run) and its trials (``batch_limit.csv`` rows:
    batch_size, fits, images_per_s, ...)."""
    import csv

    out = []
    for p in sorted(folder.glob("batch-limit/*/batch_limit.json")):
        trials = p.with_suffix(".csv")
        rows = list(csv.DictReader(trials.open())) if trials.is_file() else []
        out.append({"name": p.parent.name, **json.loads(p.read_text()), "trials": rows})
    return out


def peers(folder: Path) -> dict | None:
    """bench_peers' JSON (``peers/peers.json``) with its summary; None where absent. A JSON
    written before its run ended (``complete`` false) is summarised from its runs so far."""
    path = folder / "peers" / "peers.json"
    if not path.is_file():
        return None
    record = json.loads(path.read_text())
    if "summary" not in record:
        spec = __import__("importlib.util").util.spec_from_file_location(
            "bench_peers", REPO / "benchmarks" / "bench_peers.py"
        )
        module = __import__("importlib.util").util.module_from_spec(spec)
        spec.loader.exec_module(module)
        entries = list(dict.fromkeys(r["entry"] for r in record.get("runs", [])))
        record["summary"] = module.summarise(record.get("runs", []), entries, None)
    return record


def peers_ratio(record: dict) -> tuple[float, str, str]:
    """Our best entry (Keras through embryo-bench's training path: keras-jax, keras-torch,
    embryo-bench) over the best plain loop (jax, torch, tf-original): (ratio, ours, theirs)."""
    done = {r["entry"]: r["images_per_s"] for r in record["summary"] if "images_per_s" in r}
    ours = {e: v for e, v in done.items() if e.startswith(("keras-", "embryo-bench"))}
    plain = {e: v for e, v in done.items() if e in ("jax", "torch", "tf-original")}
    if not ours or not plain:
        return math.nan, "", ""
    best_ours, best_plain = max(ours, key=ours.get), max(plain, key=plain.get)
    return ours[best_ours] / plain[best_plain], best_ours, best_plain


def cpu_images_per_s(folder: Path | None) -> tuple[float, str]:
    """The median steady images/s of the 2-core runs of the paper's workload in ``folder``
    (this machine's result folder of the same data), and which targets; NaN without."""
    if folder is None or not folder.is_dir():
        return math.nan, ""
    runs = [
        m
        for m in metrics_under(folder)
        if m.get("workload", "paper") == "paper" and m["gpus"] == 0 and m["cpus"] == 2
    ]
    if not runs:
        return math.nan, ""
    names = ", ".join(sorted({m["target"] for m in runs}))
    return statistics.median(m["mean_images_per_s"] for m in runs), names


def batch_limit_text(b: dict) -> str:
    """One line of a batch-size sweep: the largest batch that fits, its images/s, the best
    images/s and at which batch, and why the search stopped."""
    fits = [t for t in b["trials"] if str(t.get("fits")).lower() == "true"]
    speed = {int(t["batch_size"]): _num_text(t.get("images_per_s")) for t in fits}
    largest = b.get("largest_batch_size")
    best = max(speed, key=speed.get) if speed else None
    at_largest = _f(speed.get(largest, math.nan), "{:,.0f}")
    stopped = b.get("stopped") or {}
    text = f"{limit_words(b)} {largest} ({at_largest} images/s)"
    if best is not None:
        text += f"; best {speed[best]:,.0f} images/s at batch {best}"
    return f"{text}; stopped: {stopped.get('text') or stopped.get('reason')}"


def _num_text(value) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _f(value: float, fmt: str = "{:,.1f}") -> str:
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    return "-" if missing else fmt.format(value)


def _goal(measured: float, goal: float) -> str:
    if math.isnan(measured):
        return "not measured"
    return f"{measured:.3g} (goal >= {goal:g}: {'met' if measured >= goal else 'NOT met'})"


def session_lines(folder: Path) -> list[str]:
    """The machine and what ran, from the folder's ``session-*.json``."""
    lines = []
    for path in sorted(folder.glob("session-*.json")):
        s = json.loads(path.read_text())
        g = (s.get("devices", {}).get("nvml") or [{}])[0]
        memory = _f(g.get("memory_total_mib"), "{:,.0f}")
        lines.append(
            f"{folder.name}: {g.get('name', 'no GPU (NVML)')}, {memory} MiB, driver "
            f"{g.get('driver_version')}, CUDA {g.get('cuda_driver_version')}, compute capability "
            f"{g.get('compute_capability')}; {s.get('cpu_count')} cores; session "
            f"{s.get('started')} ({', '.join(s.get('parts', []))}) {s.get('label', '')}"
        )
        if s.get("cpu") or s.get("tiny"):
            lines.append(
                "  REHEARSAL (--cpu/--tiny: CPU stand-ins at tiny sizes), not a measurement"
            )
        for left in s.get("left_out", []):
            lines.append(f"  left out: {left['part']} ({left['why']})")
    return lines


PAPER_HEADER = (
    f"{'target':<16} {'backend':<6} {'precision':<15} {'cpus':>4} {'epochs':>6} {'train s':>8} "
    f"{'min':>6} {'x laptop':>8} {'x desktop':>9} {'images/s':>9} {'acc':>6} {'J/epoch':>8} "
    f"{'dev MiB':>8} {'GPU %':>6}"
)


def paper_lines(rows: list[dict]) -> list[str]:
    """The paper CNN's table, the precision pairs and 1 vs 8 cores."""
    images = ", ".join(f"{n:,}" for n in sorted({r["train_images"] for r in rows}))
    lines = [
        f"\nThe paper CNN (SYNTHETIC frames; {images} training images an epoch, the paper's "
        f"{paper.TRAIN_IMAGES:,}):",
        PAPER_HEADER,
    ]
    for r in rows:
        lines.append(
            f"{r['target']:<16} {r['backend']:<6} {r['precision']:<15} {r['cpus']:>4} "
            f"{r['epochs']:>6} {r['training_s']:>8.1f} {r['training_min']:>6.2f} "
            f"{r['laptop_ratio']:>8.3g} {r['desktop_ratio']:>9.3g} {r['images_per_s']:>9,.0f} "
            f"{_f(r['accuracy'], '{:.3f}'):>6} {_f(r['energy_per_epoch_j'], '{:,.0f}'):>8} "
            f"{_f(r['device_memory_mib'], '{:,.0f}'):>8} {_f(r['gpu_util_percent'], '{:.0f}'):>6}"
        )
    laptop = paper.TRAINING_MINUTES["2-core laptop"]
    desktop = paper.TRAINING_MINUTES["4-core desktop"]
    lines.append(
        f"(x laptop, x desktop: the paper's {laptop:g} and {desktop:g} min for "
        f"{paper.TRAIN_IMAGES:,} images x {paper.EPOCHS} epochs over ours, per image trained)"
    )
    for p in precision_pairs(rows):
        lines.append(
            f"bfloat16 / float32 on {p['backend']} ({p['targets']}): {p['speedup']:.3f}x "
            f"images/s, accuracy {p['accuracy_change']:+.3f}"
        )
    by = {r["target"]: r for r in rows}
    for one, eight in (("gpu-jax-1cpu", "gpu-jax"), ("cpu-jax-1cpu", "cpu-jax")):
        if one in by and eight in by:
            ratio = by[one]["images_per_s"] / by[eight]["images_per_s"]
            lines.append(
                f"{by[one]['cpus']} core(s) / {by[eight]['cpus']} feeding the device "
                f"({one} / {eight}): {ratio:.3f}x images/s"
            )
    return lines


def workload_lines(work: list[dict]) -> list[str]:
    """The workloads' table."""
    lines = [
        "\nThe studies' workloads (SYNTHETIC arrays of each dataset's shape):",
        f"{'workload':<24} {'input':<6} {'batch':>5} {'images/s':>10} {'epoch s':>8} "
        f"{'J/epoch':>8} {'GPU %':>6} {'wait':>5}",
    ]
    for r in work:
        lines.append(
            f"{r['workload']:<24} {r['input']:<6} {r['batch']:>5} {r['images_per_s']:>10,.0f} "
            f"{_f(r['epoch_s'], '{:.2f}'):>8} {_f(r['energy_per_epoch_j'], '{:,.0f}'):>8} "
            f"{_f(r['gpu_util_percent'], '{:.0f}'):>6} {_f(r['input_wait_share'], '{:.0%}'):>5}"
        )
    return lines


def report(folder: Path, cpu_results: Path | None) -> str:
    """The printed report of one session folder (see the module docstring)."""
    lines = session_lines(folder)
    rows = paper_rows(metrics_under(folder / "gpu"))
    if rows:
        lines += paper_lines(rows)
    work = workload_rows(metrics_under(folder / "gpu-workloads"))
    if work:
        lines += workload_lines(work)
    for b in batch_limits(folder):
        lines.append(f"\nbatch-size sweep {b['name']}: {batch_limit_text(b)}")
    peer = peers(folder)
    ratio = math.nan
    if peer:
        lines.append("\nPeers on the same device (bench_peers, paper CNN):")
        for r in peer["summary"]:
            speed = _f(r.get("images_per_s"), "{:,.0f}")
            lines.append(f"  {r['entry']:<14} {speed:>10} images/s  {r.get('status', '')}")
        ratio, ours, theirs = peers_ratio(peer)
        if ours:
            lines.append(f"  ours ({ours}) / best plain loop ({theirs}): {ratio:.3f}")
    cpu, cpu_targets = cpu_images_per_s(cpu_results)
    gpu_best = max((r["images_per_s"] for r in rows if r["gpus"]), default=math.nan)
    bf16 = max((p["speedup"] for p in precision_pairs(rows)), default=math.nan)
    if math.isnan(cpu):
        versus = "not computed (no 2-core runs given: --cpu-results)"
    else:
        versus = f"{_goal(gpu_best / cpu, GOAL_GPU_OVER_CPU)} ({cpu_targets}: {cpu:,.0f} images/s)"
    lines += [
        "\nGoals:",
        f"  our trainer / best plain loop on the device: {_goal(ratio, GOAL_PEERS)}",
        f"  GPU / this machine's 2 cores on the paper CNN: {versus}",
        f"  bfloat16 / float32 on the paper CNN (best backend): {_goal(bf16, GOAL_BF16)}",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", nargs="*", help="session folders (default: every one under "
                   "benchmarks/gpu_measurements)")  # fmt: skip
    p.add_argument("--cpu-results", default="", help="a result folder of this machine's runs "
                   "of config/gpu.yaml's data (the 2-core side of the GPU/CPU goal)")  # fmt: skip
    args = p.parse_args(argv)
    folders = [Path(f) for f in args.folders] or sorted(
        d for d in MEASUREMENTS.glob("*") if d.is_dir()
    )
    if not folders:
        print(f"no GPU measurement under {MEASUREMENTS} yet (benchmarks/gpu_session.py makes one)")
        return 1
    for folder in folders:
        print(report(folder, Path(args.cpu_results) if args.cpu_results else None))
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
