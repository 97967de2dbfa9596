"""Comparisons that hold on a noisy machine: ratios to a base target.

A shared VM's speed moves by 10 % and more within a minute (9 % CV measured here between
back-to-back 2 s probes), so one target's absolute throughput against another's mostly
measures when each ran. Runs made in *rounds* (round k runs every target once, close
together) can be compared within the round instead: the ratio of a target's throughput to
the base target's in the same round cancels whatever speed the machine had then.

* **Paired** (:func:`compare`, :func:`ratio_interval`): over the rounds, the geometric mean of
  the per-round ratios with a 95 % interval from the t distribution on their logarithms
  (valid at few rounds, unlike a bootstrap of 3 pairs). The geometric mean, not the median:
  the t interval is one of the mean of the logarithms, which is the geometric mean's.
* **Unpaired** (:func:`compare_unpaired`, :func:`unpaired_interval`): runs that share no round
  with the base (runs merged from other machines) are compared as two independent
  samples: the ratio of the geometric means with Welch's t interval on the logarithms (not a
  bootstrap, which is too narrow at a few runs a side: :func:`unpaired_interval`). The
  rounds' speeds do not cancel, so the interval is typically wider than a paired one on the
  same numbers.

In a table of several targets the intervals of its primary measure (throughput) hold
together at 95 % (:func:`simultaneous_confidence`, Bonferroni over the rows), so that its
verdicts are wrong anywhere in it at most 5 % of the time, not 5 % per row.

A verdict needs at least :data:`MIN_PAIRS` pairs (or runs on each side) and comes from the
interval alone (:func:`verdict`): faster or slower where it excludes 1, at least the machine's
noise faster or slower where it lies wholly beyond it, the same within the noise where it
lies wholly inside it, and unresolved otherwise, with about how many more rounds would
resolve it; on the log scale, so that twice as fast and half as fast are judged alike.

This module holds the arithmetic; it knows nothing of files or the workflow.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd
from scipy import stats

from .stability import flag_runs

#: Confidence level of the intervals.
CONFIDENCE = 0.95
#: Fewest pairs (paired) or runs on each side (unpaired) for a verdict: with fewer, the ratio
#: and its interval are shown and the verdict says why there is none.
MIN_PAIRS = 3


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


def _logs(values, what: str) -> np.ndarray:
    """The natural logarithm of positive, finite ``values`` (at least one), float64."""
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"{what} must be positive and finite, got {v.tolist()}")
    return np.log(v)


def ratio_interval(ratios, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """The geometric mean of paired ``ratios`` and its ``confidence`` interval from the t
    distribution on their logarithms (:func:`scipy.stats.ttest_1samp`, n - 1 degrees of
    freedom), so that a ratio and its reciprocal get mirror-image intervals and 3 pairs get
    an interval as wide as 3 pairs allow (a percentile bootstrap of 3 pairs is far too
    narrow).

    Args:
        ratios: positive numbers (at least one), e.g. :func:`paired_ratios`' ratio column.

    Returns:
        (geometric mean, low, high); low == high == the ratio for a single ratio or when
        all are equal (no spread to draw an interval from: callers say so).

    Raises:
        ValueError: no ratio, or one that is not positive and finite.
    """
    logs = _logs(ratios, "ratios")
    mean = float(np.exp(logs.mean()))
    if logs.size == 1 or np.all(logs == logs[0]):
        return mean, mean, mean
    low, high = stats.ttest_1samp(logs, 0.0).confidence_interval(confidence)
    return mean, float(np.exp(low)), float(np.exp(high))


def unpaired_interval(
    values, base_values, confidence: float = CONFIDENCE
) -> tuple[float, float, float]:
    """The ratio of the geometric means of ``values`` and ``base_values`` (two independent
    samples: runs that share no round) and its ``confidence`` interval from Welch's t
    interval on their logarithms (:func:`scipy.stats.ttest_ind`, ``equal_var=False``).

    Welch rather than a two-sample bootstrap: over made-up pairs of machines with 3, 5 and
    10 runs a side (log-normal noise of 3-9 %), Welch's interval covered the true ratio in
    96, 95 and 94 % of 400, a percentile bootstrap of the same numbers
    (:func:`scipy.stats.bootstrap`, each side resampled on its own) in only 83, 85 and 88 %
    of 100 (tests/test_compare.py, test_unpaired_intervals_cover_a_known_ratio...). The
    interval holds the run-to-run noise of each side; a speed shared by all of one side's
    runs (one day, one host) is not in it.

    Args:
        values, base_values: positive numbers (at least one each), e.g. images/s.

    Returns:
        (ratio, low, high); low == high == the ratio when either side has a single value or
        neither side varies (no interval can be drawn: callers say so).

    Raises:
        ValueError: an empty side, or a value that is not positive and finite.
    """
    a, b = _logs(values, "values"), _logs(base_values, "base values")
    ratio = float(np.exp(a.mean() - b.mean()))
    if min(a.size, b.size) < 2 or (np.all(a == a[0]) and np.all(b == b[0])):
        return ratio, ratio, ratio
    low, high = stats.ttest_ind(a, b, equal_var=False).confidence_interval(confidence)
    return ratio, float(np.exp(low)), float(np.exp(high))


def median_interval(
    ratios, confidence: float = CONFIDENCE, resamples: int = 9999, seed: int = 0
) -> tuple[float, float, float]:
    """The median of ``ratios`` and a percentile-bootstrap interval of it
    (:func:`scipy.stats.bootstrap`), computed on the logarithm. Kept for the benchmarks'
    summaries of many pairs; the comparison tables use :func:`ratio_interval`, since a
    percentile bootstrap of a few pairs gives an interval far narrower than 95 %.

    Args:
        ratios: positive numbers (at least one).

    Returns:
        (median, low, high); low == high == median for a single ratio.

    Raises:
        ValueError: no ratio, or one that is not positive and finite.
    """
    logs = _logs(ratios, "ratios")
    med = float(np.exp(np.median(logs)))
    if logs.size == 1 or np.all(logs == logs[0]):
        return med, med, med
    res = stats.bootstrap(
        (logs,),
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


#: The directions of :func:`verdict`'s words (:func:`direction`): a speed-up or a slow-down
#: the interval shows (with or without beyond the machine's noise), the same within the
#: noise, or neither yet.
FASTER, SLOWER, SAME, UNRESOLVED = "faster", "slower", "same", "unresolved"
#: The most rounds :func:`verdict` estimates an unresolved ratio needs before it says "more
#: than" that.
MAX_ROUNDS_ESTIMATE = 100


def simultaneous_confidence(rows: int, confidence: float = CONFIDENCE) -> float:
    """The level of each of ``rows`` intervals such that all of them hold at once with
    probability ``confidence`` (Bonferroni: 1 - (1 - confidence) / rows; ``confidence`` for
    one row or none). A table's verdicts read these, so that some row of a table of identical
    targets is called different at most 1 - ``confidence`` of the time: a statistical review
    of this project's functions found 6.3-9.6 % with two rows at 95 % each (Bonferroni rather
    than Holm: the verdicts read intervals, and a widened interval is one.)"""
    return confidence if rows <= 1 else 1.0 - (1.0 - confidence) / rows


def level_text(fraction: float) -> str:
    """A fraction as a person reads it: 0.05 -> "5 %", 0.975 -> "97.5 %", 0.98333 ->
    "98.3 %" (a confidence level, a band, a noise)."""
    return f"{fraction * 100:.3g} %"


def family_note(rows: int, what: str, confidence: float = CONFIDENCE) -> str:
    """The sentence a table with ``rows`` compared rows says its intervals' level in: "" for
    one row; else that its ``what`` intervals hold together at ``confidence``, each at
    :func:`simultaneous_confidence`."""
    if rows <= 1:
        return ""
    each = level_text(simultaneous_confidence(rows, confidence))
    return (
        f"The {what} intervals hold together: {level_text(confidence)} for all {rows} compared "
        f"rows at once (each at {each}, Bonferroni), so identical targets get a verdict of "
        f"faster or slower somewhere in the table at most {level_text(1 - confidence)} of "
        "the time."
    )


def more_rounds(
    n: int, ratio: float, low: float, high: float, machine_noise: float,
    confidence: float = CONFIDENCE,
) -> int | None:  # fmt: skip
    """About how many more pairs (or runs on each side) an unresolved ratio needs before its
    95 % interval either excludes 1 or fits within the machine's noise, whichever comes
    first: the spread of the logarithms read back from the interval (half-width = t(n - 1) x
    sd / sqrt(n)), held as it is, and the interval recomputed at each larger n. None where
    no n up to :data:`MAX_ROUNDS_ESTIMATE` would (a ratio at the noise's edge needs an
    interval of no width).

    Args:
        n: pairs so far (at least 2); ratio, low, high: the ratio and its interval; machine_noise:
            ``compare.min_difference`` (a fraction); confidence: the interval's level.
    """
    mean, half = float(np.log(ratio)), (float(np.log(high)) - float(np.log(low))) / 2
    if half <= 0:
        return 0
    spread = half * np.sqrt(n) / stats.t.ppf(0.5 + confidence / 2, n - 1)
    needed = max(abs(mean), float(np.log1p(machine_noise)) - abs(mean))
    if needed <= 0:
        return None
    for m in range(n + 1, MAX_ROUNDS_ESTIMATE + 1):
        if stats.t.ppf(0.5 + confidence / 2, m - 1) * spread / np.sqrt(m) < needed:
            return m - n
    return None


def verdict(
    n: int, ratio: float, low: float, high: float, machine_noise: float, paired: bool = True,
    confidence: float = CONFIDENCE, sides: tuple[str, str] = ("run", "runs"),
) -> str:  # fmt: skip
    """What a ratio to the base says, from its interval alone (never the point
    estimate), with at least :data:`MIN_PAIRS` pairs (or runs on the smaller side when
    unpaired), X = ``machine_noise`` on the log scale (a ratio and its reciprocal are judged
    alike):

    - "at least X faster" / "at least X slower": the whole interval beyond 1 + X (below
      1 / (1 + X));
    - "faster" / "slower": the interval excludes 1, but not the noise;
    - "the same within ±X": the interval inside [1 / (1 + X), 1 + X] (an equivalence test:
      two one-sided tests at the interval's level);
    - "unresolved: about N more rounds would likely resolve it" (:func:`more_rounds`; "runs on
      each side" when unpaired) otherwise;

    or why there is none ("one pair: no interval", "2 pairs: too few for a verdict (3
    needed)", and for unpaired "... run(s) on a side ..."). :func:`direction` reads them.
    A statistical review of the project's functions on this machine's noise found the
    older gate on the point estimate capped the power to call a true 5 % difference near 50 %
    and called "no measured difference" on true 10 % differences: the interval decides now.

    Args:
        n: pairs (paired) or the smaller side's runs (unpaired).
        ratio, low, high: :func:`ratio_interval` or :func:`unpaired_interval`.
        machine_noise: the fraction within which a difference is the machine's own noise
            (``compare.min_difference``, :func:`noise`; e.g. 0.05).
        paired: False for :func:`unpaired_interval`'s ratios (the words say runs on a side).
        confidence: the interval's level (:func:`simultaneous_confidence` in a table of
            several rows), for :func:`more_rounds`.
        sides: what an unpaired side counts, singular and plural ("run", "runs"; a ratio
            of ratios counts rounds with its control).
    """
    one, many = sides
    unit = "pair" if paired else f"{one} on a side"
    if n < 2:
        return f"one {unit}: no interval"
    if n < MIN_PAIRS:
        units = "pairs" if paired else f"{many} on a side"
        return f"{n} {units}: too few for a verdict ({MIN_PAIRS} needed)"
    band = float(np.log1p(machine_noise))
    lo, hi = float(np.log(low)), float(np.log(high))
    if band > 0 and lo > band:
        return f"at least {level_text(machine_noise)} {FASTER}"
    if band > 0 and hi < -band:
        return f"at least {level_text(machine_noise)} {SLOWER}"
    if lo > 0:
        return FASTER
    if hi < 0:
        return SLOWER
    if band > 0 and -band <= lo and hi <= band:
        return f"the {SAME} within ±{level_text(machine_noise)}"
    more = more_rounds(n, ratio, low, high, machine_noise, confidence)
    if more is None:
        what = "rounds" if paired else f"{many} on each side"
        return f"{UNRESOLVED}: more than {MAX_ROUNDS_ESTIMATE} {what} would be needed"
    what = ("round" if paired else f"{one} on each side") if more == 1 else (
        "rounds" if paired else f"{many} on each side")  # fmt: skip
    return f"{UNRESOLVED}: about {more} more {what} would likely resolve it"


def verdict_rule(machine_noise: float, setting: str, unit: str = "pairs") -> str:
    """The sentence every table states :func:`verdict`'s rule in, with its numbers:
    ``setting`` names where the noise comes from ("compare.min_difference",
    "--min-difference"); ``unit`` what the fewest count ("pairs (unpaired: runs on each
    side)", "runs on each side")."""
    x = level_text(machine_noise)
    return (
        f"A verdict needs at least {MIN_PAIRS} {unit} and comes from the interval alone: "
        f"faster or slower where it excludes 1; at least {x} faster or slower where it lies "
        f"wholly beyond {1 + machine_noise:.3g} (or below {1 / (1 + machine_noise):.3g}); the "
        f"same within ±{x} where it lies wholly between the two; otherwise unresolved, with "
        f"about how many more rounds would resolve it ({x}: {setting}, on the log scale)."
    )


def is_regression(words: str) -> bool:
    """Whether :func:`verdict`'s words call a regression: the whole interval below 1 / (1 +
    the noise or tolerance) ("at least X slower"), not a slow-down within the noise."""
    return str(words).startswith("at least ") and direction(words) == SLOWER


def direction(words: str) -> str:
    """The direction of :func:`verdict`'s words: :data:`FASTER`, :data:`SLOWER`,
    :data:`SAME`, :data:`UNRESOLVED`, or "" where there is no verdict (too few pairs, the
    base's row, no ratio)."""
    words = str(words)
    for name in (FASTER, SLOWER):
        if words == name or (words.startswith("at least ") and words.endswith(f" {name}")):
            return name
    if words.startswith(f"the {SAME} within"):
        return SAME
    if words.startswith(f"{UNRESOLVED}:"):
        return UNRESOLVED
    return ""


#: The columns of :func:`compare` and of :func:`compare_unpaired`.
COLUMNS = ["target", "pairs", "ratio", "ratio_low", "ratio_high", "verdict", "paired_sd"]
UNPAIRED_COLUMNS = ["target", "runs", "base_runs", "ratio", "ratio_low", "ratio_high", "verdict"]


def compare(
    runs: pd.DataFrame,
    base: str,
    machine_noise: float,
    value: str = "images_per_s",
    round_column: str = "round",
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Per target other than ``base`` that shares a round with it: pairs (rounds with
    both), ratio (the geometric mean of the paired ratios), ratio_low and ratio_high (the
    ``confidence`` interval, :func:`ratio_interval`), verdict (:func:`verdict`) and
    paired_sd (the sd of the paired ratios' logarithms, n - 1; NaN from one pair): for a
    copy of the base, the machine's paired noise that ``compare.noise`` asks for.

    Args:
        runs: as :func:`paired_ratios` (``value`` a speed: larger is faster).
        machine_noise: the fraction within which a difference is the machine's own noise
            (:func:`noise`; e.g. 0.05).

    Raises:
        ValueError: as :func:`paired_ratios`.
    """
    pairs = paired_ratios(runs, base, value, round_column)
    rows = []
    for target, g in pairs.groupby("target", sort=False):
        ratio, low, high = ratio_interval(g["ratio"], confidence)
        why = verdict(len(g), ratio, low, high, machine_noise, confidence=confidence)
        # The logs ratio_interval has just checked and taken: its spread, n - 1.
        sd = float(_logs(g["ratio"], "ratios").std(ddof=1)) if len(g) > 1 else np.nan
        cells = (target, len(g), ratio, low, high, why, sd)
        rows.append(dict(zip(COLUMNS, cells, strict=True)))
    return pd.DataFrame(rows, columns=COLUMNS)


def compare_unpaired(
    runs: pd.DataFrame, base: str, machine_noise: float, value: str = "images_per_s",
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:  # fmt: skip
    """Per target other than ``base``, its runs against the base's as two independent
    samples (:func:`unpaired_interval`): target, runs, base_runs, ratio (of the geometric
    means), ratio_low, ratio_high and verdict (:func:`verdict` with the smaller side's runs).

    Args:
        runs: one row per run with columns target and ``value`` (a speed: larger is faster;
            a missing value leaves that run out).

    Raises:
        ValueError: ``base`` has no run with a value.
    """
    values = pd.to_numeric(runs[value], errors="coerce")
    runs = runs.assign(_v=values)[np.isfinite(values)]
    base_values = runs.loc[runs["target"] == base, "_v"]
    if base_values.empty:
        raise ValueError(f"base target {base!r} has no run to compare with")
    rows = []
    for target, g in runs[runs["target"] != base].groupby("target", sort=False):
        ratio, low, high = unpaired_interval(g["_v"], base_values, confidence)
        n = min(len(g), len(base_values))
        why = verdict(n, ratio, low, high, machine_noise, paired=False, confidence=confidence)
        rows.append((target, len(g), len(base_values), ratio, low, high, why))
    return pd.DataFrame(rows, columns=UNPAIRED_COLUMNS)


#: The measure whose verdicts a comparison table's error control covers (the others are
#: secondary: each interval at :data:`CONFIDENCE` on its own).
PRIMARY_MEASURE = "throughput"
#: What each ratio of :func:`comparison_table` divides: (results-table column, whether a
#: larger value is faster). Time to accuracy is turned into a speed (base time / time), so
#: above 1 means faster for both.
MEASURES = {"throughput": ("images_per_s", True), "time_to_accuracy": ("time_to_accuracy_s", False)}
#: Per measure, what a run with a value did, what one without did, and the value's unit
#: (for "never reached (base: 12.3 s)").
MISSING = {
    "throughput": ("measured", "not measured", "images/s"),
    "time_to_accuracy": ("reached", "never reached", "s"),
}


def _no_ratio(measure: str, mine: pd.Series, base: pd.Series) -> str:
    """Why a target has no ratio on ``measure``, from the raw values of its runs and of the
    base's (e.g. s): it, the base, or both have none, or no round holds both."""
    done, missing, unit = MISSING[measure]
    if mine.empty and base.empty:
        return f"{missing}, nor the base"
    if mine.empty:
        return f"{missing} (base: {base.median():.4g} {unit})"
    if base.empty:
        return f"base {missing} (this target: {mine.median():.4g} {unit})"
    return f"no round where both {done}"


def pairings(runs: pd.DataFrame, base: str, elsewhere: Collection[str] = ()) -> dict[str, str]:
    """Per target of ``runs`` (columns target, round): "base", "paired" (some round holds a
    run of it and one of the base, and neither was made elsewhere) or "unpaired"."""
    base_rounds = set(runs.loc[runs["target"] == base, "round"])
    out = {}
    for name, g in runs.groupby("target", sort=False):
        if name == base:
            out[name] = "base"
        elif base in elsewhere or name in elsewhere or not base_rounds & set(g["round"]):
            out[name] = "unpaired"
        else:
            out[name] = "paired"
    return out


def comparison_table(
    runs: pd.DataFrame,
    base: str,
    min_difference: float,
    order: list[str] | None = None,
    elsewhere: Collection[str] = (),
    family: int | None = None,
    confidence: float | None = None,
) -> pd.DataFrame:
    """The headline comparison: per target, its speed relative to
    ``base``, for throughput and for time to accuracy: paired within the rounds it shares
    with the base (:func:`compare`), unpaired where it shares none (:func:`compare_unpaired`).

    Args:
        runs: one row per run: columns target, repeat (the round), images_per_s (images/s),
            time_to_accuracy_s (s; missing where not reached), flags (empty for a clean run).
        base: the target every ratio is to (``compare.base``).
        min_difference: the machine's noise as a fraction (``compare.min_difference``):
            the band of "the same within" and "at least" (:func:`verdict`).
        order: target names in the order to list them (default: first appearance).
        elsewhere: targets whose runs were made elsewhere (merged from other machines or
            days): their repeat numbers are not rounds of this workflow, so they are always
            compared unpaired, as is a target none of whose rounds holds a base run.
        family: how many rows the throughput intervals hold together over, where the table
            is part of a larger family (``embryo-bench compare``'s rows across folders);
            default: the targets compared here.
        confidence: the level the throughput intervals hold together at (default
            :data:`CONFIDENCE`; 0.99 after ``compare.until`` stopped early:
            :data:`embryo_bench.planning.rounds.EARLY_STOP_CONFIDENCE`).

    Returns:
        one row per target, the base first: target, pairing ("base", "paired" or
        "unpaired": :func:`pairings`), rounds (its runs), flagged_runs and ``<flag>_runs``
        (:func:`embryo_bench.reporting.stability.flag_runs`: its runs that carry a flag, that
        flag), and for each of :data:`MEASURES` ``<m>_runs`` (its runs with a value),
        ``<m>_pairs`` (rounds where it and the base both have one; 0 when unpaired; the
        base's runs with a value on the base's row), ``<m>_ratio`` (geometric mean; above 1:
        faster than the base), ``<m>_low`` and ``<m>_high`` (the interval at
        ``<m>_confidence``, with ``<m>_family_confidence`` the level they hold together at
        (``confidence`` for throughput, 0.95 for time to accuracy): for throughput,
        :func:`simultaneous_confidence` over the targets
        with a throughput other than the base, so that the table's throughput verdicts hold
        together at 95 %; for time to accuracy, a secondary measure, 0.95), ``<m>_verdict``
        (:func:`verdict`; "base" on the base's row, "base: not reached" when none of its runs
        reached the accuracy target; where there is no ratio, why (:data:`MISSING`): "never
        reached (base: 12.3 s)", "base never reached (this target: 9.8 s)", "never reached,
        nor the base", "no round where both reached"), ``<m>_paired_sd`` (the sd of the
        paired ratios' logarithms, :func:`compare`; NaN unpaired, on the base's row and from
        one pair: a copy of the base's is the ``compare.noise`` of ``compare.until``).

    Raises:
        ValueError: ``base`` has no run, or a paired target has two runs in one round.
    """
    runs = runs.assign(round=runs["repeat"].astype(int))
    if not (runs["target"] == base).any():
        raise ValueError(f"compare.base {base!r} has no run to compare with")
    names = list(dict.fromkeys(order or runs["target"]))
    names = [base] + [n for n in names if n != base and (runs["target"] == n).any()]
    pairing = pairings(runs, base, elsewhere)
    is_base = runs["target"] == base
    flags = runs.get("flags", pd.Series("", index=runs.index))
    raws, tables, levels = {}, {}, {}
    for measure, (column, larger_is_faster) in MEASURES.items():
        raw = raws[measure] = pd.to_numeric(runs[column], errors="coerce")
        speed = raw if larger_is_faster else 1.0 / raw
        measured = runs.assign(speed=speed).dropna(subset=["speed"])
        # Throughput is the table's primary measure: its intervals hold together over the
        # targets it compares (simultaneous_confidence); time to accuracy is secondary,
        # each interval at CONFIDENCE on its own.
        compared = family or measured.loc[measured["target"] != base, "target"].nunique()
        levels[measure] = (
            simultaneous_confidence(compared, confidence or CONFIDENCE)
            if measure == PRIMARY_MEASURE
            else CONFIDENCE
        )
        if not (measured["target"] == base).any():
            continue  # every row says why: the base has no value
        kind = measured["target"].map(pairing)
        level = levels[measure]
        tables[measure] = {
            "paired": compare(
                measured[kind != "unpaired"], base, min_difference, "speed", confidence=level
            ),
            "unpaired": compare_unpaired(
                measured[kind != "paired"], base, min_difference, "speed", confidence=level
            ),
        }
    rows = []
    for name in names:
        mine = runs["target"] == name
        row = {"target": name, "pairing": pairing[name], "rounds": int(mine.sum())}
        row.update(flag_runs(flags[mine]))
        for measure in MEASURES:
            values, base_values = raws[measure][mine].dropna(), raws[measure][is_base].dropna()
            pairs, cells, sd = 0, (np.nan, np.nan, np.nan), np.nan
            found = pd.DataFrame()
            if measure in tables and name != base:
                table = tables[measure][pairing[name]]
                found = table[table["target"] == name]
            if name == base:
                pairs = len(values)
                why = "base" if pairs else "base: not reached"
                cells = (1.0, 1.0, 1.0) if pairs else cells
            elif found.empty:
                why = _no_ratio(measure, values, base_values)
            else:
                t = found.iloc[0]
                pairs = int(t["pairs"]) if pairing[name] == "paired" else 0
                sd = t["paired_sd"] if pairing[name] == "paired" else np.nan
                cells, why = (t["ratio"], t["ratio_low"], t["ratio_high"]), t["verdict"]
            keys = ("runs", "pairs", "ratio", "low", "high", "verdict", "confidence")
            keys += ("family_confidence", "paired_sd")
            joint = (confidence or CONFIDENCE) if measure == PRIMARY_MEASURE else CONFIDENCE
            found_values = (len(values), pairs, *cells, why, levels[measure], joint, sd)
            row.update({f"{measure}_{k}": v for k, v in zip(keys, found_values, strict=True)})
        rows.append(row)
    return pd.DataFrame(rows)
