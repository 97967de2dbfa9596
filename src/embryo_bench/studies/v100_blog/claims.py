"""The V100 blog (phoenixNAP, study 004, its folder's ``numbers.csv``): Venkatesh's cats-vs-dogs
Keras CNN and two deeper variants (catalog ``catsdogs-cnn``, ``catsdogs-deeper``,
``catsdogs-128``) fed by an augmenting generator, and TensorFlow's CIFAR-10 example
(``tf-cifar10``), on a VirtualBox VM, a 16-core Xeon server and a Tesla V100. Its headline
claims, checked on our runs:

* the original network is input-bound (GPU at 0-10 %, "the bottleneck is at the input
  pipeline"), checked as files vs memory input of the same workload on each of our targets,
  GPU targets included (the post's claim is about its GPU);
* the improved (128 px, 94 %) network's drop in images/s against the original: "~85 %" on
  the CPU, checked on our CPU targets that ran both from files, paired within the rounds;
  "~20 %" on the GPU, where a GPU target ran both;
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
from ...reporting.claims.common import DOES_NOT_HOLD, HOLDS, Claim, paired_workload_ratio
from ...reporting.claims.gpu import (
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
from ...reporting.claims.input_bound import input_bound_claims, more_cores_claim, published_text
from ...reporting.compare import MIN_PAIRS

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
    gpu_systems = _gpu_systems(published)
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


#: How far a published "~N %" reaches either side, in percentage points: the post rounds its
#: drops to 5 (~20 %, ~85 %), so ~85 % is read as 80-90 %.
ABOUT_POINTS = 5.0


def drop_claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """One claim per published ``throughput_drop`` (the improved network's images/s against
    the original's on one system: ~85 % on the CPU, ~20 % on the GPU) and target of ours of
    that kind (CPU: no GPU; GPU: one or more) that ran both networks from the row's input:
    the drop from our runs, 100 x (1 - the improved over the original), paired within the
    rounds (:func:`~embryo_bench.reporting.claims.common.paired_workload_ratio`); it holds
    where the drop's interval lies within the published value ± :data:`ABOUT_POINTS`, does
    not hold where it lies wholly outside, and cannot be checked with fewer than
    :data:`~embryo_bench.reporting.compare.MIN_PAIRS` rounds or an interval across the
    band's edge; one "cannot be checked here" with why where no such target ran."""
    used = published[published["used"] & (published["metric"] == "throughput_drop")]
    out = []
    for _, row in used.iterrows():
        settings = parse_settings(row["settings"])
        old, new, mode = settings["from"], row["workload"], settings.get("input") or None
        value, gpu = float(row["value"]), row["system"] in _gpu_systems(published)
        low_band, high_band = value - ABOUT_POINTS, value + ABOUT_POINTS
        kind = "GPU" if gpu else "CPU"
        claim = (
            f"{new} trains about {value:g} % slower than {old} on a {kind} "
            f"({low_band:g}-{high_band:g} %)"
        )
        theirs = f"{row['system']}: ~{value:g} % fewer images/s ({row['note'].split(':', 1)[0]})"
        source = f"{SEED}, {row['source'].split(', ', 1)[-1]}"
        both = finished(ours, new, mode).merge(
            finished(ours, old, mode), on="target", suffixes=("", "_old")
        )
        both = both[(both["gpus"] > 0) == gpu]
        if both.empty:
            why = (
                no_gpu_why(ours, new, mode)
                if gpu
                else f"no CPU target ran {old} and {new}" + (f" from {mode}" if mode else "")
            )
            out.append(cannot(claim, theirs, source, why))
            continue
        for _, mine in both.iterrows():
            ratio = paired_workload_ratio(
                runs, mine["target"], mine["workload"], mine["workload_old"], "images_per_s"
            )
            if ratio is None:
                out.append(cannot(claim, theirs, source, f"{mine['target']}: no round ran both"))
                continue
            drop, low, high = (100 * (1 - r) for r in (ratio.ratio, ratio.high, ratio.low))
            ours_text = (
                f"{mine['target']}: {mine['workload']} over {mine['workload_old']} "
                f"{ratio.text}, a drop of {drop:.0f} % [{low:.0f}, {high:.0f}]"
                f"{synthetic(mine)}"
            )
            if ratio.pairs < MIN_PAIRS:
                why = (
                    "one round: no interval"
                    if ratio.pairs < 2
                    else f"{ratio.pairs} rounds: too few for a verdict ({MIN_PAIRS} needed)"
                )
                out.append(cannot(claim, theirs, source, why, ours_text))
            elif low_band <= low and high <= high_band:
                out.append(Claim(claim, HOLDS, theirs, ours_text, source))
            elif high < low_band or low > high_band:
                out.append(Claim(claim, DOES_NOT_HOLD, theirs, ours_text, source))
            else:
                why = "the interval crosses the band's edge: more rounds would resolve it"
                out.append(cannot(claim, theirs, source, why, ours_text))
    return out


def _gpu_systems(published: pd.DataFrame) -> set[str]:
    """The post's GPU systems: those it gives a GPU utilisation for."""
    used = published[published["used"]]
    return set(used.loc[used["metric"] == "gpu_utilisation", "system"])


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Study 004's claims on our runs, in this order: one input-bound claim per files-mode run
    of ``catsdogs-cnn`` (or one "cannot"), the GPU's speed-ups (:func:`speedup_claims`), the
    improved network's drop against the original on a CPU and a GPU (:func:`drop_claims`), the
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
    gpu_systems = _gpu_systems(published)
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
    out += drop_claims(published, ours, runs)
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
