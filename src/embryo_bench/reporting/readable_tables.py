"""The Markdown a person reads: few columns, the CSVs keep everything. Numbers as text
(:func:`number_text`, every table of the package), a comparison's ratio, interval and verdict
in words, and the notes said once instead of on every row (:func:`interval_note`,
:func:`comparison_note`); the readable forms of the per-run, per-target and comparison tables
(:func:`readable_runs`, :func:`readable_summary`, :func:`readable_comparison`) of
:mod:`embryo_bench.reporting.summary` and :mod:`embryo_bench.reporting.compare`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .compare import CONFIDENCE, MEASURES, MIN_PAIRS, family_note, level_text
from .runs import as_number
from .stability import FLAGS


def number_text(value, fmt: str = ".4g") -> str:
    """A number (any type :func:`embryo_bench.reporting.runs.as_number` reads) as text in ``fmt``;
    "" for missing, NaN or "not measured". Every table of the package writes its numbers with it."""
    v = as_number(value)
    return "" if v is None else format(v, fmt)


def usd_text(value) -> str:
    """A price or cost (USD, USD/h) as people read it: three significant digits, never an
    exponent ("0.0000843", "0.095", "1.25"); "" for missing or NaN."""
    v = as_number(value)
    if v is None:
        return ""
    return np.format_float_positional(v, precision=3, unique=False, fractional=False, trim="-")


#: A ratio over fewer pairs than this (one or two rounds) is shown alone, without an interval
#: or a verdict: no 95 % interval comes from one or two pairs. The figure and the tables say
#: so once (:func:`comparison_note`) instead of on every row.
INTERVAL_MIN_PAIRS = MIN_PAIRS


def is_unpaired(row) -> bool:
    """Whether a :func:`embryo_bench.reporting.compare.comparison_table` row was compared
    without pairs (its ``pairing`` column, where the table has one, says "unpaired")."""
    return row.get("pairing") == "unpaired"


def pair_count(row, measure: str) -> int:
    """How many pairs a comparison row's ``measure`` rests on: ``<measure>_pairs`` (rounds
    with both runs); for an unpaired row (:func:`is_unpaired`), or where that is missing, the
    row's ``<measure>_runs`` (its runs with a value) or ``rounds`` (its runs); 0 when none
    is a number."""
    keys = (f"{measure}_runs", "rounds")
    if not is_unpaired(row):
        keys = (f"{measure}_pairs", *keys)
    for key in keys:
        value = pd.to_numeric(pd.Series([row.get(key)]), errors="coerce").iloc[0]
        if np.isfinite(value):
            return int(value)
    return 0


def shows_interval(row, measure: str) -> bool:
    """Whether a comparison row's ``measure`` is shown with its interval and verdict: it has
    a ratio, is not the base, and rests on at least :data:`INTERVAL_MIN_PAIRS` pairs."""
    return (
        as_number(row.get(f"{measure}_ratio")) is not None
        and not str(row.get(f"{measure}_verdict", "")).startswith("base")
        and pair_count(row, measure) >= INTERVAL_MIN_PAIRS
    )


def ratio_text(row, measure: str) -> str:
    """A comparison row's ``measure`` as a person reads it: "0.912 [0.890, 0.930]" (the
    ratio to the base, a geometric mean, and its 95 % interval), the ratio alone ("0.448")
    where the row has too few pairs for an interval (:func:`shows_interval`), "" where
    there is no ratio."""
    med = as_number(row.get(f"{measure}_ratio"))
    if med is None:
        return ""
    if not shows_interval(row, measure):
        return f"{med:.3f}"
    low, high = row[f"{measure}_low"], row[f"{measure}_high"]
    return f"{med:.3f} [{low:.3f}, {high:.3f}]"


def base_unreached(paired: pd.DataFrame, measure: str) -> bool:
    """Whether the base (the table's first row) never measured ``measure`` (it never
    reached the accuracy target): then no other row can have a ratio for it."""
    return len(paired) > 0 and paired[f"{measure}_verdict"].iloc[0] == "base: not reached"


def verdict_text(row, measure: str, paired: pd.DataFrame) -> str:
    """A comparison row's verdict as a person reads it: the table's verdict, "" where
    :func:`comparison_note` says once why there is none (too few pairs for an interval, or
    a base that never reached the accuracy target)."""
    verdict = str(row[f"{measure}_verdict"])
    if verdict.startswith("base"):
        return verdict
    if as_number(row.get(f"{measure}_ratio")) is None:
        return "" if base_unreached(paired, measure) else verdict
    return verdict if shows_interval(row, measure) else ""


def family_rows(confidence, family=CONFIDENCE) -> int:
    """How many rows a table's intervals hold together over, from their level (each at
    :func:`embryo_bench.reporting.compare.simultaneous_confidence` of that many rows at the
    ``family`` level, 95 % or a stricter one after an early stop; 1 where there is none)."""
    level, family = as_number(confidence), as_number(family) or CONFIDENCE
    if level is None or level <= family:
        return 1
    return max(1, round((1 - family) / (1 - level)))


def interval_label(confidence, family=CONFIDENCE) -> str:
    """A table's interval column says its level: "95 % interval" where each row's stands
    alone, "95 % simultaneous interval" where they hold together (:func:`family_rows` > 1:
    each wider; the note says how much); "99 % ..." where the rows hold together at 99 %
    (after ``compare.until`` stopped early)."""
    joint = " simultaneous" if family_rows(confidence, family) > 1 else ""
    return f"{level_text(as_number(family) or CONFIDENCE)}{joint} interval"


def _table_level(table: pd.DataFrame, column: str):
    """The intervals' level of a table (one value in ``column``; None without it)."""
    return table[column].iloc[0] if column in table and len(table) else None


def table_levels(table: pd.DataFrame | None, measure: str = "throughput") -> tuple:
    """(each interval's level, the level they hold together at) of a comparison table's
    ``measure``; (None, 0.95) without one."""
    if table is None:
        return None, CONFIDENCE
    family = _table_level(table, f"{measure}_family_confidence")
    return _table_level(table, f"{measure}_confidence"), as_number(family) or CONFIDENCE


def interval_note(paired: pd.DataFrame) -> str:
    """The sentence the comparison figure and tables say once, instead of on every row, when
    a ratio rests on fewer than :data:`INTERVAL_MIN_PAIRS` pairs: that an interval and a
    verdict need that many rounds; "" when every ratio has its interval.

    Args:
        paired: :func:`embryo_bench.reporting.compare.comparison_table` (the base first).
    """
    few = sorted(
        {
            pair_count(row, m)
            for _, row in paired.iloc[1:].iterrows()
            for m in MEASURES
            if as_number(row.get(f"{m}_ratio")) is not None and not shows_interval(row, m)
        }
    )
    if not few:
        return ""
    counts = " or ".join(str(n) for n in few)
    return (
        f"A 95 % interval and a verdict need at least {INTERVAL_MIN_PAIRS} rounds; ratios "
        f"from {counts} round{'s' * (few != [1])} are shown alone, as plain points "
        "(train.repeats sets the rounds)."
    )


def comparison_note(paired: pd.DataFrame) -> str:
    """What the comparison tables say once instead of on every row: :func:`interval_note`,
    and that the base never reached the accuracy target (so no target has a time-to-accuracy
    ratio); "" when neither holds.

    Args:
        paired: :func:`embryo_bench.reporting.compare.comparison_table` (the base first).
    """
    # The intervals' level, said where some row shows one.
    level, family = table_levels(paired)
    rows = family_rows(level, family)
    if not any(shows_interval(r, "throughput") for _, r in paired.iloc[1:].iterrows()):
        rows = 1
    notes = [family_note(rows, "throughput", family), interval_note(paired)]
    if rows > 1:
        notes.append(
            "Time to accuracy is a secondary measure: each of its intervals is at 95 % on its own."
        )
    if base_unreached(paired, "time_to_accuracy"):
        notes.append(
            f"The base, {paired['target'].iloc[0]}, never reached the accuracy target: "
            "no time-to-accuracy ratio."
        )
    return " ".join(n for n in notes if n)


def flag_counts(row) -> str:
    """ "2 (interfered 1, drifted 2)" from a :func:`embryo_bench.reporting.summary.target_summary`
    or :func:`embryo_bench.reporting.compare.comparison_table` row (flagged_runs and
    ``<flag>_runs``, :func:`embryo_bench.reporting.stability.flag_runs`); "0" for none."""
    flagged = int(row["flagged_runs"])
    parts = [f"{f} {int(row[f'{f}_runs'])}" for f in FLAGS if row.get(f"{f}_runs")]
    return f"{flagged} ({', '.join(parts)})" if flagged else "0"


def readable_summary(summ: pd.DataFrame, paired: pd.DataFrame | None = None) -> pd.DataFrame:
    """The per-target table as a person reads it: target, runs, flagged (how many, by flag),
    throughput (median and min-max, images/s), the ratio to the base with its interval
    (:func:`interval_label`) and verdict
    (:func:`embryo_bench.reporting.compare.comparison_table`; the ratio alone below
    :data:`INTERVAL_MIN_PAIRS` rounds, :func:`comparison_note`; "unpaired" on a row compared
    without pairs; "not compared" for a target the table does not hold), time to
    accuracy (median, s, and how many runs reached it), cost (median, USD). Values are
    text."""
    by_target = paired.set_index("target", drop=False) if paired is not None else None
    label = interval_label(*table_levels(paired))
    rows = []
    for _, r in summ.iterrows():
        if by_target is not None and r["target"] in by_target.index:
            p = by_target.loc[r["target"]]
            words = [
                ratio_text(p, "throughput") or "-",
                verdict_text(p, "throughput", paired),
                "unpaired" if is_unpaired(p) else "",
            ]
            vs_base = (
                " ".join(w for w in words if w) if p["throughput_verdict"] != "base" else "base"
            )
        else:
            vs_base = "not compared"
        tta = number_text(r["time_to_accuracy_s_median"], ".1f")
        rows.append(
            {
                "target": r["target"],
                "runs": int(r["repeats"]),
                "flagged": flag_counts(r),
                "images/s median (min-max)": (
                    f"{number_text(r['images_per_s_median'])} "
                    f"({number_text(r['images_per_s_min'])}-{number_text(r['images_per_s_max'])})"
                ),
                f"throughput vs base [{label}]": vs_base,
                "time to accuracy (s)": (
                    f"{tta} ({int(r['tta_reached'])}/{int(r['repeats'])} reached)"
                    if tta
                    else f"not reached (0/{int(r['repeats'])})"
                ),
                "cost (USD)": number_text(r["cost_usd_median"]),
            }
        )
    return pd.DataFrame(rows)


def readable_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The per-run table as a person reads it: target, round, started (UTC), flags, input
    (memory or files, and input-bound with its share), images/s, training (s), final test
    accuracy, probe (GFLOP/s), flag reasons."""
    started = pd.to_datetime(pd.to_numeric(table["started_unix_s"]), unit="s", utc=True)
    return pd.DataFrame(
        {
            "target": table["target"],
            "round": table["repeat"],
            "started (UTC)": started.dt.strftime("%Y-%m-%d %H:%M:%S").fillna("not recorded"),
            "flags": table["flags"].fillna(""),
            # Every table says how a run was fed: memory, files, input-bound.
            "input": [
                f"{mode}, INPUT-BOUND ({share:.0%} waiting)" if bound else mode
                for mode, bound, share in zip(
                    table["input"], table["input_bound"], table["input_wait_share"], strict=True
                )
            ],
            "images/s": table["images_per_s"].map(number_text),
            "training (s)": table["training_s"].map(lambda v: number_text(v, ".1f")),
            "final test accuracy": table["final_test_accuracy"].map(
                lambda v: number_text(v, ".3f")
            ),
            "probe (GFLOP/s)": table["probe_gflops"].map(lambda v: number_text(v, ".1f")),
            "why flagged": table["flag_reasons"].fillna(""),
        }
    )


def readable_comparison(paired: pd.DataFrame) -> pd.DataFrame:
    """The comparison table as a person reads it: target, rounds, flagged runs, pairing
    (where the table has it: "paired" or "unpaired", and "base"), and for throughput and time
    to accuracy the ratio to the base (geometric mean) [interval: :func:`interval_label`] and
    the verdict
    (:func:`ratio_text`, :func:`verdict_text`: below :data:`INTERVAL_MIN_PAIRS` rounds the
    ratio alone and no verdict, said once by :func:`comparison_note`)."""
    rows = [r for _, r in paired.iterrows()]
    table = {
        "target": paired["target"],
        "rounds": paired["rounds"],
        "flagged runs": [flag_counts(r) for r in rows],
    }
    if "pairing" in paired:
        table["pairing"] = paired["pairing"]
    label = interval_label(*table_levels(paired))
    for measure, ratio, verdict in (
        ("throughput", f"throughput ratio [{label}]", "throughput"),
        ("time_to_accuracy", "time-to-accuracy speed ratio", "time to accuracy"),
    ):
        table[ratio] = [ratio_text(r, measure) for r in rows]
        table[verdict] = [verdict_text(r, measure, paired) for r in rows]
    return pd.DataFrame(table)


def _relative_text(row, what: str) -> str:
    """A cost-table row's ``what`` ("time" or "cost") relative to the base as a person reads
    it: "0.612 [0.540, 0.694]" where the rounds give an interval, the ratio alone below
    :data:`INTERVAL_MIN_PAIRS` pairs, "1 (base)" on the base's row."""
    if row.get("pairing") == "base":
        return "1 (base)"
    ratio = as_number(row.get(f"{what}_relative"))
    if ratio is None:
        return ""
    low, high = as_number(row.get(f"{what}_low")), as_number(row.get(f"{what}_high"))
    pairs = as_number(row.get("pairs")) or 0
    if low is None or high is None or pairs < INTERVAL_MIN_PAIRS:
        return f"{ratio:.3f}"
    return f"{ratio:.3f} [{low:.3f}, {high:.3f}]"


def readable_cost(cost: pd.DataFrame) -> pd.DataFrame:
    """:func:`embryo_bench.reporting.relative_time.cost_intervals` as a person reads it: target,
    training time and cost relative to the base with their intervals (:func:`interval_label`:
    95 %, simultaneous over the table's rows), the verdict on
    the time ("faster" is less time), the median run's training time (s) and cost (USD), and
    the price (USD/h); the prices' sources go under the table (:func:`cost_note`)."""
    label = interval_label(_table_level(cost, "confidence"))
    return pd.DataFrame(
        {
            "target": cost["target"],
            f"time vs base [{label}]": [_relative_text(r, "time") for _, r in cost.iterrows()],
            f"cost vs base [{label}]": [_relative_text(r, "cost") for _, r in cost.iterrows()],
            "time verdict": [
                "" if v == "base" or (as_number(p) or 0) < INTERVAL_MIN_PAIRS else v
                for v, p in zip(cost["verdict"], cost["pairs"], strict=True)
            ],
            "training time (s, median)": cost["training_s_median"].map(number_text),
            "cost (USD, median)": cost["cost_usd_median"].map(usd_text),
            "USD/h": cost["hourly_usd"].map(usd_text),
        }
    )


def cost_note(cost: pd.DataFrame, base: str) -> str:
    """The sentence under the cost table: how time and cost are relative to ``base``, and
    each distinct price source once, with the targets it prices."""
    sources: dict[str, list[str]] = {}
    for target, source in zip(cost["target"], cost["price_source"], strict=True):
        sources.setdefault(str(source), []).append(str(target))
    priced = "; ".join(f"{', '.join(t)}: {s}" for s, t in sources.items())
    family = family_note(family_rows(_table_level(cost, "confidence")), "time and cost")
    return (
        f"Training time and cost relative to {base}'s (below 1: less time, cheaper): the "
        "ratio of the speeds 1 / training time, paired within the rounds (geometric mean, "
        "t interval), as in the comparison table; the cost is that ratio times the two "
        f"prices, so its interval is the time's, scaled. {family} Prices: {priced}."
    ).replace("  ", " ")
