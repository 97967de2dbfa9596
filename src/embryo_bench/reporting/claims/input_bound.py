"""The checks that studies 001 (DATAmadness) and 004 (the V100 blog) share:
training fed by an augmenting image generator that could not keep the processor busy.

* :func:`input_bound_claims`: the same workload from files (decoded and augmented per batch,
  as the studies' generators) and from memory on the same target: the files-mode throughput
  over the memory-mode throughput, and the share of training time the files-mode steps waited
  for images, judged by the project's own input-bound threshold
  (:data:`embryo_bench.training.inputs.INPUT_BOUND_SHARE`, via
  :func:`~embryo_bench.training.inputs.input_bound`).
* :func:`more_cores_claim`: a CPU-vs-CPU claim where our CPU targets stand in (more cores
  train faster), judged by the comparison's own verdict.
* :func:`published_text`: the study's numbers of one metric as text, read from its file.

The GPU claims these studies share are :mod:`embryo_bench.reporting.claims.gpu`'s.
"""

from __future__ import annotations

import math

import pandas as pd

from ...published.studies import parse_settings
from ...training.inputs import INPUT_BOUND_SHARE, input_bound
from .. import compare
from .common import CANNOT, DOES_NOT_HOLD, HOLDS, Claim, paired_workload_ratio

#: The settings :func:`published_text` shows (those that tell a study's numbers apart).
SHOWN_SETTINGS = ("batch_size", "workers", "augmentation")

#: compare's verdict directions that decide a CPU-vs-CPU claim (reporting/compare.direction).
_FASTER, _SLOWER, _ALIKE = compare.FASTER, compare.SLOWER, compare.SAME


def _number(value: float) -> str:
    return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"


def published_text(
    published: pd.DataFrame, metric: str, workload: str | None = None, used: bool = True
) -> str:
    """The study's numbers of one metric as text, one "system: value unit (settings)" per row
    joined by "; " (its ``used`` rows only by default), e.g. "Tesla V100: 425 images/s
    (augmentation=true)": the workload is named when ``workload`` is None, the settings of
    :data:`SHOWN_SETTINGS` only.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of the study.
        metric: a metric of :data:`embryo_bench.published.studies.METRICS`.
        workload: only the rows of this catalog workload (None: all).
        used: only the rows marked used.

    Returns "" when the study published no such number.
    """
    rows = published[published["metric"] == metric]
    if workload is not None:
        rows = rows[rows["workload"] == workload]
    if used:
        rows = rows[rows["used"]]
    parts = []
    for _, row in rows.iterrows():
        who = row["system"] if workload is not None else f"{row['system']} {row['workload']}"
        who = who.strip()
        pairs = parse_settings(row["settings"])
        shown = ";".join(f"{k}={v}" for k, v in pairs.items() if k in SHOWN_SETTINGS)
        settings = f" ({shown})" if shown else ""
        parts.append(f"{who}: {_number(row['value'])} {row['unit']}{settings}")
    return "; ".join(parts)


def _synthetic(row: pd.Series) -> str:
    return " (SYNTHETIC data)" if row["data"] == "synthetic" else ""


def input_bound_claims(
    ours: pd.DataFrame,
    runs: pd.DataFrame,
    catalog: str,
    claim: str,
    theirs: str,
    source: str,
) -> list[Claim]:
    """Is training fed by the augmenting generator input-bound here? One claim per files-mode
    run of ``catalog`` on a target (``ours`` rows with ``input`` "files"), beside the memory
    run of the same catalog workload, target, backend, batch size and sweep point; the
    files-over-memory throughput paired within the rounds
    (:func:`~embryo_bench.reporting.claims.common.paired_workload_ratio`, with its 95 %
    interval) where both ran in the same rounds, else the ratio of the medians.

    Verdict: :data:`HOLDS` when the files-mode steps waited more than
    :data:`~embryo_bench.training.inputs.INPUT_BOUND_SHARE` of the training time (input-bound),
    :data:`DOES_NOT_HOLD` when they waited less; :data:`CANNOT` when no files-mode run of the
    workload finished, when no memory run stands beside it, or when the wait was not
    measured. A GPU target's claim names its GPUs ("gpu-1 (1 GPU), batch 32: ..."): the
    studies' own claim is about a GPU fed by the generator. ``ours`` says "files 12.3
    images/s = 0.45x memory 27.1 images/s (paired: x0.450 [0.410, 0.494], 3 rounds); steps
    waited 62 % of training time" (throughputs: medians, images/s; the wait: the median
    share, s/s).

    Args:
        ours: rows with the columns of ``embryo_bench.reporting.study.OURS_COLUMNS``.
        runs: ``study/runs.csv`` rows (workload, target, repeat, merged, images_per_s).
        catalog: the catalog workload (e.g. "catsdogs-cnn").
        claim, theirs, source: the study's claim, its numbers as text and where it is made.
    """
    files = ours[(ours["catalog"] == catalog) & (ours["input"] == "files")]
    if files.empty:
        return [Claim(claim, CANNOT, theirs, "-", source, why=f"{catalog} did not run from files")]
    memory = ours[(ours["catalog"] == catalog) & (ours["input"] == "memory")]
    out = []
    for _, run in files.iterrows():
        gpus = pd.to_numeric(run.get("gpus"), errors="coerce")
        gpu = f" ({int(gpus)} GPU)" if not pd.isna(gpus) and gpus > 0 else ""
        where = f"{run['target']}{gpu}, batch {run['batch_size']}"
        workers = pd.to_numeric(run.get("workers"), errors="coerce")
        if not pd.isna(workers):
            where += f", {int(workers)} worker{'s' if int(workers) != 1 else ''}"
        if run["sweep"]:
            where += f", {run['sweep']}"
        beside = memory[
            (memory["target"] == run["target"])
            & (memory["backend"] == run["backend"])
            & (memory["batch_size"] == run["batch_size"])
            & (memory["sweep"] == run["sweep"])
        ]
        share = float(run["input_wait_share"])
        wait = "" if math.isnan(share) else f"; steps waited {share:.0%} of training time"
        text = f"{where}: files {_number(run['throughput'])} images/s{wait}{_synthetic(run)}"
        if beside.empty:
            why = f"no memory-input run of {catalog} beside the files run on {run['target']}"
            out.append(Claim(claim, CANNOT, theirs, text, source, why=why))
            continue
        base = beside.iloc[0]
        ratio = run["throughput"] / base["throughput"]
        paired = paired_workload_ratio(
            runs, run["target"], run["workload"], base["workload"], "images_per_s"
        )
        rounds = f" (paired: {paired.text})" if paired else ""
        text = (
            f"{where}: files {_number(run['throughput'])} images/s = {ratio:.2f}x memory "
            f"{_number(base['throughput'])} images/s{rounds}{wait}{_synthetic(run)}"
        )
        if math.isnan(share):
            out.append(Claim(claim, CANNOT, theirs, text, source, why="the wait was not measured"))
            continue
        flag = input_bound(share)
        verdict = HOLDS if flag else DOES_NOT_HOLD
        text += f" ({flag or f'not input-bound: that is above {INPUT_BOUND_SHARE:.0%} waiting'})"
        out.append(Claim(claim, verdict, theirs, text, source))
    return out


def more_cores_claim(
    ours: pd.DataFrame, catalog: str, claim: str, theirs: str, source: str
) -> Claim:
    """A study's CPU system with more cores trains ``catalog`` faster than one with fewer: our
    CPU targets (``gpus`` 0, memory input) with the most and the fewest ``cpus`` stand in.

    Verdict: compare's verdict of the many-core target against the few-core one when the
    few-core target is the comparison's base (its row has no ratio, or 1), by its direction
    (:func:`embryo_bench.reporting.compare.direction`): faster -> :data:`HOLDS`, slower or the
    same within the noise -> :data:`DOES_NOT_HOLD`; :data:`CANNOT` when fewer than two core
    counts ran, when the few-core target is not the base, or when compare gave no verdict
    (too few rounds, or unresolved; its words are the why).
    """
    cpu = ours[(ours["catalog"] == catalog) & (ours["input"] == "memory") & (ours["gpus"] == 0)]
    if cpu["cpus"].nunique() < 2:
        why = f"{catalog} did not run on two CPU targets with different core counts"
        return Claim(claim, CANNOT, theirs, "-", source, why=why)
    few = cpu.loc[cpu["cpus"].idxmin()]
    many = cpu.loc[cpu["cpus"].idxmax()]
    text = (
        f"{many['target']} ({many['cpus']} cpus) {_number(many['throughput'])} images/s vs "
        f"{few['target']} ({few['cpus']} cpus) {_number(few['throughput'])} images/s"
    )
    if not math.isnan(many["ratio"]):
        text += f": {many['ratio']:.2f}x"
        if not (math.isnan(many["ratio_low"]) or math.isnan(many["ratio_high"])):
            text += f" [{many['ratio_low']:.2f}, {many['ratio_high']:.2f}]"
    text += _synthetic(many)
    is_base = math.isnan(few["ratio"]) or abs(few["ratio"] - 1.0) < 1e-9
    if not is_base or math.isnan(many["ratio"]):
        why = f"{few['target']} is not the comparison's base"
        return Claim(claim, CANNOT, theirs, text, source, why=why)
    called = compare.direction(many["verdict"])
    if called == _FASTER:
        return Claim(claim, HOLDS, theirs, text + f" ({many['verdict']})", source)
    if called in (_SLOWER, _ALIKE):
        return Claim(claim, DOES_NOT_HOLD, theirs, text + f" ({many['verdict']})", source)
    why = f"no verdict: {many['verdict'] or 'none given'}"
    return Claim(claim, CANNOT, theirs, text, source, why=why)
