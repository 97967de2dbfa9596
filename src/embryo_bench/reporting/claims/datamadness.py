"""DATAmadness (2019; shared/seeds/001, ``published/datamadness.csv``): a 58 M-parameter CNN
(catalog ``datamadness-cnn``) fed by an augmenting image generator, 10 epochs on a Ryzen 2700X
and on an RTX 2080. Its headline claims, checked on our runs (issue 34, item 3): the GPU's
speed-up and its utilisation (1 % in the CPU run, 11 % in the GPU run) cannot be checked
without a GPU; the input-bound reading of those percentages (issue 34: the generator, not the
model, sets the pace) is checked as files vs memory input of the same workload on each of our
targets (:func:`embryo_bench.reporting.claims.input_bound.input_bound_claims`). The post
itself blames the GPU's memory; the claim's theirs says so.
"""

from __future__ import annotations

import pandas as pd

from .common import Claim
from .input_bound import input_bound_claims, no_gpu_claim, published_text

#: The study's workload (catalog name).
WORKLOAD = "datamadness-cnn"
SEED = "001_a7322e5556cd27ca.txt"


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Study 001's claims on our runs, in this order: the GPU's speed-up (cannot: no GPU),
    its utilisation (cannot: no GPU), then one input-bound claim per files-mode run of
    ``datamadness-cnn`` (or one "cannot" when none ran).

    Args:
        published: ``load_numbers("datamadness")`` (columns of ``published.studies.COLUMNS``).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``.
        runs: one row per run, ``study/runs.csv`` (the files-vs-memory ratio's rounds).

    Returns:
        list of :class:`~embryo_bench.reporting.claims.common.Claim`; the study's numbers are
        read from ``published`` (training seconds, utilisation %, seconds a step).
    """
    times = published[
        (published["metric"] == "training_seconds")
        & (published["workload"] == WORKLOAD)
        & published["used"]
    ]
    fast = times.loc[times["value"].idxmin(), "system"]
    slow = times.loc[times["value"].idxmax(), "system"]
    speedup = no_gpu_claim(
        f"the {fast} trains the CNN several times faster than the {slow} alone",
        "; ".join(
            filter(
                None,
                (
                    published_text(published, "training_seconds", WORKLOAD),
                    published_text(published, "relative_time", WORKLOAD),
                ),
            )
        ),
        f"{SEED}, The Conclusion and the Comparison summary",
    )
    use = published_text(published, "gpu_utilisation", WORKLOAD)
    utilisation = no_gpu_claim(
        f"the {fast} is barely used while the generator feeds it",
        f"GPU utilisation {use}; CPU utilisation "
        + published_text(published, "cpu_utilisation", WORKLOAD),
        f"{SEED}, Training the CNN on GPU and the Comparison summary",
    )
    bound = input_bound_claims(
        ours,
        runs,
        WORKLOAD,
        "training fed by the augmenting generator is input-bound (its steps mostly wait for "
        "images)",
        f"GPU utilisation {use}; seconds a step "
        + published_text(published, "step_seconds", WORKLOAD)
        + " (the post blames the GPU's memory, full; issue 34 reads the low utilisation as "
        "input-bound)",
        f"{SEED}, Training the CNN on GPU and the Comparison summary",
    )
    return [speedup, utilisation, *bound]
