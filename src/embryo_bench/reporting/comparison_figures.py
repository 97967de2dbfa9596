"""The comparison figures: each target's throughput and time-to-accuracy speed relative to
the base target, with the paired rounds' intervals (:func:`fig_comparison`, the headline), and
our values over the paper's for every comparable quantity (:func:`fig_paper_vs_ours`).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from . import compare, readable_tables, robust
from .plotting import empty_panel, save_named_figure

VERDICT_COLORS = {compare.FASTER: "tab:green", compare.SLOWER: "tab:red"}


def _comparison_label(row, measure: str, paired: pd.DataFrame) -> str:
    """The text beside one row of the comparison figure: "base: N run(s) measured", the
    ratio (geometric mean) with its interval and verdict and how many pairs, the ratio alone below
    :data:`embryo_bench.reporting.readable_tables.INTERVAL_MIN_PAIRS` pairs, or the verdict where
    there is no ratio; "unpaired" on a row compared without pairs; its flagged runs by flag
    where it has any, and the robust view's verdict
    (:mod:`embryo_bench.reporting.robust`) where it points another way."""
    verdict = row[f"{measure}_verdict"]
    if verdict == "base":
        words = [f"base: {readable_tables.pair_count(row, measure)} run(s) measured"]
    else:
        words = [
            readable_tables.ratio_text(row, measure),
            readable_tables.verdict_text(row, measure, paired),
        ]
    if verdict != "base":
        if readable_tables.shows_interval(row, measure) and not readable_tables.is_unpaired(row):
            words.append(f"{readable_tables.pair_count(row, measure)} pairs")
        if readable_tables.is_unpaired(row):
            words.append("unpaired")
    if int(row.get("flagged_runs") or 0):
        # Marked on its row, as the bar figures hatch theirs: the reader sees which ratio
        # rests on a flagged run (and the robust view's verdict where it differs).
        words.append(f"flagged runs {readable_tables.flag_counts(row)}")
        clean = compare.direction(str(row.get(f"{measure}_clean_verdict", "") or ""))
        if clean in robust.DEFINITE and clean != compare.direction(str(verdict)):
            words.append(f"without them: {row[f'{measure}_clean_verdict']}")
    return ", ".join(w for w in words if w)


def _comparison_row(ax, row, measure: str, med: float, yi: float, paired: pd.DataFrame) -> None:
    """One row of a comparison panel at height ``yi``: its point (with the interval where
    :func:`embryo_bench.reporting.readable_tables.shows_interval`; hollow when unpaired) and its
    text in a column right of the panel (:func:`_comparison_label`)."""
    if np.isfinite(med):
        interval = readable_tables.shows_interval(row, measure)
        called = compare.direction(row[f"{measure}_verdict"])
        color = VERDICT_COLORS.get(called, "dimgray") if interval else "dimgray"
        style = {
            "color": color,
            **({"mfc": "white", "mew": 1.5} if readable_tables.is_unpaired(row) else {}),
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
    from fewer than :data:`embryo_bench.reporting.readable_tables.INTERVAL_MIN_PAIRS` rounds is
    a plain point, and the title says once why
    (:func:`embryo_bench.reporting.readable_tables.interval_note`); a row compared without pairs
    (``pairing`` "unpaired") is a hollow point. Each row's numbers are written in a column right
    of its panel, so no text lies over a point, a bar or the line at 1. A measure with no ratio
    at all gets no panel: the title says why in one line (the demo's base never reaches the
    accuracy target in its epochs); with neither, one empty panel says it."""
    base = comparison["target"].iloc[0]
    measures, missing = [], []
    for measure, title in (("throughput", "throughput (images/s)"),
                           ("time_to_accuracy", "time to accuracy")):  # fmt: skip
        if np.isfinite(pd.to_numeric(comparison[f"{measure}_ratio"], errors="coerce")).any():
            measures.append((measure, title))
        elif readable_tables.base_unreached(comparison, measure):
            missing.append(f"{title}: {base} never reached the accuracy target, no ratio")
        else:
            missing.append(f"{title}: no ratio")
    fig, axes = plt.subplots(
        1,
        max(len(measures), 1),
        figsize=(6 + 6 * max(len(measures), 1), 2.4 + 0.5 * len(comparison)),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    y = np.arange(len(comparison))[::-1]
    if not measures:  # nothing to draw: one empty panel says so
        axes[0][0].text(0.5, 0.5, "; ".join(missing), transform=axes[0][0].transAxes,
                        ha="center", va="center", fontsize=8, color="dimgray")  # fmt: skip
        axes[0][0].set_xticks([])
    for ax, (measure, title) in zip(axes[0], measures, strict=bool(measures)):
        ratios = pd.to_numeric(comparison[f"{measure}_ratio"], errors="coerce")
        ax.set_xlabel("speed ratio to the base (above 1: faster)")
        ax.axvline(1.0, color="black", lw=1)
        for yi, med, (_, row) in zip(y, ratios, comparison.iterrows(), strict=True):
            _comparison_row(ax, row, measure, med, yi, comparison)
        ax.set_title(f"{title}, relative to {base}", fontsize=9)
        ax.margins(x=0.15, y=0.3)
    axes[0][0].set_yticks(y, comparison["target"], fontsize=8)
    note = readable_tables.interval_note(comparison)
    levels = readable_tables.table_levels(comparison)
    label = readable_tables.interval_label(*levels)
    if readable_tables.family_rows(*levels) > 1:
        label += " (throughput; time to accuracy: 95 % each)"
    fig.suptitle(
        f"Comparison with {base}: ratio (geometric mean) with its {label}; "
        f"{int(comparison['flagged_runs'].sum())} run(s) flagged, all counted\n{order_note}"
        + (f"\n{note}" if note else "")
        + ("".join(f"\n{m}" for m in missing) if measures else ""),
        fontsize=9,
    )
    save_named_figure(fig, out_dir, "comparison", footer)


def fig_paper_vs_ours(comparison: pd.DataFrame, out_dir: Path, footer: str) -> None:
    """Our value / the paper's for every comparable quantity (1 = as in the paper): a point
    on a log axis joined to 1 by a line, not a bar (a bar on a log axis has no zero to start
    from: its length would be where the axis happens to begin)."""
    fig, ax = plt.subplots(figsize=(7, 4))
    rows = comparison[comparison["ratio"].notna()]
    if rows.empty:
        empty_panel(ax, "nothing comparable measured")
    else:
        y = np.arange(len(rows))
        ratios = rows["ratio"].astype(float).to_numpy()
        ax.hlines(y, 1.0, ratios, color="tab:purple", lw=2)
        ax.plot(ratios, y, "o", color="tab:purple")
        ax.axvline(1.0, color="gray", ls="--", lw=0.8)
        ax.set_yticks(y, list(rows["quantity"]), fontsize=7)
        for yi, (r, ours) in enumerate(zip(ratios, rows["ours"], strict=True)):
            # Right of both the point and the line at 1, so neither is written over.
            ax.annotate(f" {r:.3g}  ({ours})", (max(r, 1.0), yi), va="center", fontsize=6,
                        xytext=(4, 0), textcoords="offset points")  # fmt: skip
        ax.set_xscale("log")
        ax.set_xlabel("ours / paper (log scale; times per image-epoch)")
        ax.margins(x=1.0)
    missing = comparison[comparison["ratio"].isna()]
    if len(missing):
        ax.set_title(
            "Paper vs reproduction; not compared: " + "; ".join(missing["quantity"]), fontsize=7
        )
    else:
        ax.set_title("Paper vs reproduction", fontsize=9)
    save_named_figure(fig, out_dir, "paper_vs_ours", footer)
