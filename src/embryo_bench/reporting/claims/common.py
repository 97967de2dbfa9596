"""What every study's claim check returns (issue 34, item 3).

A study's module (``embryo_bench.reporting.claims.<name>``, named by ``studies.yaml``) has

    def claims(
        published: pandas.DataFrame, ours: pandas.DataFrame, runs: pandas.DataFrame
    ) -> list[Claim]

``published`` is :func:`embryo_bench.published.studies.load_numbers` of the study; ``ours``
has one row per workload and target of this configuration's runs, with the columns of
``embryo_bench.reporting.study.OURS_COLUMNS``; ``runs`` one row per run (``study/runs.csv``:
workload, target, repeat, merged, steady_epoch_s, images_per_s, ...), for ratios between two
workloads on one target paired within the rounds (:func:`paired_workload_ratio`). A claim
our machines cannot test (it is about a GPU, or its workload or target did not run) is
returned with :data:`CANNOT`, never left out, and its ``ours`` says what is missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..compare import paired_ratios, ratio_interval

HOLDS = "holds here"
DOES_NOT_HOLD = "does not hold here"
CANNOT = "cannot be checked here"
#: The verdicts, as the tables print them.
VERDICTS = (HOLDS, DOES_NOT_HOLD, CANNOT)


@dataclass(frozen=True)
class Claim:
    """One headline claim of a study and its verdict on our runs.

    Attributes:
        claim: the claim, in a few words ("the MNIST MLP is cheapest on CPUs").
        verdict: one of :data:`VERDICTS`; :data:`CANNOT` with why in ``ours`` (e.g.
            "cannot be checked here (no GPU)" is ``verdict`` CANNOT, ``why`` "no GPU").
        theirs: the study's numbers behind it, as text with units.
        ours: our numbers, as text with units and intervals where rounds give them.
        source: where the study makes the claim (seed file and section or table).
        why: for CANNOT, the reason ("no GPU", "the workload did not run"); else "".
    """

    claim: str
    verdict: str
    theirs: str
    ours: str
    source: str
    why: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict {self.verdict!r}; expected one of {VERDICTS}")
        if (self.verdict == CANNOT) != bool(self.why):
            raise ValueError("a claim that cannot be checked says why, and only such a claim")

    @property
    def verdict_text(self) -> str:
        """The verdict as the table prints it: "cannot be checked here (no GPU)"."""
        return f"{self.verdict} ({self.why})" if self.why else self.verdict


@dataclass(frozen=True)
class PairedRatio:
    """One workload's value over another's on the same target, paired within the rounds.

    Attributes:
        ratio: the geometric mean of the per-round ratios.
        low, high: its 95 % t interval (:func:`embryo_bench.reporting.compare.ratio_interval`);
            equal to ``ratio`` when one pair leaves no spread.
        pairs: rounds with a run of both workloads on the target.
    """

    ratio: float
    low: float
    high: float
    pairs: int

    @property
    def text(self) -> str:
        """ "x0.700 [0.660, 0.750], 3 rounds" (one round: "x0.700, 1 round, no interval")."""
        if self.pairs < 2:
            return f"x{self.ratio:.3f}, 1 round, no interval"
        return f"x{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}], {self.pairs} rounds"


def paired_workload_ratio(
    runs: pd.DataFrame, target: str, workload: str, base_workload: str, value: str
) -> PairedRatio | None:
    """``workload``'s ``value`` over ``base_workload``'s on ``target``, round by round.

    Round k of a configuration runs repeat k of every workload and target close together
    (:func:`embryo_bench.planning.plan.round_order`), so the ratio of two workloads' runs on
    one target in the same round cancels the machine's speed at that time, as a ratio of two
    targets does (:mod:`embryo_bench.reporting.compare`): Wu et al.'s batch 500 over batch 50
    (seed 003, Table XV), files over memory input (seeds 001 and 004).

    Args:
        runs: ``study/runs.csv`` rows: workload, target, repeat (int), merged (bool) and
            ``value``; runs merged from other folders are left out (they share no round).
        target: the target both workloads ran on.
        workload, base_workload: the config's workload names (numerator, denominator).
        value: a numeric column, e.g. "steady_epoch_s" (s) or "images_per_s" (images/s).

    Returns:
        :class:`PairedRatio`, or None when no round has a run of both with a positive value.

    Raises:
        ValueError: a workload has two runs on ``target`` in one round.
    """
    own = runs[(runs["target"] == target) & ~runs["merged"].astype(bool)]
    own = own[own["workload"].isin([workload, base_workload])]
    values = pd.to_numeric(own[value], errors="coerce")
    own = own[values.gt(0) & values.map(math.isfinite)]
    if not (own["workload"] == base_workload).any() or not (own["workload"] == workload).any():
        return None
    twice = own.duplicated(["workload", "repeat"], keep=False)
    if twice.any():
        first = own[twice].iloc[0]
        raise ValueError(
            f"workload {first['workload']!r} has more than one run on target {target!r} in "
            f"round {first['repeat']}"
        )
    pairs = paired_ratios(
        own.assign(target=own["workload"], round=own["repeat"].astype(int)), base_workload, value
    )
    if pairs.empty:
        return None
    ratio, low, high = ratio_interval(pairs["ratio"])
    return PairedRatio(ratio, low, high, len(pairs))
