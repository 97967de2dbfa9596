"""The paper's own conclusions (Lawrence et al. 2017, study 000), checked on our
runs of its workload (catalog ``paper``: :data:`embryo_bench.vocabulary.layout.PAPER_WORKLOAD`)
when a configuration names ``study: paper``. Its side: the CPU systems' training times from
:mod:`embryo_bench.published.paper` (309 and 134 min), its systems' vCPUs and GPUs from
its folder's ``numbers.csv``; the GPU systems' times are drawn in its Figures 5 and 6 and printed
nowhere, so no GPU number of theirs is quoted.

1. :data:`GPUS_OUTPERFORM` (III. Conclusion): our slowest GPU target against our fastest CPU
   target (so every GPU target against every CPU target), images/s paired within the rounds
   (:func:`embryo_bench.reporting.claims.gpu.speedups`); "significantly" is compare's verdict
   with the configuration's ``compare.min_difference``
   (:func:`embryo_bench.reporting.compare.verdict`, by its direction): faster holds, slower
   or the same within the noise does not hold, unresolved or too few rounds cannot be
   checked.
2. :data:`VCPUS_ALIKE` (III. Conclusion; I. Testing Systems: the cloud K80 with 1 vCPU
   "performed similar" to the one with 8): two GPU targets with the same GPUs and batch size
   and different cores (else different threads) feeding them, the most-cores one's images/s
   over the fewest-cores one's, paired within the rounds: holds where the interval lies
   within the machine's noise either way, does not hold where it lies wholly beyond it;
   cannot be checked otherwise.

3. :data:`CORES_NOT_LINEAR` (I. Testing Systems, the paragraph after Figure 4): CPU training
   time is "not quite linear" in cores x clock: the 2-core laptop at 2.5 GHz took 309 min, so
   the 4-core desktop at 3.4 GHz "should have taken 114 minutes, but it took 134" (its
   systems' cores and clocks from ``numbers.csv``, its times from
   :mod:`embryo_bench.published.paper`). Ours: two CPU targets of one machine, runner,
   backend, precision and batch size whose cores differ (one clock, so cores alone), the
   most-cores one's images/s over the fewest-cores one's, paired within the rounds, against
   the linear factor (their cores' ratio): holds where the whole interval lies below it,
   does not hold where it lies above, cannot be checked where it covers it or with too few
   rounds (:func:`embryo_bench.reporting.claims.common.judge_at_least`).

Without a GPU target the first two say "cannot be checked here (no GPU)".
"""

from __future__ import annotations

import math

import pandas as pd

from ...published import paper
from ...published.studies import studies
from ...reporting import compare
from ...reporting.claims.common import (
    CANNOT,
    DOES_NOT_HOLD,
    HOLDS,
    Claim,
    judge_at_least,
    target_ratio,
)
from ...reporting.claims.gpu import (
    cannot,
    finished,
    min_difference,
    no_gpu_why,
    speedups,
    synthetic,
)
from ...vocabulary.layout import PAPER_WORKLOAD

GPUS_OUTPERFORM = "TensorFlow on GPUs significantly outperforms TensorFlow on CPUs"
VCPUS_ALIKE = "1 vCPU vs. 8 vCPUs feeding the GPU did not make much difference"
CORES_NOT_LINEAR = "CPU training time is not quite linear in cores x clock"

#: compare's verdict directions that decide these claims (reporting/compare.direction).
_FASTER, _SLOWER, _ALIKE = compare.FASTER, compare.SLOWER, compare.SAME
_CALLED = (_FASTER, _SLOWER, _ALIKE, compare.UNRESOLVED)


def _seed() -> str:
    return studies()["paper"].seed


def _systems(published: pd.DataFrame, metric: str) -> pd.Series:
    """The paper's used per-system numbers of ``metric`` ("vcpus", "gpus"), by system."""
    rows = published[(published["metric"] == metric) & published["used"]]
    return rows.set_index("system")["value"]


def _noise_why(noise: float) -> str:
    """Why a verdict that needs the machine's noise has none ("" where ``noise`` is known)."""
    if math.isnan(noise):
        return "the machine's noise (compare.min_difference) is not in the runs table"
    return ""


def outperform_claims(
    published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame
) -> list[Claim]:
    """Claim 1 (see the module docstring): one claim per workload of the paper's model where
    a GPU target ran, else one "cannot be checked here" with why.

    Raises:
        ValueError: a target with two runs of the workload in one round.
    """
    gpus = _systems(published, "gpus")
    theirs = (
        ", ".join(f"{s} {m:g} min" for s, m in paper.TRAINING_MINUTES.items())
        + f" for {paper.EPOCHS} epochs on CPUs; its GPU systems ("
        + "; ".join(gpus[gpus > 0].index)
        + ") are drawn in Figures 5 and 6 with no time printed"
    )
    source = f"{_seed()}, III. Conclusion; I. Testing Systems, Figures 5 and 6"
    found, why = speedups(ours, runs, PAPER_WORKLOAD, gpu="slowest")
    if not found:
        return [cannot(GPUS_OUTPERFORM, theirs, source, why)]
    out = []
    for s in found:
        noise = min_difference(runs, s.workload)
        words = s.ratio.compare_verdict(0.0 if math.isnan(noise) else noise)
        text = (
            f"{s.text}; the slowest GPU target against the fastest CPU target; "
            f"compare: {words}"
            + ("" if math.isnan(noise) else f" (the machine's noise {noise:.0%})")
        )
        called = compare.direction(words)
        if called in _CALLED and math.isnan(noise):
            out.append(cannot(GPUS_OUTPERFORM, theirs, source, _noise_why(noise), text))
        elif called == _FASTER:
            out.append(Claim(GPUS_OUTPERFORM, HOLDS, theirs, text, source))
        elif called in (_SLOWER, _ALIKE):
            out.append(Claim(GPUS_OUTPERFORM, DOES_NOT_HOLD, theirs, text, source))
        else:
            out.append(cannot(GPUS_OUTPERFORM, theirs, source, words, text))
    return out


def _count(value, column: str) -> str:
    """ "1 cpu", "8 cpus", "1 thread", "4 threads"."""
    n = int(value)
    return f"{n} {column[:-1] if n == 1 else column}"


def _speed(images_per_s: float) -> str:
    """images/s for people: "146,643", "117.3", "0.52" (four significant digits below 1,000,
    whole numbers with thousands separators above)."""
    return f"{images_per_s:,.0f}" if abs(images_per_s) >= 1000 else f"{images_per_s:.4g}"


def _feeding(rows: pd.DataFrame) -> tuple[pd.DataFrame, str] | None:
    """The first group of GPU rows (same workload, GPUs, batch size, backend and precision; one
    GPU first) whose cores differ, else whose threads differ, with the column that differs;
    None without. Backend and precision are held equal so that only the feeding cores
    differ (a bfloat16 run fed by 8 cores against a float32 run fed by 1 measures bfloat16)."""
    keys = ["workload", "gpus", "batch_size", "backend", "precision"]
    groups = rows.fillna({"precision": "float32"}).replace({"precision": {"": "float32"}})
    groups = groups.groupby(keys, sort=False)
    for _, group in sorted(groups, key=lambda kv: kv[0][1] != 1):
        for column in ("cpus", "threads"):
            if pd.to_numeric(group[column], errors="coerce").nunique() >= 2:
                return group, column
    return None


def vcpus_claim(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """Claim 2 (see the module docstring).

    Raises:
        ValueError: a target with two runs of the workload in one round.
    """
    vcpus, gpus = _systems(published, "vcpus"), _systems(published, "gpus")
    one_gpu = [s for s in gpus[gpus == 1].index if s in vcpus.index]
    few = min(one_gpu, key=lambda s: vcpus[s]) if one_gpu else ""
    many = max(one_gpu, key=lambda s: vcpus[s]) if one_gpu else ""
    theirs = (
        f"{few} ({vcpus[few]:g} vCPU) and {many} ({vcpus[many]:g} vCPUs): 'Cloud with 1 vCPU "
        "performed similar to cloud with 8 vCPU' (Figure 5; no time printed)"
        if one_gpu
        else "'Cloud with 1 vCPU performed similar to cloud with 8 vCPU' (Figure 5)"
    )
    source = f"{_seed()}, III. Conclusion; I. Testing Systems, Figure 5"
    rows = finished(ours, PAPER_WORKLOAD)
    rows = rows[rows["gpus"] > 0]
    if rows.empty:
        return cannot(VCPUS_ALIKE, theirs, source, no_gpu_why(ours, PAPER_WORKLOAD))
    found = _feeding(rows)
    if found is None:
        why = "no two GPU targets with different cores or threads feeding the same GPUs ran"
        return cannot(VCPUS_ALIKE, theirs, source, why)
    group, column = found
    values = pd.to_numeric(group[column], errors="coerce")
    lo, hi = group.loc[values.idxmin()], group.loc[values.idxmax()]
    workload = str(lo["workload"])
    ratio = target_ratio(
        runs, workload, hi["target"], lo["target"], "images_per_s",
        (hi["throughput"], lo["throughput"]),
    )  # fmt: skip
    noise = min_difference(runs, workload)
    words = ratio.compare_verdict(0.0 if math.isnan(noise) else noise)
    text = (
        f"{workload}: {hi['target']} ({_count(hi[column], column)}) "
        f"{_speed(hi['throughput'])} images/s vs {lo['target']} ({_count(lo[column], column)}) "
        f"{_speed(lo['throughput'])} images/s, {int(lo['gpus'])} GPU each (medians); "
        f"{ratio.text}; compare: {words}"
        + ("" if math.isnan(noise) else f" (the machine's noise {noise:.0%})")
        + synthetic(lo)
    )
    called = compare.direction(words)
    if _noise_why(noise) and called in _CALLED:
        return cannot(VCPUS_ALIKE, theirs, source, _noise_why(noise), text)
    if called not in _CALLED:  # too few rounds: its words say so
        return cannot(VCPUS_ALIKE, theirs, source, words, text)
    # "Not much difference": the interval within the machine's noise, whether or not it
    # excludes 1; a difference beyond the noise does not hold.
    if 1 / (1 + noise) <= ratio.low and ratio.high <= 1 + noise:
        return Claim(VCPUS_ALIKE, HOLDS, theirs, text, source)
    if ratio.low > 1 + noise or ratio.high < 1 / (1 + noise):
        return Claim(VCPUS_ALIKE, DOES_NOT_HOLD, theirs, text, source)
    why = (
        f"the interval reaches beyond the machine's noise ({noise:.0%} either way): more rounds "
        "would resolve it"
    )
    return cannot(VCPUS_ALIKE, theirs, source, why, text)


def _linear_prediction(published: pd.DataFrame) -> str:
    """The paper's own numbers behind claim 3: the CPU systems' cores, clocks and minutes, and
    what linear in cores x clock predicts for the faster one from the slower one's time.

    Raises:
        ValueError: the numbers file lacks a CPU system's cores or clock.
    """
    vcpus, clocks = _systems(published, "vcpus"), _systems(published, "clock_ghz")
    systems = [s for s in paper.TRAINING_MINUTES if s in vcpus.index and s in clocks.index]
    if len(systems) != len(paper.TRAINING_MINUTES):
        raise ValueError("the paper's numbers lack a CPU system's vcpus or clock_ghz")
    slow, fast = sorted(systems, key=lambda s: vcpus[s] * clocks[s])
    minutes = paper.TRAINING_MINUTES
    linear = minutes[slow] * vcpus[slow] * clocks[slow] / (vcpus[fast] * clocks[fast])
    return (
        f"{slow} ({vcpus[slow]:g} cores x {clocks[slow]:g} GHz) {minutes[slow]:g} min; linear "
        f"in cores x clock, {fast} ({vcpus[fast]:g} x {clocks[fast]:g} GHz) would take "
        f"{linear:.0f} min; it took {minutes[fast]:g} ({minutes[fast] / linear:.2f}x the "
        "linear prediction)"
    )


def _cpu_pair(rows: pd.DataFrame) -> tuple[pd.Series, pd.Series] | None:
    """The first group of CPU rows (same workload, machine, runner, backend, precision and
    batch size) whose cores differ: its fewest-cores and most-cores rows; None without."""
    keys = ["workload", "machine", "runner", "backend", "precision", "batch_size"]
    groups = rows.fillna({"precision": "float32", "machine": ""})
    groups = groups.replace({"precision": {"": "float32"}})
    for _, group in groups.groupby(keys, sort=False, dropna=False):
        cores = pd.to_numeric(group["cpus"], errors="coerce")
        if cores.nunique() >= 2:
            return group.loc[cores.idxmin()], group.loc[cores.idxmax()]
    return None


def cores_claim(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """Claim 3 (see the module docstring).

    Raises:
        ValueError: the paper's numbers lack a CPU system's cores or clock; a target with two
            runs of the workload in one round.
    """
    theirs = _linear_prediction(published)
    source = f"{_seed()}, I. Testing Systems (after Figure 4)"
    rows = finished(ours, PAPER_WORKLOAD)
    found = _cpu_pair(rows[rows["gpus"] == 0])
    if found is None:
        why = "no two CPU targets of one machine with different cores ran the paper's workload"
        return cannot(CORES_NOT_LINEAR, theirs, source, why)
    lo, hi = found
    workload = str(lo["workload"])
    linear = float(hi["cpus"]) / float(lo["cpus"])
    ratio = target_ratio(
        runs, workload, hi["target"], lo["target"], "images_per_s",
        (hi["throughput"], lo["throughput"]),
    )  # fmt: skip
    verdict, why = judge_at_least(ratio, linear)
    text = (
        f"{workload}: {hi['target']} ({_count(hi['cpus'], 'cpus')}) "
        f"{_speed(hi['throughput'])} images/s vs {lo['target']} ({_count(lo['cpus'], 'cpus')}) "
        f"{_speed(lo['throughput'])} images/s (medians); {ratio.text} against linear "
        f"x{linear:g} (one machine, one clock: cores alone)" + synthetic(lo)
    )
    if verdict == CANNOT:
        return cannot(CORES_NOT_LINEAR, theirs, source, why, text)
    # Below linear is the paper's "not quite linear"; above it is not what it says either.
    if verdict == DOES_NOT_HOLD:
        return Claim(CORES_NOT_LINEAR, HOLDS, theirs, text, source)
    return Claim(CORES_NOT_LINEAR, DOES_NOT_HOLD, theirs, f"{text}: faster than linear", source)


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """The paper's conclusions (see the module docstring) on our runs, in that order.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of "paper" (its
            systems' vcpus and gpus).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``
            (catalog "paper" for the paper's workload).
        runs: one row per run, ``study/runs.csv`` (workload, target, repeat, merged,
            images_per_s, min_difference): the ratios' rounds and the machine's noise.

    Returns:
        One claim per workload for claim 1 (one "cannot" without a GPU run), then claims 2
        and 3.

    Raises:
        ValueError: a target with two runs of a workload in one round; the paper's numbers
            without its CPU systems' cores and clocks.
    """
    return [
        *outperform_claims(published, ours, runs),
        vcpus_claim(published, ours, runs),
        cores_claim(published, ours, runs),
    ]
