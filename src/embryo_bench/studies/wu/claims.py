"""Wu et al.'s headline claims about TensorFlow (Wu et al. 2018, study 003, *A Comparative
Measurement Study of Deep Learning as a Service Framework*), checked on our runs.

The study's side is read from its numbers (its folder's ``numbers.csv``,
:func:`load_numbers`), never typed here; ours from the configuration's runs (one row per
workload and target, the columns of ``embryo_bench.reporting.study.OURS_COLUMNS``). The
claims:

1. TensorFlow's CPU training time falls as the batch grows, 50 -> 500 -> 5,000, at the same
   epochs (Table XV, on their MNIST network: our ``tf-mnist-deep``): the order of the
   seconds per epoch on each of our CPU targets that ran the three batch sizes.
2. At the same epochs, accuracy falls as the batch grows (Table XV): only on real data.
3. More threads is not always faster (Table XII: OpenBLAS threads in Caffe, Torch and Theano;
   the study swept no TensorFlow threads): our TensorFlow thread pools on the same cores.
4. A GPU trains TensorFlow's MNIST and CIFAR-10 networks many times faster than the CPU
   (Tables VI and VII): only where a GPU target ran; "many" is the smallest GPU-over-CPU
   speed-up the two tables give for TensorFlow (:func:`smallest_gpu_speedup`, read from the
   file: x4.46, Server-2's Tesla M60 over its CPU on MNIST), judged on our GPU target's
   images/s over our fastest CPU target's, paired within the rounds.
5. TensorFlow with Eigen trains faster than TensorFlow built with MKL (Tables X and XI):
   never here (one TensorFlow build).
"""

from __future__ import annotations

import math

import pandas as pd

from ...published.studies import parse_settings, studies
from ...reporting.claims.common import CANNOT, DOES_NOT_HOLD, HOLDS, Claim, paired_workload_ratio
from ...reporting.claims.gpu import speedup_claim, speedups

#: The catalog workload that is the study's MNIST network (TensorFlow's Deep MNIST), and its
#: CIFAR-10 network.
MNIST = "tf-mnist-deep"
CIFAR10 = "tf-cifar10"
#: The batch sizes whose order the claim is about (Table XV's first three; its 50,000 swapped).
BATCHES = (50, 500, 5000)


def _seed() -> str:
    return studies()["wu"].seed


def _rows(published: pd.DataFrame, **settings: str) -> pd.DataFrame:
    """The used rows of ``published`` whose settings hold every given ``key=value``, with
    their settings parsed into a column ``parsed`` (dict)."""
    table = published[published["used"]].copy()
    table["parsed"] = [parse_settings(s) for s in table["settings"]]
    keep = [all(p.get(k) == v for k, v in settings.items()) for p in table["parsed"]]
    return table[keep]


def _from_table(published: pd.DataFrame, table: str) -> pd.DataFrame:
    """The used rows whose source names ``table`` (``"Table XV"``, not Table XVI)."""
    named = published["source"].str.contains(rf"{table}(?![IVX])", regex=True)
    return published[named & published["used"]]


def batch_sweep(published: pd.DataFrame) -> pd.DataFrame:
    """Table XV: TensorFlow's MNIST network on Server-1's CPU over the batch size.

    Returns:
        One row per batch size (index ``batch_size``, int, ascending), columns
        ``epoch_seconds`` and ``training_seconds`` (s), ``test_accuracy`` (fraction) and
        ``system`` (str); a value the file lacks is NaN.

    Raises:
        ValueError: no Table XV rows of ``tf-mnist-deep`` in ``published``.
    """
    rows = _from_table(published, "Table XV")
    rows = rows[rows["workload"] == MNIST]
    if rows.empty:
        raise ValueError(f"no Table XV rows of {MNIST} in Wu et al.'s numbers")
    rows = rows.assign(batch_size=[int(parse_settings(s)["batch_size"]) for s in rows["settings"]])
    table = rows.pivot_table(index="batch_size", columns="metric", values="value", aggfunc="first")
    table = table.reindex(columns=["epoch_seconds", "training_seconds", "test_accuracy"])
    table["system"] = rows.groupby("batch_size")["system"].first()
    return table.sort_index()


def default_batch(published: pd.DataFrame) -> int:
    """TensorFlow's default MNIST batch size: the setting of Table VI(a)'s CPU time.

    Raises:
        ValueError: ``published`` has no such row.
    """
    rows = _rows(published, framework="tensorflow", gpus="0")
    rows = rows[(rows["workload"] == MNIST) & (rows["metric"] == "training_seconds")]
    rows = rows[rows["source"].str.contains("Table VI(a)", regex=False)]
    if rows.empty:
        raise ValueError(f"no Table VI(a) CPU time of {MNIST} in Wu et al.'s numbers")
    return int(rows["parsed"].iloc[0]["batch_size"])


def _fmt(seconds: float) -> str:
    return f"{seconds:,.2f}"


def _ours_cpu(ours: pd.DataFrame, workload: str) -> pd.DataFrame:
    """Our finished CPU runs of a catalog workload from memory input."""
    keep = (
        (ours["catalog"] == workload)
        & (ours["gpus"] == 0)
        & (ours["input"] == "memory")
        & (ours["runs"] > 0)
    )
    return ours[keep]


def _interval(row) -> str:
    """`` (x1.62 [1.55, 1.70] of the base)`` where the rounds give an interval, else ""."""
    if all(math.isfinite(float(row[c])) for c in ("ratio", "ratio_low", "ratio_high")):
        return f" (x{row['ratio']:.2f} [{row['ratio_low']:.2f}, {row['ratio_high']:.2f}])"
    return ""


def _falls(values: list[float]) -> bool:
    return all(a > b for a, b in zip(values, values[1:], strict=False))


def _batch_steps(runs: pd.DataFrame, target: str, group: pd.DataFrame) -> list:
    """Each batch size's seconds per epoch over the one before's on ``target``, paired within
    the rounds (:func:`paired_workload_ratio`; None where no round has both): one per step of
    :data:`BATCHES`. ``group`` is ``ours``' rows of the target (each batch's workload)."""
    workload = {int(b): w for b, w in zip(group["batch_size"], group["workload"], strict=True)}
    return [
        paired_workload_ratio(runs, target, workload[b], workload[a], "steady_epoch_s")
        for a, b in zip(BATCHES[:-1], BATCHES[1:], strict=True)
    ]


#: How a batch step moves the seconds per epoch (:func:`_step`).
_FALLS, _RISES, _UNRESOLVED = "falls", "rises", "unresolved"


def _step(paired, median_ratio: float) -> str:
    """One step of the sweep: :data:`_FALLS` or :data:`_RISES` where the paired ratio's 95 %
    interval is below or above 1, :data:`_UNRESOLVED` where it covers 1; from
    ``median_ratio`` (the medians' ratio) where fewer than two rounds pair."""
    if paired is None or paired.pairs < 2:
        return _FALLS if median_ratio < 1.0 else _RISES
    if paired.high < 1.0:
        return _FALLS
    return _RISES if paired.low > 1.0 else _UNRESOLVED


def batch_time_claim(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """Claim 1 (Table XV): seconds per epoch fall over batch 50 -> 500 -> 5,000, on every CPU
    target of ours that ran the three (memory input); the relative drops of both sides.

    Each step is judged by its paired ratio (the larger batch's seconds per epoch over the
    smaller's in the same round, :func:`_batch_steps`): it falls where the 95 % interval is
    below 1, rises where it is above 1, and is not resolved where it covers 1; a step with
    fewer than two rounds with both falls or rises as the medians do. Verdict: holds where
    every step falls on every target, does not hold where a step rises on one, and cannot be
    checked (the rounds do not resolve it) otherwise. ``ours`` gives both: the medians
    relative to batch 50 and each step's paired ratio with its interval.

    Args:
        published: ``load_numbers("wu")``; ours: ``OURS_COLUMNS`` rows (epoch_seconds in s);
        runs: ``study/runs.csv`` rows (steady_epoch_s in s, repeat = the round).

    Raises:
        ValueError: as :func:`batch_sweep`, or a workload with two runs on a target in one
            round (:func:`~embryo_bench.reporting.claims.common.paired_workload_ratio`).
    """
    theirs_table = batch_sweep(published).loc[list(BATCHES)]
    base = theirs_table["epoch_seconds"].iloc[0]
    theirs = (
        f"{theirs_table['system'].iloc[0]}, {len(BATCHES)} batch sizes at the same epochs: "
        + " / ".join(_fmt(v) for v in theirs_table["training_seconds"])
        + " s in all; per epoch "
        + " / ".join(f"{v:.2f}" for v in theirs_table["epoch_seconds"])
        + " s (x"
        + ", x".join(f"{v / base:.3f}" for v in theirs_table["epoch_seconds"].iloc[1:])
        + " of batch 50)"
    )
    claim = "TensorFlow's CPU time falls as the batch grows (50 -> 500 -> 5,000)"
    source = f"{_seed()} section 4.4.1, Table XV"
    mine = _ours_cpu(ours, MNIST)
    mine = mine[mine["batch_size"].isin(BATCHES) & mine["epoch_seconds"].gt(0)]
    parts, verdicts = [], []
    for target, group in mine.groupby("target", sort=False):
        by_batch = group.groupby("batch_size")["epoch_seconds"].median()
        if set(by_batch.index) != set(BATCHES) or group["batch_size"].duplicated().any():
            continue
        times = [float(by_batch[b]) for b in BATCHES]
        runs_at = group.groupby("batch_size")["runs"].sum()
        steps = _batch_steps(runs, str(target), group)
        moves = [_step(p, b / a) for p, a, b in zip(steps, times[:-1], times[1:], strict=True)]
        unresolved = [
            f"{b:,}/{a:,}"
            for move, a, b in zip(moves, BATCHES[:-1], BATCHES[1:], strict=True)
            if move == _UNRESOLVED
        ]
        verdicts.append(_RISES if _RISES in moves else _UNRESOLVED if unresolved else _FALLS)
        paired = [
            f"{b:,}/{a:,} {p.text}"
            for p, a, b in zip(steps, BATCHES[:-1], BATCHES[1:], strict=True)
            if p is not None
        ]
        parts.append(
            f"{target} ({group['machine'].iloc[0]}): "
            + " / ".join(_fmt(t) for t in times)
            + " s per epoch (x"
            + ", x".join(f"{t / times[0]:.3f}" for t in times[1:])
            + "; runs "
            + "/".join(str(int(runs_at[b])) for b in BATCHES)
            + (f"; paired, each batch over the one before: {', '.join(paired)}" if paired else "")
            + {
                _FALLS: "; falls",
                _RISES: "; does not fall at every step",
                _UNRESOLVED: f"; the rounds do not resolve {' and '.join(unresolved)}",
            }[verdicts[-1]]
            + ")"
        )
    if not verdicts:
        why = f"{MNIST} did not run at batch 50, 500 and 5,000 on one CPU target"
        return Claim(claim, CANNOT, theirs, why, source, why=why)
    ours_text = "; ".join(parts)
    if _RISES in verdicts:
        return Claim(claim, DOES_NOT_HOLD, theirs, ours_text, source)
    if _UNRESOLVED in verdicts:
        why = "a step's interval covers 1: more rounds would resolve it"
        return Claim(claim, CANNOT, theirs, ours_text, source, why=why)
    return Claim(claim, HOLDS, theirs, ours_text, source)


def batch_accuracy_claim(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """Claim 2 (Table XV): test accuracy falls over batch 50 -> 500 -> 5,000 at the same
    epochs; checked on our real-data runs only (synthetic data makes accuracy meaningless)."""
    theirs_table = batch_sweep(published).loc[list(BATCHES)]
    theirs = (
        "test accuracy "
        + " / ".join(f"{v:.4f}" for v in theirs_table["test_accuracy"])
        + " (batch 50 / 500 / 5,000)"
    )
    claim = "At the same epochs, TensorFlow's accuracy falls as the batch grows"
    source = f"{_seed()} section 4.4.1, Table XV"
    mine = _ours_cpu(ours, MNIST)
    mine = mine[mine["batch_size"].isin(BATCHES)]
    real = mine[(mine["data"] == "real") & mine["test_accuracy"].notna()]
    parts, verdicts = [], []
    for target, group in real.groupby("target", sort=False):
        by_batch = group.groupby("batch_size")["test_accuracy"].median()
        if set(by_batch.index) != set(BATCHES):
            continue
        values = [float(by_batch[b]) for b in BATCHES]
        verdicts.append(_falls(values))
        parts.append(f"{target}: " + " / ".join(f"{v:.4f}" for v in values))
    if not verdicts:
        why = (
            "synthetic data: accuracy is meaningless"
            if len(mine)
            else f"{MNIST} did not run at batch 50, 500 and 5,000"
        )
        return Claim(claim, CANNOT, theirs, why, source, why=why)
    verdict = HOLDS if all(verdicts) else DOES_NOT_HOLD
    return Claim(claim, verdict, theirs, "; ".join(parts), source)


def threads_claim(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """Claim 3 (Table XII, section 4.2.2): the fastest thread count is below the most threads
    (Caffe, Torch and Theano's OpenBLAS on Server-2, each at its default batch). Ours:
    tf-mnist-deep at TensorFlow's default batch (Table VI(a)'s) on targets with the same cores
    and different TensorFlow thread pools; holds where, on every such set of cores, the most
    threads is not faster than fewer (throughput intervals that overlap count as not faster),
    does not hold where it is faster on any."""
    sweep = _from_table(published, "Table XII")
    sweep = sweep.assign(parsed=[parse_settings(s) for s in sweep["settings"]])
    parts = []
    for framework, group in sweep.groupby(
        sweep["parsed"].map(lambda p: p["framework"]), sort=False
    ):
        threads = group["parsed"].map(lambda p: p["threads"])
        best = group.loc[group["value"].idxmin()]
        unset = group[threads == "unset"]["value"]
        parts.append(
            f"{framework}: fastest at {best['parsed']['threads']} threads "
            f"({_fmt(best['value'])} s)"
            + (f", unset {_fmt(unset.iloc[0])} s" if len(unset) else "")
        )
    theirs = (
        f"OpenBLAS threads 4-48 on {sweep['system'].iloc[0]}: " + "; ".join(parts) if parts else "-"
    )
    claim = "More threads is not always faster (the best thread count is below the most)"
    source = f"{_seed()} section 4.2.2, Table XII (Caffe, Torch, Theano; no TensorFlow sweep)"
    mine = _ours_cpu(ours, MNIST)
    mine = mine[mine["throughput"].gt(0) & (mine["batch_size"] == default_batch(published))]
    out, verdicts = [], []
    for (cpus, batch), group in mine.groupby(["cpus", "batch_size"], sort=False):
        if group["threads"].nunique() < 2:
            continue
        most = group[group["threads"] == group["threads"].max()].iloc[0]
        fewer = group[group["threads"] < most["threads"]]
        other = fewer.loc[fewer["throughput"].idxmax()]
        faster = most["throughput"] > other["throughput"]
        same_base = most["workload"] == other["workload"]
        if faster and same_base and math.isfinite(float(most["ratio_low"])):
            faster = most["ratio_low"] > other["ratio_high"]  # overlapping: not faster
        verdicts.append(not faster)
        out.append(
            f"{cpus} cpus, batch {batch}: {most['threads']} threads "
            f"{most['throughput']:.1f} images/s{_interval(most) if same_base else ''} vs "
            f"{other['threads']} threads {other['throughput']:.1f} images/s"
            f"{_interval(other) if same_base else ''} ({most['machine']})"
        )
    if not verdicts:
        why = f"{MNIST} did not run with two thread counts on the same cores"
        return Claim(claim, CANNOT, theirs, why, source, why=why)
    verdict = HOLDS if all(verdicts) else DOES_NOT_HOLD
    ours_text = "TensorFlow's thread pools: " + "; ".join(out)
    return Claim(claim, verdict, theirs, ours_text, source)


#: The tables that set TensorFlow on a GPU against the same server's CPU (section 4.1.1).
GPU_TABLES = ("Table VI(a)", "Table VI(b)", "Table VII(a)", "Table VII(b)")


def gpu_speedups(published: pd.DataFrame) -> pd.DataFrame:
    """Every GPU-over-CPU speed-up Tables VI and VII give for TensorFlow: in each table
    (:data:`GPU_TABLES`), a GPU training time (``gpus=1``) beside the CPU time of the same
    workload at the same settings (batch size, iterations, epochs; ``blas`` and ``gpus``
    aside), the CPU's seconds over the GPU's.

    Returns:
        columns table, workload, gpu_system, cpu_system, gpu_seconds, cpu_seconds (s) and
        speedup (x), one row per pair, in the order of :data:`GPU_TABLES`.
    """
    rows = _rows(published, framework="tensorflow")
    rows = rows[rows["metric"] == "training_seconds"]
    columns = ["table", "workload", "gpu_system", "cpu_system", "gpu_seconds", "cpu_seconds"]
    out = []
    for table in GPU_TABLES:
        here = rows[rows["source"].str.contains(table, regex=False)]
        key = [
            (w, tuple(sorted((k, v) for k, v in p.items() if k not in ("gpus", "blas"))))
            for w, p in zip(here["workload"], here["parsed"], strict=True)
        ]
        here = here.assign(key=key, gpus=here["parsed"].map(lambda p: p.get("gpus")))
        for _, g in here[here["gpus"] == "1"].iterrows():
            cpu = here[(here["gpus"] == "0") & (here["key"] == g["key"])]
            if len(cpu):
                c = cpu.iloc[0]
                out.append((table, g["workload"], g["system"], c["system"], g["value"], c["value"]))
    table = pd.DataFrame(out, columns=columns)
    return table.assign(speedup=table["cpu_seconds"] / table["gpu_seconds"])


def smallest_gpu_speedup(published: pd.DataFrame) -> pd.Series:
    """The smallest of :func:`gpu_speedups`: the least "many times faster" the study reports
    for TensorFlow (x4.46 in the file as written: Table VII(a), Server-2's Tesla M60 over its
    24 cores on MNIST), the threshold :func:`gpu_claim` judges ours against.

    Raises:
        ValueError: the file has no pair of a GPU and a CPU time in Tables VI and VII.
    """
    pairs = gpu_speedups(published)
    if pairs.empty:
        raise ValueError("no TensorFlow GPU and CPU times of Tables VI and VII in Wu et al.'s")
    return pairs.loc[pairs["speedup"].idxmin()]


def _study_batch(published: pd.DataFrame, workload: str) -> int | None:
    """The batch size of the study's GPU-vs-CPU runs of ``workload`` (Tables VI and VII)."""
    rows = _rows(published, framework="tensorflow")
    rows = rows[(rows["workload"] == workload) & (rows["metric"] == "training_seconds")]
    rows = rows[rows["source"].str.contains(r"Table VII?\(", regex=True)]
    batches = [p.get("batch_size") for p in rows["parsed"] if p.get("batch_size")]
    return int(batches[0]) if batches else None


def gpu_claim(
    published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame, workload: str
) -> Claim:
    """Claim 4 (Tables VI and VII): a GPU trains ``workload`` many times faster than the CPU,
    "many" being at least the smallest speed-up the study reports for TensorFlow
    (:func:`smallest_gpu_speedup`, read from the file). Ours: where a GPU target ran
    ``workload``, its images/s over our fastest CPU target's at the same batch size (the
    workload at the study's batch where several ran), paired within the rounds
    (:func:`embryo_bench.reporting.claims.gpu.speedups`); holds where the interval lies
    above the threshold, does not hold where below
    (:func:`~embryo_bench.reporting.claims.gpu.speedup_claim`); "cannot be checked here"
    without a GPU run (why "no GPU" where no GPU target ran at all), with too few rounds, or
    with an interval that covers it.

    Args:
        published: ``load_numbers("wu")``; ours: ``OURS_COLUMNS`` rows; runs:
            ``study/runs.csv`` rows (images_per_s, repeat = the round).

    Raises:
        ValueError: as :func:`smallest_gpu_speedup`, or a target with two runs of a workload
            in one round.
    """
    pairs = gpu_speedups(published)
    least = smallest_gpu_speedup(published)
    threshold = float(least["speedup"])
    parts = [
        f"{r['gpu_system']} {_fmt(r['gpu_seconds'])} s vs {r['cpu_system']} "
        f"{_fmt(r['cpu_seconds'])} s (x{r['speedup']:.1f})"
        for _, r in pairs[pairs["workload"] == workload].iterrows()
    ]
    parts.append(
        f"the study's smallest TensorFlow speed-up: x{threshold:.2f} ({least['gpu_system']} "
        f"over {least['cpu_system']}, {least['workload']}, {least['table']})"
    )
    theirs = "; ".join(parts)
    claim = (
        f"A GPU trains {workload} many times faster than the CPU (at least x{threshold:.2f}, "
        "the study's smallest)"
    )
    source = f"{_seed()} section 4.1.1, Tables VI and VII"
    found, why = speedups(ours, runs, workload)
    if not found:
        return Claim(claim, CANNOT, theirs, "no GPU run of ours beside a CPU run", source, why)
    batch = _study_batch(published, workload)
    at_batch = [s for s in found if batch is not None and int(s.gpu["batch_size"]) == batch]
    return speedup_claim((at_batch or found)[0], threshold, claim, theirs, source)


def blas_claim(published: pd.DataFrame) -> Claim:
    """Claim 5 (Tables X and XI, section 4.2.1): TensorFlow with Eigen trains several times
    faster than TensorFlow built with MKL. Never checkable here: every target runs the one
    TensorFlow build of the environment or image."""
    rows = _rows(published, framework="tensorflow", batch_size="50", gpus="0")
    rows = rows[(rows["workload"] == MNIST) & (rows["metric"] == "training_seconds")]
    parts = []
    for system, group in rows.groupby("system", sort=False):
        blas = {p.get("blas"): v for p, v in zip(group["parsed"], group["value"], strict=True)}
        if "eigen" in blas and "mkl" in blas:
            parts.append(
                f"{system}: Eigen {_fmt(blas['eigen'])} s, MKL {_fmt(blas['mkl'])} s "
                f"(x{blas['mkl'] / blas['eigen']:.2f})"
            )
    return Claim(
        "TensorFlow with Eigen trains faster than with MKL",
        CANNOT,
        "; ".join(parts) or "-",
        "every target runs the same TensorFlow build",
        f"{_seed()} section 4.2.1, Tables X and XI",
        why="one TensorFlow build here; the study compiled TensorFlow 1.x with Eigen and with MKL",
    )


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """Every claim of the module docstring, in its order.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of ``"wu"``.
        ours: one row per workload and target of this configuration's finished runs
            (``embryo_bench.reporting.study.OURS_COLUMNS``); may be empty.
        runs: one row per run (``study/runs.csv``), for the batch sizes' paired ratios.

    Returns:
        Six claims: batch time, batch accuracy, threads, GPU on tf-mnist-deep and on
        tf-cifar10, BLAS.

    Raises:
        ValueError: ``published`` lacks Table XV's rows of tf-mnist-deep, Table VI(a)'s CPU
            time or a GPU and CPU time of Tables VI and VII; or a target has two runs of a
            workload in one round.
    """
    return [
        batch_time_claim(published, ours, runs),
        batch_accuracy_claim(published, ours),
        threads_claim(published, ours),
        gpu_claim(published, ours, runs, MNIST),
        gpu_claim(published, ours, runs, CIFAR10),
        blas_claim(published),
    ]
