"""Measuring a round (``compare.until``): after round k, every target's
throughput ratio to its workload's base over rounds 1..k, with the interval the comparison
table shows (:func:`embryo_bench.reporting.compare.compare`) and that interval's half-width on
the log scale, (ln high - ln low) / 2: 0.03 is about +-3 %. The workflow's ``round_check``
checkpoint writes it as ``rounds/round-<k>.json``; whether another round is needed is decided
from it when the jobs are planned (:func:`embryo_bench.planning.rounds.decide`).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
from scipy import stats

from ..errors import DataError
from ..io import write_json
from ..vocabulary.round_check import ROUND_CHECK_FORMAT
from . import compare
from .runs import load_runs
from .summary import run_table


def half_width(low: float, high: float) -> float | None:
    """Half the width of the ratio interval [low, high] on the log scale (a fraction:
    0.03 is about +-3 %); None when there is no interval (a missing or non-positive bound,
    or low == high: one pair gives none)."""
    try:
        low, high = float(low), float(high)
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(low) and math.isfinite(high)) or low <= 0 or high <= low:
        return None
    return (math.log(high) - math.log(low)) / 2


def measure(runs: pd.DataFrame, base: str, min_difference: float) -> dict[str, dict]:
    """Every target's throughput ratio to ``base`` and its interval's half-width, at the
    comparison table's level (:func:`embryo_bench.reporting.compare.simultaneous_confidence`
    over the targets other than ``base``).

    Args:
        runs: one row per run: target, round (int), images_per_s (images/s).
        base: the target every ratio is to.
        min_difference: ``compare.min_difference`` (a fraction), for the verdict.

    Returns:
        target (every one of ``runs`` but the base, in order of appearance) -> {pairs (int),
        ratio, low, high (floats; None where no pair), half_width (:func:`half_width`; None
        where there is no interval), verdict}.

    Raises:
        ValueError: ``base`` has no run, or a target has two runs in one round.
    """
    # At the level the comparison table gives these targets (their intervals hold together),
    # so that compare.until's goal is met by the intervals the table shows.
    level = compare.simultaneous_confidence(runs.loc[runs["target"] != base, "target"].nunique())
    table = compare.compare(runs, base, min_difference, confidence=level).set_index("target")
    out = {}
    for target in dict.fromkeys(runs["target"]):
        if target == base:
            continue
        if target not in table.index:
            out[target] = {"pairs": 0, "ratio": None, "low": None, "high": None,
                           "half_width": None, "verdict": "no pair"}  # fmt: skip
            continue
        row = table.loc[target]
        out[target] = {
            "pairs": int(row["pairs"]),
            "ratio": _number(row["ratio"]),
            "low": _number(row["ratio_low"]),
            "high": _number(row["ratio_high"]),
            "half_width": half_width(row["ratio_low"], row["ratio_high"]),
            "verdict": str(row["verdict"]),
        }
    return out


def noise_half_width(noise: float, pairs: int, targets: int = 1) -> float | None:
    """The half-width (log scale) of a paired ratio interval from ``pairs`` pairs whose sd is
    ``noise``, at the level the comparison table gives ``targets`` targets
    (:func:`embryo_bench.reporting.compare.simultaneous_confidence`): t(n - 1) x noise /
    sqrt(n), the interval :func:`measure` measures had its pairs varied by exactly that
    much; None below 2 pairs.

    Args:
        noise: the sd of the paired log ratios (a fraction: 0.06 is about 6 %), e.g.
            ``compare.noise``.
    """
    if pairs < 2:
        return None
    level = compare.simultaneous_confidence(targets)
    return float(stats.t.ppf(0.5 + level / 2, pairs - 1) * noise / math.sqrt(pairs))


def _number(value) -> float | None:
    """A float, or None for NaN (JSON has no NaN)."""
    value = float(value)
    return value if math.isfinite(value) else None


def check_round(round_: int, workloads: dict[str, dict], min_difference: float) -> dict:
    """The round check after round ``round_``: :func:`measure` of each workload's runs.

    Args:
        workloads: workload -> {"base": its base target, "runs": its run folders of rounds
            1..``round_``} (:meth:`embryo_bench.planning.plan.Plan.round_check_params`).
        min_difference: ``compare.min_difference``.

    Returns:
        {"format", "round", "workloads": workload -> {"base", "targets": :func:`measure`}}.

    Raises:
        DataError: a run's files are missing or unreadable
            (:func:`embryo_bench.reporting.runs.load_runs`), or the runs cannot be paired
            (the base has no run, a target has two in one round).
    """
    out = {}
    for workload, w in workloads.items():
        table = run_table(load_runs(w["runs"]), {}, "")
        runs = table.assign(round=table["repeat"].astype(int))
        try:
            targets = measure(runs, w["base"], min_difference)
        except ValueError as exc:
            raise DataError(f"round {round_}, workload {workload}: {exc}") from None
        out[workload] = {"base": w["base"], "targets": targets}
    return {"format": ROUND_CHECK_FORMAT, "round": round_, "workloads": out}


def write_check(check: dict, path: str | Path) -> None:
    """Write a round check (atomically)."""
    write_json(path, check)
