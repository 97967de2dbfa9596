"""The V100 blog (phoenixNAP, study 004, its folder's ``numbers.csv``): Venkatesh's cats-vs-dogs
Keras CNN and two deeper variants (catalog ``catsdogs-cnn``, ``catsdogs-deeper``,
``catsdogs-128``) fed by an augmenting generator, and TensorFlow's CIFAR-10 example
(``tf-cifar10``), on a VirtualBox VM, a 16-core Xeon server and a Tesla V100. Its headline
claims, checked on our runs:

* the original network is input-bound (GPU at 0-10 %, "the bottleneck is at the input
  pipeline"), checked as files vs memory input of the same workload on each of our targets,
  GPU targets included (the post's claim is about its GPU);
* the V100's speed-ups over the server (4x on the original network, 23x on the 128 px one,
  the post's ``relative_time`` rows): where a GPU target of ours ran the network from the
  post's input, its images/s over our fastest CPU target's, paired within the rounds
  (:func:`embryo_bench.reporting.claims.gpu.speedups`), holds where the interval lies above
  the post's factor;
* deeper networks use more of the GPU (10 % against 45-50 %): on a GPU target that ran the
  original network and another the post measured, from the runs' GPU utilisation where the
  runs table carries it;
* the V100's own speeds (images/s): never checkable (absolute speeds of another GPU);
* the bare-metal server's lead over the VM on CIFAR-10, checked with our CPU targets of most
  and fewest cores standing in.

Without a GPU target the GPU claims say "cannot be checked here (no GPU)".
"""

from __future__ import annotations

import math

import pandas as pd

from ...published.studies import parse_settings
from ...reporting.claims.common import DOES_NOT_HOLD, HOLDS, Claim
from ...reporting.claims.gpu import (
    NO_UTILISATION,
    cannot,
    finished,
    gpu_utilisation,
    no_gpu_why,
    speedup_claim,
    speedups,
    utilisation_missing,
)
from ...reporting.claims.input_bound import input_bound_claims, more_cores_claim, published_text

#: The original network (the input-bound one) and TensorFlow's CIFAR-10 example.
ORIGINAL, CIFAR = "catsdogs-cnn", "tf-cifar10"
#: The study's short name (docs/studies/README.md), at the head of each claim's source.
SEED = "V100 blog (phoenixNAP)"


def speedup_claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list:
    """One claim per published GPU speed-up (``relative_time`` rows: the CPU system's time
    over the GPU's) and workload of ours where a GPU target ran that network from the row's
    input (its ``input`` setting), else one "cannot be checked here" with why; judged
    against the post's factor
    (:func:`~embryo_bench.reporting.claims.gpu.speedup_claim`)."""
    used = published[published["used"]]
    out = []
    for _, row in used[used["metric"] == "relative_time"].iterrows():
        claim = (
            f"the GPU trains {row['workload']} at least {row['value']:g}x as fast as the "
            f"{row['system']} (our fastest CPU target stands in)"
        )
        theirs = f"{row['system']}: {row['value']:g} x the GPU's time ({row['note']})"
        source = f"{SEED}, {row['source'].split(', ', 1)[-1]}"
        mode = parse_settings(row["settings"]).get("input") or None
        found, why = speedups(ours, runs, row["workload"], mode)
        if not found:
            out.append(cannot(claim, theirs, source, why))
        out += [speedup_claim(s, float(row["value"]), claim, theirs, source) for s in found]
    return out


def utilisation_claim(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """Deeper networks use more of the GPU: on each GPU target of ours that ran the original
    network and another network the post gives a utilisation for (from the same input as the
    post's rows), the original's median utilisation below every other's: holds on every such
    target, does not hold on one where it is not; cannot be checked without such a target or
    where the runs table has no utilisation
    (:func:`~embryo_bench.reporting.claims.gpu.gpu_utilisation`)."""
    used = published[published["used"] & (published["metric"] == "gpu_utilisation")]
    claim = "deeper networks use more of the GPU"
    theirs = "GPU utilisation " + published_text(published, "gpu_utilisation")
    source = f"{SEED}, The GPU for Machine Learning At Work and Training Speed Comparisons"
    rows = []
    for _, row in used.drop_duplicates("workload").iterrows():
        mode = parse_settings(row["settings"]).get("input") or None
        mine = finished(ours, row["workload"], mode)
        rows.append(mine[mine["gpus"] > 0])
    gpus = pd.concat(rows) if rows else pd.DataFrame()
    if gpus.empty:
        return cannot(claim, theirs, source, no_gpu_why(ours, ORIGINAL))
    parts, verdicts, missing = [], [], ""
    for target, group in gpus.groupby("target", sort=False):
        if ORIGINAL not in set(group["catalog"]) or group["catalog"].nunique() < 2:
            continue
        busy = {}
        for _, row in group.iterrows():
            value, why = gpu_utilisation(runs, row["workload"], target)
            if why == NO_UTILISATION:
                return cannot(claim, theirs, source, why, utilisation_missing(str(target)))
            if not math.isnan(value):
                busy.setdefault(row["catalog"], value)
            else:
                missing = why
        if ORIGINAL not in busy or len(busy) < 2:
            continue
        others = {k: v for k, v in busy.items() if k != ORIGINAL}
        verdicts.append(all(busy[ORIGINAL] < v for v in others.values()))
        parts.append(
            f"{target}: " + ", ".join(f"{k} {v:.0f} %" for k, v in busy.items()) + " (medians)"
        )
    if not verdicts:
        why = missing or f"no GPU target ran {ORIGINAL} and another network the post measured"
        return cannot(claim, theirs, source, why)
    return Claim(claim, HOLDS if all(verdicts) else DOES_NOT_HOLD, theirs, "; ".join(parts), source)


def speeds_claim(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """The GPU's training speeds (images/s, and augmentation's cost on it): never checkable,
    they are absolute speeds of the post's Tesla V100; where a GPU target of ours ran those
    networks, ``ours`` gives its images/s beside them."""
    used = published[published["used"]]
    gpu_systems = set(used.loc[used["metric"] == "gpu_utilisation", "system"])
    speeds = used[(used["metric"] == "throughput") & used["system"].isin(gpu_systems)]
    claim = "the GPU's training speeds (and augmentation's cost on it)"
    theirs = "; ".join(
        published_text(published[published.index == i], "throughput") for i in speeds.index
    )
    source = f"{SEED}, Training Speed Comparisons and Data Augmentation"
    workloads = list(dict.fromkeys(speeds["workload"]))
    mine = pd.concat([finished(ours, w) for w in workloads]) if workloads else pd.DataFrame()
    mine = mine[mine["gpus"] > 0] if len(mine) else mine
    if mine.empty:
        return cannot(claim, theirs, source, no_gpu_why(ours, " or ".join(workloads)))
    text = "; ".join(
        f"{r['target']} {r['workload']}: {r['throughput']:,.4g} images/s"
        for _, r in mine.iterrows()
    )
    why = f"absolute speeds of the post's {', '.join(sorted(gpu_systems))}, not of our GPU"
    return cannot(claim, theirs, source, why, text)


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Study 004's claims on our runs, in this order: one input-bound claim per files-mode run
    of ``catsdogs-cnn`` (or one "cannot"), the GPU's speed-ups (:func:`speedup_claims`), the
    GPU's utilisation by network (:func:`utilisation_claim`), the GPU's speeds
    (:func:`speeds_claim`), and the CPU-vs-CPU claim on ``tf-cifar10``.

    Args:
        published: ``load_numbers("v100-blog")`` (columns of ``published.studies.COLUMNS``).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``.
        runs: one row per run, ``study/runs.csv`` (the ratios' rounds).

    Returns:
        list of :class:`~embryo_bench.reporting.claims.common.Claim`; the study's numbers are
        read from ``published``.

    Raises:
        ValueError: a target with two runs of a workload in one round.
    """
    used = published[published["used"]]
    gpu_systems = set(used.loc[used["metric"] == "gpu_utilisation", "system"])
    small = f"{SEED}, For a small network, GPU Computing is hardly utilized"
    out = input_bound_claims(
        ours,
        runs,
        ORIGINAL,
        "the original cats-vs-dogs network is input-bound: reading, decoding and augmenting "
        "the images, not training, sets the pace",
        "GPU utilisation "
        + published_text(published, "gpu_utilisation", ORIGINAL)
        + "; CPU utilisation "
        + published_text(published, "cpu_utilisation", ORIGINAL),
        small,
    )
    out += speedup_claims(published, ours, runs)
    out.append(utilisation_claim(published, ours, runs))
    out.append(speeds_claim(published, ours))
    cpu_speeds = used[
        (used["metric"] == "throughput")
        & (used["workload"] == CIFAR)
        & ~used["system"].isin(gpu_systems)
    ]
    fast = cpu_speeds.loc[cpu_speeds["value"].idxmax(), "system"]
    slow = cpu_speeds.loc[cpu_speeds["value"].idxmin(), "system"]
    cores = used[(used["metric"] == "vcpus") & (used["system"] == fast)]["value"]
    fast_named = f"{fast}, {cores.iloc[0]:g} cores," if len(cores) else fast
    out.append(
        more_cores_claim(
            ours,
            CIFAR,
            f"the {fast_named} trains TensorFlow's CIFAR-10 example faster than the {slow} "
            "(our CPU targets of most and fewest cores stand in)",
            "; ".join(f"{r['system']}: {r['value']:g} images/s" for _, r in cpu_speeds.iterrows()),
            f"{SEED}, Training Speed Comparisons",
        )
    )
    return out
