"""Benchmark: cost as work grows, not a test.

The workflow itself (``snakemake`` on ``config/paper-synthetic.yaml``, SYNTHETIC frames in the
database's layout) is run at fractions of the paper's size: the configuration's labelled
frames and 3-cell frames (the paper's there) times each fraction, over the same embryos,
with one training target, ``--epochs`` epochs and one repeat (an overlay configuration,
``configs/scale-F.yaml`` under ``--out``, merged over the paper-synthetic one by a second
``--configfile``). Each fraction gets its own output folder ``runs/scale-F`` and is run one
stage at a time (``snakemake --until RULE``: synthesize, index, select, crop, invert, augment,
the container images for docker targets, train, then the figures), each stage followed by
the same invocation again with nothing left to do, ``--noop-repeats`` times (Snakemake's own
fixed cost: parsing, the target check, the DAG, code hashes). Per stage it measures:

* wall seconds of the invocation, and the median of the nothing-to-do ones; ``net_wall_s``
  is their difference (negative when the machine's load moved more than the stage costs);
* CPU seconds (user + system) of Snakemake and every job process it waited for
  (``resource.getrusage(RUSAGE_CHILDREN)``), and the same of the nothing-to-do invocation; a
  docker target's trainer runs in a container, outside that count: its CPU seconds are the
  run's ``telemetry.csv`` (Docker stats, 1 Hz: sum of cpu_percent / 100 x seconds between
  samples), reported apart;
* peak memory: the largest peak resident set (``VmHWM`` of ``/proc/PID/status``) of any job
  process (``python3 -m embryo_bench.cli ...`` and its workers), polled every
  ``--poll-seconds``, the largest sum of the job processes' resident sets at one poll, and the
  trainer's peak from its ``telemetry.csv`` (``memory_mib``; a container's, page cache
  excluded, for docker targets). Polling sees a job's peak up to its last poll and misses a
  job that ends between two polls: the tables give the jobs run (from Snakemake's log) beside
  the job processes seen, so a short stage's peak is a lower bound;
* disk: the allocated size (as ``du``) of the stage's output folders;
* training: seconds of each epoch (``history.csv``) against the training images an epoch
  (``metrics.json``).

Fits, per stage and quantity, against the labelled frames: the least-squares line (slope per
1,000 labelled frames, intercept), the exponent p of a least-squares power law y = c x^p
(log-log; values <= 0 have none) and the ratio of the last interval's slope to the first's.
A quantity whose exponent exceeds :data:`SUPERLINEAR` is flagged as growing faster than
linearly. Written under ``--out``: ``measurements.csv`` (one row per fraction and stage),
``training.csv``, ``fits.csv``, ``scale.md`` (the three tables), ``scale.png`` / ``.pdf``,
``scale.json`` (everything) and each invocation's log under ``logs/``.

Each fraction's frames (``data/``, about 145 MiB per 1,000 at 480 px) are removed once it is
measured, unless ``--keep-data``. The batch of 480 needs at least 480 training images and
each embryo 4 frames: a fraction of 0.02 or more of the paper-synthetic configuration (0.01 is
refused for 100 embryos; with ``--embryos 20`` it trains on 420 images, under the batch).
Small checks: ``--fractions 0.02 0.04``.

Usage: python benchmarks/bench_scale.py [--fractions 0.125 0.25 0.5 1] [--epochs 1]
       [--target laptop-2cpu] [--out bench-scale] [--cores N] [--runner docker|host]
       [--embryos N] [--frame-size PX] [--noop-repeats 3] [--keep-data]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import matplotlib
import numpy as np
import pandas as pd
import psutil
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend choice)

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from embryo_bench.recording.hardware import cpu_model  # noqa: E402
from embryo_bench.vocabulary import layout  # noqa: E402 (the checkout's package, put first above)

CONFIG = REPO / "config" / "paper-synthetic.yaml"
MIB = 1024 * 1024
#: A power-law exponent above this counts as growing faster than linearly (1 = linear; the
#: margin allows for the noise of a shared VM over an 8x range of sizes).
SUPERLINEAR = 1.1
#: (stage, ``snakemake --until`` rule (None: the default target, everything), output folders
#: or files under the outdir). The images stage runs for docker targets only.
STAGES = [
    ("synthesize", "synthesize", [Path(layout.SYNTHETIC_DB).parent.as_posix()]),
    ("index", "index", ["manifest"]),
    ("select", "select", ["select"]),
    ("crop", "crop", ["crop"]),
    ("invert", "invert", ["invert"]),
    ("augment", "augment", ["augment"]),
    ("images", "image", [Path(layout.BASE_IMAGE_RECORD).parent.as_posix()]),
    ("train", "train", ["train"]),
    ("figures", None, ["figures", layout.FIGURES_SPEC]),
]
#: Quantities fitted against the labelled frames, with their unit.
FITTED = {
    "net_wall_s": "s",
    "net_cpu_s": "CPU s",
    "peak_job_rss_mib": "MiB",
    "disk_mib": "MiB",
}
#: A job's process: ``python3 -m embryo_bench.cli COMMAND ...`` (and its forked workers); the
#: ``bash -c`` around it names the module inside one argument and is not counted.
JOB_MARK = "embryo_bench.cli"
#: A job in a Snakemake log ("rule crop:", "localrule figures:"); ``all`` runs nothing.
JOB_LINE = re.compile(r"^(?:local)?rule (\w+):$", re.MULTILINE)


# --- the arithmetic (tested in tests/test_bench_scale.py) -------------------------------------


def scaled_counts(total: int, rare: int, fraction: float) -> tuple[int, int]:
    """(labelled frames, 3-cell frames) at ``fraction`` of (``total``, ``rare``), rounded.

    Raises:
        ValueError: a fraction <= 0.
    """
    if fraction <= 0:
        raise ValueError(f"fraction {fraction}: expected > 0")
    return round(total * fraction), max(1, round(rare * fraction))


def overlay(
    config: dict,
    fraction: float,
    outdir: str,
    target: str,
    epochs: int,
    runner: str = "docker",
    embryos: int | None = None,
    frame_size: int | None = None,
) -> dict:
    """The configuration merged over ``config`` (the paper-synthetic one) for one fraction:
    its outdir, the scaled counts, one target (``runner`` host: the same cpus on the host
    runner), ``epochs`` epochs, one repeat, no cost base (the configuration's may be gone).

    Raises:
        SystemExit: ``target`` is not a target of ``config`` or asks for GPUs.
    """
    syn = config["dataset"]["synthetic"]
    total, rare = scaled_counts(syn["total_frames"], syn["three_cell_frames"], fraction)
    entries = {t["name"]: t for t in config["targets"]}
    if target not in entries or entries[target].get("gpus", 0):
        cpu = [n for n, t in entries.items() if not t.get("gpus", 0)]
        raise SystemExit(f"--target {target!r}: expected a CPU target of {CONFIG.name}: {cpu}")
    entry = dict(entries[target])
    if runner == "host":
        entry = {"name": target, "runner": "host", "cpus": entry["cpus"]}
    dataset: dict = {"synthetic": {"total_frames": total, "three_cell_frames": rare}}
    if embryos is not None:
        dataset["synthetic"]["embryos"] = embryos
    if frame_size is not None:
        dataset["frame_size"] = frame_size
    return {
        "outdir": outdir,
        "dataset": dataset,
        "train": {"epochs": epochs, "repeats": 1},
        "targets": [entry],
        "cost": {"base_target": ""},
    }


def fit(x, y) -> dict:
    """Least-squares line and power law of ``y`` against ``x``.

    Args:
        x, y: equal-length sequences of floats, at least two distinct x.

    Returns:
        dict: slope (y per unit of x), intercept, exponent (of y = c x^p, fitted on the logs;
        None when any x or y <= 0), marginal_ratio (slope of the last interval / slope of the
        first, sorted by x; None with fewer than three points or a first slope of 0),
        superlinear (exponent > :data:`SUPERLINEAR`).

    Raises:
        ValueError: fewer than two distinct x.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    if len(np.unique(x)) < 2:
        raise ValueError(f"fit: need two distinct sizes, got {x.tolist()}")
    slope, intercept = np.polyfit(x, y, 1)
    exponent = None
    if (x > 0).all() and (y > 0).all():
        exponent = float(np.polyfit(np.log(x), np.log(y), 1)[0])
    order = np.argsort(x)
    xs, ys = x[order], y[order]
    ratio = None
    if len(xs) >= 3:
        first = (ys[1] - ys[0]) / (xs[1] - xs[0])
        last = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
        ratio = float(last / first) if first else None
    return {
        "slope": float(slope),
        "intercept": float(intercept),
        "exponent": exponent,
        "marginal_ratio": ratio,
        "superlinear": exponent is not None and exponent > SUPERLINEAR,
    }


def fits(rows: list[dict], training: list[dict]) -> list[dict]:
    """One fit per stage and :data:`FITTED` quantity against the labelled frames (slope per
    1,000 frames), and the training's epoch seconds against its training images (slope per
    1,000 images). Stages measured at fewer than two sizes, and missing values, are left out.
    """
    out = []
    for stage in dict.fromkeys(r["stage"] for r in rows):
        mine = [r for r in rows if r["stage"] == stage]
        for key, unit in FITTED.items():
            pts = [(r["labelled_frames"], r[key]) for r in mine if r.get(key) is not None]
            if len({p[0] for p in pts}) < 2:
                continue
            f = fit([p[0] / 1000 for p in pts], [p[1] for p in pts])
            out.append({"stage": stage, "quantity": key, "per": f"{unit} per 1,000 frames", **f})
    for key in ("first_epoch_seconds", "steady_epoch_seconds", "trainer_peak_mib"):
        pts = [(t["train_images"], t[key]) for t in training if t.get(key) is not None]
        if len({p[0] for p in pts}) >= 2:
            unit = "s" if key.endswith("seconds") else "MiB"
            f = fit([p[0] / 1000 for p in pts], [p[1] for p in pts])
            out.append({"stage": "train", "quantity": key, "per": f"{unit} per 1,000 images", **f})
    return out


def _cell(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def markdown(columns: list[tuple[str, str]], rows: list[dict]) -> str:
    """A Markdown table: ``columns`` as (key, heading); missing values as "-"."""
    lines = ["| " + " | ".join(h for _, h in columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    for r in rows:
        lines.append("| " + " | ".join(_cell(r.get(k)) for k, _ in columns) + " |")
    return "\n".join(lines)


MEASURED_COLUMNS = [
    ("fraction", "fraction"),
    ("labelled_frames", "labelled frames"),
    ("selected_frames", "selected frames"),
    ("stage", "stage"),
    ("wall_s", "wall s"),
    ("noop_wall_s", "nothing-to-do wall s"),
    ("net_wall_s", "net wall s"),
    ("cpu_s", "CPU s"),
    ("net_cpu_s", "net CPU s"),
    ("trainer_cpu_s", "container CPU s"),
    ("jobs", "jobs"),
    ("job_processes", "job processes seen"),
    ("peak_job_rss_mib", "peak job RSS MiB"),
    ("peak_jobs_rss_sum_mib", "peak concurrent jobs RSS MiB"),
    ("trainer_peak_mib", "trainer peak MiB"),
    ("disk_mib", "disk MiB"),
]
TRAINING_COLUMNS = [
    ("fraction", "fraction"),
    ("labelled_frames", "labelled frames"),
    ("train_images", "training images an epoch"),
    ("test_images", "test images"),
    ("first_epoch_seconds", "first epoch s"),
    ("steady_epoch_seconds", "steady epoch s"),
    ("images_per_s", "images/s"),
    ("eval_seconds", "test scoring s (all epochs)"),
    ("trainer_peak_mib", "trainer peak MiB"),
]
FIT_COLUMNS = [
    ("stage", "stage"),
    ("quantity", "quantity"),
    ("slope", "slope"),
    ("per", "unit"),
    ("intercept", "intercept"),
    ("exponent", "power-law exponent"),
    ("marginal_ratio", "last / first interval slope"),
    ("superlinear", f"faster than linear (exponent > {SUPERLINEAR})"),
]


def report(rows: list[dict], training: list[dict], fitted: list[dict], header: str) -> str:
    """The Markdown report: ``header``, then the measurements, training and fit tables."""
    flagged = [f"{f['stage']} {f['quantity']}" for f in fitted if f["superlinear"]]
    verdict = (
        "Growing faster than linearly: " + ", ".join(flagged) + "."
        if flagged
        else f"Nothing grows faster than linearly (no exponent above {SUPERLINEAR})."
    )
    return (
        "\n\n".join(
            [
                header,
                "## Per stage\n\n" + markdown(MEASURED_COLUMNS, rows),
                "## Training\n\n" + markdown(TRAINING_COLUMNS, training),
                "## Fits\n\n" + markdown(FIT_COLUMNS, fitted) + "\n\n" + verdict,
            ]
        )
        + "\n"
    )


def write_csv(path: Path, columns: list[tuple[str, str]], rows: list[dict]) -> None:
    """``rows`` as CSV with the ``columns``' keys as header (empty cell: not measured)."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow([k for k, _ in columns])
        for r in rows:
            w.writerow(["" if r.get(k) is None else r[k] for k, _ in columns])


# --- measuring ---------------------------------------------------------------------------------


def _status_kib(pid: int) -> tuple[int, int]:
    """(VmHWM, VmRSS) of a process in KiB; (0, 0) once it is gone."""
    hwm = rss = 0
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    hwm = int(line.split()[1])
                elif line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return hwm, rss


def measured_run(cmd: list[str], cwd: Path, log: Path, poll_s: float) -> dict:
    """Run ``cmd`` (a Snakemake invocation) to completion, polling its process tree.

    Returns:
        dict: wall_s, cpu_s (user + system of the command and every process it waited for),
        jobs (jobs the log says it ran, ``all`` left out), job_processes (processes seen whose
        command line runs ``embryo_bench.cli``: a job that ends between two polls is missed),
        peak_job_rss_mib (largest VmHWM among them), peak_jobs_rss_sum_mib (largest sum of
        their VmRSS at one poll), snakemake_rss_mib (the command's own VmHWM), returncode.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    jobs: dict[int, int] = {}  # pid -> VmHWM KiB
    seen: dict[int, bool] = {}  # pid -> is a job process
    own = peak_sum = 0
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT)
        root = psutil.Process(proc.pid)
        while proc.poll() is None:
            own = max(own, _status_kib(proc.pid)[0])
            total = 0
            try:
                children = root.children(recursive=True)
            except psutil.NoSuchProcess:
                children = []
            for child in children:
                # Asked again until it is a job: a process caught between fork and exec still
                # has its parent's command line (a shell's), and becomes the job a moment later.
                if not seen.get(child.pid):
                    try:
                        seen[child.pid] = JOB_MARK in child.cmdline()
                    except (psutil.NoSuchProcess, psutil.AccessDenied):
                        continue
                if seen[child.pid]:
                    hwm, rss = _status_kib(child.pid)
                    jobs[child.pid] = max(jobs.get(child.pid, 0), hwm)
                    total += rss
            peak_sum = max(peak_sum, total)
            time.sleep(poll_s)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    ran = [r for r in JOB_LINE.findall(log.read_text(errors="replace")) if r != "all"]
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "jobs": len(ran),
        "job_processes": len(jobs),
        "peak_job_rss_mib": max(jobs.values()) / 1024 if jobs else None,
        "peak_jobs_rss_sum_mib": peak_sum / 1024 if jobs else None,
        "snakemake_rss_mib": own / 1024,
        "returncode": proc.returncode,
    }


def disk_mib(paths: list[Path]) -> float:
    """Allocated size (st_blocks x 512, as ``du``) of the files under ``paths``, MiB."""
    total = 0
    for p in paths:
        if p.is_file():
            total += p.stat().st_blocks * 512
        for root, _, files in os.walk(p):
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total / MIB


def trainer_telemetry(path: Path) -> tuple[float | None, float | None]:
    """(peak memory MiB, CPU seconds) of a run's ``telemetry.csv``: the largest memory_mib and
    the sum of cpu_percent / 100 x the seconds since the previous sample (None: no samples)."""
    t = pd.read_csv(path)
    if t.empty:
        return None, None
    mem = pd.to_numeric(t["memory_mib"], errors="coerce")
    cpu = pd.to_numeric(t["cpu_percent"], errors="coerce").fillna(0.0).to_numpy()
    dt = np.diff(t["time_s"].to_numpy(float), prepend=0.0)
    peak = float(mem.max()) if mem.notna().any() else None
    return peak, float((cpu / 100.0 * dt).sum())


def run_fraction(a, config: dict, fraction: float, cores: int) -> tuple[list[dict], dict]:
    """Every stage of one fraction, measured; returns (one row per stage, the training row).

    Raises:
        SystemExit: a Snakemake invocation failed (its log named).
    """
    name = f"scale-{fraction:g}"
    outdir = Path("runs") / name
    conf = overlay(
        config, fraction, outdir.as_posix(), a.target, a.epochs, a.runner, a.embryos, a.frame_size
    )
    cfg = a.out / "configs" / f"{name}.yaml"
    cfg.parent.mkdir(parents=True, exist_ok=True)
    cfg.write_text(yaml.safe_dump(conf, sort_keys=False))
    total = conf["dataset"]["synthetic"]["total_frames"]
    base = [sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile")]
    base += ["--cores", str(cores)]
    files = ["--configfile", str(CONFIG), str(cfg.resolve())]
    out = a.out / outdir
    rows = []
    for stage, rule, outputs in STAGES:
        if stage == "images" and a.runner == "host":
            continue
        until = ["--until", rule] if rule else []
        logs = a.out / "logs" / name
        m = measured_run(base + until + files, a.out, logs / f"{stage}.log", a.poll_seconds)
        if m["returncode"]:
            raise SystemExit(f"{name} {stage}: snakemake failed, see {logs / f'{stage}.log'}")
        noops = []
        for k in range(a.noop_repeats):
            log = logs / f"{stage}-noop-{k + 1}.log"
            noop = measured_run(base + until + files, a.out, log, a.poll_seconds)
            if noop["returncode"] or noop["jobs"]:
                raise SystemExit(
                    f"{name} {stage}: the invocation after the stage ran {noop['jobs']} jobs "
                    f"(did the code or the configuration change meanwhile? see {log})"
                )
            noops.append(noop)
        noop = {k: float(np.median([n[k] for n in noops])) for k in ("wall_s", "cpu_s")}
        row = {
            "fraction": fraction,
            "labelled_frames": total,
            "three_cell_frames": conf["dataset"]["synthetic"]["three_cell_frames"],
            "stage": stage,
            **{k: m[k] for k in ("wall_s", "cpu_s", "jobs", "job_processes", "peak_job_rss_mib")},
            "peak_jobs_rss_sum_mib": m["peak_jobs_rss_sum_mib"],
            "snakemake_rss_mib": m["snakemake_rss_mib"],
            "noop_wall_s": noop["wall_s"],
            "noop_cpu_s": noop["cpu_s"],
            "net_wall_s": m["wall_s"] - noop["wall_s"],
            "net_cpu_s": m["cpu_s"] - noop["cpu_s"],
            "disk_mib": disk_mib([out / o for o in outputs]),
        }
        rows.append(row)
        print(
            f"  {name} {stage}: {row['wall_s']:.1f} s wall ({row['noop_wall_s']:.1f} s with "
            f"nothing to do), {row['cpu_s']:.1f} CPU s, peak job RSS "
            f"{_cell(row['peak_job_rss_mib'], 0)} MiB, {row['disk_mib']:.1f} MiB on disk",
            flush=True,
        )
    summary = json.loads((out / "select" / "summary.json").read_text())
    run = out / layout.run_dir(a.target, 1)
    metrics = json.loads((run / layout.METRICS).read_text())
    peak, cpu = trainer_telemetry(run / layout.TELEMETRY)
    for row in rows:
        row["selected_frames"] = summary["total"]
        if row["stage"] == "train":
            row["trainer_peak_mib"] = peak
            row["trainer_cpu_s"] = cpu if a.runner == "docker" else None
    training = {
        "fraction": fraction,
        "labelled_frames": total,
        "selected_frames": summary["total"],
        "train_images": metrics["images_per_epoch"],
        "test_images": metrics["n_test"],
        "epochs": metrics["epochs"],
        "first_epoch_seconds": metrics["first_epoch_seconds"],
        "steady_epoch_seconds": metrics["steady_epoch_seconds"],
        "images_per_s": metrics["mean_images_per_s"],
        "eval_seconds": metrics["eval_seconds_total"],
        "trainer_peak_mib": peak,
    }
    if not a.keep_data:
        shutil.rmtree(out / Path(layout.SYNTHETIC_DB).parent)
    return rows, training


def figure(rows: list[dict], training: list[dict], fitted: list[dict], path: Path, title: str):
    """Measured quantities against size, log-log, one line per stage, with each fit's slope and
    exponent in the legend and a slope-1 (linear) guide; SYNTHETIC on its face."""
    by = {(f["stage"], f["quantity"]): f for f in fitted}
    panels = list(FITTED.items()) + [("first_epoch_seconds", "s")]
    fig, axes = plt.subplots(2, 3, figsize=(16, 9.5))
    for ax, (key, unit) in zip(axes.flat, panels, strict=False):
        if key == "first_epoch_seconds":
            pts = {
                "train": [(t["train_images"], t[key]) for t in training],
                "train steady": [
                    (t["train_images"], t["steady_epoch_seconds"])
                    for t in training
                    if t.get("steady_epoch_seconds")
                ],
            }
            pts = {k: v for k, v in pts.items() if v}
            ax.set_xlabel("training images an epoch")
            ax.set_title(f"training: first epoch, steady epochs when more than one ({unit})")
        else:
            pts = {}
            for r in rows:
                if r.get(key) is not None and r[key] > 0:
                    pts.setdefault(r["stage"], []).append((r["labelled_frames"], r[key]))
            ax.set_xlabel("labelled frames")
            ax.set_title(f"{key} ({unit})")
        for stage, p in pts.items():
            p = sorted(p)
            f = by.get(
                ("train", "steady_epoch_seconds") if stage == "train steady" else (stage, key)
            )
            label = stage
            if f:
                per = f["per"].split(" per ")[1].replace(",000", "k")
                exp = f"{f['exponent']:.2f}" if f["exponent"] is not None else "-"
                label += f": {f['slope']:.3g} {unit}/{per}, p={exp}"
                label += " FASTER THAN LINEAR" if f["superlinear"] else ""
            ax.plot([x for x, _ in p], [y for _, y in p], "o-", label=label)
        if pts:
            ax.set_xscale("log")
            ax.set_yscale("log")
            xs = [x for p in pts.values() for x, _ in p]
            ys = [y for p in pts.values() for _, y in p]
            if xs and ys and min(xs) < max(xs):
                x0, x1 = min(xs), max(xs)
                y0 = float(np.median(ys))
                ax.plot([x0, x1], [y0, y0 * x1 / x0], "k:", lw=1, label="slope 1 (linear)")
            ax.legend(fontsize=7)
        ax.grid(True, which="both", alpha=0.3)
    axes.flat[-1].axis("off")
    axes.flat[-1].text(
        0.5, 0.5, "SYNTHETIC", fontsize=40, color="0.6", ha="center", va="center",
        rotation=20, transform=axes.flat[-1].transAxes,
    )  # fmt: skip
    fig.suptitle(textwrap.fill(title, 140), fontsize=11)
    fig.tight_layout()
    fig.savefig(path.with_suffix(".png"), dpi=110)
    fig.savefig(path.with_suffix(".pdf"))
    plt.close(fig)


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fractions", type=float, nargs="+", default=[0.125, 0.25, 0.5, 1.0])
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--target", default="laptop-2cpu", help="a CPU target of the config")
    p.add_argument("--runner", choices=["docker", "host"], default="docker",
                   help="host: the target's cpus on the host runner (no Docker)")  # fmt: skip
    p.add_argument("--out", type=Path, default=Path("bench-scale"))
    p.add_argument("--cores", type=int, default=cores, help="snakemake --cores")
    p.add_argument("--embryos", type=int, help="override the config's embryos (small runs)")
    p.add_argument("--frame-size", type=int, help="override the config's 480 px (small runs)")
    p.add_argument("--poll-seconds", type=float, default=0.2)
    p.add_argument(
        "--noop-repeats",
        type=int,
        default=3,
        help="nothing-to-do invocations after each stage (their median is its fixed cost)",
    )
    p.add_argument("--keep-data", action="store_true", help="keep each fraction's frames")
    a = p.parse_args()
    a.out = a.out.resolve()
    a.out.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load(CONFIG.read_text())
    host = f"{cpu_model()}, {cores} visible cores, snakemake --cores {a.cores}"
    print(f"# host: {host}; data: SYNTHETIC frames", flush=True)
    rows, training = [], []
    for fraction in sorted(a.fractions):
        r, t = run_fraction(a, config, fraction, a.cores)
        rows += r
        training.append(t)
    fitted = fits(rows, training)
    syn = config["dataset"]["synthetic"]
    size = a.frame_size or config["dataset"]["frame_size"]
    fractions = ", ".join(f"{f:g}" for f in sorted(a.fractions))
    title = (
        f"SYNTHETIC frames: cost as work grows - fractions {fractions} "
        f"of {syn['total_frames']:,} labelled frames ({size} px, "
        f"{a.embryos or syn['embryos']} embryos); target {a.target} ({a.runner}), "
        f"{a.epochs} epoch(s); {time.strftime('%Y-%m-%d')}, {host}"
    )  # fmt: skip
    write_csv(a.out / "measurements.csv", MEASURED_COLUMNS, rows)
    write_csv(a.out / "training.csv", TRAINING_COLUMNS, training)
    write_csv(a.out / "fits.csv", FIT_COLUMNS, fitted)
    text = report(rows, training, fitted, f"# {title}")
    (a.out / "scale.md").write_text(text)
    own = resource.getrusage(resource.RUSAGE_SELF)
    (a.out / "scale.json").write_text(
        json.dumps(
            {
                "title": title,
                "stages": rows,
                "training": training,
                "fits": fitted,
                # This script's own CPU (mostly the polling), beside the runs it measured.
                "bench_cpu_s": own.ru_utime + own.ru_stime,
                "poll_seconds": a.poll_seconds,
            }
        )
    )
    figure(rows, training, fitted, a.out / "scale", title)
    print(text, flush=True)


if __name__ == "__main__":
    main()
