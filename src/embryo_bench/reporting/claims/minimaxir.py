"""minimaxir's headline claims (shared/seeds/002, issue 34 item 3), checked on our runs.

Four claims of his two 2017 posts, each with his side read from ``published`` (the rows of
``published/minimaxir.csv``, which his logs give) and ours from the runs of this configuration:

- :data:`MLP_FEWER_CPUS` (July post): for the MNIST MLP, fewer vCPUs cost less. Checked
  across our priced CPU targets (cost of an epoch = median epoch seconds x hourly_usd).
- :data:`MLP_CPU_CHEAPER` (November post): the MNIST MLP is cheapest on CPUs, not on a GPU.
- :data:`CNN_K80` (November post): the MNIST CNN is fastest and cheapest on a GPU (his
  K80 base was the best configuration).
- :data:`BILSTM_GPU_SLOWER` (July post): the bidirectional LSTM trains slower on a GPU than
  on any CPU configuration (about 2x; TensorFlow 1.2's LSTM, before CuDNNLSTM).

The last three need a GPU run of ours beside CPU runs: without one they are returned as
"cannot be checked here (no GPU)", with his numbers still given.
"""

from __future__ import annotations

import math

import pandas as pd

from ...published.minimaxir_logs import BASES, JULY, NOVEMBER, SEED, SYSTEMS
from .common import CANNOT, DOES_NOT_HOLD, HOLDS, Claim

MLP_FEWER_CPUS = "for the MNIST MLP, fewer vCPUs cost less"
MLP_CPU_CHEAPER = "the MNIST MLP is cheapest on CPUs"
CNN_K80 = "the MNIST CNN is fastest and cheapest on a GPU (his K80 base)"
BILSTM_GPU_SLOWER = "the bidirectional LSTM trains slower on a GPU than on any CPU (~2x)"

NO_GPU = "no GPU"


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
    usable = mine[pd.to_numeric(mine[column], errors="coerce").notna()]
    return usable[usable["gpus"] == 0], usable[usable["gpus"] > 0]


def mlp_cpu_cheaper(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """His November systems' MLP cost relative to the K80; ours: holds when our cheapest
    priced CPU target's epoch costs less than our cheapest priced GPU target's."""
    his = _used(published, "mnist-mlp", "relative_cost", NOVEMBER)
    theirs = f"training cost / {BASES[NOVEMBER]}'s: {_his(his)}"
    source = f"{SEED}, 2017-11 post, Benchmark Results (MLP): CPUs are more cost effective"
    cpus, gpus = _gpu_split(_ours(ours, "mnist-mlp"), "epoch_usd")
    if gpus.empty:
        return Claim(
            MLP_CPU_CHEAPER,
            CANNOT,
            theirs,
            "USD per epoch: " + _list(cpus, "epoch_usd", "{:.3g}"),
            source,
            NO_GPU,
        )
    if cpus.empty:
        return Claim(MLP_CPU_CHEAPER, CANNOT, theirs, "", source, "no priced CPU target ran")
    holds = cpus["epoch_usd"].min() < gpus["epoch_usd"].min()
    text = "USD per epoch: " + _list(pd.concat([cpus, gpus]), "epoch_usd", "{:.3g}")
    return Claim(MLP_CPU_CHEAPER, HOLDS if holds else DOES_NOT_HOLD, theirs, text, source)


def cnn_gpu(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """His November MNIST CNN time and cost relative to the K80; ours: holds when a GPU
    target is both the fastest and the cheapest (per epoch) of our priced targets."""
    time = _used(published, "mnist-cnn", "relative_time", NOVEMBER)
    cost = _used(published, "mnist-cnn", "relative_cost", NOVEMBER)
    theirs = f"time / {BASES[NOVEMBER]}'s: {_his(time)}; cost: {_his(cost)}"
    source = f"{SEED}, 2017-11 post, Benchmark Results (MNIST CNN): the base configuration is best"
    mine = _ours(ours, "mnist-cnn")
    cpus, gpus = _gpu_split(mine, "epoch_usd")
    if gpus.empty:
        return Claim(
            CNN_K80,
            CANNOT,
            theirs,
            "s per epoch: " + _list(cpus, "epoch_seconds", "{:.3g}"),
            source,
            NO_GPU,
        )
    if cpus.empty:
        return Claim(CNN_K80, CANNOT, theirs, "", source, "no priced CPU target ran")
    both = pd.concat([cpus, gpus])
    fastest = both.loc[pd.to_numeric(both["epoch_seconds"]).idxmin()]
    cheapest = both.loc[both["epoch_usd"].idxmin()]
    holds = fastest["gpus"] > 0 and cheapest["gpus"] > 0
    text = (
        f"s per epoch: {_list(both, 'epoch_seconds', '{:.3g}')}; "
        f"USD per epoch: {_list(both, 'epoch_usd', '{:.3g}')}"
    )
    return Claim(CNN_K80, HOLDS if holds else DOES_NOT_HOLD, theirs, text, source)


def bilstm_gpu_slower(published: pd.DataFrame, ours: pd.DataFrame) -> Claim:
    """His July bidirectional LSTM: every CPU system's time relative to the K80 (and the
    November post's, with CuDNNLSTM on the GPU); ours: holds when our fastest GPU target's
    epoch is slower than our slowest CPU target's."""
    july = _used(published, "imdb-bilstm", "relative_time", JULY).drop(BASES[JULY], errors="ignore")
    nov = _used(published, "imdb-bilstm", "relative_time", NOVEMBER)
    theirs = (
        f"CPU time / {BASES[JULY]}'s: {_his(july)} (the GPU {1 / july.max():.1f}-"
        f"{1 / july.min():.1f}x slower); with CuDNNLSTM, / {BASES[NOVEMBER]}'s: {_his(nov)}"
    )
    source = f"{SEED}, 2017-07 post, Results (bidirectional LSTM): twice as slow as any CPU"
    cpus, gpus = _gpu_split(_ours(ours, "imdb-bilstm"), "epoch_seconds")
    if gpus.empty:
        text = "s per epoch: " + _list(cpus, "epoch_seconds", "{:.3g}")
        return Claim(BILSTM_GPU_SLOWER, CANNOT, theirs, text, source, NO_GPU)
    if cpus.empty:
        return Claim(BILSTM_GPU_SLOWER, CANNOT, theirs, "", source, "no CPU target ran")
    gpu = pd.to_numeric(gpus["epoch_seconds"]).min()
    cpu = pd.to_numeric(cpus["epoch_seconds"]).max()
    both = pd.concat([cpus, gpus])
    text = (
        f"s per epoch: {_list(both, 'epoch_seconds', '{:.3g}')}; GPU / slowest CPU {gpu / cpu:.2f}x"
    )
    verdict = HOLDS if gpu > cpu and math.isfinite(gpu / cpu) else DOES_NOT_HOLD
    return Claim(BILSTM_GPU_SLOWER, verdict, theirs, text, source)


def claims(published: pd.DataFrame, ours: pd.DataFrame, runs: pd.DataFrame) -> list[Claim]:
    """minimaxir's four headline claims (see the module docstring) on our runs.

    Args:
        published: :func:`embryo_bench.published.studies.load_numbers` of "minimaxir".
        ours: one row per (workload, target) of our finished runs, the columns of
            ``embryo_bench.reporting.study.OURS_COLUMNS`` (``catalog``, ``target``, ``cpus``,
            ``gpus``, ``epoch_seconds`` in s, ``hourly_usd`` in USD/h, NaN unpriced, are read).
        runs: one row per run (``study/runs.csv``); not read: his claims compare targets
            within a workload, which ``ours`` holds with its intervals.

    Returns:
        The four :class:`Claim` in the order above; a claim our runs cannot test is returned
        with verdict "cannot be checked here" and why ("no GPU"), never left out.
    """
    return [
        mlp_fewer_cpus(published, ours),
        mlp_cpu_cheaper(published, ours),
        cnn_gpu(published, ours),
        bilstm_gpu_slower(published, ours),
    ]
