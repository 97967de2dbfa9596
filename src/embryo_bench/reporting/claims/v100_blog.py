"""The V100 blog (shared/seeds/004, ``published/v100-blog.csv``): Venkatesh's cats-vs-dogs
Keras CNN and two deeper variants (catalog ``catsdogs-cnn``, ``catsdogs-deeper``,
``catsdogs-128``) fed by an augmenting generator, and TensorFlow's CIFAR-10 example
(``tf-cifar10``), on a VirtualBox VM, a 16-core Xeon server and a Tesla V100. Its headline
claims, checked on our runs (issue 34, item 3): the original network is input-bound (GPU at
0-10 %, "the bottleneck is at the input pipeline"), checked as files vs memory input of the
same workload on each of our targets; the V100's speed-ups, its utilisation and its speeds
cannot be checked without a GPU; the bare-metal server's lead over the VM on CIFAR-10 is
checked with our CPU targets of most and fewest cores standing in.
"""

from __future__ import annotations

import pandas as pd

from .common import Claim
from .input_bound import input_bound_claims, more_cores_claim, no_gpu_claim, published_text

#: The original network (the input-bound one) and TensorFlow's CIFAR-10 example.
ORIGINAL, CIFAR = "catsdogs-cnn", "tf-cifar10"
SEED = "004_0e48492da3711cae.txt"


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Study 004's claims on our runs, in this order: one input-bound claim per files-mode run
    of ``catsdogs-cnn`` (or one "cannot"), one claim per published GPU speed-up
    (``relative_time`` rows; cannot: no GPU), the GPU's utilisation by network (cannot), the
    GPU's speeds (cannot), and the CPU-vs-CPU claim on ``tf-cifar10``.

    Args:
        published: ``load_numbers("v100-blog")`` (columns of ``published.studies.COLUMNS``).
        ours: one row per workload and target, ``embryo_bench.reporting.study.OURS_COLUMNS``.
        runs: one row per run, ``study/runs.csv`` (the files-vs-memory ratio's rounds).

    Returns:
        list of :class:`~embryo_bench.reporting.claims.common.Claim`; the study's numbers are
        read from ``published``.
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
    for _, row in used[used["metric"] == "relative_time"].iterrows():
        out.append(
            no_gpu_claim(
                f"the GPU trains {row['workload']} {row['value']:g}x as fast as the "
                f"{row['system']}",
                f"{row['system']}: {row['value']:g} x the GPU's time ({row['note']})",
                f"{SEED}, {row['source'].split(', ', 1)[-1]}",
            )
        )
    out.append(
        no_gpu_claim(
            "deeper networks use more of the GPU",
            "GPU utilisation " + published_text(published, "gpu_utilisation"),
            f"{SEED}, The GPU for Machine Learning At Work and Training Speed Comparisons",
        )
    )
    speeds = used[(used["metric"] == "throughput") & used["system"].isin(gpu_systems)]
    out.append(
        no_gpu_claim(
            "the GPU's training speeds (and augmentation's cost on it)",
            "; ".join(
                published_text(published[published.index == i], "throughput") for i in speeds.index
            ),
            f"{SEED}, Training Speed Comparisons and Data Augmentation",
        )
    )
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
