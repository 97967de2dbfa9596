"""The robust views of a comparison: throughput without the flagged runs, and by each run's
median throughput window, beside the main interval; an outlier or a burst that decides a
verdict shows as a disagreement, and a table without either says nothing more."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from embryo_bench.reporting import robust
from embryo_bench.reporting.compare import comparison_table


def _runs(speeds: dict[str, list[float]], flagged: set[tuple[str, int]] = frozenset()):
    rows = [
        {"target": t, "repeat": k + 1, "images_per_s": v, "time_to_accuracy_s": np.nan,
         "flags": "interfered" if (t, k + 1) in flagged else ""}
        for t, vs in speeds.items() for k, v in enumerate(vs)
    ]  # fmt: skip
    return pd.DataFrame(rows)


def _table(runs: pd.DataFrame) -> pd.DataFrame:
    paired = comparison_table(runs, "a", 0.05)
    level = paired["throughput_confidence"].iloc[0]
    return robust.with_views(paired, robust.clean_view(runs, "a", 0.05, level))


def test_an_outlier_that_decides_the_verdict_shows_as_a_disagreement():
    # b equals a in four rounds; in round 5 a flagged run of b is 40 % slow.
    speeds = {"a": [100, 101, 99, 100, 100], "b": [100, 100.5, 99.5, 100.2, 60]}
    table = _table(_runs(speeds, {("b", 5)})).set_index("target")
    assert table.loc["b", "throughput_pairs"] == 5 and table.loc["b", "throughput_clean_pairs"] == 4
    assert table.loc["b", "throughput_clean_ratio"] > table.loc["b", "throughput_ratio"]
    assert table.loc["b", "throughput_clean_verdict"].startswith("the same within")
    note = robust.disagreement_note(table.reset_index())
    assert note.startswith("Without the flagged runs") and "b 'the same within" in note
    assert "instead of 'unresolved" in note or "instead of 'slower" in note, note


def test_a_flagged_base_run_takes_its_rounds_pairs_with_it():
    speeds = {"a": [100, 101, 99, 100], "b": [120, 121, 119, 120]}
    clean = robust.clean_view(_runs(speeds, {("a", 2)}), "a", 0.05, 0.95).set_index("target")
    assert clean.loc["a", "throughput_clean_pairs"] == 3
    assert clean.loc["b", "throughput_clean_pairs"] == 3
    assert clean.loc["b", "throughput_clean_verdict"] == "at least 5 % faster"


def test_no_flagged_run_no_note_and_an_unchanged_direction_says_so():
    speeds = {"a": [100, 101, 99, 100], "b": [120, 121, 119, 120], "c": [100, 100, 101, 99]}
    assert robust.disagreement_note(_table(_runs(speeds))) == ""
    note = robust.disagreement_note(_table(_runs(speeds, {("c", 1)})))
    # c without its flagged run: fewer pairs, unresolved; no other direction, no disagreement.
    assert note.endswith("no throughput verdict points another way.")


def test_nothing_clean_left_says_so():
    speeds = {"a": [100, 101, 99], "b": [120, 121, 119]}
    flagged = {("b", 1), ("b", 2), ("b", 3)}
    clean = robust.clean_view(_runs(speeds, flagged), "a", 0.05, 0.95).set_index("target")
    assert clean.loc["b", "throughput_clean_verdict"] == "no unflagged pair"
    assert np.isnan(clean.loc["b", "throughput_clean_ratio"])


def _with_windows(speeds, windows):
    runs = _runs(speeds)
    runs["window_images_per_s"] = [v for t in speeds for v in windows[t]]
    paired = comparison_table(runs, "a", 0.05)
    level = paired["throughput_confidence"].iloc[0]
    return robust.with_views(
        paired,
        robust.clean_view(runs, "a", 0.05, level),
        robust.window_view(runs, "a", 0.05, level),
    )


def test_a_burst_that_leaves_the_epochs_unresolved_shows_in_the_window_view():
    # b equals a by its median windows in every round; its epochs' images/s carry bursts of
    # contention (rounds 2 and 4 slow): unresolved by the epochs, the same by the windows.
    speeds = {"a": [100, 101, 99, 100, 100], "b": [100, 80, 100, 85, 101]}
    windows = {"a": [110, 111, 109, 110, 110], "b": [110, 110.5, 109.5, 110.2, 110]}
    table = _with_windows(speeds, windows).set_index("target")
    assert table.loc["b", "throughput_window_pairs"] == 5
    assert table.loc["b", "throughput_window_ratio"] == pytest.approx(1.0, abs=0.005)
    assert table.loc["b", "throughput_verdict"].startswith("unresolved")
    assert table.loc["b", "throughput_window_verdict"].startswith("the same within")
    note = robust.window_note(table.reset_index())
    assert note.startswith("By each run's median throughput window") and "b 'the same" in note
    # Where both agree, or the windows leave it unresolved too, nothing is said.
    same = _with_windows(speeds | {"b": [100, 101, 99, 100, 100]}, windows)
    assert robust.window_note(same) == ""


def test_runs_without_windows_say_so_and_are_no_disagreement():
    speeds = {"a": [100, 101, 99], "b": [120, 121, 119]}
    nan = [float("nan")] * 3
    table = _with_windows(speeds, {"a": nan, "b": nan}).set_index("target")
    assert table.loc["b", "throughput_window_verdict"] == "no windows"
    assert robust.window_note(table.reset_index()) == ""
    # A results table from before the column: the same.
    runs = _runs(speeds)
    view = robust.window_view(runs, "a", 0.05, 0.95).set_index("target")
    assert view.loc["b", "throughput_window_verdict"] == "no windows"
