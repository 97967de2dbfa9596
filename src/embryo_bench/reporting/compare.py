"""Comparisons that hold on a noisy machine (issue 23): paired ratios to a base target.

A shared VM's speed moves by 10 % and more within a minute (issue 23 measured 9 % CV between
back-to-back 2 s probes), so one target's absolute throughput against another's mostly
measures when each ran. Runs made in *rounds* (round k runs every target once, close
together) can be compared within the round instead: the ratio of a target's throughput to
the base target's in the same round cancels whatever speed the machine had then. Over the
rounds, the median ratio and a 95 % bootstrap interval of it say how large the difference is
and how sure we are; a difference counts as *measured* only when the interval excludes 1 and
the median is further from 1 than the machine's own noise.

This module holds the arithmetic; it knows nothing of files or the workflow.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from .stability import flag_runs

#: Confidence level of the intervals.
CONFIDENCE = 0.95


def paired_ratios(
    runs: pd.DataFrame, base: str, value: str = "images_per_s", round_column: str = "round"
) -> pd.DataFrame:
    """Each run's ``value`` divided by the base target's in the same round.

    Args:
        runs: one row per run with columns target, ``round_column`` (int) and ``value``
            (a number; a missing value leaves that pair out).
        base: the target every other one is divided by.

    Returns:
        columns target, round, ratio (float64), one row per run of a target other than
        ``base`` whose round also has a base run; rows in the order of ``runs``.

    Raises:
        ValueError: ``base`` has no run, or a target has two runs in one round.
    """
    if not (runs["target"] == base).any():
        raise ValueError(f"base target {base!r} has no run to compare with")
    twice = runs.duplicated(["target", round_column], keep=False)
    if twice.any():
        first = runs[twice].iloc[0]
        raise ValueError(
            f"target {first['target']!r} has more than one run in round {first[round_column]}"
        )
    values = pd.to_numeric(runs[value], errors="coerce")
    is_base = runs["target"] == base
    base_by_round = dict(zip(runs.loc[is_base, round_column], values[is_base], strict=True))
    rows = []
    for (_, run), v in zip(runs.iterrows(), values, strict=True):
        b = base_by_round.get(run[round_column])
        if run["target"] == base or b is None or not np.isfinite(v) or not np.isfinite(b):
            continue
        rows.append({"target": run["target"], "round": run[round_column], "ratio": v / b})
    return pd.DataFrame(rows, columns=["target", "round", "ratio"])


def median_interval(
    ratios, confidence: float = CONFIDENCE, resamples: int = 9999, seed: int = 0
) -> tuple[float, float, float]:
    """The median of ``ratios`` and a percentile-bootstrap interval of it
    (:func:`scipy.stats.bootstrap`), computed on the logarithm so that a ratio and its
    reciprocal get mirror-image intervals.

    Args:
        ratios: positive numbers (at least one).

    Returns:
        (median, low, high); low == high == median for a single ratio (no interval can be
        drawn from one pair: callers say so).

    Raises:
        ValueError: no ratio, or one that is not positive and finite.
    """
    r = np.asarray(ratios, dtype=float)
    if r.size == 0 or not np.all(np.isfinite(r)) or np.any(r <= 0):
        raise ValueError(f"ratios must be positive and finite, got {r.tolist()}")
    med = float(np.median(r))
    if r.size == 1 or np.all(r == r[0]):
        return med, med, med
    res = stats.bootstrap(
        (np.log(r),),
        np.median,
        confidence_level=confidence,
        n_resamples=resamples,
        method="percentile",
        random_state=np.random.default_rng(seed),
    )
    low, high = res.confidence_interval
    return med, float(np.exp(low)), float(np.exp(high))


def noise(values) -> float:
    """A machine's run-to-run noise from repeated measurements of one thing (e.g. the base
    target's throughput over rounds, or back-to-back probes): the median absolute deviation
    of their logarithm, scaled to a standard deviation (x 1.4826), as a fraction. Robust to
    the odd outlier a shared machine makes; 0.0 for fewer than two values."""
    v = np.log(np.asarray(values, dtype=float))
    if v.size < 2:
        return 0.0
    return float(stats.median_abs_deviation(v, scale="normal"))


def compare(
    runs: pd.DataFrame,
    base: str,
    machine_noise: float,
    value: str = "images_per_s",
    round_column: str = "round",
) -> pd.DataFrame:
    """Per target other than ``base``: pairs (rounds with both), ratio_median, ratio_low and
    ratio_high (the :data:`CONFIDENCE` interval, :func:`median_interval`), and verdict:
    "faster" / "slower" (for a throughput; the interval excludes 1 and the median is more
    than ``machine_noise`` away from 1), "no measured difference", or "one pair: no
    interval".

    Args:
        machine_noise: the fraction within which a difference is the machine's own noise
            (:func:`noise`; e.g. 0.05).

    Raises:
        ValueError: as :func:`paired_ratios`.
    """
    pairs = paired_ratios(runs, base, value, round_column)
    rows = []
    for target, g in pairs.groupby("target", sort=False):
        med, low, high = median_interval(g["ratio"])
        if len(g) < 2:
            verdict = "one pair: no interval"
        elif (low > 1 or high < 1) and abs(med - 1) > machine_noise:
            verdict = "faster" if med > 1 else "slower"
        else:
            verdict = "no measured difference"
        rows.append(
            {
                "target": target,
                "pairs": len(g),
                "ratio_median": med,
                "ratio_low": low,
                "ratio_high": high,
                "verdict": verdict,
            }
        )
    return pd.DataFrame(
        rows, columns=["target", "pairs", "ratio_median", "ratio_low", "ratio_high", "verdict"]
    )


#: What each ratio of :func:`comparison_table` divides: (results-table column, whether a
#: larger value is faster). Time to accuracy is turned into a speed (base time / time), so
#: above 1 means faster for both.
MEASURES = {"throughput": ("images_per_s", True), "time_to_accuracy": ("time_to_accuracy_s", False)}


def comparison_table(
    runs: pd.DataFrame, base: str, min_difference: float, order: list[str] | None = None
) -> pd.DataFrame:
    """The headline comparison (issue 23): per target, its speed relative to ``base`` in the
    same round, for throughput and for time to accuracy.

    Args:
        runs: one row per run of *this* workflow (runs merged from other machines ran in
            other rounds and cannot be paired): columns target, repeat (the round),
            images_per_s (images/s), time_to_accuracy_s (s; missing where not reached),
            flags (empty for a clean run).
        base: the target every ratio is to (``compare.base``).
        min_difference: the machine's noise as a fraction (``compare.min_difference``):
            a smaller difference is "no measured difference" (:func:`compare`).
        order: target names in the order to list them (default: first appearance).

    Returns:
        one row per target, the base first: target, rounds (its runs), flagged_runs and
        ``<flag>_runs`` (:func:`embryo_bench.reporting.stability.flag_runs`: its runs that carry a
        flag, that flag), and for each of :data:`MEASURES` ``<m>_pairs``, ``<m>_ratio``
        (median; above 1: faster than the base), ``<m>_low`` and ``<m>_high`` (95 %
        bootstrap interval),
        ``<m>_verdict`` ("base" for the base target, with its measured runs as pairs, or
        "base: not reached" when none of its runs reached the accuracy target; "no pair"
        where no round holds both).

    Raises:
        ValueError: ``base`` has no run, or a target has two runs in one round.
    """
    runs = runs.assign(round=runs["repeat"].astype(int))
    if not (runs["target"] == base).any():
        raise ValueError(f"compare.base {base!r} has no run to compare with")
    names = list(dict.fromkeys(order or runs["target"]))
    names = [base] + [n for n in names if n != base and (runs["target"] == n).any()]
    flags = runs.get("flags", pd.Series("", index=runs.index))
    verdicts, speeds = {}, {}
    for measure, (column, larger_is_faster) in MEASURES.items():
        values = pd.to_numeric(runs[column], errors="coerce")
        speed = speeds[measure] = values if larger_is_faster else 1.0 / values
        measured = runs.assign(speed=speed).dropna(subset=["speed"])
        verdicts[measure] = (
            compare(measured, base, min_difference, "speed").set_index("target")
            if (measured["target"] == base).any()
            else pd.DataFrame(columns=["pairs"])  # the base never reached it: no pair
        )
    rows = []
    for name in names:
        mine = runs["target"] == name
        row = {
            "target": name,
            "rounds": int(mine.sum()),
            **flag_runs(flags[mine]),
        }
        for measure, table in verdicts.items():
            if name == base:
                measured = int((mine & np.isfinite(speeds[measure])).sum())
                cells = (
                    (measured, 1.0, 1.0, 1.0, "base")
                    if measured
                    else (0, np.nan, np.nan, np.nan, "base: not reached")
                )
            elif name in table.index:
                t = table.loc[name]
                cells = (
                    int(t["pairs"]),
                    t["ratio_median"],
                    t["ratio_low"],
                    t["ratio_high"],
                    t["verdict"],
                )
            else:
                cells = (0, np.nan, np.nan, np.nan, "no pair")
            for key, cell in zip(("pairs", "ratio", "low", "high", "verdict"), cells, strict=True):
                row[f"{measure}_{key}"] = cell
        rows.append(row)
    return pd.DataFrame(rows)


def in_planned_order(runs: pd.DataFrame, planned: list[tuple[str, int]]) -> tuple[bool | None, str]:
    """Did the runs start in the planned order, one after another?

    Args:
        runs: columns target, repeat, started_unix_s, ended_unix_s (s since 1970; missing
            for runs made before these were recorded).
        planned: (target, repeat) in the planned order
        (:attr:`embryo_bench.planning.plan.Plan.runs`).

    Returns:
        (ok, a sentence saying what was found: the order as run where it differs, or which
        timed runs overlapped); ok is None when a run recorded no start time (made before
        they were recorded): the order cannot be checked.
    """
    timed = runs.dropna(subset=["started_unix_s", "ended_unix_s"])
    if len(timed) < len(runs):
        return None, (
            f"order not checked: {len(runs) - len(timed)} of {len(runs)} runs recorded no "
            "start time"
        )
    timed = timed.sort_values("started_unix_s")
    ran = list(zip(timed["target"], timed["repeat"].astype(int), strict=True))
    wanted = [p for p in planned if p in set(ran)]
    if ran != wanted:
        return False, "ran in another order than planned: " + ", ".join(f"{t}#{k}" for t, k in ran)
    ends, starts = timed["ended_unix_s"].to_numpy(), timed["started_unix_s"].to_numpy()
    overlaps = np.flatnonzero(starts[1:] < ends[:-1])
    if overlaps.size:
        i = overlaps[0]
        return False, (
            f"timed runs overlapped: {ran[i + 1][0]}#{ran[i + 1][1]} started before "
            f"{ran[i][0]}#{ran[i][1]} ended"
        )
    return True, f"{len(ran)} run{'s' * (len(ran) != 1)} ran one after another in the planned order"
