"""The paper's own GPU conclusions (Lawrence et al. 2017, study 000), checked on our
runs of its workload (catalog ``paper``: :data:`embryo_bench.vocabulary.layout.PAPER_WORKLOAD`)
when a configuration names ``study: paper``. Its side: the CPU systems' training times from
:mod:`embryo_bench.published.paper` (309 and 134 min), its systems' vCPUs and GPUs from
its folder's ``numbers.csv``; the GPU systems' times are drawn in its Figures 5 and 6 and printed
nowhere, so no GPU number of theirs is quoted.

1. :data:`GPUS_OUTPERFORM` (III. Conclusion): our slowest GPU target against our fastest CPU
   target (so every GPU target against every CPU target), images/s paired within the rounds
   (:func:`embryo_bench.reporting.claims.gpu.speedups`); "significantly" is compare's verdict
   with the configuration's ``compare.min_difference``
   (:func:`embryo_bench.reporting.compare.verdict`): "faster" holds, "slower" or "no
   measured difference" does not hold, too few rounds cannot be checked.
2. :data:`VCPUS_ALIKE` (III. Conclusion; I. Testing Systems: the cloud K80 with 1 vCPU
   "performed similar" to the one with 8): two GPU targets with the same GPUs and batch size
   and different cores (else different threads) feeding them, the most-cores one's images/s
   over the fewest-cores one's, paired within the rounds: holds where compare finds no
   measured difference and the interval lies within the machine's noise either way, does not
   hold where compare finds one faster; cannot be checked otherwise.

Without a GPU target both say "cannot be checked here (no GPU)".
"""

from __future__ import annotations

import math

import pandas as pd

from ...published import paper
from ...published.studies import studies
from ...reporting.claims.common import DOES_NOT_HOLD, HOLDS, Claim, target_ratio
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

#: compare's verdict words that decide these claims (reporting/compare.verdict).
_FASTER, _SLOWER, _ALIKE = "faster", "slower", "no measured difference"


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
        if words in (_FASTER, _SLOWER, _ALIKE) and math.isnan(noise):
            out.append(cannot(GPUS_OUTPERFORM, theirs, source, _noise_why(noise), text))
        elif words == _FASTER:
            out.append(Claim(GPUS_OUTPERFORM, HOLDS, theirs, text, source))
        elif words in (_SLOWER, _ALIKE):
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
    if _noise_why(noise) and words in (_FASTER, _SLOWER, _ALIKE):
        return cannot(VCPUS_ALIKE, theirs, source, _noise_why(noise), text)
    if words in (_FASTER, _SLOWER):
        return Claim(VCPUS_ALIKE, DOES_NOT_HOLD, theirs, text, source)
    if words != _ALIKE:
        return cannot(VCPUS_ALIKE, theirs, source, words, text)
    if 1 / (1 + noise) <= ratio.low and ratio.high <= 1 + noise:
        return Claim(VCPUS_ALIKE, HOLDS, theirs, text, source)
    why = (
        f"the interval reaches beyond the machine's noise ({noise:.0%} either way): more rounds "
        "would resolve it"
    )
    return cannot(VCPUS_ALIKE, theirs, source, why, text)


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """The paper's two GPU conclusions (see the module docstring) on our runs, in that order.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of "paper" (its
            systems' vcpus and gpus).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``
            (catalog "paper" for the paper's workload).
        runs: one row per run, ``study/runs.csv`` (workload, target, repeat, merged,
            images_per_s, min_difference): the ratios' rounds and the machine's noise.

    Returns:
        One claim per workload for claim 1 (one "cannot" without a GPU run), then claim 2.

    Raises:
        ValueError: a target with two runs of a workload in one round.
    """
    return [*outperform_claims(published, ours, runs), vcpus_claim(published, ours, runs)]
