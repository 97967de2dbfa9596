"""DATAmadness 2019 (study 001, its folder's ``numbers.csv``): a 58 M-parameter CNN
(catalog ``datamadness-cnn``) fed by an augmenting image generator, 10 epochs on a Ryzen 2700X
and on an RTX 2080. Its headline claims, checked on our runs:

* the GPU trains the CNN more than 6x as fast as the CPU (the 6 is the post's own
  ``relative_time`` of the Ryzen, read from the file): where a GPU target of ours ran the
  workload from files (the post's generator), its images/s over our fastest CPU target's,
  paired within the rounds (:func:`embryo_bench.reporting.claims.gpu.speedups`), holds where
  the interval lies above the post's factor;
* the GPU is barely used while the generator feeds it (11 %): where a GPU target ran from
  files, its median utilisation, idle most of the time below
  :data:`~embryo_bench.reporting.claims.gpu.GPU_IDLE_BELOW_PERCENT`; "GPU utilisation not in
  the table" where the runs table does not carry it;
* the input-bound reading of those percentages (this project's reading: the generator, not
  the model, sets the pace), checked as files vs memory input of the same workload on each
  of our targets (:func:`embryo_bench.reporting.claims.input_bound.input_bound_claims`). The
  post itself blames the GPU's memory; the claim's theirs says so.

Without a GPU target the first two say "cannot be checked here (no GPU)".
"""

from __future__ import annotations

import math

import pandas as pd

from ...published.studies import parse_settings
from ...reporting.claims.common import DOES_NOT_HOLD, HOLDS, Claim
from ...reporting.claims.gpu import (
    GPU_IDLE_BELOW_PERCENT,
    NO_UTILISATION,
    cannot,
    finished,
    gpu_utilisation,
    no_gpu_why,
    speedup_claim,
    speedups,
    synthetic,
    utilisation_missing,
)
from ...reporting.claims.input_bound import input_bound_claims, published_text

#: The study's workload (catalog name).
WORKLOAD = "datamadness-cnn"
#: The study's short name (docs/studies/README.md), at the head of each claim's source.
SEED = "DATAmadness 2019"


def _cpu_factor(published: pd.DataFrame, cpu_system: str) -> tuple[float, str]:
    """The post's CPU time over the GPU's (its ``relative_time`` row of ``cpu_system``: "more
    than 6x faster") and the input its runs were fed from (the row's ``input`` setting).

    Raises:
        ValueError: the file has no used relative_time row of ``cpu_system``.
    """
    rows = published[
        (published["metric"] == "relative_time")
        & (published["workload"] == WORKLOAD)
        & (published["system"] == cpu_system)
        & published["used"]
    ]
    if rows.empty:
        raise ValueError(f"no relative_time of {cpu_system} on {WORKLOAD} in the post's numbers")
    row = rows.iloc[0]
    return float(row["value"]), parse_settings(row["settings"]).get("input", "")


def speedup_claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list:
    """The GPU's speed-up over the CPU (see the module docstring): one claim per workload of
    ours where a GPU target ran ``datamadness-cnn`` from the post's input, else one
    "cannot be checked here" with why.

    Raises:
        ValueError: as :func:`_cpu_factor`, or a target with two runs in one round.
    """
    times = published[
        (published["metric"] == "training_seconds")
        & (published["workload"] == WORKLOAD)
        & published["used"]
    ]
    fast = times.loc[times["value"].idxmin(), "system"]
    slow = times.loc[times["value"].idxmax(), "system"]
    factor, mode = _cpu_factor(published, slow)
    claim = f"the {fast} trains the CNN more than {factor:g}x as fast as the {slow} alone"
    theirs = "; ".join(
        filter(
            None,
            (
                published_text(published, "training_seconds", WORKLOAD),
                published_text(published, "relative_time", WORKLOAD),
            ),
        )
    )
    source = f"{SEED}, The Conclusion and the Comparison summary"
    found, why = speedups(ours, runs, WORKLOAD, mode or None)
    if not found:
        return [cannot(claim, theirs, source, why)]
    return [speedup_claim(s, factor, claim, theirs, source) for s in found]


def utilisation_claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list:
    """The GPU barely used behind the generator (see the module docstring): one claim per GPU
    target of ours that ran ``datamadness-cnn`` from files, else one "cannot be checked
    here". Holds where the target's median utilisation is below
    :data:`~embryo_bench.reporting.claims.gpu.GPU_IDLE_BELOW_PERCENT` (%), does not hold at
    or above it; cannot be checked where the runs table has no utilisation."""
    times = published[
        (published["metric"] == "training_seconds")
        & (published["workload"] == WORKLOAD)
        & published["used"]
    ]
    fast = times.loc[times["value"].idxmin(), "system"]
    claim = f"the {fast} is barely used while the generator feeds it"
    theirs = (
        "GPU utilisation "
        + published_text(published, "gpu_utilisation", WORKLOAD)
        + "; CPU utilisation "
        + published_text(published, "cpu_utilisation", WORKLOAD)
    )
    source = f"{SEED}, Training the CNN on GPU and the Comparison summary"
    rows = finished(ours, WORKLOAD, "files")
    gpus = rows[rows["gpus"] > 0]
    if gpus.empty:
        return [cannot(claim, theirs, source, no_gpu_why(ours, WORKLOAD, "files"))]
    out = []
    for _, row in gpus.iterrows():
        busy, why = gpu_utilisation(runs, row["workload"], row["target"])
        if why == NO_UTILISATION:
            out.append(cannot(claim, theirs, source, why, utilisation_missing(row["target"])))
            continue
        if math.isnan(busy):
            out.append(cannot(claim, theirs, source, why, f"{row['target']} ran"))
            continue
        idle = busy < GPU_IDLE_BELOW_PERCENT
        text = (
            f"{row['target']} ({row['workload']}): GPU busy {busy:.0f} % (median of its runs; "
            f"{'below' if idle else 'not below'} {GPU_IDLE_BELOW_PERCENT:.0f} %: "
            f"{'idle most of the time' if idle else 'not idle most of the time'})"
            f"{synthetic(row)}"
        )
        out.append(Claim(claim, HOLDS if idle else DOES_NOT_HOLD, theirs, text, source))
    return out


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Study 001's claims on our runs, in this order: the GPU's speed-up
    (:func:`speedup_claims`), its utilisation (:func:`utilisation_claims`), then one
    input-bound claim per files-mode run of ``datamadness-cnn`` (or one "cannot" when none
    ran).

    Args:
        published: ``load_numbers("datamadness")`` (columns of ``published.studies.COLUMNS``).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``.
        runs: one row per run, ``study/runs.csv`` (the ratios' rounds).

    Returns:
        list of :class:`~embryo_bench.reporting.claims.common.Claim`; the study's numbers are
        read from ``published`` (training seconds, relative time, utilisation %, seconds a
        step).

    Raises:
        ValueError: as :func:`speedup_claims`.
    """
    use = published_text(published, "gpu_utilisation", WORKLOAD)
    bound = input_bound_claims(
        ours,
        runs,
        WORKLOAD,
        "training fed by the augmenting generator is input-bound (its steps mostly wait for "
        "images)",
        f"GPU utilisation {use}; seconds a step "
        + published_text(published, "step_seconds", WORKLOAD)
        + " (the post blames the GPU's memory, full; this project reads the low utilisation as "
        "input-bound)",
        f"{SEED}, Training the CNN on GPU and the Comparison summary",
    )
    return [
        *speedup_claims(published, ours, runs),
        *utilisation_claims(published, ours, runs),
        *bound,
    ]
