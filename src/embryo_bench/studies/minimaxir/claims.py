"""minimaxir's headline claims (Woolf 2017, study 002), checked on our runs.

Four claims of his two 2017 posts, each with his side read from ``published`` (the rows of
its folder's ``numbers.csv``, which his logs give) and ours from the runs of this configuration:

- :data:`MLP_FEWER_CPUS` (July post): for the MNIST MLP, fewer vCPUs cost less. Checked
  across our priced CPU targets (cost of an epoch = median epoch seconds x hourly_usd).
- :data:`MLP_CPU_CHEAPER` (November post): the MNIST MLP is cheapest on CPUs, not on a GPU.
- :data:`CNN_K80` (November post): the MNIST CNN is fastest and cheapest on a GPU (his
  K80 base was the best configuration).
- :data:`BILSTM_GPU_SLOWER` (July post): the bidirectional LSTM trains slower on a GPU than
  on any CPU configuration (about 2x; TensorFlow 1.2's LSTM, before CuDNNLSTM).

The last three need a GPU run of ours beside CPU runs: without one they are returned as
"cannot be checked here (no GPU)", with his numbers still given. With one, the GPU and CPU
targets' speeds (and, by their prices, costs) are compared paired within the rounds, and a
verdict needs the interval of at least three rounds
(:func:`~embryo_bench.reporting.claims.common.judge_at_least`).
"""

from __future__ import annotations

import pandas as pd

from ...reporting.claims.common import (
    CANNOT,
    DOES_NOT_HOLD,
    HOLDS,
    MEDIANS,
    Claim,
    TargetRatio,
    judge_at_least,
    target_ratio,
)
from ...reporting.claims.gpu import no_gpu_why
from .logs import BASES, JULY, NOVEMBER, SEED, SYSTEMS

MLP_FEWER_CPUS = "for the MNIST MLP, fewer vCPUs cost less"
MLP_CPU_CHEAPER = "the MNIST MLP is cheapest on CPUs"
CNN_K80 = "the MNIST CNN is fastest and cheapest on a GPU (his K80 base)"
BILSTM_GPU_SLOWER = "the bidirectional LSTM trains slower on a GPU than on any CPU (~2x)"


def _used(published: pd.DataFrame, workload: str, metric: str, post: str) -> pd.Series:
    """His used numbers of one metric for a workload, by system, for one post's systems."""
    rows = published[
        (published["workload"] == workload) & (published["metric"] == metric) & published["used"]
    ]
    rows = rows[rows["system"].map(lambda s: SYSTEMS.get(s, ("",))[0] == post)]
    return rows.set_index("system")["value"]


def _his(values: pd.Series, fmt: str = "{:.2f}x") -> str:
    return ", ".join(f"{s} {fmt.format(v)}" for s, v in values.sort_values().items())


def _ours(ours: pd.DataFrame, catalog: str) -> pd.DataFrame:
    """Our runs of a catalog workload, with the cost of an epoch (USD; NaN unpriced)."""
    mine = ours[ours["catalog"] == catalog].copy()
    price = pd.to_numeric(mine["hourly_usd"], errors="coerce")
    mine["epoch_usd"] = pd.to_numeric(mine["epoch_seconds"], errors="coerce") * price / 3600
    mine["gpus"] = pd.to_numeric(mine["gpus"], errors="coerce").fillna(0)
    return mine


def _list(mine: pd.DataFrame, column: str, fmt: str) -> str:
    return ", ".join(
        f"{r.target} ({int(r.cpus)} cpu{'' if int(r.cpus) == 1 else 's'}"
        f"{f', {int(r.gpus)} GPU' if r.gpus else ''}) {fmt.format(getattr(r, column))}"
        for r in mine.sort_values(column).itertuples()
    )


def mlp_fewer_cpus(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """His July CPU systems' MLP cost relative to his K80, against our priced CPU targets'
    cost of an MLP epoch: holds when our cost rises with every step up in cores."""
    his = _used(published, "mnist-mlp", "relative_cost", JULY).drop(BASES[JULY], errors="ignore")
    theirs = f"training cost / {BASES[JULY]}'s: {_his(his)}; cheapest: {his.idxmin()}"
    source = f"{SEED}, 2017-07 post, Results (MLP): lower CPU counts are more cost-effective"
    mine = _ours(ours, "mnist-mlp")
    if mine.empty:
        return Claim(MLP_FEWER_CPUS, CANNOT, theirs, "", source, "mnist-mlp did not run")
    priced = mine[(mine["gpus"] == 0) & mine["epoch_usd"].notna()]
    by_cores = priced.groupby(priced["cpus"].astype(int))["epoch_usd"].min().sort_index()
    if len(by_cores) < 2:
        return Claim(
            MLP_FEWER_CPUS,
            CANNOT,
            theirs,
            f"{len(priced)} priced CPU target(s)",
            source,
            "fewer than two priced CPU targets with different core counts ran mnist-mlp",
        )
    holds = bool((by_cores.diff().dropna() > 0).all())
    text = "USD per epoch: " + _list(priced, "epoch_usd", "{:.3g}")
    return Claim(MLP_FEWER_CPUS, HOLDS if holds else DOES_NOT_HOLD, theirs, text, source)


def _gpu_split(mine: pd.DataFrame, column: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``mine``'s CPU rows and GPU rows with a positive ``column`` and seconds per epoch."""
    seconds = pd.to_numeric(mine["epoch_seconds"], errors="coerce")
    usable = mine[pd.to_numeric(mine[column], errors="coerce").gt(0) & seconds.gt(0)]
    return usable[usable["gpus"] == 0], usable[usable["gpus"] > 0]


def _no_gpu(ours: pd.DataFrame, mine: pd.DataFrame, catalog: str, priced: bool) -> str:
    """Why a GPU claim on ``catalog`` has no GPU to judge: "no GPU" (none of ours ran), "no
    GPU target ran <catalog>", or, for a claim on cost, "no priced GPU target ran <catalog>
    (hourly_usd)"."""
    if not (mine["gpus"] > 0).any():
        return no_gpu_why(ours, catalog)
    return f"no priced GPU target ran {catalog} (hourly_usd)" if priced else ""


def _speed(runs: pd.DataFrame, a: pd.Series, b: pd.Series) -> TargetRatio:
    """``a``'s images/s over ``b``'s (rows of :func:`_ours` of one workload): paired within the
    rounds where both ran (:func:`~embryo_bench.reporting.claims.common.target_ratio`), else
    unpaired, else the medians' ratio (from their seconds per epoch)."""
    medians = (1 / float(a["epoch_seconds"]), 1 / float(b["epoch_seconds"]))
    ratio = medians[0] / medians[1]
    if a["workload"] != b["workload"]:  # two config workloads share no round
        return TargetRatio(ratio, ratio, ratio, 0, MEDIANS)
    found = target_ratio(runs, a["workload"], a["target"], b["target"], "images_per_s", medians)
    return found or TargetRatio(ratio, ratio, ratio, 0, MEDIANS)


def _cost(runs: pd.DataFrame, a: pd.Series, b: pd.Series) -> TargetRatio:
    """``a``'s cost of an epoch over ``b``'s: their prices' ratio over their speeds' ratio
    (:func:`_speed`), with its interval."""
    return _speed(runs, a, b).inverse().times(float(a["hourly_usd"]) / float(b["hourly_usd"]))


def mlp_cpu_cheaper(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """His November systems' MLP cost relative to the K80; ours: the cheapest priced GPU
    target's cost of an epoch over the cheapest priced CPU target's (prices x the paired
    speed ratio, :func:`_cost`): holds where its interval lies above 1, does not hold where
    below (:func:`~embryo_bench.reporting.claims.common.judge_at_least`); cannot be checked
    without a priced GPU and CPU target, with too few rounds, or an interval covering 1."""
    his = _used(published, "mnist-mlp", "relative_cost", NOVEMBER)
    theirs = f"training cost / {BASES[NOVEMBER]}'s: {_his(his)}"
    source = f"{SEED}, 2017-11 post, Benchmark Results (MLP): CPUs are more cost effective"
    mine = _ours(ours, "mnist-mlp")
    cpus, gpus = _gpu_split(mine, "epoch_usd")
    if gpus.empty:
        why = _no_gpu(ours, mine, "mnist-mlp", priced=True)
        text = "USD per epoch: " + _list(cpus, "epoch_usd", "{:.3g}")
        return Claim(MLP_CPU_CHEAPER, CANNOT, theirs, text, source, why)
    if cpus.empty:
        return Claim(MLP_CPU_CHEAPER, CANNOT, theirs, "", source, "no priced CPU target ran")
    g = gpus.loc[gpus["epoch_usd"].idxmin()]
    c = cpus.loc[cpus["epoch_usd"].idxmin()]
    cost = _cost(runs, g, c)
    verdict, why = judge_at_least(cost, 1.0)
    text = (
        "USD per epoch: "
        + _list(pd.concat([cpus, gpus]), "epoch_usd", "{:.3g}")
        + f"; {g['target']}'s cost over {c['target']}'s {cost.text}"
    )
    return Claim(MLP_CPU_CHEAPER, verdict, theirs, text, source, why)


def cnn_gpu(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """His November MNIST CNN time and cost relative to the K80; ours, on our priced targets:
    the fastest GPU target's images/s over the fastest CPU target's above 1, and the cheapest
    CPU target's cost of an epoch over the cheapest GPU target's above 1 (:func:`_speed`,
    :func:`_cost`, each judged by
    :func:`~embryo_bench.reporting.claims.common.judge_at_least`): holds where both hold,
    does not hold where either does not; cannot be checked otherwise (the first why)."""
    time = _used(published, "mnist-cnn", "relative_time", NOVEMBER)
    cost = _used(published, "mnist-cnn", "relative_cost", NOVEMBER)
    theirs = f"time / {BASES[NOVEMBER]}'s: {_his(time)}; cost: {_his(cost)}"
    source = f"{SEED}, 2017-11 post, Benchmark Results (MNIST CNN): the base configuration is best"
    mine = _ours(ours, "mnist-cnn")
    cpus, gpus = _gpu_split(mine, "epoch_usd")
    if gpus.empty:
        text = "s per epoch: " + _list(cpus, "epoch_seconds", "{:.3g}")
        why = _no_gpu(ours, mine, "mnist-cnn", priced=True)
        return Claim(CNN_K80, CANNOT, theirs, text, source, why)
    if cpus.empty:
        return Claim(CNN_K80, CANNOT, theirs, "", source, "no priced CPU target ran")
    seconds = {k: pd.to_numeric(v["epoch_seconds"]) for k, v in (("c", cpus), ("g", gpus))}
    fast_g, fast_c = gpus.loc[seconds["g"].idxmin()], cpus.loc[seconds["c"].idxmin()]
    cheap_g = gpus.loc[gpus["epoch_usd"].idxmin()]
    cheap_c = cpus.loc[cpus["epoch_usd"].idxmin()]
    speed = _speed(runs, fast_g, fast_c)
    cheaper = _cost(runs, cheap_c, cheap_g)
    both = pd.concat([cpus, gpus])
    text = (
        f"s per epoch: {_list(both, 'epoch_seconds', '{:.3g}')}; "
        f"USD per epoch: {_list(both, 'epoch_usd', '{:.3g}')}; "
        f"{fast_g['target']}'s speed over {fast_c['target']}'s {speed.text}; "
        f"{cheap_c['target']}'s cost over {cheap_g['target']}'s {cheaper.text}"
    )
    verdicts = [judge_at_least(speed, 1.0), judge_at_least(cheaper, 1.0)]
    if any(v == DOES_NOT_HOLD for v, _ in verdicts):
        return Claim(CNN_K80, DOES_NOT_HOLD, theirs, text, source)
    if all(v == HOLDS for v, _ in verdicts):
        return Claim(CNN_K80, HOLDS, theirs, text, source)
    why = next(w for v, w in verdicts if v == CANNOT)
    return Claim(CNN_K80, CANNOT, theirs, text, source, why)


def bilstm_gpu_slower(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> Claim:
    """His July bidirectional LSTM: every CPU system's time relative to the K80 (and the
    November post's, with CuDNNLSTM on the GPU); ours: our fastest GPU target's seconds per
    epoch over our slowest CPU target's (the inverse of their speeds' ratio, :func:`_speed`):
    holds where its interval lies above 1, does not hold where below
    (:func:`~embryo_bench.reporting.claims.common.judge_at_least`)."""
    july = _used(published, "imdb-bilstm", "relative_time", JULY).drop(BASES[JULY], errors="ignore")
    nov = _used(published, "imdb-bilstm", "relative_time", NOVEMBER)
    theirs = (
        f"CPU time / {BASES[JULY]}'s: {_his(july)} (the GPU {1 / july.max():.1f}-"
        f"{1 / july.min():.1f}x slower); with CuDNNLSTM, / {BASES[NOVEMBER]}'s: {_his(nov)}"
    )
    source = f"{SEED}, 2017-07 post, Results (bidirectional LSTM): twice as slow as any CPU"
    mine = _ours(ours, "imdb-bilstm")
    cpus, gpus = _gpu_split(mine, "epoch_seconds")
    if gpus.empty:
        text = "s per epoch: " + _list(cpus, "epoch_seconds", "{:.3g}")
        why = _no_gpu(ours, mine, "imdb-bilstm", priced=False)
        return Claim(BILSTM_GPU_SLOWER, CANNOT, theirs, text, source, why)
    if cpus.empty:
        return Claim(BILSTM_GPU_SLOWER, CANNOT, theirs, "", source, "no CPU target ran")
    g = gpus.loc[pd.to_numeric(gpus["epoch_seconds"]).idxmin()]
    c = cpus.loc[pd.to_numeric(cpus["epoch_seconds"]).idxmax()]
    slower = _speed(runs, g, c).inverse()
    both = pd.concat([cpus, gpus])
    text = (
        f"s per epoch: {_list(both, 'epoch_seconds', '{:.3g}')}; "
        f"{g['target']}'s time over the slowest CPU's ({c['target']}) {slower.text}"
    )
    verdict, why = judge_at_least(slower, 1.0)
    return Claim(BILSTM_GPU_SLOWER, verdict, theirs, text, source, why)


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """minimaxir's four headline claims (see the module docstring) on our runs.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of "minimaxir".
        ours: one row per (workload, target) of our finished runs, the columns of
            ``embryo_bench.reporting.study.OURS_COLUMNS`` (``catalog``, ``target``, ``cpus``,
            ``gpus``, ``epoch_seconds`` in s, ``hourly_usd`` in USD/h, NaN unpriced, are read).
        runs: one row per run (``study/runs.csv``: workload, target, repeat, merged,
            images_per_s): the GPU claims' ratios, paired within the rounds.

    Returns:
        The four :class:`Claim` in the order above; a claim our runs cannot test is returned
        with verdict "cannot be checked here" and why ("no GPU"), never left out.

    Raises:
        ValueError: a target with two runs of a workload in one round.
    """
    return [
        mlp_fewer_cpus(published, ours),
        mlp_cpu_cheaper(published, ours, runs),
        cnn_gpu(published, ours, runs),
        bilstm_gpu_slower(published, ours, runs),
    ]
