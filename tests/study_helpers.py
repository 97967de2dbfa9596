"""Hand-made ``study/runs.csv`` rows for the claims tests (issue 34): the columns a claims
module's ``runs`` argument is read by (:func:`embryo_bench.reporting.claims.common.
paired_workload_ratio`)."""

from __future__ import annotations

import pandas as pd

#: The columns of ``study/runs.csv`` the claims read.
RUN_COLUMNS = ["workload", "target", "repeat", "merged", "steady_epoch_s", "images_per_s"]


def study_runs(*rows: dict) -> pd.DataFrame:
    """One run per row: workload, target, repeat (the round), and any of steady_epoch_s (s)
    and images_per_s; merged is False unless given."""
    full = [{"merged": False, "steady_epoch_s": float("nan"), "images_per_s": float("nan"), **r}
            for r in rows]  # fmt: skip
    return pd.DataFrame(full, columns=RUN_COLUMNS)


#: No run at all: the claims fall back to ``ours``' medians.
NO_RUNS = study_runs()
