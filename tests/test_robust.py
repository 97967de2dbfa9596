"""The robust view of a comparison: throughput without the flagged runs beside the main
interval; an outlier that decides a verdict shows as a disagreement, and a table without
flagged runs says nothing more."""

from __future__ import annotations

import numpy as np
import pandas as pd

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
    return robust.with_clean_view(paired, robust.clean_view(runs, "a", 0.05, level))


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
