"""The checks the studies' GPU claims share: where a GPU target of ours ran (``ours`` rows with
``gpus`` above 0), the GPU against our CPU targets on the same workload; where none ran, the
claim "cannot be checked here" and why.

* :func:`speedups`: per workload of a catalog model, a GPU target's throughput over the
  fastest CPU target's (same batch size), paired within the rounds where both ran
  (:func:`~embryo_bench.reporting.claims.common.target_ratio`), and :func:`speedup_claim`,
  judged against a speed-up the study gives (DATAmadness's 6x, the V100 post's 4x and 23x,
  Wu et al.'s smallest GPU-over-CPU ratio) by
  :func:`~embryo_bench.reporting.claims.common.judge_at_least`.
* :func:`gpu_utilisation`: a GPU target's median utilisation over its runs, read from the
  runs table's :data:`GPU_UTIL_COLUMN` where the table has it; "cannot be checked here (GPU
  utilisation not in the table)" where it does not.
* :func:`min_difference`: the configuration's ``compare.min_difference`` for a workload, for
  claims judged by compare's own verdict (the paper's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ...training.inputs import INPUT_BOUND_SHARE
from .common import CANNOT, Claim, TargetRatio, judge_at_least, target_ratio

#: The reason printed for a GPU claim where no GPU target of ours ran at all.
NO_GPU = "no GPU"
#: The reason printed for a GPU utilisation claim where the runs table has no utilisation.
NO_UTILISATION = "GPU utilisation not in the table"
#: The ``study/runs.csv`` column a utilisation claim reads: a run's mean GPU utilisation, %
#: (NVML's share of the time a kernel ran; the mean over its GPUs for a run with several), from
#: the run's telemetry per GPU (``metrics.json``: ``telemetry.gpus[].gpu_util_percent_mean``,
#: :func:`embryo_bench.recording.telemetry.summarise`), as the runs table
#: (:func:`embryo_bench.reporting.summary.run_table`) gives it; runs tables written before it
#: have no such column.
GPU_UTIL_COLUMN = "gpu_util_percent_mean"
#: A GPU busy less than this (%) was idle most of the time: the complement of the project's
#: input-bound share (:data:`embryo_bench.training.inputs.INPUT_BOUND_SHARE`, "mostly" is more
#: than half), a judgement, not a measurement.
GPU_IDLE_BELOW_PERCENT = 100.0 * (1.0 - INPUT_BOUND_SHARE)


def _number(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def finished(ours: pd.DataFrame, catalog: str, input_mode: str | None = None) -> pd.DataFrame:
    """``ours``' rows of a catalog workload with a finished run and a measured throughput,
    from ``input_mode`` ("memory" | "files"; None: either), ``gpus`` as numbers (NA: 0)."""
    rows = ours[ours["catalog"] == catalog]
    if input_mode:
        rows = rows[rows["input"] == input_mode]
    rows = rows.assign(
        gpus=pd.to_numeric(rows["gpus"], errors="coerce").fillna(0).astype(int),
        throughput=pd.to_numeric(rows["throughput"], errors="coerce"),
    )
    done = pd.to_numeric(rows["runs"], errors="coerce").fillna(0).gt(0)
    return rows[done & rows["throughput"].gt(0)]


def no_gpu_why(ours: pd.DataFrame, catalog: str, input_mode: str | None = None) -> str:
    """Why a GPU claim on ``catalog`` has no GPU run: :data:`NO_GPU` where no GPU target of
    ours ran anything, else "no GPU target ran <catalog>[ from <input_mode>]"."""
    gpus = pd.to_numeric(ours["gpus"], errors="coerce").fillna(0)
    if not (gpus > 0).any():
        return NO_GPU
    return f"no GPU target ran {catalog}" + (f" from {input_mode}" if input_mode else "")


def _who(row: pd.Series) -> str:
    cores = f"{int(row['cpus'])} cpu{'' if int(row['cpus']) == 1 else 's'}"
    gpus = f"{int(row['gpus'])} GPU, " if row["gpus"] else ""
    return f"{row['target']} ({gpus}{cores})"


def synthetic(row: pd.Series) -> str:
    """ " (SYNTHETIC data)" for a row of ``ours`` trained on synthetic data, else ""."""
    return " (SYNTHETIC data)" if row["data"] == "synthetic" else ""


@dataclass(frozen=True)
class SpeedUp:
    """One GPU target's throughput over a CPU target's on one workload of ours.

    Attributes:
        workload: the config's workload name.
        gpu, cpu: their rows of ``ours`` (``embryo_bench.reporting.study.OURS_COLUMNS``).
        ratio: the GPU's images/s over the CPU's
            (:func:`~embryo_bench.reporting.claims.common.target_ratio`).
    """

    workload: str
    gpu: pd.Series
    cpu: pd.Series
    ratio: TargetRatio

    @property
    def text(self) -> str:
        """ "paper: gpu-1 (1 GPU, 4 cpus) 2,400 images/s vs laptop-2cpu (2 cpus) 120 images/s
        (medians), GPU/CPU x20.000 [18.000, 22.000], paired within 3 rounds"."""
        return (
            f"{self.workload}: {_who(self.gpu)} {_number(self.gpu['throughput'])} images/s vs "
            f"{_who(self.cpu)} {_number(self.cpu['throughput'])} images/s (medians), GPU/CPU "
            f"{self.ratio.text}{synthetic(self.gpu)}"
        )


def speedups(
    ours: pd.DataFrame,
    runs: pd.DataFrame,
    catalog: str,
    input_mode: str | None = None,
    gpu: str = "fastest",
) -> tuple[list[SpeedUp], str]:
    """Per workload of ``catalog`` (each config workload: an input mode, a batch size) where
    a GPU target ran: the ``gpu`` ("fastest" or "slowest" by median images/s) GPU target
    against the fastest CPU target (``gpus`` 0) at the same batch size: the stronger CPU, so
    the GPU's lead is not flattered by a weak one.

    Args:
        ours: ``embryo_bench.reporting.study.OURS_COLUMNS`` rows.
        runs: ``study/runs.csv`` rows, for the ratio's rounds.
        catalog: the catalog workload; input_mode: only its workloads from this input.
        gpu: "fastest", or "slowest" for a claim about every GPU (the paper's).

    Returns:
        (the speed-ups, in the order of ``ours``; why there is none: "" when there is one,
        else :func:`no_gpu_why` or "no CPU target ran <workload> at batch <n>").

    Raises:
        ValueError: ``gpu`` other than "fastest" or "slowest", or as
            :func:`~embryo_bench.reporting.claims.common.target_ratio`.
    """
    if gpu not in ("fastest", "slowest"):
        raise ValueError(f"gpu {gpu!r}; expected 'fastest' or 'slowest'")
    rows = finished(ours, catalog, input_mode)
    found, whys = [], []
    for workload, group in rows.groupby("workload", sort=False):
        gpus = group[group["gpus"] > 0]
        if gpus.empty:
            continue
        pick = gpus["throughput"].idxmax() if gpu == "fastest" else gpus["throughput"].idxmin()
        g = gpus.loc[pick]
        same_batch = group["batch_size"].eq(g["batch_size"]).fillna(False).astype(bool)
        cpus = group[(group["gpus"] == 0) & same_batch]
        if cpus.empty:
            whys.append(f"no CPU target ran {workload} at batch {g['batch_size']}")
            continue
        c = cpus.loc[cpus["throughput"].idxmax()]
        ratio = target_ratio(
            runs, str(workload), g["target"], c["target"], "images_per_s",
            (g["throughput"], c["throughput"]),
        )  # fmt: skip
        found.append(SpeedUp(str(workload), g, c, ratio))
    if found:
        return found, ""
    return found, whys[0] if whys else no_gpu_why(ours, catalog, input_mode)


def speedup_claim(
    speedup: SpeedUp, threshold: float, claim: str, theirs: str, source: str
) -> Claim:
    """A study's "the GPU is at least ``threshold`` x as fast as the CPU" on one
    :class:`SpeedUp` of ours: the verdict of
    :func:`~embryo_bench.reporting.claims.common.judge_at_least` (holds where the interval
    lies above ``threshold``, does not hold where below, cannot be checked with too few rounds
    or an interval covering it); ``ours`` is :attr:`SpeedUp.text` and the threshold."""
    verdict, why = judge_at_least(speedup.ratio, threshold)
    text = f"{speedup.text}; the claim: at least x{threshold:.3g}"
    return Claim(claim, verdict, theirs, text, source, why=why)


def gpu_utilisation(runs: pd.DataFrame, workload: str, target: str) -> tuple[float, str]:
    """A GPU target's median utilisation (%) over its runs of ``workload``.

    Returns:
        (the median, ""), or (NaN, why): :data:`NO_UTILISATION` where ``runs`` has no
        :data:`GPU_UTIL_COLUMN`, "GPU utilisation not measured" where none of the runs has a
        value (no NVML reading).
    """
    if GPU_UTIL_COLUMN not in runs.columns:
        return math.nan, NO_UTILISATION
    mine = runs[(runs["workload"] == workload) & (runs["target"] == target)]
    values = pd.to_numeric(mine[GPU_UTIL_COLUMN], errors="coerce").dropna()
    if values.empty:
        return math.nan, "GPU utilisation not measured"
    return float(values.median()), ""


def utilisation_missing(target: str) -> str:
    """``ours`` of a utilisation claim the runs table cannot answer: what ran and what column
    it would need."""
    return (
        f"{target} ran; study/runs.csv has no {GPU_UTIL_COLUMN} column (each run's "
        "telemetry.gpus[].gpu_util_percent_mean in its metrics.json)"
    )


def min_difference(runs: pd.DataFrame, workload: str) -> float:
    """The configuration's ``compare.min_difference`` (a fraction) on ``workload``'s runs
    (``study/runs.csv``'s column of that name); NaN where the table has none."""
    if "min_difference" not in runs.columns:
        return math.nan
    values = pd.to_numeric(
        runs.loc[runs["workload"] == workload, "min_difference"], errors="coerce"
    ).dropna()
    return float(values.iloc[0]) if len(values) else math.nan


def cannot(claim: str, theirs: str, source: str, why: str, ours: str = "-") -> Claim:
    """A claim our runs cannot check, with why."""
    return Claim(claim, CANNOT, theirs, ours, source, why=why)
