"""Figures a reader can use: checked on the matplotlib objects the
figure functions draw, from hand-made runs (no training)."""

from __future__ import annotations

import statistics

import numpy as np
import pandas as pd
import pytest

from embryo_bench.recording.telemetry import COLUMNS
from embryo_bench.reporting import (
    comparison_figures,
    figures,
    plotting,
    readable_tables,
    relative_time,
    summary,
    utilisation,
)
from embryo_bench.reporting.runs import Run
from embryo_bench.vocabulary import layout


@pytest.fixture
def drawn(monkeypatch):
    """The figures the functions would save, by name (kept open instead of written)."""
    saved = {}

    def keep(fig, out_dir, name, footer, exts=layout.FIGURE_FORMATS):
        saved[name] = fig

    # Each module that draws saves through its own name of the function.
    for module in (figures, comparison_figures, utilisation):
        monkeypatch.setattr(module, "save_named_figure", keep)
    yield saved
    for fig in saved.values():
        figures.plt.close(fig)


def _run(target, repeat, seconds, gpus=0, backend="tensorflow", epochs=2):
    ends = 1_700_000_000.0 + 10.0 * np.arange(1, epochs + 1)
    history = pd.DataFrame(
        {
            "epoch": range(1, epochs + 1),
            "epoch_seconds": [seconds / epochs] * epochs,
            "test_accuracy": np.linspace(0.3, 0.6, epochs),
            "ended_unix_s": ends,
        }
    )
    metrics = {
        "target": target, "repeat": repeat, "seed": repeat - 1, "runner": "host",
        "cpus": 1, "gpus": gpus, "backend": backend, "threads": 1, "batch_size": 480,
        "n_train": 1000, "n_test": 250, "epochs": epochs, "training_seconds": seconds,
        "first_epoch_seconds": seconds / epochs, "steady_epoch_seconds": seconds / epochs,
        "mean_images_per_s": 1000 * epochs / seconds, "final_test_accuracy": 0.6,
        "best_test_accuracy": 0.6, "accuracy_target": 0.85, "time_to_accuracy_seconds": None,
        "parameter_count": 16_834_436, "telemetry": {},
        "provenance": {"cpu_model": "test cpu", "keras_backend": backend},
    }  # fmt: skip
    return Run(f"train/{target}/repeat-{repeat}", metrics, history)


def _summary(runs):
    return summary.target_summary(summary.run_table(runs, {}, "hand-made"))


def test_no_min_max_bar_when_one_run_is_summarised():
    summ = _summary([_run("one", 1, 60.0), *(_run("three", k, 60.0 + k) for k in (1, 2, 3))])
    med, err = plotting.error_bars(summ, "training_s")
    assert np.isnan(err[:, 0]).all()  # one run: no spread drawn
    assert err[:, 1] == pytest.approx([1.0, 1.0])  # 62 s median, 61..63 s


def test_training_time_gives_ours_its_own_panel_and_unit(drawn):
    figures.fig_training_time(_summary([_run("a", 1, 45.0), _run("b", 1, 30.0)]), None, "")
    axes = drawn["fig5_6_training_time"].axes
    assert len(axes) == 2  # ours and the paper's: no empty GPU panel
    assert axes[0].get_ylabel() == "training time (s)"  # 45 s reads in seconds, not hours
    assert axes[1].get_ylabel() == "training time (h)"  # the paper's 309 and 134 min
    assert "1,000 images x 2 epochs" in axes[0].get_title()
    texts = [t.get_text() for t in axes[0].texts]
    assert texts == ["45 s", "30 s"]


def test_training_time_has_a_gpu_panel_when_a_gpu_target_ran(drawn):
    summ = _summary([_run("cpu", 1, 7200.0), _run("gpu", 1, 600.0, gpus=1)])
    figures.fig_training_time(summ, None, "")
    axes = drawn["fig5_6_training_time"].axes
    assert [ax.get_ylabel() for ax in axes] == [
        "training time (h)",  # 2 h
        "training time (min)",  # 10 min
        "training time (h)",
    ]


def test_throughput_legend_names_the_backends(drawn):
    summ = _summary([_run("tf", 1, 20.0), _run("jx", 1, 40.0, backend="jax")])
    figures.fig_throughput(summ, None, "")
    (ax,) = drawn["throughput"].axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["Keras on tensorflow", "Keras on jax"]


def test_accuracy_lines_differ_in_style_and_ticks_are_whole_epochs(drawn):
    runs = [_run("a", 1, 20.0, epochs=3), _run("b", 1, 20.0, epochs=3)]
    figures.fig_accuracy(runs, ["a", "b"], None, "")
    (ax,) = drawn["fig4_test_accuracy"].axes
    a, b = ax.get_lines()[:2]
    assert (a.get_linestyle(), a.get_marker()) != (b.get_linestyle(), b.get_marker())
    drawn["fig4_test_accuracy"].canvas.draw()
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_utilisation_marks_epoch_ends_and_drops_gpu_panels(drawn):
    run = _run("a", 1, 20.0, epochs=2)
    start = 1_700_000_000.0  # the first sample; epochs end 10 s and 20 s later
    rows = [
        {"time_s": t, "unix_s": start + t, "cpu_percent": 100.0, "memory_mib": 500.0,
         "other_cpu_percent": 3.0}
        for t in np.arange(0.0, 22.0, 1.0)
    ]  # fmt: skip
    run.telemetry = pd.DataFrame(rows, columns=COLUMNS)
    utilisation.fig_utilisation(run, None, "utilisation/a-repeat-1", "")
    axes = drawn["utilisation/a-repeat-1"].axes
    titles = ["CPU % (100 = one core)", "memory (MiB)", "training throughput (images/s per window)"]
    assert [ax.get_title() for ax in axes] == titles
    vertical = [line.get_xdata()[0] for line in axes[0].get_lines() if line.get_ls() == ":"]
    assert vertical == pytest.approx([10.0, 20.0])
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert labels == ["this run", "other processes, its cores", "epoch ends"]
    assert [t.get_text() for t in axes[2].texts] == ["not measured (no windows.csv)"]


def test_utilisation_shows_the_windows_and_long_traces_as_rolling_medians(drawn):
    run = _run("a", 1, 20.0, epochs=2)
    start = 1_700_000_000.0
    t = np.arange(0.0, 1000.0, 1.0)  # a long run: 1,000 samples
    cpu = np.where(t % 2 == 0, 60.0, 100.0)  # a trace that alternates every sample
    run.telemetry = pd.DataFrame(
        {"time_s": t, "unix_s": start + t, "cpu_percent": cpu, "memory_mib": 500.0}
    ).reindex(columns=COLUMNS)
    run.windows = pd.DataFrame(
        {
            "epoch": [1, 1, 2, 2],
            "window": [1, 2, 1, 2],
            "images_per_s": [50.0, 90.0, 100.0, 95.0],
            "ended_unix_s": start + np.array([5.0, 10.0, 15.0, 20.0]),
        }  # fmt: skip
    )
    run.metrics["throughput_windows"] = {
        "window_steps": 10, "windows": 3, "cv": 0.05, "median_images_per_s": 95.0}  # fmt: skip
    utilisation.fig_utilisation(run, None, "utilisation/a-repeat-1", "")
    cpu_ax, _, windows_ax = drawn["utilisation/a-repeat-1"].axes
    (median,) = [line for line in cpu_ax.get_lines() if line.get_ls() == "-"]
    assert median.get_label() == "this run (rolling median of 10, band min-max)"
    assert set(np.unique(median.get_ydata())) <= {60.0, 80.0, 100.0}  # smoothed, not 1 Hz
    assert len(cpu_ax.collections) == 1  # the min-max band
    assert windows_ax.get_title() == "training throughput per 10 steps (CV 5.0%)"
    step, med = windows_ax.get_lines()[:2]
    assert list(step.get_xdata()) == [5.0, 10.0, 15.0, 20.0]  # on the telemetry's axis
    assert med.get_label() == "median 95"


def test_every_figure_and_table_has_a_report_entry():
    figures_ = {"fig1_preprocessing", "fig4_test_accuracy", "fig5_6_training_time", "throughput"}
    figures_ |= {"efficiency", "epoch_times", "cost", "backends", "sweeps", "paper_vs_ours"}
    figures_ |= {"comparison"}
    tables = {"results_table", "summary_table", "cost_table", "paper_comparison", "provenance"}
    tables |= {"comparison_table"}
    assert set(layout.FIGURE_NAMES) == figures_ and set(layout.TABLE_NAMES) == tables
    assert set(layout.REPORT_ENTRIES) == figures_ | tables
    categories = [c for c, _ in layout.REPORT_ENTRIES.values()]
    # the paired comparison leads, then the paper's figures; cost is part of the answer
    assert categories[:3] == [layout.COMPARISON, layout.COMPARISON, layout.PAPER_FIGURES]
    assert layout.REPORT_ENTRIES["cost"][0] == layout.REPORT_ENTRIES["cost_table"][0]
    assert layout.REPORT_ENTRIES["cost"][0] == layout.COMPARISON
    assert set(categories) <= set(layout.REPORT_CATEGORIES)


def test_report_categories_are_numbered_over_those_a_report_has():
    """Snakemake sorts categories by name: numbered in reading order over those present, so
    a report of one workload (no workload view, no study) starts at 1 with the answer."""
    one = {layout.COMPARISON, layout.TABLES}
    assert layout.numbered_category(layout.COMPARISON, one).startswith("1. The answer")
    assert layout.numbered_category(layout.TABLES, one) == "2. Tables"
    every = set(layout.REPORT_CATEGORIES)
    numbered = [layout.numbered_category(c, every) for c in layout.REPORT_CATEGORIES]
    assert numbered == sorted(numbered) and numbered[0].startswith("1. Every workload")
    assert numbered[-1] == f"{len(numbered)}. Configuration"
    with pytest.raises(ValueError, match="not in REPORT_CATEGORIES"):
        layout.numbered_category("Extras", every)


# What the other figures show, on hand-made runs and frames.


def _set(run, **metrics):
    """``run`` with ``metrics`` replacing those keys of its metrics.json."""
    run.metrics.update(metrics)
    return run


def _interfered(run):
    """``run`` flagged interfered: other processes took half of its cores."""
    return _set(run, telemetry={"interference": {"other_cpu_share_mean": 0.5}})


def draw_bars(ax, label=None):
    """(x centres, heights) of the bars in ``ax`` (only the series called ``label`` if
    given), in drawing order."""
    from matplotlib.container import BarContainer

    rects = [
        rect
        for c in ax.containers
        if isinstance(c, BarContainer) and label in (None, c.get_label())
        for rect in c
    ]
    return (
        [r.get_x() + r.get_width() / 2 for r in rects],
        [r.get_height() for r in rects],
    )


def _spreads(ax):
    """The vertical error bars in ``ax`` as (x, low, high), left to right (rounded to 1e-9)."""
    from matplotlib.container import ErrorbarContainer

    found = []
    for c in ax.containers:
        if isinstance(c, ErrorbarContainer) and c.lines[2]:
            segments = c.lines[2][0].get_segments()
            found += [
                tuple(round(float(v), 9) for v in (s[0][0], s[0][1], s[1][1])) for s in segments
            ]
    return sorted(found)


def _ticks(ax, axis="x"):
    """The tick labels of ``axis`` as written."""
    get = ax.get_xticklabels if axis == "x" else ax.get_yticklabels
    return [t.get_text() for t in get()]


def add_legend(ax):
    """The legend's entries as written."""
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _texts(ax):
    """Every text and annotation drawn inside ``ax``."""
    return [t.get_text() for t in ax.texts]


def _frame(path, border, left, top_right, bottom_right):
    """A 48 px 8-bit grey PNG at ``path``: ``border`` outside the centre 32 px; inside it
    the left half ``left``, the right half's top 8 rows ``top_right``, the rest
    ``bottom_right``. Returns the array."""
    from PIL import Image

    img = np.full((48, 48), border, np.uint8)
    img[8:40, 8:24] = left
    img[8:16, 24:40] = top_right
    img[16:40, 24:40] = bottom_right
    Image.fromarray(img).save(path)
    return img


def test_preprocessing_shows_the_first_frame_through_every_step(drawn, tmp_path):
    from embryo_bench.vocabulary.spec import Preprocessing

    first = _frame(tmp_path / "e1.png", 10, 40, 120, 220)
    _frame(tmp_path / "e2.png", 200, 0, 0, 0)  # the second row: not drawn
    pd.DataFrame(
        {
            "embryo": ["E01", "E02"],
            "frame": ["frame_0007", "frame_0003"],
            "path": [str(tmp_path / "e1.png"), str(tmp_path / "e2.png")],
            "cells": [2, 3],
            "split": ["train", "test"],
            "shard": [0, 0],
        }
    ).to_csv(tmp_path / "selected.csv", index=False)
    pp = Preprocessing(
        frame_size=48, crop_fraction=2 / 3, invert_centre=100, rotation_step=90, image_size=16
    )
    figures.fig_preprocessing(str(tmp_path / "selected.csv"), pp, None, "")
    fig = drawn["fig1_preprocessing"]
    assert fig.get_suptitle() == "Preprocessing of E01 frame_0007 (cells: 2)"
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == [
        "original 48 px",
        "centre crop 32 px",
        "histogram equalised",
        "inverted |p - 100|",
        "rotated 90 deg",
        "downsized 16 px",
    ]
    shown = [np.asarray(ax.get_images()[0].get_array()) for ax in axes]
    assert [ax.get_images()[0].get_clim() for ax in axes] == [(0, 255)] * 3 + [(0, 155)] * 3
    np.testing.assert_array_equal(shown[0], first)
    crop = np.full((32, 32), 220, np.uint8)  # the frame's centre 32 px
    crop[:, :16], crop[:8, 16:] = 40, 120
    np.testing.assert_array_equal(shown[1], crop)
    # 512 px at 40, 128 at 120, 384 at 220: 40 -> 0, 120 -> 128 * 255 / 512 = 64, 220 -> 255
    equalised = np.full((32, 32), 255, np.uint8)
    equalised[:, :16], equalised[:8, 16:] = 0, 64
    np.testing.assert_array_equal(shown[2], equalised)
    inverted = np.full((32, 32), 155, np.uint8)  # |p - 100|: 0 -> 100, 64 -> 36, 255 -> 155
    inverted[:, :16], inverted[:8, 16:] = 100, 36
    np.testing.assert_array_equal(shown[3], inverted)
    rotated = np.full((32, 32), 155, np.uint8)  # a quarter turn anticlockwise
    rotated[16:, :], rotated[:16, :8] = 100, 36
    np.testing.assert_array_equal(shown[4], rotated)
    small = shown[5]
    assert small.shape == (16, 16)
    # away from the edges between regions (Lanczos reaches 3 px), the regions keep their level
    assert small[12:, :] == pytest.approx(np.full((4, 16), 100), abs=1)
    assert small[:4, 0] == pytest.approx([36] * 4, abs=1)
    assert small[:4, 9:] == pytest.approx(np.full((4, 7), 155), abs=1)


def test_epoch_times_shows_first_and_steady_epochs_of_every_run(drawn):
    runs = [
        *(_set(_run("a", k, 20.0), first_epoch_seconds=f, steady_epoch_seconds=s)
          for k, f, s in ((1, 12.0, 3.0), (2, 10.0, 2.0), (3, 14.0, 4.0))),
        _interfered(_set(_run("a", 4, 20.0), first_epoch_seconds=100.0, steady_epoch_seconds=50.0)),
        _set(_run("b", 1, 20.0, backend="jax"), first_epoch_seconds=5.0, steady_epoch_seconds=1.0),
    ]  # fmt: skip
    figures.fig_epoch_times(_summary(runs), None, "")
    (ax,) = drawn["epoch_times"].axes
    x, first = draw_bars(ax, "first epoch")
    # medians of all four runs of a, the flagged one (100 s) counted: (12 + 14) / 2
    assert (x, first) == (pytest.approx([-0.2, 0.8]), [13.0, 5.0])
    x, steady = draw_bars(ax, "steady-state epoch")
    assert (x, steady) == (pytest.approx([0.2, 1.2]), [3.5, 1.0])
    assert _spreads(ax) == [(-0.2, 10.0, 100.0), (0.2, 2.0, 50.0)]  # b: one run
    assert _ticks(ax) == ["a", "b"]
    assert ax.get_ylabel() == "epoch time (s)"
    assert add_legend(ax) == ["first epoch", "steady-state epoch"]
    assert "1 of 5 runs flagged, all counted" in ax.get_title()


def test_efficiency_shows_percent_of_the_probe_per_target(drawn):
    runs = [
        *(_set(_run("a", k, 20.0), flops={"efficiency": e})
          for k, e in ((1, 0.30), (2, 0.25), (3, 0.35))),
        _set(_run("b", 1, 20.0, backend="jax"), flops={"efficiency": 0.5}),
    ]  # fmt: skip
    figures.fig_efficiency(_summary(runs), None, "")
    (ax,) = drawn["efficiency"].axes
    assert draw_bars(ax)[1] == pytest.approx([30.0, 50.0])  # a fraction drawn in %
    assert _spreads(ax) == [(0.0, 25.0, 35.0)]
    assert _texts(ax) == ["30 %", "50 %"]
    assert _ticks(ax) == ["a", "b"]
    assert ax.get_ylabel() == "achieved / probe GFLOP/s (%)"
    assert "matmul probe" in ax.get_title()
    assert add_legend(ax) == ["Keras on tensorflow", "Keras on jax"]


def test_efficiency_says_not_measured_without_any_probe(drawn):
    figures.fig_efficiency(_summary([_run("a", 1, 20.0)]), None, "")
    (ax,) = drawn["efficiency"].axes
    assert _texts(ax) == ["not measured (no calibration probe in these runs)"]
    assert not ax.patches  # no bar


def test_efficiency_says_not_measured_for_a_target_without_a_probe(drawn):
    runs = [_set(_run("a", 1, 20.0), flops={"efficiency": 0.25}), _run("b", 1, 20.0)]
    figures.fig_efficiency(_summary(runs), None, "")
    (ax,) = drawn["efficiency"].axes
    assert _texts(ax)[0] == "25 %"
    assert not any("nan" in t for t in _texts(ax))
    assert any("not measured" in t for t in _texts(ax)[1:])


def test_cost_shows_time_and_cost_relative_to_the_base(drawn):
    """Three rounds: each bar the paired ratio with its 95 % interval; the cost's is the
    time's times the price ratio (4 USD/h against 1)."""
    times = {"a": (60.0, 62.0, 58.0), "b": (30.0, 32.0, 28.0), "free": (10.0, 10.0, 10.0)}
    runs = [_run(t, k + 1, v) for t, vs in times.items() for k, v in enumerate(vs)]
    targets = {
        "a": {"hourly_usd": 1.0, "price_source": "test"},  # 60 s at 1 USD/h: 1/60 USD
        "b": {"hourly_usd": 4.0, "price_source": "test"},  # 30 s at 4 USD/h: 1/30 USD
    }  # "free" has no price: not drawn
    table = summary.run_table(runs, targets, "hand-made")
    norm, why = summary.cost_summary(summary.target_summary(table), "a")
    cost = relative_time.cost_intervals(norm, table, "a", 0.05)
    figures.fig_cost(cost, "a", why, None, "")
    (ax,) = drawn["cost"].axes
    b = cost.set_index("target").loc["b"]
    ratios = [30 / 60, 32 / 62, 28 / 58]
    assert b["time_relative"] == pytest.approx(statistics.geometric_mean(ratios))
    assert b["time_low"] < b["time_relative"] < b["time_high"] and b["pairs"] == 3
    assert b["cost_relative"] == pytest.approx(4 * b["time_relative"])
    assert b["cost_low"] == pytest.approx(4 * b["time_low"])
    assert draw_bars(ax, "training time") == (
        pytest.approx([-0.2, 0.8]),
        pytest.approx([1.0, b["time_relative"]]),
    )
    assert draw_bars(ax, "cost") == (
        pytest.approx([0.2, 1.2]),
        pytest.approx([1.0, b["cost_relative"]]),
    )
    spreads = [s for s in _spreads(ax) if s[1] != s[2]]  # the base's are at 1, no spread
    assert spreads == [
        (0.8, pytest.approx(b["time_low"]), pytest.approx(b["time_high"])),
        (1.2, pytest.approx(b["cost_low"]), pytest.approx(b["cost_high"])),
    ]
    assert _ticks(ax) == ["a", "b"]
    assert ax.get_ylabel() == "relative to a (= 1)"
    assert add_legend(ax) == ["training time", "cost"]
    (base,) = [line for line in ax.get_lines() if list(line.get_ydata()) == [1.0, 1.0]]
    assert "95 % interval; config prices" in ax.get_title()
    # Its Markdown: the intervals in words, the price's source once under the table.
    readable = readable_tables.readable_cost(cost).set_index("target")
    assert readable.loc["a", "time vs base [95 % interval]"] == "1 (base)"
    assert readable.loc["b", "cost vs base [95 % interval]"] == (
        f"{b['cost_relative']:.3f} [{b['cost_low']:.3f}, {b['cost_high']:.3f}]"
    )
    assert readable_tables.cost_note(cost, "a").endswith("Prices: a, b: test.")


def test_cost_says_why_when_not_normalised(drawn):
    figures.fig_cost(None, None, "no hourly_usd in the config: cost not computed", None, "")
    (ax,) = drawn["cost"].axes
    assert _texts(ax) == ["no hourly_usd in the config: cost not computed"]
    assert not ax.patches


def test_backends_shows_throughput_and_time_to_accuracy_per_backend(drawn):
    runs = [
        *(_set(_run("a", k, 20.0), mean_images_per_s=v, time_to_accuracy_seconds=t)
          for k, v, t in ((1, 110.0, 40.0), (2, 100.0, 30.0), (3, 120.0, 50.0))),
        _set(_run("b", 1, 20.0, backend="jax"), mean_images_per_s=70.0, final_test_accuracy=0.612),
    ]  # fmt: skip
    figures.fig_backends(_summary(runs), None, "")
    ax_t, ax_a = drawn["backends"].axes
    assert draw_bars(ax_t)[1] == [110.0, 70.0]
    assert _spreads(ax_t) == [(0.0, 100.0, 120.0)]
    assert ax_t.get_ylabel() == "training throughput (images/s)"
    assert draw_bars(ax_a)[1] == [40.0, 0.0]  # b never reached the target: no bar
    assert _texts(ax_a) == ["40 s (3/3 reached)", "not reached\n(final accuracy 0.612)"]
    assert ax_a.get_ylabel() == "time to accuracy target (s)"
    assert _ticks(ax_t) == _ticks(ax_a) == ["a\ntensorflow", "b\njax"]
    assert [ax_t.get_title(), ax_a.get_title()] == [
        "Throughput per backend",
        "Time to accuracy per backend",
    ]
    assert add_legend(ax_a) == ["Keras on tensorflow", "Keras on jax"]
    colours = [p.get_facecolor() for p in ax_a.patches]
    assert colours[0] != colours[1]  # one colour per backend


def test_backends_without_a_target_reaching_the_accuracy_draws_no_empty_panel(drawn):
    """The demo's 2 epochs reach no accuracy target: the throughput alone, and one title line
    with each target's final accuracy, not a panel of "not reached" slots."""
    runs = [_run("a", 1, 20.0), _run("b", 1, 20.0, backend="jax")]
    figures.fig_backends(_summary(runs), None, "")
    (ax_t,) = drawn["backends"].axes
    assert ax_t.get_title() == (
        "Throughput per backend\nno target reached the accuracy target (final test accuracy: "
        "a 0.600, b 0.600)"
    )
    assert add_legend(ax_t) == ["Keras on tensorflow", "Keras on jax"]


def test_a_bars_value_label_sits_above_its_error_bar(drawn):
    """The value is written over the error bar's top, not across its line."""
    runs = [_set(_run("a", k, 20.0), mean_images_per_s=v)
            for k, v in ((1, 100.0), (2, 110.0), (3, 130.0))]  # fmt: skip
    figures.fig_throughput(_summary(runs), None, "")
    (ax,) = drawn["throughput"].axes
    (label,) = [t for t in ax.texts if t.get_text() == "110"]
    assert label.xy == (0, 130.0)  # the median's label at the max's height


def test_backends_time_to_accuracy_is_the_median_of_the_repeats_that_reached_it(drawn):
    runs = [
        _set(_run("a", k, 20.0), time_to_accuracy_seconds=t)
        for k, t in ((1, 30.0), (2, 40.0), (3, None))
    ]
    figures.fig_backends(_summary(runs), None, "")
    _, ax_a = drawn["backends"].axes
    assert _texts(ax_a) == ["35 s (2/3 reached)"]
    assert draw_bars(ax_a)[1] == [35.0]


def test_backends_marks_flagged_runs_as_throughput_does(drawn):
    runs = [_interfered(_run("a", 1, 20.0)), _run("b", 1, 20.0), _interfered(_run("b", 2, 20.0))]
    figures.fig_backends(_summary(runs), None, "")
    (ax_t,) = drawn["backends"].axes
    assert ax_t.get_title().startswith("Throughput per backend; 2 of 3 runs flagged, all counted")
    hatched = [bar.get_hatch() for bar in ax_t.patches]
    assert hatched == [plotting.FLAGGED_HATCH, None]  # a: no clean run; b: one clean run
    assert plotting.FLAGGED_NOTE in add_legend(ax_t)


def test_backends_counts_every_run_that_reached_the_target(drawn):
    runs = [
        _set(_run("a", 1, 20.0), time_to_accuracy_seconds=30.0),
        _set(_run("a", 2, 20.0), time_to_accuracy_seconds=40.0),
        _interfered(_set(_run("a", 3, 20.0), time_to_accuracy_seconds=50.0)),
        _set(_run("a", 4, 20.0), time_to_accuracy_seconds=None),  # never reached it
    ]
    figures.fig_backends(_summary(runs), None, "")
    _, ax_a = drawn["backends"].axes
    assert _texts(ax_a) == ["40 s (3/4 reached)"]  # the flagged run counts


def test_sweeps_draws_one_line_per_thread_count_over_batch_size(drawn):
    points = [  # (batch size, threads, images/s, final accuracy), batch sizes out of order
        (128, 1, 300.0, 0.50), (32, 1, 100.0, 0.70), (64, 1, 200.0, 0.60),
        (128, 2, 500.0, 0.45), (32, 2, 150.0, 0.65),
    ]  # fmt: skip
    targets, runs = {}, [_set(_run("h", 1, 20.0), mean_images_per_s=999.0)]  # base: not drawn
    for b, n, ips, acc in points:
        name = f"h.bs{b}-t{n}"
        targets[name] = {"sweep": {"base": "h", "batch_size": b, "threads": n}}
        runs.append(
            _set(_run(name, 1, 20.0), batch_size=b, threads=n, mean_images_per_s=ips,
                 final_test_accuracy=acc)
        )  # fmt: skip
    summ = summary.target_summary(summary.run_table(runs, targets, "hand-made"))
    figures.fig_sweeps(summ, None, "")
    ax_t, ax_a = drawn["sweeps"].axes
    for ax, ys in ((ax_t, ([100, 200, 300], [150, 500])), (ax_a, ([0.7, 0.6, 0.5], [0.65, 0.45]))):
        lines = [c.lines[0] for c in ax.containers]
        assert [list(line.get_xdata()) for line in lines] == [[32, 64, 128], [32, 128]]
        assert [list(line.get_ydata()) for line in lines] == [pytest.approx(y) for y in ys]
        assert add_legend(ax) == ["h, 1 thread", "h, 2 threads"]
        assert ax.get_xlabel() == "batch size"
        assert ax.get_xscale() == "log"
        assert _ticks(ax) == ["32", "64", "128"]
    assert ax_t.get_ylabel() == "training throughput (images/s)"
    assert ax_a.get_ylabel() == "final test accuracy"
    assert [ax_t.get_title(), ax_a.get_title()] == [
        "Sweep: throughput",
        "Sweep: final test accuracy (same epochs for every point)",
    ]


def test_sweeps_says_when_there_is_none(drawn):
    figures.fig_sweeps(_summary([_run("h", 1, 20.0)]), None, "")
    (ax,) = drawn["sweeps"].axes  # one panel that says so, not two empty ones
    assert _texts(ax) == ["no sweeps: in this config (sweeps: sets a batch size x threads grid)"]


def test_paper_vs_ours_draws_each_ratio_and_names_what_was_not_compared(drawn):
    comparison = pd.DataFrame(
        {
            "quantity": ["training time, 2-core laptop", "parameters", "memory per image"],
            "paper": ["309 min", "16,832,432", "~83 MB"],
            "ours": ["1 min", "16,834,436", "not measured"],
            "ratio": [0.5, 2.0, None],
            "target": ["a", "model", "all main targets"],
            "note": ["", "", ""],
        }
    )
    comparison_figures.fig_paper_vs_ours(comparison, None, "")
    (ax,) = drawn["paper_vs_ours"].axes
    assert not ax.patches  # no bars: a bar on a log axis starts where the axis does
    points, parity = ax.get_lines()
    assert list(points.get_xdata()) == [0.5, 2.0] and list(points.get_ydata()) == [0, 1]
    assert points.get_marker() == "o"
    (stems,) = ax.collections  # each point joined to 1
    assert [sorted(s[:, 0]) for s in stems.get_segments()] == [[0.5, 1.0], [1.0, 2.0]]
    assert _ticks(ax, "y") == ["training time, 2-core laptop", "parameters"]
    assert _texts(ax) == [" 0.5  (1 min)", " 2  (16,834,436)"]
    assert list(parity.get_xdata()) == [1.0, 1.0]  # 1 = as in the paper
    assert ax.get_xscale() == "log"
    assert ax.get_xlabel() == "ours / paper (log scale; times per image-epoch)"
    assert ax.get_title() == "Paper vs reproduction; not compared: memory per image"


def test_the_synthetic_mark_is_drawn_on_the_saved_figure(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    seen = []
    savefig = Figure.savefig

    def watch(fig, fname, **kw):
        fig.canvas.draw()
        to_inches = fig.dpi_scale_trans.inverted()
        # the part of the figure the file keeps, in inches
        kept = fig.get_tightbbox() if kw.get("bbox_inches") == "tight" else fig.bbox_inches
        marks = [t for t in fig.texts if "SYNTHETIC" in t.get_text()]
        inside = [
            kept.contains(*corner)
            for t in marks
            for corner in t.get_window_extent().transformed(to_inches).corners()
        ]
        seen.append((kw["format"], [t.get_text() for t in marks], inside))
        return savefig(fig, fname, **kw)

    monkeypatch.setattr(Figure, "savefig", watch)
    figures.fig_cost(None, None, "no prices", tmp_path, "SYNTHETIC DATA - data: test frames")
    assert [s[:2] for s in seen] == [
        (ext, ["SYNTHETIC DATA - data: test frames"]) for ext in layout.FIGURE_FORMATS
    ]
    assert all(all(inside) and inside for _, _, inside in seen)  # whole, within the saved area
    assert all((tmp_path / f"cost.{ext}").stat().st_size > 0 for ext in layout.FIGURE_FORMATS)


# The comparison figure and tables at few rounds, on made-up runs.


def _comparison(rounds: int, seed: int = 0) -> pd.DataFrame:
    """:func:`compare.comparison_table` of the offline demo's throughput ratios (host-1cpu
    the base) over ``rounds`` rounds: each round's machine speed moves by 5 % and each run by
    2 % more (log-normal); docker-1cpu and host-1cpu-jax reach the accuracy target, the
    others never do; the base does when ``seed`` is odd."""
    from embryo_bench.reporting import compare

    speed = {"host-1cpu": 1.0, "host-1cpu-jax": 0.448, "docker-1cpu": 0.985, "host-2cpu": 0.946}
    speed |= {"host-2cpu.bs120-t2": 1.439, "host-2cpu.bs480-t2": 1.776}
    reached = {"host-1cpu-jax": 250.0, "docker-1cpu": 102.0} | (
        {"host-1cpu": 100.0} if seed % 2 else {}
    )
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(1, rounds + 1):
        machine = rng.normal(0, 0.05)
        for target, s in speed.items():
            noise = np.exp(machine + rng.normal(0, 0.02))
            tta = reached.get(target, np.nan) / noise
            rows.append({"target": target, "repeat": k, "images_per_s": 300 * s * noise,
                         "time_to_accuracy_s": tta, "flags": ""})  # fmt: skip
    return compare.comparison_table(pd.DataFrame(rows), "host-1cpu", 0.05)


def _draw_comparison(drawn, table):
    """The comparison figure of ``table``, drawn (its text boxes laid out)."""
    comparison_figures.fig_comparison(
        table, "6 runs ran one after another in the planned order", None, ""
    )
    fig = drawn["comparison"]
    fig.canvas.draw()
    return fig


def _all_texts(fig):
    """Every text drawn on ``fig`` (titles, labels, annotations, tick labels) that says
    something."""
    found = [*fig.texts]  # the title among them
    for ax in fig.axes:
        found += [*ax.texts, ax.title, ax.xaxis.label]
        for axis, (lo, hi) in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            ticks = axis.get_major_ticks()  # those drawn: within the axis' limits
            found += [t.label1 for t in ticks if min(lo, hi) <= t.get_loc() <= max(lo, hi)]
    return [t for t in found if t.get_visible() and t.get_text()]


def _interval_bars(ax):
    """The interval bars (ErrorbarContainers) drawn in ``ax``."""
    from matplotlib.container import ErrorbarContainer

    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def test_one_round_draws_plain_points_and_says_once_that_intervals_need_rounds(drawn):
    table = _comparison(rounds=1)
    fig = _draw_comparison(drawn, table)
    texts = [t.get_text() for t in _all_texts(fig)]
    said = [t for t in texts if "need at least 3 rounds" in t]
    assert len(said) == 1  # once, in the title
    assert not [t for t in texts if "[" in t or "one pair" in t or "pair(s)" in t]
    (throughput,) = fig.axes  # no empty time-to-accuracy panel
    assert not _interval_bars(throughput)  # plain points, no "[x, x]" bars
    points = [line for line in throughput.lines if line.get_marker() == "o"]
    assert len(points) == len(table)
    jax = f"{table.set_index('target').loc['host-1cpu-jax', 'throughput_ratio']:.3f}"
    assert jax in [t.get_text() for t in throughput.texts]  # the ratio, alone
    # No target reached the accuracy the base never reached: one line in the title, no panel.
    assert fig._suptitle.get_text().endswith(
        "\ntime to accuracy: host-1cpu never reached the accuracy target, no ratio"
    )
    # The tables: the ratio alone, no verdict per row; the note says why, once.
    readable = readable_tables.readable_comparison(table).set_index("target")
    assert readable.loc["host-1cpu-jax", "throughput ratio [95 % simultaneous interval]"] == jax
    assert readable.loc["host-1cpu-jax", "throughput"] == ""
    # A target that reached it says when (compare.comparison_table); no row says "no pair".
    tta = readable["time to accuracy"]
    assert tta.iloc[0] == "base: not reached"
    assert all(v == "" or v.startswith("base never reached (this target: ") for v in tta[1:])
    per_target = readable_tables.readable_summary(_summary([_run("host-1cpu-jax", 1, 60.0)]), table)
    assert per_target["throughput vs base [95 % simultaneous interval]"].tolist() == [jax]
    assert readable_tables.comparison_note(table) == (
        "A 95 % interval and a verdict need at least 3 rounds; ratios from 1 round are shown "
        "alone, as plain points (train.repeats sets the rounds). The base, host-1cpu, never "
        "reached the accuracy target: no time-to-accuracy ratio."
    )


def _overlapping(fig):
    """The (text, what it covers) pairs of a rendered ``fig`` where a text's box overlaps a
    point (its marker's square), an interval bar, the line at 1 or another text."""
    renderer = fig.canvas.get_renderer()
    texts = _all_texts(fig)
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
    drawn_ = []
    for ax in fig.axes:
        for line in ax.lines:
            if line.get_marker() not in (None, "", " ", "None"):
                r = line.get_markersize() / 2 * fig.dpi / 72  # points to pixels
                for x, y in ax.transData.transform(np.column_stack(line.get_data())):
                    drawn_.append((f"point at {x:.0f},{y:.0f}", (x - r, y - r, x + r, y + r)))
            if line.get_linestyle() not in ("None", ""):
                drawn_.append(("a line", tuple(line.get_window_extent(renderer).extents)))
        for c in _interval_bars(ax):
            for coll in c.lines[2]:
                for seg in coll.get_segments():
                    (x0, y0), (x1, y1) = np.sort(ax.transData.transform(seg), axis=0)
                    drawn_.append(("an interval bar", (x0, y0, x1, y1)))
    found = []
    for i, (text, box) in enumerate(boxes):
        others = [(t, tuple(b.extents)) for j, (t, b) in enumerate(boxes) if j != i]
        for what, (x0, y0, x1, y1) in drawn_ + others:
            if box.x0 < x1 and box.x1 > x0 and box.y0 < y1 and box.y1 > y0:
                found.append((text, what))
    return found


@pytest.mark.parametrize("rounds", [1, 5])
def test_no_label_overlaps_a_point_a_bar_the_line_at_1_or_another_text(drawn, rounds):
    """Checked on the rendered figure's text boxes against where its markers, interval
    bars and lines are drawn (pixels), with the base reaching the accuracy target or not."""
    for seed in (0, 1):
        fig = _draw_comparison(drawn, _comparison(rounds, seed))
        assert _overlapping(fig) == [], (rounds, seed)
        figures.plt.close(fig)


@pytest.mark.parametrize(("rounds", "intervals"), [(2, False), (3, True), (5, True)])
def test_intervals_are_drawn_from_3_rounds_on(drawn, rounds, intervals):
    table = _comparison(rounds, seed=1)
    fig = _draw_comparison(drawn, table)
    throughput, accuracy = fig.axes
    jax = table.set_index("target").loc["host-1cpu-jax"]
    ratio = f"{jax['throughput_ratio']:.3f}"
    label = [t.get_text() for t in throughput.texts if t.get_text().startswith(ratio)]
    if intervals:
        assert len(_interval_bars(throughput)) == len(table) - 1  # every target but the base
        assert len(_interval_bars(accuracy)) == 2  # the two that reached it
        assert label == [
            f"{jax['throughput_ratio']:.3f} [{jax['throughput_low']:.3f}, "
            f"{jax['throughput_high']:.3f}], at least 5 % slower, {rounds} pairs"
        ]
        # The one thing said once: the throughput intervals hold together (5 targets).
        note = readable_tables.comparison_note(table)
        assert note.startswith("The throughput intervals hold together: 95 % for all 5")
        assert "need at least" not in note
        assert not [t for t in _all_texts(fig) if "need at least" in t.get_text()]
    else:
        assert not _interval_bars(throughput) and not _interval_bars(accuracy)
        assert label == [f"{jax['throughput_ratio']:.3f}"]
        assert "ratios from 2 rounds are shown alone" in fig._suptitle.get_text()


@pytest.mark.parametrize("rounds", [1, 5])
def test_unpaired_rows_are_hollow_and_say_unpaired(drawn, rounds):
    """A ``pairing`` column (runs merged from elsewhere, compared without pairs) marks its
    row; a table without the column draws every point filled."""
    table = _comparison(rounds, seed=1)
    pairing = ["base", "unpaired", *["paired"] * (len(table) - 2)]
    for with_column in (False, True):
        t = table.assign(pairing=pairing) if with_column else table
        fig = _draw_comparison(drawn, t)
        throughput = fig.axes[0]
        hollow = [line for line in throughput.lines if line.get_markerfacecolor() == "white"]
        hollow_y = sorted({float(y) for line in hollow for y in line.get_ydata()})
        labels = [x.get_text() for x in throughput.texts if "unpaired" in x.get_text()]
        if with_column:
            assert hollow_y == [len(t) - 2.0]  # the second row from the top
            assert labels == [readable_tables.ratio_text(t.iloc[1], "throughput") + (
                ", at least 5 % slower, unpaired" if rounds >= 3 else ", unpaired")]  # fmt: skip
            readable = readable_tables.readable_comparison(t)
            assert readable["pairing"].tolist() == pairing
        else:
            assert hollow_y == [] and labels == []
        figures.plt.close(fig)


def test_the_input_workers_of_a_files_run_are_in_its_rows():
    # The V100 post's tuned variant (4 workers) must say so; memory input has none,
    # and a run without a spec (made before run.json) too.
    files = _run("tuned", 1, 60.0)
    files.metrics["input_mode"] = "files"
    files.spec = {"workload": {"input_mode": "files", "workers": 4}}
    memory = _run("memory", 1, 60.0)
    memory.spec = {"workload": {"input_mode": "memory", "workers": 2}}
    table = summary.run_table([files, memory, _run("old", 1, 60.0)], {}, "hand-made")
    assert table["workers"].iloc[0] == 4
    assert table["workers"].iloc[1:].isna().all()
    assert summary.target_summary(table).set_index("target").loc["tuned", "workers"] == 4


def test_the_footer_sits_under_slanted_machine_labels():
    """Targets split by machine (``<target>@<machine>``, as merged GPU runs are) get two-line
    tick labels, and the data's footer is placed under them, not across them (it overprinted
    the labels of the H100 runs of 2026-11-27)."""
    from embryo_bench.reporting import plotting

    names = [f"gpu-{k}@xeon-avx512-amx-16c-126g-h100-80gb-3f53" for k in range(5)]
    fig, ax = figures.plt.subplots(figsize=(8, 4))
    ax.bar(range(len(names)), [1.0] * len(names))
    plotting.target_ticks(ax, names)
    assert [t.get_text() for t in ax.get_xticklabels()][0] == (
        "gpu-0\n@xeon-avx512-amx-16c-126g-h100-80gb-3f53"
    )
    footer = plotting.place_footer(fig, "SYNTHETIC DATA - data: made up")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = footer.get_window_extent(renderer)
    for label in ax.get_xticklabels():
        other = label.get_window_extent(renderer)
        assert not box.overlaps(other), label.get_text()
    figures.plt.close(fig)


def test_a_readable_tables_numbers_print_as_written_and_align_right(tmp_path):
    from embryo_bench.reporting.readable_tables import usd_text

    assert [usd_text(v) for v in (8.434e-05, 0.095, 1.2549, float("nan"))] == [
        "0.0000843", "0.095", "1.25", ""
    ]  # fmt: skip
    readable = pd.DataFrame(
        {"target": ["a", "b"], "cost (USD, median)": [usd_text(8.434e-05), usd_text(1.2e-4)],
         "verdict": ["base", "faster"]}
    )  # fmt: skip
    figures._write_table(readable, tmp_path, "cost_table", "SYNTHETIC", readable, "a note")
    text = (tmp_path / "cost_table.md").read_text()
    assert "0.0000843 |" in text and "0.00012 |" in text and "e-0" not in text
    rule = next(line for line in text.splitlines() if line.startswith("|:"))
    target, cost, verdict = rule.strip("|").split("|")
    assert cost.endswith(":") and not cost.startswith(":")  # a number column: right
    assert target.startswith(":") and verdict.startswith(":") and not verdict.endswith(":")


def test_a_row_resting_on_a_flagged_run_says_so_and_where_the_robust_view_differs(drawn):
    from embryo_bench.reporting import compare, robust

    rows = []
    for k, (base, fast) in enumerate([(100, 150), (102, 156), (98, 60), (101, 150)], 1):
        rows += [
            {"target": "a", "repeat": k, "images_per_s": base, "flags": ""},
            {"target": "b", "repeat": k, "images_per_s": fast,
             "flags": "drifted" if k == 3 else ""},
        ]  # fmt: skip
    runs = pd.DataFrame(rows).assign(time_to_accuracy_s=np.nan)
    table = compare.comparison_table(runs, "a", 0.05)
    level = table["throughput_confidence"].iloc[0]
    table = robust.with_views(table, robust.clean_view(runs, "a", 0.05, level))
    label = comparison_figures._comparison_label(table.iloc[1], "throughput", table)
    assert "flagged runs 1 (drifted 1)" in label
    # The slow flagged round leaves the main verdict unresolved; the other three say faster.
    assert compare.direction(table.iloc[1]["throughput_verdict"]) == compare.UNRESOLVED
    assert label.endswith("without them: at least 5 % faster")
    assert "flagged" not in comparison_figures._comparison_label(table.iloc[0], "throughput", table)
