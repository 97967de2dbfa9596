"""A run's utilisation figure (``utilisation/<target>-repeat-<k>``, :func:`fig_utilisation`):
CPU %, memory, GPU utilisation and memory over time from its ``telemetry.csv``, its own
throughput per window of training steps (``windows.csv``) and the ends of its epochs.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from .plotting import empty_panel, save_named_figure
from .runs import Run


def _epoch_ends(run: Run, tel: pd.DataFrame) -> list[float]:
    """When each epoch ended, on the telemetry's time axis (s): history.csv's ended_unix_s
    against the samples' unix_s (the same wall clock, also across a container); [] for runs
    recorded without those columns."""
    h = run.history
    offset = _offset(tel)
    if h is None or "ended_unix_s" not in h or offset is None:
        return []
    return [float(t) + offset for t in pd.to_numeric(h["ended_unix_s"], errors="coerce").dropna()]


def _windows_panel(ax, run: Run, offset: float | None, ends: list[float]) -> None:
    """The run's throughput windows as steps over time (on the telemetry's axis when there
    is one, else seconds since the first window ended), with their median."""
    w = run.windows
    if w is None or w.empty:
        empty_panel(ax, "not measured (no windows.csv)")
        return
    ended = pd.to_numeric(w["ended_unix_s"], errors="coerce").to_numpy(float)
    t = ended + offset if offset is not None else ended - ended[0]
    ax.step(t, w["images_per_s"], where="post", lw=0.8, label="per window")
    summary_ = run.metrics.get("throughput_windows") or {}
    median = summary_.get("median_images_per_s")
    if median:
        ax.axhline(median, color="black", lw=0.8, ls="--", label=f"median {median:.0f}")
        ax.set_title(
            f"training throughput per {summary_['window_steps']} steps (CV {summary_['cv']:.1%})",
            fontsize=8,
        )
    for k, e in enumerate(ends if offset is not None else []):
        ax.axvline(e, color="gray", ls=":", lw=0.7, label="epoch ends" if k == 0 else None)
    ax.legend(fontsize=6)
    ax.set_xlabel("time (s)", fontsize=7)


#: Past this many samples a trace is drawn as a rolling median with a min-max band (a
#: 41-minute run's 1 Hz samples drawn one by one fill the panel solid).
ROLLING_FROM = 300


def _trace(ax, t, y, label: str, **kw) -> None:
    """``y`` against ``t`` as a line; past :data:`ROLLING_FROM` points, the rolling median
    of about 1/100 of them with the rolling min-max as a band (the label says so)."""
    t, y = pd.Series(np.asarray(t, float)), pd.Series(np.asarray(y, float))
    if len(y) <= ROLLING_FROM:
        ax.plot(t, y, lw=0.8, label=label, **kw)
        return
    w = max(5, len(y) // 100)
    roll = y.rolling(w, center=True, min_periods=1)
    label = f"{label} (rolling median of {w}, band min-max)"
    line = ax.plot(t, roll.median(), lw=0.9, label=label, **kw)
    ax.fill_between(t, roll.min(), roll.max(), color=line[0].get_color(), alpha=0.25, lw=0)


def _offset(tel: pd.DataFrame | None) -> float | None:
    """time_s - unix_s of the telemetry (s): puts wall-clock times on its time axis."""
    if tel is None or "unix_s" not in tel:
        return None
    samples = tel.dropna(subset=["unix_s"])
    if samples.empty:
        return None
    return float(samples["time_s"].iloc[0]) - float(samples["unix_s"].iloc[0])


def fig_utilisation(run: Run, out_dir: Path, name: str, footer: str) -> None:
    """One run over time (its telemetry.csv): CPU % of the run and of other processes on its
    cores, memory, (when the run had GPUs) GPU utilisation and memory, and the run's own
    throughput per window of training steps (windows.csv); dotted lines mark the
    ends of epochs. Long traces are drawn as rolling medians with a min-max band
    (:func:`_trace`). Panels without readings say "not measured"."""
    tel = run.telemetry
    m = run.metrics
    panels = [("cpu_percent", "CPU % (100 = one core)"), ("memory_mib", "memory (MiB)")]
    has_gpu = int(m.get("gpus") or 0) > 0 or (
        tel is not None and tel.get("gpu_util_percent", pd.Series(dtype=float)).notna().any()
    )
    if has_gpu:
        panels += [
            ("gpu_util_percent", "GPU utilisation %"),
            ("gpu_memory_mib", "GPU memory (MiB)"),
        ]
    panels.append(("images_per_s", "training throughput (images/s per window)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3))
    ends = _epoch_ends(run, tel) if tel is not None else []
    for ax, (col, title) in zip(axes, panels, strict=True):
        ax.set_title(title, fontsize=8)
        if col == "images_per_s":
            _windows_panel(ax, run, _offset(tel), ends)
            continue
        vals = None if tel is None else tel.dropna(subset=[col])
        if vals is None or vals.empty:
            empty_panel(ax, "not measured")
            continue
        if col.startswith("gpu"):
            for idx, g in vals.groupby("gpu_index"):
                _trace(ax, g["time_s"], g[col], f"GPU {int(idx)}")
        else:
            per_sample = vals.drop_duplicates("time_s")
            _trace(ax, per_sample["time_s"], per_sample[col], "this run")
            other = per_sample.get("other_cpu_percent", pd.Series(dtype=float))
            if col == "cpu_percent" and other.notna().any():
                _trace(
                    ax, per_sample["time_s"], other, "other processes, its cores", color="tab:red"
                )
        for k, t in enumerate(ends):
            ax.axvline(t, color="gray", ls=":", lw=0.7, label="epoch ends" if k == 0 else None)
        if len(ax.get_legend_handles_labels()[0]) > 1:
            ax.legend(fontsize=6)
        ax.set_xlabel("time (s)", fontsize=7)
    # How its batches were fed; a run whose steps mostly waited for them says so.
    wait = m.get("input_wait", {})
    feeding = f"{m.get('input_mode', 'memory')} input"
    if wait.get("share") is not None:
        feeding += f", steps waited {wait['share']:.0%} of training for data"
    if wait.get("input_bound"):
        feeding = f"INPUT-BOUND: {feeding}"
    fig.suptitle(
        f"{m['target']} repeat {m.get('repeat', 1)} ({m.get('runner', 'host')} runner; {feeding})",
        fontsize=9,
        y=1.04,
        color="tab:red" if wait.get("input_bound") else "black",
    )
    save_named_figure(fig, out_dir, name, footer, exts=("png",))
