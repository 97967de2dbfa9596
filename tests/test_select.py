"""Class balancing to the rarest class, seeded, and shard assignment."""

import pandas as pd
import pytest

from embryo_bench.data.select import assign_shards, balance, counts_lines, summary
from embryo_bench.errors import DataError


def _manifest(counts):
    rows = []
    for cells, n in counts.items():
        rows += [(f"E{i % 10:02d}", f"c{cells}f{i:04d}", "p", cells, "train") for i in range(n)]
    return pd.DataFrame(rows, columns=["embryo", "frame", "path", "cells", "split"])


def test_balance_paper_numbers():
    # Paper: 766 three-cell frames, all kept, 766 drawn from each other class -> 3,064.
    m = _manifest({1: 9000, 2: 12000, 3: 766, 4: 11000, 0: 50, 5: 10})
    sel = balance(m, seed=0)
    assert len(sel) == 3064
    assert sel["cells"].value_counts().to_dict() == {1: 766, 2: 766, 3: 766, 4: 766}
    assert set(sel.loc[sel["cells"] == 3, "frame"]) == set(m.loc[m["cells"] == 3, "frame"])


def test_balance_is_seeded():
    m = _manifest({1: 50, 2: 40, 3: 10, 4: 30})
    assert balance(m, 1).equals(balance(m, 1))
    assert not balance(m, 1).equals(balance(m, 2))


def test_balance_empty_class():
    with pytest.raises(DataError, match=r"no frames with \[3\] cells after selection"):
        balance(_manifest({1: 5, 2: 5, 4: 5}), 0)


def test_shards_round_robin_and_summary():
    sel = assign_shards(balance(_manifest({1: 5, 2: 5, 3: 5, 4: 5}), 0), 3)
    assert sel["shard"].value_counts().sort_index().tolist() == [7, 7, 6]
    assert summary(sel)["train"] == {1: 5, 2: 5, 3: 5, 4: 5}
    with pytest.raises(DataError, match="shards=30"):
        assign_shards(sel, 30)


def test_summary_counts_the_source_beside_the_paper():
    m = _manifest({1: 9000, 2: 12000, 3: 766, 4: 11000, 0: 50, 5: 10})
    counts = summary(assign_shards(balance(m, seed=0), 4), m)
    assert counts["source"] == {
        "labelled_frames": 32_826,
        "per_class": {0: 50, 1: 9000, 2: 12000, 3: 766, 4: 11000, 5: 10},
    }
    assert counts["balanced_per_class"] == 766 and counts["total"] == 3064
    assert counts["paper"] == {
        "labelled_frames": 34_133,
        "balanced_per_class": 766,
        "balanced_frames": 3_064,
    }
    lines = counts_lines(counts)
    assert lines[0].startswith("labelled frames in the source: 32,826 (paper: 34,133)")
    assert lines[1] == "balanced: 766 per class, 3,064 frames (paper: 766 per class, 3,064)"
    assert lines[2] == "train: 3,064 frames, per class {1: 766, 2: 766, 3: 766, 4: 766}"


def test_frames_outside_the_four_classes_are_counted_as_dropped():
    manifest = pd.DataFrame(
        {"embryo": [""] * 9, "frame": [f"f{i}" for i in range(9)],
         "cells": [1, 2, 3, 4, 5, 6, 6, 1, 2], "split": ["train"] * 4 + ["test"] * 5}
    )  # fmt: skip
    counts = summary(balance(manifest, 0), manifest)
    assert counts["dropped_frames"] == {5: 1, 6: 2}
