"""Training time and cost relative to the base target, with intervals: each target's time as
compare's ratio of the speeds 1 / training time (paired within the rounds, unpaired for runs
made elsewhere), and the cost that ratio times the two hourly prices, as minimaxir's time and
cost charts put it (the cost table, the workload view)."""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from .compare import CONFIDENCE, compare, compare_unpaired, pairings, simultaneous_confidence


def time_ratios(
    runs: pd.DataFrame,
    base: str,
    min_difference: float,
    elsewhere: Collection[str] = (),
    confidence: float = CONFIDENCE,
) -> pd.DataFrame:
    """Per target of ``runs`` (one workload's main runs) other than ``base``: its training
    time relative to the base's, from the ratios of the speed 1 / training time (paired
    within the rounds by :func:`compare`, unpaired by :func:`compare_unpaired` for runs made
    elsewhere or targets sharing no round with the base), as minimaxir's time and cost charts
    put it, with the interval.

    Args:
        runs: one row per run: target, repeat (the round), training_s (s).
        base: the target every ratio is to.
        min_difference: ``compare.min_difference`` (:func:`verdict`).
        elsewhere: targets whose runs were made elsewhere (always unpaired).
        confidence: the intervals' level (:func:`embryo_bench.reporting.compare.
            simultaneous_confidence` for a table's rows).

    Returns:
        target, pairing ("paired" | "unpaired"), pairs (pairs; unpaired: the target's runs),
        time_relative (below 1: less time than the base), time_low, time_high (its
        ``confidence`` interval) and verdict (of the speed: "faster" is less time).

    Raises:
        ValueError: as :func:`compare` (a target with two runs in one round).
    """
    runs = runs.assign(
        round=runs["repeat"].astype(int), speed=1.0 / pd.to_numeric(runs["training_s"])
    )
    pairing = pairings(runs, base, elsewhere)
    kind = runs["target"].map(pairing)
    rows = []
    for how, table in (
        (
            "paired",
            compare(runs[kind != "unpaired"], base, min_difference, "speed", confidence=confidence),
        ),
        (
            "unpaired",
            compare_unpaired(
                runs[kind != "paired"], base, min_difference, "speed", confidence=confidence
            ),
        ),
    ):
        for _, t in table.iterrows():
            rows.append(
                {
                    "target": t["target"],
                    "pairing": how,
                    "pairs": int(t["pairs"] if how == "paired" else t["runs"]),
                    # time = 1 / speed: the interval's ends swap
                    "time_relative": 1.0 / t["ratio"],
                    "time_low": 1.0 / t["ratio_high"],
                    "time_high": 1.0 / t["ratio_low"],
                    "verdict": t["verdict"],
                }
            )
    columns = ["target", "pairing", "pairs", "time_relative", "time_low", "time_high", "verdict"]
    return pd.DataFrame(rows, columns=columns)


#: The cost table's columns (:func:`cost_intervals`), in order.
COST_COLUMNS = [
    "target", "time_relative", "time_low", "time_high", "cost_relative", "cost_low",
    "cost_high", "pairing", "pairs", "verdict", "training_s_median", "cost_usd_median",
    "hourly_usd", "price_source", "confidence",
]  # fmt: skip


def cost_intervals(
    norm: pd.DataFrame,
    runs: pd.DataFrame,
    base: str,
    min_difference: float,
    elsewhere: set[str] | frozenset[str] = frozenset(),
) -> pd.DataFrame:
    """:func:`embryo_bench.reporting.summary.normalised_cost` with the rounds' intervals:
    each priced target's training time relative to the base as compare's ratio of 1 /
    training time, paired within the rounds (:func:`time_ratios`), its interval (at
    :func:`embryo_bench.reporting.compare.simultaneous_confidence` over the priced targets
    other than the base, so that the table's verdicts hold together at 95 %: the column
    confidence), and the cost the same ratio times the two hourly prices (a price is a
    constant: the cost's interval is the time's, scaled); the base at 1. A target with one
    round keeps the ratio without an interval (NaN ends, as compare gives them).

    Args:
        norm: :func:`embryo_bench.reporting.summary.normalised_cost` (its medians).
        runs: :func:`embryo_bench.reporting.summary.run_table` rows of the main targets (no
            sweep points): target, repeat, training_s (s).
        base: ``cost.base_target``.
        min_difference, elsewhere: as :func:`embryo_bench.reporting.compare.comparison_table`.

    Returns:
        :data:`COST_COLUMNS`, the rows of ``norm`` in its order.

    Raises:
        ValueError: a target with two runs in one round.
    """
    priced = runs[runs["target"].isin(set(norm["target"]))]
    level = simultaneous_confidence(priced.loc[priced["target"] != base, "target"].nunique())
    ratios = time_ratios(priced, base, min_difference, elsewhere, level).set_index("target")
    hourly = dict(zip(norm["target"], norm["hourly_usd"], strict=True))
    rows = []
    for _, r in norm.iterrows():
        row = r.to_dict()
        if r["target"] == base:
            row.update(time_relative=1.0, time_low=1.0, time_high=1.0, pairing="base",
                       pairs=int((priced["target"] == base).sum()), verdict="base")  # fmt: skip
        elif r["target"] in ratios.index:
            row.update(ratios.loc[r["target"]].to_dict())
        else:
            row.update(time_low=np.nan, time_high=np.nan, pairing="", pairs=0,
                       verdict="no run of the base to compare with")  # fmt: skip
        price = float(hourly[r["target"]]) / float(hourly[base])
        for end in ("relative", "low", "high"):
            row[f"cost_{end}"] = row[f"time_{end}"] * price
        row["confidence"] = level
        rows.append(row)
    return pd.DataFrame(rows, columns=COST_COLUMNS)
