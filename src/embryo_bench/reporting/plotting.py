"""What the figures of :mod:`embryo_bench.reporting.figures`,
:mod:`embryo_bench.reporting.comparison_figures` and :mod:`embryo_bench.reporting.utilisation`
share (matplotlib, Agg): the backends' colours, saving a figure under its name
(:data:`embryo_bench.vocabulary.layout.FIGURE_NAMES`) in every format with its footer, a panel
that says why it is empty, error bars (median, min-max over repeats), one bar per target,
and the targets whose every run is flagged drawn hatched grey with their legend entry.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from ..io import atomic_path
from ..vocabulary.layout import FIGURE_FORMATS, FIGURE_NAMES

#: Each Keras backend's colour in the figures.
COLORS = {"tensorflow": "tab:blue", "jax": "tab:orange", "torch": "tab:red"}


def save_named_figure(
    fig: plt.Figure, out_dir: Path, name: str, footer: str, exts: tuple = FIGURE_FORMATS
) -> None:
    """Write ``fig`` as ``out_dir/<name>.<ext>`` for each of ``exts`` (atomically, 150 dpi),
    with ``footer`` under it, and close it.

    Raises:
        ValueError: ``name`` is neither in :data:`embryo_bench.vocabulary.layout.FIGURE_NAMES`
            nor a ``utilisation/`` figure.
    """
    if name not in FIGURE_NAMES and not name.startswith("utilisation/"):
        raise ValueError(f"figure {name!r} is not in embryo_bench.vocabulary.layout.FIGURE_NAMES")
    place_footer(fig, footer)
    for ext in exts:
        path = out_dir / f"{name}.{ext}"
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path, suffix=f".{ext}") as tmp:
            fig.savefig(tmp, dpi=150, bbox_inches="tight", format=ext)
    plt.close(fig)


def place_footer(fig: plt.Figure, footer: str) -> plt.Text:
    """Write ``footer`` (the data's label) under everything ``fig`` draws, its slanted tick
    labels included, so that it overprints none of them; returns the text."""
    fig.canvas.draw()
    lowest = fig.get_tightbbox(fig.canvas.get_renderer()).y0 / fig.get_figheight()
    return fig.text(0.01, min(-0.02, lowest - 0.02), footer, fontsize=7, color="dimgray",
                    ha="left", va="top")  # fmt: skip


def empty_panel(ax, text: str) -> None:
    """Write ``text`` (why there is nothing to draw) in the middle of panel ``ax``, without
    ticks."""
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


def error_bars(df: pd.DataFrame, col: str, scale: float = 1.0):
    """Median of ``col`` x ``scale`` per row and its min-max distances, shape (2, N); NaN
    where one run was summarised (no spread to show: matplotlib draws no bar there)."""
    med = df[f"{col}_median"].to_numpy(float) * scale
    lo = med - df[f"{col}_min"].to_numpy(float) * scale
    hi = df[f"{col}_max"].to_numpy(float) * scale - med
    err = np.vstack([lo, hi])
    if "repeats" in df:
        err[:, df["repeats"].to_numpy(int) <= 1] = np.nan
    return med, err


def label_heights(med, err) -> np.ndarray:
    """Where each bar's value label goes: above its error bar's top where it has one, else
    at the bar's top, so no label lies over the error bar's line (:func:`error_bars`' shapes:
    ``med`` (N,), ``err`` (2, N))."""
    med = np.asarray(med, dtype=float)
    top = np.asarray(err, dtype=float)[1]
    return np.where(np.isfinite(top), med + np.nan_to_num(top), med)


def draw_bars(ax, x, med, err, width: float = 0.8, **kw):
    """Bars at ``x`` with min-max error bars where there is a spread (:func:`error_bars`)."""
    bars = ax.bar(x, med, width, **kw)
    x = np.asarray(x, dtype=float)
    spread = np.isfinite(err).all(axis=0) & np.isfinite(med)
    if spread.any():
        ax.errorbar(
            x[spread], med[spread], yerr=err[:, spread], fmt="none", ecolor="black", capsize=3, lw=1
        )
    return bars


def tick_label(name: str) -> str:
    """A target's tick label: a part of a target split by machine (``<target>@<machine>``) on
    two lines, the machine under the target, so that long machine labels do not run into
    their neighbours."""
    target, at, machine = name.partition("@")
    return f"{target}\n@{machine}" if at else name


def target_ticks(ax, names: list[str]) -> None:
    """Target names under the bars (:func:`tick_label`), slanted when there are many, so they
    never overlap."""
    many = len(names) > 4
    ax.set_xticks(
        range(len(names)),
        [tick_label(n) for n in names],
        fontsize=7,
        rotation=25 if many else 0,
        ha="right" if many else "center",
    )


#: How a target whose every run carries a flag is drawn (its runs still count).
FLAGGED_HATCH = "//"


FLAGGED_NOTE = "hatched grey: every run flagged (results_table: flags, flag_reasons)"


def mark_flagged(bars, summ: pd.DataFrame) -> list:
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


def add_legend(ax, entries: list, **kw) -> None:
    """A legend of ``entries`` ([(handle, label)]), outside the axes on the right."""
    if entries:
        handles, labels = zip(*entries, strict=True)
        kw = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "fontsize": 7, **kw}
        ax.legend(handles, labels, **kw)


def backend_entries(backends) -> list:
    """Legend entries for the backend colours of :data:`COLORS` present in ``backends``."""
    from matplotlib.patches import Patch

    present = list(dict.fromkeys(backends))
    return [(Patch(color=COLORS.get(b, "tab:gray")), f"Keras on {b}") for b in present]


def flagged_note(summ: pd.DataFrame) -> str:
    """How many of the runs counted carry a flag, for a title."""
    n = int(summ["flagged_runs"].sum())
    return f"; {n} of {int(summ['repeats'].sum())} runs flagged, all counted" if n else ""


def target_bars(ax, summ: pd.DataFrame, col: str, scale: float, label: str) -> None:
    """One bar per target of ``col`` (median x ``scale``, min-max error bars where more than
    one run), coloured by backend (with its legend), each labelled with ``label`` formatted
    with its value; targets without a clean run hatched (:func:`mark_flagged`)."""
    med, err = error_bars(summ, col, scale)
    colors = [COLORS.get(b, "tab:gray") for b in summ["backend"]]
    bars = draw_bars(ax, range(len(summ)), med, err, color=colors)
    for i, (v, y) in enumerate(zip(med, label_heights(med, err), strict=True)):
        if np.isfinite(v):
            ax.annotate(label.format(v), (i, y), ha="center", va="bottom", fontsize=7)
        else:  # no reading: said on the figure, not an empty slot that reads as zero
            ax.annotate("not measured", (i, 0), ha="center", va="bottom", fontsize=7)
    target_ticks(ax, list(summ["target"]))
    ax.margins(y=0.15)
    add_legend(ax, backend_entries(summ["backend"]) + mark_flagged(bars, summ))
