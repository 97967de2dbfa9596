"""The figure of a batch-size search (``embryo-bench batch-limit``,
:mod:`embryo_bench.training.batch_limit`): throughput against batch size, the largest batch
that fits, the trials that ran out of memory, and peak memory where it was measured.

Only what the trials measured is drawn; a reading a trial did not give (a GPU's peak on a
CPU trial, the throughput of a trial that did not fit) is left out, never filled in. The
inputs were synthetic, and the figure says so on its face.
"""

from __future__ import annotations

import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

from ..io import atomic_path  # noqa: E402

#: On the figure's face: the trials' inputs were random.
SYNTHETIC_LABEL = "SYNTHETIC inputs (speed and memory only)"
FITS_COLOR, OOM_COLOR, ERROR_COLOR = "tab:blue", "tab:red", "dimgray"


def _batch_ticks(axis, batches: np.ndarray) -> None:
    """A log2 x axis with ticks at the powers of two the trials span, labelled in images."""
    axis.set_xscale("log", base=2)
    low, high = int(np.floor(np.log2(batches.min()))), int(np.ceil(np.log2(batches.max())))
    axis.set_xticks([2**k for k in range(low, high + 1)])
    axis.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    axis.set_xlim(2 ** (low - 0.3), 2 ** (high + 0.3))


def limit_words(result: dict) -> str:
    """What a search's ``largest_batch_size`` is, in words: "largest that fits" only where the
    search ran out of memory above it (so the limit was found); a search stopped by its time
    budget, its cap or an error has found a batch that fits and no limit.

    Args:
        result: the search's result (``batch_limit.json``; its ``stopped.reason``).
    """
    if (result.get("stopped") or {}).get("reason") == "out_of_memory":
        return "largest that fits"
    return "largest tried that fitted (no limit found)"


def draw(trials: pd.DataFrame, result: dict, path: str | os.PathLike) -> None:
    """Draw the search as a PNG at ``path`` (atomically): throughput (images/s) against batch
    size (images, log2 axis) with the largest fitting batch marked and the batches that ran
    out of memory (or failed) marked at the foot; below it, peak memory (MiB) per batch: the
    framework's on the device where measured, the trial process's resident peak always.

    Args:
        trials: one row per trial (:data:`embryo_bench.training.batch_limit.TRIAL_COLUMNS`).
        result: the search's result (``batch_limit.json``: largest_batch_size, stopped, run,
            devices, data).
        path: the PNG's path.
    """
    fits = trials[trials["outcome"] == "fits"].sort_values("batch_size")
    oom = trials[trials["outcome"] == "out of memory"]
    other = trials[~trials["outcome"].isin(["fits", "out of memory"])]
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 2]}
    )
    _batch_ticks(top, trials["batch_size"].to_numpy(float))
    if len(fits):
        top.plot(fits["batch_size"], fits["images_per_s"], "o-", color=FITS_COLOR, label="fits")
    fastest = float(fits["images_per_s"].max()) if len(fits) else 0.0
    top.set_ylim(bottom=0, top=max(1.0, fastest * 1.15))
    # Trials with no throughput sit on the axis's foot, marked by what stopped them.
    for rows, color, marker, label in (
        (oom, OOM_COLOR, "x", "out of memory"),
        (other, ERROR_COLOR, "s", "error / timed out"),
    ):
        if len(rows):
            top.plot(rows["batch_size"], np.zeros(len(rows)), marker, color=color,
                     markersize=10, mew=2, clip_on=False, label=label)  # fmt: skip
    largest = result.get("largest_batch_size")
    if largest:
        top.axvline(largest, color="tab:green", linestyle="--", linewidth=1.5,
                    label=f"{limit_words(result)}: {largest:,}")  # fmt: skip
    top.set_ylabel("training throughput (images/s, steady)")
    top.legend(loc="best", fontsize=8)
    top.grid(alpha=0.3)
    run = result.get("run", {})
    devices = (result.get("devices") or {}).get("backend", {}).get("devices") or ["?"]
    top.set_title(
        f"{run.get('workload', '?')} on {', '.join(devices)}: {run.get('backend', '?')}, "
        f"{run.get('precision', '?')}\n{result.get('stopped', {}).get('text', '')}",
        fontsize=9,
    )
    top.text(0.99, 0.97, SYNTHETIC_LABEL, transform=top.transAxes, ha="right", va="top",
             fontsize=10, color="darkred", weight="bold")  # fmt: skip

    device = fits.dropna(subset=["device_memory_peak_mib"])
    if len(device):
        bottom.plot(device["batch_size"], device["device_memory_peak_mib"], "o-",
                    color="tab:purple", label="peak device memory (framework)")  # fmt: skip
    rss = fits.dropna(subset=["rss_peak_mib"])
    if len(rss):
        bottom.plot(rss["batch_size"], rss["rss_peak_mib"], "^--", color="tab:gray",
                    label="peak process RSS (host)")  # fmt: skip
    if not len(device):
        bottom.set_title("peak device memory: not measured (CPU trials)", fontsize=8,
                         loc="left", color="dimgray")  # fmt: skip
    limit = (result.get("memory_limit") or {}).get("mib")
    if limit:
        bottom.axhline(limit, color=OOM_COLOR, linestyle=":", linewidth=1,
                       label=f"--memory-limit {limit:,} MiB (RLIMIT_DATA)")  # fmt: skip
    bottom.set_ylim(bottom=0)
    bottom.set_ylabel("peak memory (MiB)")
    bottom.set_xlabel("batch size (images, log2 scale)")
    bottom.grid(alpha=0.3)
    if bottom.get_legend_handles_labels()[0]:
        bottom.legend(loc="best", fontsize=8)
    fig.text(0.01, 0.0, result.get("data", SYNTHETIC_LABEL), fontsize=7, color="dimgray",
             ha="left", va="top", wrap=True)  # fmt: skip
    fig.tight_layout()
    with atomic_path(path, suffix=".png") as tmp:
        fig.savefig(tmp, dpi=150, bbox_inches="tight", format="png")
    plt.close(fig)
