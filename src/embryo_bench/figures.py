"""Figures and the results table (matplotlib; PNG and PDF).

* fig1_preprocessing: one frame through original -> crop -> equalised -> inverted -> one
  rotation -> downsized (paper figure 1);
* fig4_test_accuracy: test accuracy per epoch per target (paper figure 4);
* fig5_6_training_time: training time per target, CPU targets in hours and GPU targets in
  minutes, with the paper's own times (309 min 2-core laptop, 134 min 4-core desktop) drawn
  beside ours and labelled with their workload (paper figures 5 and 6);
* throughput: steady-state training throughput (images/s) per target;
* results_table.csv / .md.

Every figure carries the dataset's label (e.g. "SYNTHETIC frames") and the workload on its face.
Only measured values are drawn; the paper's values are drawn as the paper's.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from PIL import Image, ImageOps  # noqa: E402

from . import paper, preprocess  # noqa: E402
from .errors import DataError  # noqa: E402
from .io import atomic_path, read_json  # noqa: E402
from .stages import read_selection  # noqa: E402


def _save(fig: plt.Figure, out_dir: Path, name: str, footer: str) -> None:
    fig.text(0.01, -0.06, footer, fontsize=7, color="dimgray", ha="left", va="top")
    for ext in ("png", "pdf"):
        with atomic_path(out_dir / f"{name}.{ext}", suffix=f".{ext}") as tmp:
            fig.savefig(tmp, dpi=150, bbox_inches="tight", format=ext)
    plt.close(fig)


def load_runs(run_dirs: list[str]) -> list[dict]:
    """Read each run folder's metrics.json and history.csv.

    Returns a list of dicts with ``metrics`` (dict) and ``history`` (DataFrame).

    Raises:
        DataError: a run file is missing or unreadable.
    """
    runs = []
    for d in run_dirs:
        metrics = read_json(Path(d) / "metrics.json")
        try:
            history = pd.read_csv(Path(d) / "history.csv")
        except FileNotFoundError as exc:
            raise DataError(f"{d}/history.csv: not found") from exc
        runs.append({"metrics": metrics, "history": history})
    return runs


def results_table(runs: list[dict], targets: list[dict], label: str) -> pd.DataFrame:
    """One row per run, the results table.

    Columns: target, runner, cpus, gpus, data (the dataset label), train_images,
    test_images, epochs, batch_size, training_s, first_epoch_s, steady_epoch_s (s),
    images_per_s (steady-state images/s), final_test_accuracy, best_test_accuracy,
    accuracy_target (fractions), time_to_accuracy_s (s, empty if not reached), parameters,
    cpu_model.
    """
    by_name = {t["name"]: t for t in targets}
    rows = []
    for r in runs:
        m = r["metrics"]
        t = by_name.get(m["target"], {})
        rows.append(
            {
                "target": m["target"],
                "runner": m.get("runner", "host"),
                "cpus": t.get("cpus"),
                "gpus": t.get("gpus", 0),
                "data": label,
                "train_images": m["n_train"],
                "test_images": m["n_test"],
                "epochs": m["epochs"],
                "batch_size": m["batch_size"],
                "training_s": round(m["training_seconds"], 2),
                "first_epoch_s": round(m["first_epoch_seconds"], 2),
                "steady_epoch_s": (
                    round(m["steady_epoch_seconds"], 2)
                    if m["steady_epoch_seconds"] is not None
                    else None
                ),
                "images_per_s": round(m["mean_images_per_s"], 1),
                "final_test_accuracy": round(m["final_test_accuracy"], 4),
                "best_test_accuracy": round(m["best_test_accuracy"], 4),
                "accuracy_target": m["accuracy_target"],
                "time_to_accuracy_s": (
                    round(m["time_to_accuracy_seconds"], 2)
                    if m["time_to_accuracy_seconds"] is not None
                    else None
                ),
                "parameters": m["parameter_count"],
                "cpu_model": m["provenance"]["cpu_model"],
            }
        )
    return pd.DataFrame(rows)


def fig_preprocessing(selection: str, pp: dict, out_dir: Path, footer: str) -> None:
    """Paper figure 1: the first selected frame through every preprocessing step."""
    rows = read_selection(selection)
    row = rows.iloc[0]
    frame = preprocess.read_frame(row["path"], pp["frame_size"])
    crop = preprocess.centre_crop(frame, pp["crop_fraction"])
    eq = np.asarray(ImageOps.equalize(Image.fromarray(crop, mode="L")))
    inv = preprocess.equalize_invert(crop, pp["invert_centre"])
    angles = preprocess.rotation_angles(pp["rotation_step"])
    angle = angles[1] if len(angles) > 1 else angles[0]
    rot = np.asarray(
        Image.fromarray(inv, mode="L").rotate(
            float(angle), resample=Image.Resampling.BILINEAR, fillcolor=0
        )
    )
    small = preprocess.rotate_resize(inv, np.array([angle]), pp["image_size"])[0]
    inv_max = max(pp["invert_centre"], 255 - pp["invert_centre"])  # range after inversion
    panels = [
        (frame, f"original {frame.shape[0]} px", 255),
        (crop, f"centre crop {crop.shape[0]} px", 255),
        (eq, "histogram equalised", 255),
        (inv, f"inverted |p - {pp['invert_centre']}|", inv_max),
        (rot, f"rotated {angle:g} deg", inv_max),
        (small, f"downsized {pp['image_size']} px", inv_max),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(2.2 * len(panels), 2.6))
    for ax, (img, title, vmax) in zip(axes, panels, strict=True):
        ax.imshow(img, cmap="gray", vmin=0, vmax=vmax)
        ax.set_title(title, fontsize=8)
        ax.axis("off")
    fig.suptitle(
        f"Preprocessing of {row['embryo']} {row['frame']} (cells: {row['cells']})", fontsize=9
    )
    _save(fig, out_dir, "fig1_preprocessing", footer)


def fig_accuracy(runs: list[dict], out_dir: Path, footer: str) -> None:
    """Paper figure 4: test accuracy per epoch, one line per target."""
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in runs:
        h = r["history"]
        ax.plot(h["epoch"], h["test_accuracy"], marker="o", ms=3, label=r["metrics"]["target"])
    target = runs[0]["metrics"]["accuracy_target"]
    ax.axhline(target, ls="--", color="gray", lw=0.8, label=f"accuracy target {target:g}")
    ax.axhline(0.25, ls=":", color="lightgray", lw=0.8, label="chance (4 classes)")
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    ax.set_title("Test accuracy per epoch (measured)", fontsize=9)
    _save(fig, out_dir, "fig4_test_accuracy", footer)


def fig_training_time(runs: list[dict], targets: list[dict], out_dir: Path, footer: str) -> None:
    """Paper figures 5/6: training time per target; CPU targets in hours, GPU in minutes;
    the paper's CPU times beside ours, each bar labelled with its workload."""
    gpus = {t["name"]: t.get("gpus", 0) for t in targets}
    cpu_runs = [r for r in runs if gpus.get(r["metrics"]["target"], 0) == 0]
    gpu_runs = [r for r in runs if gpus.get(r["metrics"]["target"], 0) > 0]
    fig, (ax_cpu, ax_gpu) = plt.subplots(1, 2, figsize=(10, 4))
    names, hours, colors, notes = [], [], [], []
    for r in cpu_runs:
        m = r["metrics"]
        names.append(f"{m['target']}\n(ours)")
        hours.append(m["training_seconds"] / 3600)
        colors.append("tab:blue")
        notes.append(f"{m['n_train']:,} img x {m['epochs']} ep")
    for name, minutes in paper.TRAINING_MINUTES.items():
        names.append(f"{name}\n(paper 2017)")
        hours.append(minutes / 60)
        colors.append("tab:gray")
        notes.append(f"{paper.TRAIN_IMAGES:,} img x {paper.EPOCHS} ep")
    bars = ax_cpu.bar(range(len(names)), hours, color=colors)
    for bar, note, h in zip(bars, notes, hours, strict=True):
        ax_cpu.annotate(
            f"{h:.3g} h\n{note}",
            (bar.get_x() + bar.get_width() / 2, h),
            ha="center",
            va="bottom",
            fontsize=6,
        )
    ax_cpu.set_xticks(range(len(names)), names, fontsize=7)
    ax_cpu.set_ylabel("training time (hours)")
    ax_cpu.set_title("CPU targets (hours)", fontsize=9)
    ax_cpu.margins(y=0.25)
    if gpu_runs:
        mins = [r["metrics"]["training_seconds"] / 60 for r in gpu_runs]
        ax_gpu.bar(range(len(gpu_runs)), mins, color="tab:green")
        ax_gpu.set_xticks(
            range(len(gpu_runs)), [r["metrics"]["target"] for r in gpu_runs], fontsize=7
        )
        ax_gpu.set_ylabel("training time (minutes)")
    else:
        ax_gpu.text(
            0.5,
            0.5,
            "no GPU target measured in this run",
            ha="center",
            va="center",
            transform=ax_gpu.transAxes,
            fontsize=9,
            color="dimgray",
        )
        ax_gpu.set_xticks([])
        ax_gpu.set_yticks([])
    ax_gpu.set_title("GPU targets (minutes)", fontsize=9)
    _save(fig, out_dir, "fig5_6_training_time", footer)


def fig_throughput(runs: list[dict], out_dir: Path, footer: str) -> None:
    """Steady-state training throughput (images/s) per target."""
    fig, ax = plt.subplots(figsize=(6, 4))
    names = [r["metrics"]["target"] for r in runs]
    vals = [r["metrics"]["mean_images_per_s"] for r in runs]
    bars = ax.bar(range(len(names)), vals, color="tab:blue")
    for bar, v in zip(bars, vals, strict=True):
        ax.annotate(
            f"{v:.0f}", (bar.get_x() + bar.get_width() / 2, v), ha="center", va="bottom", fontsize=7
        )
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_ylabel("training throughput (images/s)")
    ax.set_title("Steady-state training throughput (epochs 2.., measured)", fontsize=9)
    _save(fig, out_dir, "throughput", footer)


def make_all(args) -> None:
    """Write every figure and the results table (the ``figures`` rule).

    ``args`` carries runs (run folders), targets (JSON list), selection (selected.csv),
    source_info (source.json), preprocessing (JSON) and out_dir.
    """
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    targets = json.loads(args.targets)
    pp = json.loads(args.preprocessing)
    source = read_json(args.source_info)
    label = source["label"]
    runs = load_runs(args.runs)
    footer = f"data: {label}"
    if source.get("synthetic"):
        footer = "SYNTHETIC DATA - " + footer
    fig_preprocessing(args.selection, pp, out_dir, footer)
    fig_accuracy(runs, out_dir, footer)
    fig_training_time(runs, targets, out_dir, footer)
    fig_throughput(runs, out_dir, footer)
    table = results_table(runs, targets, label)
    with atomic_path(out_dir / "results_table.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(out_dir / "results_table.md") as tmp:
        tmp.write_text(f"Data: **{label}**\n\n" + table.to_markdown(index=False) + "\n")
