"""Figures and tables of the measured runs (matplotlib; PNG and PDF).

* fig1_preprocessing: one frame through original -> crop -> equalised -> inverted -> one
  rotation -> downsized (paper figure 1);
* fig4_test_accuracy: test accuracy per epoch per target, median over repeats with the
  min-max band (paper figure 4);
* fig5_6_training_time: training time per target, CPU targets in hours and GPU targets in
  minutes (median, min-max error bars), with the paper's own times (309 min 2-core laptop,
  134 min 4-core desktop) drawn beside ours and labelled with their workload (figures 5, 6);
* epoch_times: first epoch (tracing/compilation) apart from the steady-state epoch;
* throughput: steady-state training throughput (images/s) per target;
* efficiency: achieved training GFLOP/s as a share of the calibration probe's (the
  machine's measured limit on the run's cores and threads);
* cost: training time and cost relative to a base target (minimaxir's normalisation);
* backends: throughput and time to accuracy per Keras backend;
* sweeps: throughput and final accuracy per sweep point (batch size x threads);
* paper_vs_ours: the paper's values beside ours, as ratios;
* utilisation/<target>-repeat-<k>: CPU %, memory, GPU utilisation and memory over time;
* tables (CSV and Markdown): results_table (per run), summary_table (per target),
  cost_table, paper_comparison, provenance.

Every figure carries the dataset's label (e.g. "SYNTHETIC frames") on its face. Per-target
statistics use every run; titles say how many carry a flag (:mod:`embryo_bench.reporting.stability`:
interfered, drifted), and a target whose every run is flagged is drawn hatched grey. Only measured
values are drawn; the paper's values are drawn as the paper's; missing readings are written
as "not measured", never filled in.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..data import preprocess
from ..data.stages import read_selection
from ..io import atomic_path
from ..published import paper
from ..vocabulary.layout import FIGURE_FORMATS, FIGURE_NAMES, TABLE_NAMES, utilisation_name
from ..vocabulary.spec import Preprocessing
from . import compare, summary
from .runs import Run

COLORS = {"tensorflow": "tab:blue", "jax": "tab:orange", "torch": "tab:red"}


def _save(
    fig: plt.Figure, out_dir: Path, name: str, footer: str, exts: tuple = FIGURE_FORMATS
) -> None:
    if name not in FIGURE_NAMES and not name.startswith("utilisation/"):
        raise ValueError(f"figure {name!r} is not in embryo_bench.vocabulary.layout.FIGURE_NAMES")
    fig.text(0.01, -0.06, footer, fontsize=7, color="dimgray", ha="left", va="top")
    for ext in exts:
        path = out_dir / f"{name}.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=f".{ext}") as tmp:
            fig.savefig(tmp, dpi=150, bbox_inches="tight", format=ext)
    plt.close(fig)


def _empty(ax, text: str) -> None:
    ax.text(
        0.5,
        0.5,
        text,
        ha="center",
        va="center",
        transform=ax.transAxes,
        fontsize=9,
        color="dimgray",
    )
    ax.set_xticks([])
    ax.set_yticks([])


def _errorbars(df: pd.DataFrame, col: str, scale: float = 1.0):
    """Median of ``col`` x ``scale`` per row and its min-max distances, shape (2, N); NaN
    where one run was summarised (no spread to show: matplotlib draws no bar there)."""
    med = df[f"{col}_median"].to_numpy(float) * scale
    lo = med - df[f"{col}_min"].to_numpy(float) * scale
    hi = df[f"{col}_max"].to_numpy(float) * scale - med
    err = np.vstack([lo, hi])
    if "repeats" in df:
        err[:, df["repeats"].to_numpy(int) <= 1] = np.nan
    return med, err


def _bars(ax, x, med, err, width: float = 0.8, **kw):
    """Bars at ``x`` with min-max error bars where there is a spread (:func:`_errorbars`)."""
    bars = ax.bar(x, med, width, **kw)
    x = np.asarray(x, dtype=float)
    spread = np.isfinite(err).all(axis=0) & np.isfinite(med)
    if spread.any():
        ax.errorbar(
            x[spread], med[spread], yerr=err[:, spread], fmt="none", ecolor="black", capsize=3, lw=1
        )
    return bars


def _target_ticks(ax, names: list[str]) -> None:
    """Target names under the bars, slanted when there are many, so they never overlap."""
    many = len(names) > 4
    ax.set_xticks(
        range(len(names)),
        names,
        fontsize=7,
        rotation=25 if many else 0,
        ha="right" if many else "center",
    )


#: How a target whose every run carries a flag is drawn (its runs still count).
FLAGGED_HATCH = "//"
FLAGGED_NOTE = "hatched grey: every run flagged (results_table: flags, flag_reasons)"


def _mark_flagged(bars, summ: pd.DataFrame) -> list:
    """Draw the bars of targets without a clean run hatched and grey; returns the legend
    entries ([(handle, label)]) to add, if any bar was marked."""
    from matplotlib.patches import Patch

    marked = False
    for bar, clean in zip(bars, summ["clean_runs"], strict=True):
        if clean == 0:
            bar.set_hatch(FLAGGED_HATCH)
            bar.set_facecolor("lightgray")
            bar.set_edgecolor("dimgray")
            marked = True
    if not marked:
        return []
    swatch = Patch(facecolor="lightgray", hatch=FLAGGED_HATCH, edgecolor="dimgray")
    return [(swatch, FLAGGED_NOTE)]


def _legend(ax, entries: list, **kw) -> None:
    """A legend of ``entries`` ([(handle, label)]), outside the axes on the right."""
    if entries:
        handles, labels = zip(*entries, strict=True)
        kw = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 7, **kw}
        ax.legend(handles, labels, **kw)


def _backend_entries(backends) -> list:
    """Legend entries for the backend colours of :data:`COLORS` present in ``backends``."""
    from matplotlib.patches import Patch

    present = list(dict.fromkeys(backends))
    return [(Patch(color=COLORS.get(b, "tab:gray")), f"Keras on {b}") for b in present]


def _flagged(summ: pd.DataFrame) -> str:
    """How many of the runs counted carry a flag, for a title."""
    n = int(summ["flagged_runs"].sum())
    return f"; {n} of {int(summ['repeats'].sum())} runs flagged, all counted" if n else ""


def _target_bars(ax, summ: pd.DataFrame, col: str, scale: float, label: str) -> None:
    """One bar per target of ``col`` (median x ``scale``, min-max error bars where more than
    one run), coloured by backend (with its legend), each labelled with ``label`` formatted
    with its value; targets without a clean run hatched (:func:`_mark_flagged`)."""
    med, err = _errorbars(summ, col, scale)
    colors = [COLORS.get(b, "tab:gray") for b in summ["backend"]]
    bars = _bars(ax, range(len(summ)), med, err, color=colors)
    for i, v in enumerate(med):
        if np.isfinite(v):
            ax.annotate(label.format(v), (i, v), ha="center", va="bottom", fontsize=7)
        else:  # no reading: said on the figure, not an empty slot that reads as zero
            ax.annotate("not measured", (i, 0), ha="center", va="bottom", fontsize=7)
    _target_ticks(ax, list(summ["target"]))
    ax.margins(y=0.15)
    _legend(ax, _backend_entries(summ["backend"]) + _mark_flagged(bars, summ))


VERDICT_COLORS = {"faster": "tab:green", "slower": "tab:red"}


def _comparison_label(row, measure: str, paired: pd.DataFrame) -> str:
    """The text beside one row of the comparison figure: "base: N run(s) measured", the
    ratio (geometric mean) with its interval and verdict and how many pairs, the ratio alone below
    :data:`embryo_bench.reporting.summary.INTERVAL_MIN_PAIRS` pairs, or the verdict where
    there is no ratio; "unpaired" on a row compared without pairs."""
    verdict = row[f"{measure}_verdict"]
    if verdict == "base":
        return f"base: {summary.pair_count(row, measure)} run(s) measured"
    words = [summary.ratio_text(row, measure), summary.verdict_text(row, measure, paired)]
    if summary.shows_interval(row, measure) and not summary.is_unpaired(row):
        words.append(f"{summary.pair_count(row, measure)} pairs")
    if summary.is_unpaired(row):
        words.append("unpaired")
    return ", ".join(w for w in words if w)


def _comparison_row(ax, row, measure: str, med: float, yi: float, paired: pd.DataFrame) -> None:
    """One row of a comparison panel at height ``yi``: its point (with the interval where
    :func:`embryo_bench.reporting.summary.shows_interval`; hollow when unpaired) and its
    text in a column right of the panel (:func:`_comparison_label`)."""
    if np.isfinite(med):
        interval = summary.shows_interval(row, measure)
        color = VERDICT_COLORS.get(row[f"{measure}_verdict"], "dimgray") if interval else "dimgray"
        style = {
            "color": color,
            **({"mfc": "white", "mew": 1.5} if summary.is_unpaired(row) else {}),
        }
        if interval:
            lo, hi = float(row[f"{measure}_low"]), float(row[f"{measure}_high"])
            xerr = [[med - lo], [hi - med]]
            ax.errorbar(med, yi, xerr=xerr, fmt="o", capsize=3, lw=1.5, **style)
        else:
            ax.plot([med], [yi], "o", **style)
    ax.annotate(
        _comparison_label(row, measure, paired),
        (1.0, yi),
        xycoords=("axes fraction", "data"),
        xytext=(6, 0),
        textcoords="offset points",
        ha="left",
        va="center",
        fontsize=7,
        annotation_clip=False,
    )


def fig_comparison(comparison: pd.DataFrame, order_note: str, out_dir: Path, footer: str) -> None:
    """The headline: each target's throughput and time-to-accuracy speed relative
    to the base target, one row per target, a line at 1.0: the ratio (geometric mean) with its 95 %
    interval, green / red where the difference is measured
    (:func:`embryo_bench.reporting.compare.comparison_table`), grey where it is not. A ratio
    from fewer than :data:`embryo_bench.reporting.summary.INTERVAL_MIN_PAIRS` rounds is a plain
    point, and the title says once why (:func:`embryo_bench.reporting.summary.interval_note`);
    a row compared without pairs (``pairing`` "unpaired") is a hollow point. Each row's
    numbers are written in a column right of its panel, so no text lies over a point, a bar
    or the line at 1; a panel with no ratio at all says why in one line."""
    fig, axes = plt.subplots(
        1,
        2,
        figsize=(12, 2.4 + 0.5 * len(comparison)),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    y = np.arange(len(comparison))[::-1]
    base = comparison["target"].iloc[0]
    for ax, (measure, title) in zip(
        axes[0],
        (("throughput", "throughput (images/s)"), ("time_to_accuracy", "time to accuracy")),
        strict=True,
    ):
        ratios = pd.to_numeric(comparison[f"{measure}_ratio"], errors="coerce")
        if not np.isfinite(ratios).any():  # one line for the panel, not one per row
            why = "no ratio to draw"
            if summary.base_unreached(comparison, measure):
                why = f"{base} never reached the accuracy target: {why}"
            ax.text(0.5, 0.5, why, transform=ax.transAxes, ha="center", va="center", fontsize=8,
                    color="dimgray")  # fmt: skip
            ax.set_xticks([])
        else:
            ax.set_xlabel("speed ratio to the base (above 1: faster)")
            ax.axvline(1.0, color="black", lw=1)
            for yi, med, (_, row) in zip(y, ratios, comparison.iterrows(), strict=True):
                _comparison_row(ax, row, measure, med, yi, comparison)
        ax.set_title(f"{title}, relative to {base}", fontsize=9)
        ax.margins(x=0.15, y=0.3)
    axes[0][0].set_yticks(y, comparison["target"], fontsize=8)
    note = summary.interval_note(comparison)
    fig.suptitle(
        f"Comparison with {base}: ratio (geometric mean) with its 95 % interval; "
        f"{int(comparison['flagged_runs'].sum())} run(s) flagged, all counted\n{order_note}"
        + (f"\n{note}" if note else ""),
        fontsize=9,
    )
    _save(fig, out_dir, "comparison", footer)


def fig_preprocessing(selection: str, pp: Preprocessing, out_dir: Path, footer: str) -> None:
    """Paper figure 1: the first selected frame through every preprocessing step (the
    stages' own functions, :mod:`embryo_bench.data.preprocess`)."""
    row = read_selection(selection).iloc[0]
    frame = preprocess.read_frame(row["path"], pp.frame_size)
    crop = preprocess.centre_crop(frame, pp.crop_fraction)
    eq = preprocess.equalize(crop)
    inv = preprocess.invert(eq, pp.invert_centre)
    angles = preprocess.rotation_angles(pp.rotation_step)
    angle = angles[1] if len(angles) > 1 else angles[0]
    rot = preprocess.rotate(inv, angle)
    small = preprocess.resize(rot, pp.image_size)
    inv_max = max(pp.invert_centre, 255 - pp.invert_centre)  # range after inversion
    panels = [
        (frame, f"original {frame.shape[0]} px", 255),
        (crop, f"centre crop {crop.shape[0]} px", 255),
        (eq, "histogram equalised", 255),
        (inv, f"inverted |p - {pp.invert_centre}|", inv_max),
        (rot, f"rotated {angle:g} deg", inv_max),
        (small, f"downsized {pp.image_size} px", inv_max),
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


#: Line styles and markers cycled per target in figure 4, so lines that coincide stay visible.
LINE_STYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


def fig_accuracy(runs: list[Run], main: list[str], out_dir: Path, footer: str) -> None:
    """Paper figure 4: test accuracy per epoch of each main target, median over repeats with
    the min-max band (n > 1); each target its own line style and marker."""
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.5, 4))
    drawn = [name for name in main if any(r.name == name for r in runs)]
    for k, name in enumerate(drawn):
        hs = [r.history for r in runs if r.name == name]
        acc = pd.concat([h.set_index("epoch")["test_accuracy"] for h in hs], axis=1)
        (line,) = ax.plot(
            acc.index,
            acc.median(axis=1),
            ls=LINE_STYLES[k % len(LINE_STYLES)],
            marker=MARKERS[k % len(MARKERS)],
            ms=5,
            mfc="none",
            label=f"{name} (n={len(hs)})",
        )
        if len(hs) > 1:
            ax.fill_between(
                acc.index, acc.min(axis=1), acc.max(axis=1), alpha=0.2, color=line.get_color()
            )
    target = runs[0].metrics["accuracy_target"]
    ax.axhline(target, ls="--", color="gray", lw=0.8, label=f"accuracy target {target:g}")
    ax.axhline(0.25, ls=":", color="lightgray", lw=0.8, label="chance (4 classes)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Test accuracy per epoch (measured; median, min-max over repeats)", fontsize=9)
    _save(fig, out_dir, "fig4_test_accuracy", footer)


def _time_unit(seconds: float) -> tuple[str, float]:
    """The unit a duration of ``seconds`` reads best in: (name, seconds per unit)."""
    if not np.isfinite(seconds) or seconds < 120:
        return "s", 1.0
    if seconds < 2 * 3600:
        return "min", 60.0
    return "h", 3600.0


def _workload(g: pd.DataFrame) -> str | None:
    """ "<images> images x <epochs> epochs" when every target in ``g`` trained the same."""
    pairs = set(zip(g["train_images"], g["epochs"], strict=True))
    if len(pairs) != 1:
        return None
    images, epochs = pairs.pop()
    return f"{int(images):,} images x {int(epochs)} epochs"


def fig_training_time(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Paper figures 5/6: training time per main target (median, min-max error bars where
    more than one run), each group in its own panel and unit (ours on CPUs, ours on GPUs when
    a GPU target ran, the paper's 2017 CPU times), every panel naming its workload: the
    paper's runs trained far more images than a demo, so one shared axis would hide ours."""
    groups = [
        (title, g, color)
        for title, g, color in (
            ("CPU targets, ours", summ[summ["gpus"] == 0], "tab:blue"),
            ("GPU targets, ours", summ[summ["gpus"] > 0], "tab:green"),
        )
        if len(g)
    ] or [("ours", summ, "tab:blue")]
    widths = [max(len(g), 1) + 1 for _, g, _ in groups] + [len(paper.TRAINING_MINUTES) + 1]
    fig, axes = plt.subplots(
        1, len(widths), figsize=(3 + 1.1 * sum(widths), 4), gridspec_kw={"width_ratios": widths}
    )
    for ax, (title, g, color) in zip(axes, groups, strict=False):
        if g.empty:
            _empty(ax, "no target measured")
            ax.set_title(title, fontsize=9)
            continue
        unit, per = _time_unit(float(np.nanmax(g["training_s_max"])))
        med, err = _errorbars(g, "training_s", 1 / per)
        bars = _bars(ax, range(len(g)), med, err, color=color)
        for i, v in enumerate(med):
            ax.annotate(f"{v:.3g} {unit}", (i, v), ha="center", va="bottom", fontsize=7)
        trained = _workload(g)
        names = [f"{n}\nn={k}" for n, k in zip(g["target"], g["repeats"], strict=True)]
        if trained is None:  # the targets trained different amounts: each label says
            names = [
                f"{n}\n{int(i):,} img x {int(e)} ep"
                for n, i, e in zip(names, g["train_images"], g["epochs"], strict=True)
            ]
        _target_ticks(ax, names)
        ax.set_ylabel(f"training time ({unit})")
        ax.margins(y=0.15)
        ax.set_title(f"{title}\n{trained or 'workloads differ (see labels)'}", fontsize=8)
        _legend(ax, _mark_flagged(bars, g), loc="upper left", bbox_to_anchor=(0, -0.25))
    ax = axes[-1]
    hours = [m / 60 for m in paper.TRAINING_MINUTES.values()]
    ax.bar(range(len(hours)), hours, color="tab:gray")
    for i, h in enumerate(hours):
        ax.annotate(f"{h:.3g} h", (i, h), ha="center", va="bottom", fontsize=7)
    _target_ticks(ax, list(paper.TRAINING_MINUTES))
    ax.set_ylabel("training time (h)")
    ax.margins(y=0.15)
    ax.set_title(
        f"Paper 2017 (its text), CPU systems\n{paper.TRAIN_IMAGES:,} images x "
        f"{paper.EPOCHS} epochs",
        fontsize=8,
    )
    fig.suptitle(
        f"Training time (fit only; median, min-max over repeats{_flagged(summ)})", fontsize=9
    )
    fig.tight_layout()
    _save(fig, out_dir, "fig5_6_training_time", footer)


def fig_epoch_times(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """First epoch (tracing, compilation, warm-up) apart from the steady-state epoch
    (mean of epochs 2..), median and min-max over repeats (MLPerf's separation)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(summ))
    first, first_err = _errorbars(summ, "first_epoch_s")
    steady, steady_err = _errorbars(summ, "steady_epoch_s")
    _bars(ax, x - 0.2, first, first_err, 0.4, label="first epoch", color="tab:orange")
    _bars(ax, x + 0.2, steady, steady_err, 0.4, label="steady-state epoch", color="tab:blue")
    _target_ticks(ax, list(summ["target"]))
    ax.set_ylabel("epoch time (s)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"First vs steady-state epoch (median, min-max{_flagged(summ)})", fontsize=9)
    _save(fig, out_dir, "epoch_times", footer)


def fig_throughput(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Steady-state training throughput (images/s) per target, median and min-max."""
    fig, ax = plt.subplots(figsize=(7, 4))
    _target_bars(ax, summ, "images_per_s", 1.0, "{:.0f}")
    ax.set_ylabel("training throughput (images/s)")
    ax.set_title(
        f"Steady-state training throughput (epochs 2..; median, min-max{_flagged(summ)})",
        fontsize=9,
    )
    _save(fig, out_dir, "throughput", footer)


def fig_efficiency(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Efficiency against the machine's limit: achieved GFLOP/s (training FLOPs per image x
    images/s) as a fraction of the calibration probe's GFLOP/s on the same cores and
    threads, per target (median, min-max)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    if summ["efficiency_median"].isna().all():
        _empty(ax, "not measured (no calibration probe in these runs)")
    else:
        _target_bars(ax, summ, "efficiency", 100.0, "{:.0f} %")
        ax.set_ylabel("achieved / probe GFLOP/s (%)")
    ax.set_title(
        "Training FLOPs/s as a share of the matmul probe's (3 x forward FLOPs per image; "
        f"median, min-max{_flagged(summ)})",
        fontsize=8,
    )
    _save(fig, out_dir, "efficiency", footer)


def fig_cost(
    norm: pd.DataFrame | None, base: str | None, why: str, out_dir: Path, footer: str
) -> None:
    """Training time and cost of each priced target relative to the base target."""
    fig, ax = plt.subplots(figsize=(7, 4))
    if norm is None or norm.empty:
        _empty(ax, why)
    else:
        x = np.arange(len(norm))
        ax.bar(x - 0.2, norm["time_relative"], 0.4, label="training time", color="tab:blue")
        ax.bar(x + 0.2, norm["cost_relative"], 0.4, label="cost", color="tab:green")
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xticks(x, list(norm["target"]), fontsize=7, rotation=20)
        ax.set_ylabel(f"relative to {base} (= 1)")
        ax.legend(fontsize=7)
    ax.set_title(
        "Time and cost relative to the base target (median runs; config prices)", fontsize=9
    )
    _save(fig, out_dir, "cost", footer)


def fig_backends(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Throughput and time to accuracy of every main target, coloured by Keras backend."""
    fig, (ax_t, ax_a) = plt.subplots(1, 2, figsize=(11, 4))
    x = np.arange(len(summ))
    colors = [COLORS.get(b, "tab:gray") for b in summ["backend"]]
    labels = [f"{t}\n{b}" for t, b in zip(summ["target"], summ["backend"], strict=True)]
    med, err = _errorbars(summ, "images_per_s")
    _bars(ax_t, x, med, err, color=colors)
    ax_t.set_xticks(x, labels, fontsize=7)
    ax_t.set_ylabel("training throughput (images/s)")
    ax_t.set_title("Throughput per backend", fontsize=9)
    tta = summ["time_to_accuracy_s_median"].to_numpy(float)
    ax_a.bar(x, np.nan_to_num(tta), color=colors)
    for i, (v, row) in enumerate(zip(tta, summ.itertuples(), strict=True)):
        text = (
            f"{v:.0f} s ({row.tta_reached}/{row.repeats} reached)"
            if np.isfinite(v)
            else f"not reached\n(final accuracy {row.final_test_accuracy_median:.3f})"
        )
        ax_a.annotate(
            text, (i, 0 if not np.isfinite(v) else v), ha="center", va="bottom", fontsize=6
        )
    if not np.isfinite(tta).any():
        ax_a.set_ylim(0, 1)
        ax_a.set_yticks([])
    ax_a.set_xticks(x, labels, fontsize=7)
    ax_a.set_ylabel("time to accuracy target (s)")
    ax_a.set_title("Time to accuracy per backend", fontsize=9)
    ax_a.margins(y=0.3)
    _legend(ax_a, _backend_entries(summ["backend"]))
    _save(fig, out_dir, "backends", footer)


def fig_sweeps(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Throughput and final test accuracy per sweep point: x = batch size, one line per
    swept target, thread count and precision (named where not float32)."""
    fig, (ax_t, ax_a) = plt.subplots(1, 2, figsize=(11, 4))
    points = summ[summ["sweep"] != ""]
    if points.empty:
        _empty(ax_t, "no sweeps: in this config")
        _empty(ax_a, "no sweeps: in this config")
    if "precision" not in points:  # tables written before precision was recorded
        points = points.assign(precision="float32")
    for (base, threads, precision), g in points.groupby(["sweep", "threads", "precision"]):
        g = g.sort_values("batch_size")
        label = f"{base}, {threads} thread{'s' if threads != 1 else ''}"
        label += "" if precision == "float32" else f", {precision}"
        for ax, col in ((ax_t, "images_per_s"), (ax_a, "final_test_accuracy")):
            med, err = _errorbars(g, col)
            spread = err if np.isfinite(err).any() else None
            ax.errorbar(g["batch_size"], med, yerr=spread, marker="o", capsize=3, label=label)
    for ax, ylabel in ((ax_t, "training throughput (images/s)"), (ax_a, "final test accuracy")):
        if not points.empty:
            ax.set_xscale("log", base=2)
            sizes = sorted(points["batch_size"].unique())
            ax.set_xticks(sizes, [str(b) for b in sizes])
            ax.minorticks_off()
            ax.set_xlabel("batch size")
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=7)
    ax_t.set_title("Sweep: throughput", fontsize=9)
    ax_a.set_title("Sweep: final test accuracy (same epochs for every point)", fontsize=9)
    _save(fig, out_dir, "sweeps", footer)


def fig_paper_vs_ours(comparison: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Our value / the paper's for every comparable quantity (1 = as in the paper)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    rows = comparison[comparison["ratio"].notna()]
    if rows.empty:
        _empty(ax, "nothing comparable measured")
    else:
        y = np.arange(len(rows))
        ax.barh(y, rows["ratio"].astype(float), color="tab:purple")
        ax.axvline(1.0, color="gray", ls="--", lw=0.8)
        ax.set_yticks(y, list(rows["quantity"]), fontsize=7)
        for yi, (r, ours) in enumerate(zip(rows["ratio"], rows["ours"], strict=True)):
            ax.annotate(f" {float(r):.3g}  ({ours})", (float(r), yi), va="center", fontsize=6)
        ax.set_xscale("log")
        ax.set_xlabel("ours / paper (log scale; times per image-epoch)")
        ax.margins(x=0.6)
    missing = comparison[comparison["ratio"].isna()]
    if len(missing):
        ax.set_title(
            "Paper vs reproduction; not compared: " + "; ".join(missing["quantity"]), fontsize=7
        )
    else:
        ax.set_title("Paper vs reproduction", fontsize=9)
    _save(fig, out_dir, "paper_vs_ours", footer)


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
        _empty(ax, "not measured (no windows.csv)")
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
            _empty(ax, "not measured")
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
    _save(fig, out_dir, name, footer, exts=("png",))


def _write_table(
    table: pd.DataFrame,
    out_dir: Path,
    name: str,
    label: str,
    readable: pd.DataFrame | None = None,
    note: str = "",
) -> None:
    """``name``.csv with every column of ``table``; ``name``.md with ``readable`` (the few
    columns a person reads) or else ``table``, under the data's label and ``note``
    (a sentence on the whole table)."""
    if name not in TABLE_NAMES:
        raise ValueError(f"table {name!r} is not in embryo_bench.vocabulary.layout.TABLE_NAMES")
    with atomic_path(out_dir / f"{name}.csv") as tmp:
        table.to_csv(tmp, index=False)
    with atomic_path(out_dir / f"{name}.md") as tmp:
        shown = table if readable is None else readable
        text = shown.to_markdown(index=False, floatfmt=".4g")
        head = f"Data: **{label}**\n\n" + (f"{note}\n\n" if note else "")
        if readable is not None:
            head += f"Every column: {name}.csv.\n\n"
        tmp.write_text(f"{head}{text}\n")


def _not_this_workload(out_dir: Path, name: str, what: str, workload: str, footer: str) -> None:
    """A figure of the paper's workload only, drawn for another workload as one panel that
    says so (the figures job's outputs are the same set for every workload)."""
    fig, ax = plt.subplots(figsize=(6, 2))
    _empty(ax, f"{what} belongs to the paper's workload; workload {workload} has none")
    _save(fig, out_dir, name, footer)


def make_all(
    runs: list[Run],
    targets: dict[str, dict],
    source: dict,
    preprocessing: Preprocessing | None,
    selection: str | None,
    out_dir: str | Path,
    cost_base: str = "",
    cost_note: str = "",
    stability: dict | None = None,
    counts: dict | None = None,
    merged: list[Run] = (),
    compare_base: str = "",
    min_difference: float = 0.05,
    baseline: dict | None = None,
    rounds_note: str = "",
) -> None:
    """Write every figure and table (the ``figures`` rule).

    Args:
        runs: every run (:func:`embryo_bench.reporting.runs.load_runs`).
        targets: target name -> report fields (price, paper system, sweep point).
        source: the index stage's ``source.json``, or a workload's data info (the data's
            ``label``, ``synthetic`` or not, and for a workload its ``workload``).
        preprocessing: the settings the training data was made with (figure 1): given for
            a workload of input kind shards (the paper's, whose figures job is given the
            stages' outputs); None for a workload on arrays (figure 1 and the paper's values
            then say they are the paper's workload's).
        selection: ``selected.csv`` (figure 1's frame); None with ``preprocessing``.
        out_dir: the figures folder.
        cost_base, cost_note: as :func:`embryo_bench.planning.bases.cost_base`.
        stability: the config's stability thresholds (default: the schema's).
        counts: the select stage's ``summary.json`` (data counts beside the paper's).
        merged: runs made elsewhere (:func:`embryo_bench.reporting.merge.merge_runs`): in every
            table and figure but the per-run utilisation figures (those are this workflow's);
            the comparison compares them unpaired (they ran in other rounds).
        compare_base, min_difference: ``compare.base`` as resolved
            (:attr:`embryo_bench.planning.plan.Plan.compare_base`; "": the first run's target) and
            ``compare.min_difference``. ``runs`` must come in the planned order
            (:attr:`embryo_bench.planning.plan.Plan.runs`): the comparison checks the runs' start
            times against it.
        rounds_note: why the rounds stopped (``compare.until``:
            :meth:`embryo_bench.planning.rounds.Decision.note`), said under the comparison
            tables; "" without it.

    Raises:
        ConfigError: the cost base target did not run or is unpriced.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    own, runs = runs, [*runs, *merged]
    label = source["label"]
    footer = f"data: {label}"
    if source.get("synthetic"):
        footer = "SYNTHETIC DATA - " + footer
    table = summary.run_table(runs, targets, label, stability, baseline)
    summ = summary.target_summary(table)
    main_names = [n for n, t in targets.items() if not t.get("sweep")]
    main = summ[summ["sweep"] == ""]
    workload = source.get("workload", "")
    if workload:
        footer = f"workload {workload}; {footer}"
    # The paper's own figure 1 and values are drawn from the stages' outputs, which the
    # figures job of a workload on shards is given; another workload's figures say so.
    on_shards = preprocessing is not None and selection is not None
    if not on_shards:
        _not_this_workload(out_dir, "fig1_preprocessing", "Figure 1", workload, footer)
    else:
        fig_preprocessing(selection, preprocessing, out_dir, footer)
    fig_accuracy(runs, main_names, out_dir, footer)
    fig_training_time(main, out_dir, footer)
    fig_epoch_times(main, out_dir, footer)
    fig_throughput(main, out_dir, footer)
    fig_efficiency(main, out_dir, footer)
    fig_backends(main, out_dir, footer)
    fig_sweeps(summ, out_dir, footer)
    norm, why = summary.cost_summary(main, cost_base, cost_note)
    fig_cost(norm, cost_base or None, why, out_dir, footer)
    ours = table.iloc[: len(own)]
    # Merged runs ran in other rounds (their repeat numbers are not ours): compared unpaired.
    elsewhere = set(table["target"].iloc[len(own) :])
    paired = compare.comparison_table(
        table, compare_base or ours["target"].iloc[0], min_difference, elsewhere=elsewhere
    )
    ordered, order_note = compare.in_planned_order(
        ours, [(r.name, r.metrics["repeat"]) for r in own]
    )
    order_note = ("NOT IN PLANNED ORDER: " if ordered is False else "") + order_note
    fig_comparison(paired, order_note, out_dir, footer)
    if not on_shards:
        comparison = pd.DataFrame(
            {"quantity": [f"the paper's values are its workload's, not {workload}'s"]}
        )
        _not_this_workload(out_dir, "paper_vs_ours", "The paper's values", workload, footer)
    else:
        comparison = summary.paper_comparison(main, table, targets, counts)
        fig_paper_vs_ours(comparison, out_dir, footer)
    for r in own:
        fig_utilisation(r, out_dir, utilisation_name(r.planned_name, r.metrics["repeat"]), footer)
    paired_note = (
        f"Each target's speed relative to {paired['target'].iloc[0]}'s (above 1: faster). "
        "Paired rows: the geometric mean of the ratios within each round, with a 95 % "
        "t interval on their logarithms. Unpaired rows (runs merged from elsewhere, or no "
        "round shared with the base): the ratio of the geometric means, with Welch's 95 % "
        "t interval, wider as the rounds' speeds do not cancel. A difference is called only "
        f"with at least {compare.MIN_PAIRS} pairs (unpaired: runs on each side), an interval "
        f"that excludes 1 and a ratio further from 1 than {min_difference:.0%} on the log "
        f"scale (above {1 + min_difference:.3g} or below {1 / (1 + min_difference):.3g}; "
        f"compare.min_difference). {order_note}. "
        + summary.comparison_note(paired)  # once here, not on every row
    ).strip()
    if rounds_note:  # compare.until: why the rounds stopped
        paired_note += f" Rounds: {rounds_note}."
    _write_table(
        paired.assign(min_difference=min_difference, order=order_note),
        out_dir,
        "comparison_table",
        label,
        summary.readable_comparison(paired),
        paired_note,
    )
    _write_table(table, out_dir, "results_table", label, summary.readable_runs(table))
    _write_table(
        summ, out_dir, "summary_table", label, summary.readable_summary(summ, paired), paired_note
    )
    _write_table(
        norm if norm is not None else pd.DataFrame({"cost": [why]}), out_dir, "cost_table", label
    )
    _write_table(comparison, out_dir, "paper_comparison", label)
    _write_table(summary.provenance_table(runs), out_dir, "provenance", label)
