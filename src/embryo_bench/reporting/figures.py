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
from ..vocabulary.layout import TABLE_NAMES, utilisation_name
from ..vocabulary.spec import Preprocessing
from . import compare, readable_tables, relative_time, robust, run_order, summary
from .comparison_figures import fig_comparison, fig_paper_vs_ours
from .plotting import (
    COLORS,
    add_legend,
    backend_entries,
    draw_bars,
    empty_panel,
    error_bars,
    flagged_note,
    label_heights,
    mark_flagged,
    save_named_figure,
    target_bars,
    target_ticks,
)
from .runs import Run
from .utilisation import fig_utilisation


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
    save_named_figure(fig, out_dir, "fig1_preprocessing", footer)


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
    save_named_figure(fig, out_dir, "fig4_test_accuracy", footer)


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
            empty_panel(ax, "no target measured")
            ax.set_title(title, fontsize=9)
            continue
        unit, per = _time_unit(float(np.nanmax(g["training_s_max"])))
        med, err = error_bars(g, "training_s", 1 / per)
        bars = draw_bars(ax, range(len(g)), med, err, color=color)
        for i, (v, y) in enumerate(zip(med, label_heights(med, err), strict=True)):
            ax.annotate(f"{v:.3g} {unit}", (i, y), ha="center", va="bottom", fontsize=7)
        trained = _workload(g)
        names = [f"{n}\nn={k}" for n, k in zip(g["target"], g["repeats"], strict=True)]
        if trained is None:  # the targets trained different amounts: each label says
            names = [
                f"{n}\n{int(i):,} img x {int(e)} ep"
                for n, i, e in zip(names, g["train_images"], g["epochs"], strict=True)
            ]
        target_ticks(ax, names)
        ax.set_ylabel(f"training time ({unit})")
        ax.margins(y=0.15)
        ax.set_title(f"{title}\n{trained or 'workloads differ (see labels)'}", fontsize=8)
        add_legend(ax, mark_flagged(bars, g), loc="upper left", bbox_to_anchor=(0, -0.25))
    ax = axes[-1]
    hours = [m / 60 for m in paper.TRAINING_MINUTES.values()]
    ax.bar(range(len(hours)), hours, color="tab:gray")
    for i, h in enumerate(hours):
        ax.annotate(f"{h:.3g} h", (i, h), ha="center", va="bottom", fontsize=7)
    target_ticks(ax, list(paper.TRAINING_MINUTES))
    ax.set_ylabel("training time (h)")
    ax.margins(y=0.15)
    ax.set_title(
        f"Paper 2017 (its text), CPU systems\n{paper.TRAIN_IMAGES:,} images x "
        f"{paper.EPOCHS} epochs",
        fontsize=8,
    )
    fig.suptitle(
        f"Training time (fit only; median, min-max over repeats{flagged_note(summ)})", fontsize=9
    )
    fig.tight_layout()
    save_named_figure(fig, out_dir, "fig5_6_training_time", footer)


def fig_epoch_times(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """First epoch (tracing, compilation, warm-up) apart from the steady-state epoch
    (mean of epochs 2..), median and min-max over repeats (MLPerf's separation)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    x = np.arange(len(summ))
    first, first_err = error_bars(summ, "first_epoch_s")
    steady, steady_err = error_bars(summ, "steady_epoch_s")
    draw_bars(ax, x - 0.2, first, first_err, 0.4, label="first epoch", color="tab:orange")
    draw_bars(ax, x + 0.2, steady, steady_err, 0.4, label="steady-state epoch", color="tab:blue")
    target_ticks(ax, list(summ["target"]))
    ax.set_ylabel("epoch time (s)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title(f"First vs steady-state epoch (median, min-max{flagged_note(summ)})", fontsize=9)
    save_named_figure(fig, out_dir, "epoch_times", footer)


def fig_throughput(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Steady-state training throughput (images/s) per target, median and min-max."""
    fig, ax = plt.subplots(figsize=(7, 4))
    target_bars(ax, summ, "images_per_s", 1.0, "{:,.0f}")
    ax.set_ylabel("training throughput (images/s)")
    ax.set_title(
        f"Steady-state training throughput (epochs 2..; median, min-max{flagged_note(summ)})",
        fontsize=9,
    )
    save_named_figure(fig, out_dir, "throughput", footer)


def fig_efficiency(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Efficiency against the machine's limit: achieved GFLOP/s (training FLOPs per image x
    images/s) as a fraction of the calibration probe's GFLOP/s on the same cores and
    threads, per target (median, min-max)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    if summ["efficiency_median"].isna().all():
        empty_panel(ax, "not measured (no calibration probe in these runs)")
    else:
        target_bars(ax, summ, "efficiency", 100.0, "{:.0f} %")
        ax.set_ylabel("achieved / probe GFLOP/s (%)")
    ax.set_title(
        "Training FLOPs/s as a share of the matmul probe's (3 x forward FLOPs per image; "
        f"median, min-max{flagged_note(summ)})",
        fontsize=8,
    )
    save_named_figure(fig, out_dir, "efficiency", footer)


def fig_cost(
    norm: pd.DataFrame | None, base: str | None, why: str, out_dir: Path, footer: str
) -> None:
    """Training time and cost of each priced target relative to the base target
    (:func:`embryo_bench.reporting.relative_time.cost_intervals`), each bar with its interval
    where the rounds give one (all of them holding together at 95 %)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    if norm is None or norm.empty:
        empty_panel(ax, why)
    else:
        x = np.arange(len(norm))
        for what, shift, color, name in (("time", -0.2, "tab:blue", "training time"),
                                         ("cost", 0.2, "tab:green", "cost")):  # fmt: skip
            mid = norm[f"{what}_relative"].to_numpy(float)
            err = np.vstack([mid - norm[f"{what}_low"].to_numpy(float),
                             norm[f"{what}_high"].to_numpy(float) - mid])  # fmt: skip
            draw_bars(ax, x + shift, mid, err, 0.4, label=name, color=color)
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xticks(x, list(norm["target"]), fontsize=7, rotation=20)
        ax.set_ylabel(f"relative to {base} (= 1)")
        ax.legend(fontsize=7)
    label = readable_tables.interval_label(
        norm["confidence"].iloc[0] if norm is not None and "confidence" in norm else None
    )
    ax.set_title(
        f"Time and cost relative to the base target (paired within the rounds, {label}; "
        "config prices)",
        fontsize=9,
    )
    save_named_figure(fig, out_dir, "cost", footer)


def fig_backends(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Throughput and time to accuracy of every main target, coloured by Keras backend; where
    no target reached the accuracy target, the throughput alone and one title line saying so
    (each target's final accuracy), not a panel of empty slots."""
    tta = summ["time_to_accuracy_s_median"].to_numpy(float)
    reached = bool(np.isfinite(tta).any())
    fig, axes = plt.subplots(1, 2 if reached else 1, figsize=(11 if reached else 7, 4),
                             squeeze=False)  # fmt: skip
    ax_t = axes[0][0]
    x = np.arange(len(summ))
    colors = [COLORS.get(b, "tab:gray") for b in summ["backend"]]
    labels = [f"{t}\n{b}" for t, b in zip(summ["target"], summ["backend"], strict=True)]
    med, err = error_bars(summ, "images_per_s")
    # Flagged runs marked as throughput.png marks them: hatched where a target has no clean
    # run, counted in the title.
    flagged = mark_flagged(draw_bars(ax_t, x, med, err, color=colors), summ)
    ax_t.set_xticks(x, labels, fontsize=7)
    ax_t.set_ylabel("training throughput (images/s)")
    ax_t.set_title(f"Throughput per backend{flagged_note(summ)}", fontsize=9)
    if not reached:
        finals = ", ".join(
            f"{t} {a:.3f}"
            for t, a in zip(summ["target"], summ["final_test_accuracy_median"], strict=True)
        )
        ax_t.set_title(
            f"Throughput per backend{flagged_note(summ)}\nno target reached the accuracy "
            f"target (final test accuracy: {finals})",
            fontsize=8,
        )
        add_legend(ax_t, backend_entries(summ["backend"]) + flagged)
        save_named_figure(fig, out_dir, "backends", footer)
        return
    ax_a = axes[0][1]
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
    ax_a.set_xticks(x, labels, fontsize=7)
    ax_a.set_ylabel("time to accuracy target (s)")
    ax_a.set_title("Time to accuracy per backend", fontsize=9)
    ax_a.margins(y=0.3)
    add_legend(ax_a, backend_entries(summ["backend"]) + flagged)
    save_named_figure(fig, out_dir, "backends", footer)


def fig_sweeps(summ: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Throughput and final test accuracy per sweep point: x = batch size, one line per
    swept target, thread count and precision (named where not float32)."""
    points = summ[summ["sweep"] != ""]
    if points.empty:  # one line saying so, not two empty panels
        fig, ax = plt.subplots(figsize=(6, 1.6))
        empty_panel(ax, "no sweeps: in this config (sweeps: sets a batch size x threads grid)")
        ax.set_title("Sweep: throughput and final test accuracy", fontsize=9)
        save_named_figure(fig, out_dir, "sweeps", footer)
        return
    fig, (ax_t, ax_a) = plt.subplots(1, 2, figsize=(11, 4))
    if "precision" not in points:  # tables written before precision was recorded
        points = points.assign(precision="float32")
    for (base, threads, precision), g in points.groupby(["sweep", "threads", "precision"]):
        g = g.sort_values("batch_size")
        label = f"{base}, {threads} thread{'s' if threads != 1 else ''}"
        label += "" if precision == "float32" else f", {precision}"
        for ax, col in ((ax_t, "images_per_s"), (ax_a, "final_test_accuracy")):
            med, err = error_bars(g, col)
            spread = err if np.isfinite(err).any() else None
            ax.errorbar(g["batch_size"], med, yerr=spread, marker="o", capsize=3, label=label)
    for ax, ylabel in ((ax_t, "training throughput (images/s)"), (ax_a, "final test accuracy")):
        ax.set_xscale("log", base=2)
        sizes = sorted(points["batch_size"].unique())
        ax.set_xticks(sizes, [str(b) for b in sizes])
        ax.minorticks_off()
        ax.set_xlabel("batch size")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    ax_t.set_title("Sweep: throughput", fontsize=9)
    ax_a.set_title("Sweep: final test accuracy (same epochs for every point)", fontsize=9)
    save_named_figure(fig, out_dir, "sweeps", footer)


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
        if readable is None:
            text = table.to_markdown(index=False, floatfmt=".4g")
        else:
            # Its cells are text already, as they should read: parsed back as numbers, a
            # cost of 0.0000843 USD would print as 8.43e-05. Numbers still align right.
            text = readable.to_markdown(
                index=False, disable_numparse=True, colalign=_alignment(readable)
            )
        head = f"Data: **{label}**\n\n" + (f"{note}\n\n" if note else "")
        if readable is not None:
            head += f"Every column: {name}.csv.\n\n"
        tmp.write_text(f"{head}{text}\n")


def _alignment(table: pd.DataFrame) -> list[str]:
    """Each column's alignment in a Markdown table: "right" where every non-empty cell reads
    as a number, else "left"."""

    def numeric(cell) -> bool:
        try:
            float(str(cell).replace(",", ""))
        except ValueError:
            return False
        return True

    return [
        "right"
        if all(numeric(c) for c in table[col] if str(c).strip())
        and any(str(c).strip() for c in table[col])
        else "left"
        for col in table.columns
    ]


def _not_this_workload(out_dir: Path, name: str, what: str, workload: str, footer: str) -> None:
    """A figure of the paper's workload only, drawn for another workload as one panel that
    says so (the figures job's outputs are the same set for every workload)."""
    fig, ax = plt.subplots(figsize=(6, 2))
    empty_panel(ax, f"{what} belongs to the paper's workload; workload {workload} has none")
    save_named_figure(fig, out_dir, name, footer)


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
    confidence: float | None = None,
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
            (:meth:`embryo_bench.planning.plan.Plan.workload_runs`): the comparison checks the
            runs' start times against it.
        rounds_note: why the rounds stopped (``compare.until``:
            :meth:`embryo_bench.planning.rounds.Decision.note`), said under the comparison
            tables; "" without it.
        confidence: the level the comparison's throughput intervals hold together at
            (:attr:`embryo_bench.planning.rounds.Decision.confidence` after an early stop);
            None: :data:`embryo_bench.reporting.compare.CONFIDENCE`.

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
    ours = table.iloc[: len(own)]
    # Merged runs ran in other rounds (their repeat numbers are not ours): compared unpaired.
    elsewhere = set(table["target"].iloc[len(own) :])
    norm, why = summary.cost_summary(main, cost_base, cost_note)
    if norm is not None:
        main_runs = table[table["sweep"].fillna("").astype(str) == ""]
        norm = relative_time.cost_intervals(norm, main_runs, cost_base, min_difference, elsewhere)
    fig_cost(norm, cost_base or None, why, out_dir, footer)
    base = compare_base or ours["target"].iloc[0]
    paired = compare.comparison_table(
        table, base, min_difference, elsewhere=elsewhere, confidence=confidence
    )
    # Beside it, the robust views: throughput without the flagged runs, and by each run's
    # median throughput window.
    level = paired["throughput_confidence"].iloc[0]
    paired = robust.with_views(
        paired,
        robust.clean_view(table, base, min_difference, level, elsewhere),
        robust.window_view(table, base, min_difference, level, elsewhere),
    )
    ordered, order_note = run_order.in_planned_order(
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
    stated = compare.level_text(confidence or compare.CONFIDENCE)
    paired_note = (
        f"Each target's speed relative to {paired['target'].iloc[0]}'s (above 1: faster). "
        f"Paired rows: the geometric mean of the ratios within each round, with a {stated} "
        "t interval on their logarithms. Unpaired rows (runs merged from elsewhere, or no "
        f"round shared with the base): the ratio of the geometric means, with Welch's {stated} "
        "t interval, wider as the rounds' speeds do not cancel. "
        + compare.verdict_rule(
            min_difference, "compare.min_difference", "pairs (unpaired: runs on each side)"
        )
        + f" {order_note}. "
        + readable_tables.comparison_note(paired)  # once here, not on every row
        + " "
        + robust.disagreement_note(paired)
        + " "
        + robust.window_note(paired)
    ).strip()
    if rounds_note:  # compare.until: why the rounds stopped
        paired_note += f" Rounds: {rounds_note}."
    _write_table(
        paired.assign(min_difference=min_difference, order=order_note),
        out_dir,
        "comparison_table",
        label,
        readable_tables.readable_comparison(paired),
        paired_note,
    )
    _write_table(table, out_dir, "results_table", label, readable_tables.readable_runs(table))
    _write_table(
        summ,
        out_dir,
        "summary_table",
        label,
        readable_tables.readable_summary(summ, paired),
        paired_note,
    )
    if norm is None:
        _write_table(pd.DataFrame({"cost": [why]}), out_dir, "cost_table", label)
    else:
        _write_table(norm, out_dir, "cost_table", label, readable_tables.readable_cost(norm),
                     readable_tables.cost_note(norm, cost_base))  # fmt: skip
    _write_table(comparison, out_dir, "paper_comparison", label)
    _write_table(summary.provenance_table(runs), out_dir, "provenance", label)
