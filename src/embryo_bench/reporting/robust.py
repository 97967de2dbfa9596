"""The robust view of a comparison: its primary measure (throughput) again without the
flagged runs, beside the main interval, so that a verdict an outlier decides shows as a
disagreement instead of passing unseen.

A statistical review of this project's functions found that slow outliers cost the paired
comparison power (the geometric mean and its t interval count every run: at a true 5 %,
CV 3 %, 10 rounds, power fell from 50 % to 38 % with 5 % slow outliers). The main table keeps
every run (flagged runs are measurements too, and dropping them would pick the answer); this
view says whether the answer rests on them. A rank-based interval (Hodges-Lehmann with the
Wilcoxon signed-rank test) needs 6 pairs for any 95 % interval, more than a comparison's
usual 3-5 rounds, so the flags, which the runs carry anyway
(:mod:`embryo_bench.reporting.stability`), decide what is left out.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
import pandas as pd

from .compare import FASTER, SAME, SLOWER, compare, compare_unpaired, direction, pairings

#: The verdicts' directions that say something: a disagreement is one of these, changed.
DEFINITE = (FASTER, SLOWER, SAME)
#: The columns :func:`clean_view` adds to a comparison table.
CLEAN_COLUMNS = [
    "throughput_clean_pairs",
    "throughput_clean_ratio",
    "throughput_clean_low",
    "throughput_clean_high",
    "throughput_clean_verdict",
]


def clean_view(
    runs: pd.DataFrame,
    base: str,
    min_difference: float,
    confidence: float,
    elsewhere: Collection[str] = (),
) -> pd.DataFrame:
    """Each target's throughput relative to ``base`` from its unflagged runs only (a flagged
    base run takes its round's pairs with it), as the comparison table computes it: paired
    within the rounds (:func:`embryo_bench.reporting.compare.compare`), unpaired where the
    table pairs it so.

    Args:
        runs: one row per run: target, repeat (the round), images_per_s (images/s), flags
            (empty for a clean run).
        base, min_difference, elsewhere: as
            :func:`embryo_bench.reporting.compare.comparison_table`.
        confidence: the table's throughput level (its ``throughput_confidence``), so that both
            views read intervals of one level.

    Returns:
        one row per target of ``runs``: target and :data:`CLEAN_COLUMNS` (pairs: the pairs,
        or the target's clean runs where unpaired; ratio, low, high: NaN where no clean pair
        is left; verdict: :func:`embryo_bench.reporting.compare.verdict`'s words, "base" on
        the base's row, "no unflagged pair" where none is left).
    """
    runs = runs.assign(round=runs["repeat"].astype(int))
    pairing = pairings(runs, base, elsewhere)
    flags = runs.get("flags", pd.Series("", index=runs.index)).fillna("").astype(str)
    speed = pd.to_numeric(runs["images_per_s"], errors="coerce")
    clean = runs.assign(speed=speed)[(flags == "") & speed.notna()]
    kind = clean["target"].map(pairing)
    found: dict[str, tuple] = {}
    if (clean["target"] == base).any():
        paired = compare(
            clean[kind != "unpaired"], base, min_difference, "speed", confidence=confidence
        )
        unpaired = compare_unpaired(
            clean[kind != "paired"], base, min_difference, "speed", confidence=confidence
        )
        for t in paired.itertuples():
            found[t.target] = (t.pairs, t.ratio, t.ratio_low, t.ratio_high, t.verdict)
        for t in unpaired.itertuples():
            found[t.target] = (t.runs, t.ratio, t.ratio_low, t.ratio_high, t.verdict)
    rows = []
    for name in dict.fromkeys(runs["target"]):
        if name == base:
            cells = (int((clean["target"] == base).sum()), 1.0, 1.0, 1.0, "base")
        else:
            cells = found.get(name, (0, np.nan, np.nan, np.nan, "no unflagged pair"))
        rows.append({"target": name, **dict(zip(CLEAN_COLUMNS, cells, strict=True))})
    return pd.DataFrame(rows, columns=["target", *CLEAN_COLUMNS])


def with_clean_view(paired: pd.DataFrame, clean: pd.DataFrame) -> pd.DataFrame:
    """``paired`` (:func:`embryo_bench.reporting.compare.comparison_table`) with
    :data:`CLEAN_COLUMNS` of :func:`clean_view` beside each target's row, in its order."""
    return paired.merge(clean, on="target", how="left")


def disagreement_note(table: pd.DataFrame) -> str:
    """The sentence a comparison says once about its robust view (``table``:
    :func:`with_clean_view`): "" where no run is flagged; else, per target whose unflagged
    runs give a verdict (faster, slower or the same) other than the main one's, the two, so
    that an outlier deciding it is seen; or that none does. (Fewer pairs leave more verdicts
    unresolved: that alone is no disagreement.)"""
    if "throughput_clean_verdict" not in table or not int(table["flagged_runs"].sum()):
        return ""
    changed = []
    for _, row in table.iloc[1:].iterrows():
        main, clean = str(row["throughput_verdict"]), str(row["throughput_clean_verdict"])
        if direction(clean) in DEFINITE and direction(clean) != direction(main):
            changed.append(f"{row['target']} {clean!r} instead of {main!r}")
    if not changed:
        return (
            "Without the flagged runs (a flagged base run takes its round's pairs with it) "
            "no throughput verdict points another way."
        )
    return (
        "Without the flagged runs (a flagged base run takes its round's pairs with it) the "
        f"throughput verdict points another way: {'; '.join(changed)}; those rest on flagged "
        "runs (comparison_table.csv: throughput_clean_*)."
    )
