"""The workload x target view of a configuration's runs: per workload,
each target's training time and cost relative to the base target (minimaxir's charts), with
the 95 % interval of the paired rounds (:func:`embryo_bench.reporting.compare.compare`) from
:data:`~embryo_bench.reporting.compare.MIN_PAIRS` pairs on (:func:`workload_view`), as a table
a person reads (:func:`readable_view`) and a figure (:func:`fig_workload_view`), written by
:func:`write_workload_view` from ``study/runs.csv``
(:func:`embryo_bench.reporting.study.read_runs`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter

from . import compare, readable_tables, relative_time
from .runs import as_number
from .study import (
    SYNTHETIC_NOTE,
    any_synthetic,
    median_or_nan,
    number_or_nan,
    panel_grid,
    save_figure,
    write_table,
)

#: Columns of :func:`workload_view`: workload, catalog, input, data, target, machine, base
#: (the target every ratio of the workload is to), pairing ("base", "paired", "unpaired"),
#: pairs (rounds with both runs; runs when unpaired), training_seconds (median, s),
#: throughput (median images/s), time_relative, time_low, time_high (training time / the
#: base's, geometric mean over the paired rounds, with its 95 % interval), hourly_usd
#: (USD/h), cost_relative, cost_low, cost_high (the same x the price ratio; NaN where either
#: is unpriced), verdict (:func:`embryo_bench.reporting.compare.verdict` on speed: "faster"
#: = a shorter time).
VIEW_COLUMNS = [
    "workload",
    "catalog",
    "input",
    "data",
    "target",
    "machine",
    "base",
    "pairing",
    "pairs",
    "training_seconds",
    "throughput",
    "time_relative",
    "time_low",
    "time_high",
    "hourly_usd",
    "cost_relative",
    "cost_low",
    "cost_high",
    "verdict",
    "confidence",
]


def _view_base(g: pd.DataFrame) -> str:
    """A workload's base for the view: its cost base where it ran and is priced (time and
    cost relative to one target, as minimaxir's charts), else its compare base."""
    cost_base = str(g["cost_base"].iloc[0]) if "cost_base" in g else ""
    if cost_base and cost_base != "nan":
        priced = pd.to_numeric(g.loc[g["target"] == cost_base, "hourly_usd"], errors="coerce")
        if priced.notna().any():
            return cost_base
    return str(g["compare_base"].iloc[0])


def workload_view(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload (in the runs' order) and main target (no sweep points): training time
    and cost relative to the workload's base target (:func:`_view_base`), with the interval
    of compare's ratios at :func:`embryo_bench.reporting.compare.simultaneous_confidence`
    over the view's compared rows, every workload's (its confidence column: the view's
    verdicts hold together at 95 %) (:data:`VIEW_COLUMNS`); the base's row first, at 1.

    Args:
        runs: ``study/runs.csv`` (:func:`embryo_bench.reporting.study.ours_tables`' first
            table): one row per run with workload, catalog, input, data, target, repeat (the
            round), machine, sweep, training_s (s), images_per_s, hourly_usd (USD/h),
            compare_base, cost_base, merged, min_difference.

    Raises:
        ValueError: a target with two runs in one round (as
            :func:`embryo_bench.reporting.compare.paired_ratios`).
    """
    rows = []
    main = runs[runs["sweep"].fillna("").astype(str) == ""]
    bases = {}
    for workload, g in main.groupby("workload", sort=False):
        base = _view_base(g)
        bases[workload] = base if (g["target"] == base).any() else str(g["target"].iloc[0])
    # The view's verdicts hold together over all its compared rows, every workload's.
    level = compare.simultaneous_confidence(
        sum(g.loc[g["target"] != bases[w], "target"].nunique() for w, g in main.groupby("workload"))
    )
    for workload, g in main.groupby("workload", sort=False):
        base = bases[workload]
        ratios = (
            relative_time.time_ratios(
                g, base, float(g["min_difference"].iloc[0]),
                set(g.loc[g["merged"].astype(bool), "target"]), level,
            ).set_index("target")
            if g["target"].nunique() > 1
            else None
        )  # fmt: skip
        hourly = {
            t: as_number(v)
            for t, v in g.groupby("target", sort=False)["hourly_usd"].first().items()
        }
        names = [base] + [t for t in dict.fromkeys(g["target"]) if t != base]
        for name in names:
            mine = g[g["target"] == name]
            row = {
                "workload": workload,
                "catalog": mine["catalog"].iloc[0],
                "input": mine["input"].iloc[0],
                "data": mine["data"].iloc[0],
                "target": name,
                "machine": mine["machine"].iloc[0],
                "base": base,
                "training_seconds": median_or_nan(mine["training_s"]),
                "throughput": median_or_nan(mine["images_per_s"]),
                "hourly_usd": number_or_nan(hourly.get(name)),
            }
            if name == base:
                row.update(pairing="base", pairs=len(mine), verdict="base",
                           time_relative=1.0, time_low=1.0, time_high=1.0)  # fmt: skip
            elif ratios is not None and name in ratios.index:
                row.update(ratios.loc[name].to_dict())
            else:
                row.update(pairing="", pairs=0, verdict="no run of the base to compare with")
                row.update(time_relative=math.nan, time_low=math.nan, time_high=math.nan)
            price = row["hourly_usd"] / number_or_nan(hourly.get(base))
            for end in ("relative", "low", "high"):
                row[f"cost_{end}"] = row[f"time_{end}"] * price
            row["confidence"] = level
            rows.append(row)
    return pd.DataFrame(rows, columns=VIEW_COLUMNS)


def _ratio_text(row, what: str) -> str:
    """ "0.912 [0.890, 0.930]" from :func:`workload_view`'s ``<what>_relative``, ``_low``,
    ``_high``: the interval only from :data:`~embryo_bench.reporting.compare.MIN_PAIRS`
    pairs on; "" where there is no ratio."""
    value = as_number(row[f"{what}_relative"])
    if value is None:
        return ""
    if row["pairing"] == "base" or int(row["pairs"]) < compare.MIN_PAIRS:
        return f"{value:.3f}"
    return f"{value:.3f} [{row[f'{what}_low']:.3f}, {row[f'{what}_high']:.3f}]"


def readable_view(view: pd.DataFrame) -> pd.DataFrame:
    """:func:`workload_view` as a person reads it: workload, target, machine, pairs, time
    and cost vs the base [interval: :func:`embryo_bench.reporting.readable_tables.
    interval_label`], verdict, training (s), images/s."""
    rows = [r for _, r in view.iterrows()]
    label = readable_tables.interval_label(view["confidence"].iloc[0] if len(view) else None)
    return pd.DataFrame(
        {
            "workload": view["workload"],
            "data": view["data"],
            "target": view["target"],
            "machine": view["machine"],
            "pairing (pairs)": [f"{r['pairing']} ({int(r['pairs'])})" for r in rows],
            f"time vs base [{label}]": [_ratio_text(r, "time") for r in rows],
            f"cost vs base [{label}]": [_ratio_text(r, "cost") for r in rows],
            "verdict": view["verdict"],
            "training (s)": view["training_seconds"].map(
                lambda v: readable_tables.number_text(v, ".1f")
            ),
            "images/s": view["throughput"].map(readable_tables.number_text),
        }
    )


def view_head(view: pd.DataFrame) -> str:
    """The Markdown above the workload view: what the ratios are and how they were made."""
    text = (
        "# Every workload: time and cost relative to the base target\n\n"
        "Per workload, each target's training time (median s) relative to the base's (its "
        "cost.base_target where priced, else compare.base): the geometric mean over the "
        "rounds of the per-round ratio, with a 95 % t interval on the logarithms from "
        f"{compare.MIN_PAIRS} paired rounds on (fewer: the ratio alone); unpaired rows "
        "(runs merged from elsewhere): the ratio of the geometric means with Welch's "
        "interval. Cost = time x the config's hourly_usd, so its ratio is the time's x the "
        "price ratio (empty where unpriced). The verdict is compare's, on speed (faster = "
        "shorter). "
        + compare.family_note(
            readable_tables.family_rows(view["confidence"].iloc[0] if len(view) else None),
            "time and cost",
        )
    ).strip()
    if any_synthetic(view):
        text = f"**{SYNTHETIC_NOTE}**\n\n{text}"
    return text


def _minor_label(value: float, _pos=None) -> str:
    """A log axis' minor tick labelled at 2 and 5 times a power of ten, else unlabelled."""
    if value <= 0:
        return ""
    lead = value / 10 ** math.floor(math.log10(value))
    return f"{value:g}" if round(lead) in (2, 5) and abs(lead - round(lead)) < 1e-6 else ""


def fig_workload_view(view: pd.DataFrame, path: Path) -> None:
    """One panel per workload (minimaxir's charts): per target, training time (blue) and
    cost (green) relative to the base (log scale, a line at 1), with the 95 % interval where
    :data:`~embryo_bench.reporting.compare.MIN_PAIRS` or more pairs give one. SYNTHETIC on
    its face when any workload's data was."""
    workloads = list(dict.fromkeys(view["workload"]))
    most = max([int((view["workload"] == w).sum()) for w in workloads] or [1])
    fig, axes = panel_grid(len(workloads), width=5.0, height=0.8 + 0.45 * most)
    for ax, w in zip(axes, workloads, strict=True):
        rows = view[view["workload"] == w].reset_index(drop=True)
        y = np.arange(len(rows))
        ends = [1.0]
        for what, color, marker, shift in (
            ("time", "tab:blue", "o", -0.15),
            ("cost", "tab:green", "s", 0.15),
        ):
            value = rows[f"{what}_relative"].astype(float).to_numpy()
            ok = np.isfinite(value)
            ax.plot(value[ok], y[ok] + shift, marker, color=color, ls="none", label=what, ms=5)
            ends += list(value[ok])
            shown = ok & (rows["pairs"].astype(int).to_numpy() >= compare.MIN_PAIRS)
            shown &= (rows["pairing"] != "base").to_numpy()
            if shown.any():
                low = rows[f"{what}_low"].astype(float).to_numpy()
                high = rows[f"{what}_high"].astype(float).to_numpy()
                err = np.vstack([value - low, high - value])[:, shown]
                ax.errorbar(value[shown], y[shown] + shift, xerr=err, fmt="none",
                            ecolor=color, capsize=2, lw=0.8)  # fmt: skip
                ends += list(low[shown]) + list(high[shown])
        ax.axvline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xscale("log")
        ax.set_xlim(min(ends) / 1.3, max(ends) * 1.3)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(FuncFormatter(_minor_label))
        ax.set_xlabel("x the base (log scale)", fontsize=7)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        names = zip(rows["target"], rows["machine"], strict=True)
        ax.set_yticks(y, [f"{t}\n({m})" for t, m in names], fontsize=6)
        data = " SYNTHETIC" if (rows["data"] == "synthetic").any() else ""
        ax.set_title(f"{w}{data} (base {rows['base'].iloc[0]} = 1)", fontsize=8)
        ax.tick_params(axis="x", which="both", labelsize=7)
        if not rows["cost_relative"].astype(float).notna().any():
            ax.text(0.98, 0.02, "no prices: cost not computed", transform=ax.transAxes,
                    ha="right", va="bottom", fontsize=6, color="dimgray")  # fmt: skip
    if axes:
        axes[0].legend(fontsize=6, loc="lower right")
    synthetic = any_synthetic(view)
    title = "Time and cost relative to the base target, per workload (log scale)"
    if synthetic:
        title = f"SYNTHETIC DATA - {title}"
    fig.suptitle(title, fontsize=9, color="tab:red" if synthetic else "black")
    fig.tight_layout()
    footer = (
        f"points: geometric mean of the paired rounds' ratios; whiskers: 95 % interval from "
        f"{compare.MIN_PAIRS} pairs on"
    )
    save_figure(fig, path, (SYNTHETIC_NOTE + " " if synthetic else "") + footer)


def write_workload_view(runs: pd.DataFrame, out: str | Path) -> pd.DataFrame:
    """The view's files (the ``workload_view`` rule): ``out``.csv, ``.md`` and ``.png``.

    Raises:
        ValueError: as :func:`workload_view`.
    """
    view = workload_view(runs)
    out = Path(out)
    write_table(view, out, readable_view(view), view_head(view))
    fig_workload_view(view, out.with_suffix(".png"))
    return view
