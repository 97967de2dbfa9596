"""Figures a reader can use (issue 10, item 10): checked on the matplotlib objects the
figure functions draw, from hand-made runs (no training)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embryo_bench import figures, layout, summary
from embryo_bench.telemetry import COLUMNS


@pytest.fixture
def drawn(monkeypatch):
    """The figures the functions would save, by name (kept open instead of written)."""
    saved = {}

    def keep(fig, out_dir, name, footer, exts=layout.FIGURE_FORMATS):
        saved[name] = fig

    monkeypatch.setattr(figures, "_save", keep)
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
    return summary.Run(f"train/{target}/repeat-{repeat}", metrics, history)


def _summary(runs):
    return summary.target_summary(summary.run_table(runs, {}, "hand-made"))


def test_no_min_max_bar_when_one_run_is_summarised():
    summ = _summary([_run("one", 1, 60.0), *(_run("three", k, 60.0 + k) for k in (1, 2, 3))])
    med, err = figures._errorbars(summ, "training_s")
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
    figures.fig_utilisation(run, None, "utilisation/a-repeat-1", "")
    axes = drawn["utilisation/a-repeat-1"].axes
    assert [ax.get_title() for ax in axes] == ["CPU % (100 = one core)", "memory (MiB)"]
    vertical = [line.get_xdata()[0] for line in axes[0].get_lines() if line.get_ls() == ":"]
    assert vertical == pytest.approx([10.0, 20.0])
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert labels == ["this run", "other processes, its cores", "epoch ends"]


def test_every_figure_and_table_has_a_report_entry():
    assert set(layout.REPORT_ENTRIES) == set(layout.FIGURE_NAMES) | set(layout.TABLE_NAMES)
    categories = [c for c, _ in layout.REPORT_ENTRIES.values()]
    assert categories[0] == layout.PAPER_FIGURES  # the paper's figures are listed first
    assert all(c[0].isdigit() for c in categories)  # numbered, in reading order
