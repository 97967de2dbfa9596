"""The robust views of a comparison: its primary measure (throughput) again without the
flagged runs, and again from each run's median throughput window, beside the main interval,
so that a verdict an outlier or a burst of contention decides shows as a disagreement
instead of passing unseen.

A statistical review of this project's functions found that slow outliers cost the paired
comparison power (the geometric mean and its t interval count every run: at a true 5 %,
CV 3 %, 10 rounds, power fell from 50 % to 38 % with 5 % slow outliers). The main table keeps
every run (flagged runs are measurements too, and dropping them would pick the answer); this
view says whether the answer rests on them. A rank-based interval (Hodges-Lehmann with the
Wilcoxon signed-rank test) needs 6 pairs for any 95 % interval, more than a comparison's
usual 3-5 rounds, so the flags, which the runs carry anyway
(:mod:`embryo_bench.reporting.stability`), decide what is left out.

The window view takes each run's median throughput window (the trainer's windows.csv: a
window that held a stall counts for one window, not for its seconds) in place of its steady
epochs' images/s. In real A/As on this project's 2-core VM (docs/results.md, "Variance
reduction in real paired rounds") it varied least between identical runs of the estimates
that keep images/s as the unit, in all four measured (paired log-ratio sd 5.0 / 4.1 % on
AMD Zen 4 against the epochs' 5.2 / 6.6 %, quiet / beside a bursty neighbour; 6.1 / 2.7 %
on Zen 5 against 6.9 / 7.8 %). It is a view, not the headline: a target whose stalls are
its own (an input pipeline that waits every few windows) is faster by its median window
than by the time its epochs took, and the epochs' time is what a user pays for.
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
#: The columns :func:`window_view` adds to a comparison table.
WINDOW_COLUMNS = [c.replace("_clean_", "_window_") for c in CLEAN_COLUMNS]


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
    flags = runs.get("flags", pd.Series("", index=runs.index)).fillna("").astype(str)
    return _view(
        runs, runs["images_per_s"], flags == "", base, min_difference, confidence, elsewhere,
        CLEAN_COLUMNS, "no unflagged pair",
    )  # fmt: skip


def window_view(
    runs: pd.DataFrame,
    base: str,
    min_difference: float,
    confidence: float,
    elsewhere: Collection[str] = (),
) -> pd.DataFrame:
    """Each target's throughput relative to ``base`` from every run's median throughput
    window (images/s) in place of its steady epochs' images/s, compared as
    :func:`clean_view` compares (paired within the rounds, unpaired where the table pairs
    it so; flagged runs kept, as the main table keeps them).

    Args:
        runs: one row per run: target, repeat (the round), window_images_per_s (images/s,
            the run's median window; NaN for a run without windows, made before they were
            recorded or too short for two).
        base, min_difference, elsewhere, confidence: as :func:`clean_view`.

    Returns:
        one row per target of ``runs``: target and :data:`WINDOW_COLUMNS` (as
        :func:`clean_view`'s; verdict "no windows" where no pair has them).
    """
    speed = runs.get("window_images_per_s", pd.Series(np.nan, index=runs.index))
    keep = pd.Series(True, index=runs.index)
    return _view(
        runs, speed, keep, base, min_difference, confidence, elsewhere, WINDOW_COLUMNS,
        "no windows",
    )  # fmt: skip


def _view(
    runs: pd.DataFrame,
    speed: pd.Series,
    keep: pd.Series,
    base: str,
    min_difference: float,
    confidence: float,
    elsewhere: Collection[str],
    columns: list[str],
    none_left: str,
) -> pd.DataFrame:
    """The comparison of ``runs`` by ``speed`` (images/s per run), only the runs ``keep``
    holds and those with a speed: one row per target, ``columns`` (pairs, ratio, low, high,
    verdict); ``none_left`` the verdict where no pair is left."""
    runs = runs.assign(round=runs["repeat"].astype(int))
    pairing = pairings(runs, base, elsewhere)
    speed = pd.to_numeric(speed, errors="coerce")
    clean = runs.assign(speed=speed)[keep & speed.notna()]
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
            cells = found.get(name, (0, np.nan, np.nan, np.nan, none_left))
        rows.append({"target": name, **dict(zip(columns, cells, strict=True))})
    return pd.DataFrame(rows, columns=["target", *columns])


def with_views(paired: pd.DataFrame, *views: pd.DataFrame) -> pd.DataFrame:
    """``paired`` (:func:`embryo_bench.reporting.compare.comparison_table`) with the
    columns of each view (:func:`clean_view`, :func:`window_view`) beside each target's
    row, in its order."""
    for view in views:
        paired = paired.merge(view, on="target", how="left")
    return paired


def _disagreements(table: pd.DataFrame, column: str) -> list[str]:
    """Per compared target (the rows after the base) whose view's verdict in ``column``
    says faster, slower or the same, other than the main ``throughput_verdict``: "<target>
    '<view's words>' instead of '<main words>'" (an unresolved view is no disagreement)."""
    changed = []
    for _, row in table.iloc[1:].iterrows():
        main, view = str(row["throughput_verdict"]), str(row[column])
        if direction(view) in DEFINITE and direction(view) != direction(main):
            changed.append(f"{row['target']} {view!r} instead of {main!r}")
    return changed


def disagreement_note(table: pd.DataFrame) -> str:
    """The sentence a comparison says once about its robust view (``table``:
    :func:`with_views`): "" where no run is flagged; else, per target whose unflagged
    runs give a verdict (faster, slower or the same) other than the main one's, the two, so
    that an outlier deciding it is seen; or that none does. (Fewer pairs leave more verdicts
    unresolved: that alone is no disagreement.)"""
    if "throughput_clean_verdict" not in table or not int(table["flagged_runs"].sum()):
        return ""
    changed = _disagreements(table, "throughput_clean_verdict")
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


def window_note(table: pd.DataFrame) -> str:
    """The sentence a comparison says about its window view (``table``:
    :func:`with_views` with :func:`window_view`'s columns): per target whose median
    windows give a verdict (faster, slower or the same) other than the main one's, the two;
    "" where none does (the view agrees, or has nothing to say)."""
    if "throughput_window_verdict" not in table:
        return ""
    changed = _disagreements(table, "throughput_window_verdict")
    if not changed:
        return ""
    return (
        "By each run's median throughput window (a burst of contention moves it less than the "
        f"epochs' time) the throughput verdict points another way: {'; '.join(changed)} "
        "(comparison_table.csv: throughput_window_*)."
    )
