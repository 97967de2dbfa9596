"""Hand-made ``study/runs.csv`` rows for the claims tests: the columns a claims module's
``runs`` argument is read by (:func:`embryo_bench.reporting.claims.common.
paired_workload_ratio`, :func:`~embryo_bench.reporting.claims.common.target_ratio`); and where
the developers' plain-text copies of the studies are, for the tests that check the published
numbers against the studies' own texts."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: The developers' plain-text copies of the studies, beside the checkout where present (not
#: part of the repository; docs/studies/README.md, "The texts the tests compare with"): one
#: file a study, its name beginning with the study's number.
SEED_COPIES = Path(__file__).resolve().parents[2] / "shared" / "seeds"


def seed_copy(number: str) -> Path:
    """The plain-text copy of study ``number`` ("000".."004"), or, where there is none, the
    path a test names when it skips."""
    found = sorted(SEED_COPIES.glob(f"{number}_*.txt"))
    return found[0] if found else SEED_COPIES / f"{number}_*.txt"


#: The columns of ``study/runs.csv`` the claims read.
RUN_COLUMNS = [
    "workload",
    "target",
    "repeat",
    "merged",
    "steady_epoch_s",
    "images_per_s",
    "min_difference",
]


def study_runs(*rows: dict) -> pd.DataFrame:
    """One run per row: workload, target, repeat (the round), and any of steady_epoch_s (s),
    images_per_s and min_difference (the configuration's compare.min_difference); merged is
    False unless given."""
    nan = float("nan")
    full = [{"merged": False, "steady_epoch_s": nan, "images_per_s": nan, "min_difference": nan,
             **r} for r in rows]  # fmt: skip
    return pd.DataFrame(full, columns=RUN_COLUMNS)


def rounds(workload: str, target: str, images_per_s, first: int = 1, **extra) -> list[dict]:
    """One run of ``target`` per value of ``images_per_s`` (images/s), in rounds ``first``,
    ``first`` + 1, ...; ``extra`` columns on every run."""
    return [
        dict(workload=workload, target=target, repeat=k, images_per_s=v, **extra)
        for k, v in enumerate(images_per_s, first)
    ]


#: No run at all: the claims fall back to ``ours``' medians.
NO_RUNS = study_runs()
