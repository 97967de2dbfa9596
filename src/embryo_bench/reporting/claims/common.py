"""What every study's claim check returns.

A study's module (``embryo_bench.studies.<study>.claims``, its folder's ``claims.py``) has

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

Two targets of one workload (a GPU against a CPU target, a GPU fed by 1 or by 8 cores) are
compared by :func:`target_ratio`: paired within the rounds where both ran, as
:mod:`embryo_bench.reporting.compare` does, else unpaired, else the ratio of ``ours``'
medians; :meth:`TargetRatio.compare_verdict` and :func:`judge_at_least` turn it into a verdict
only where an interval of at least :data:`~embryo_bench.reporting.compare.MIN_PAIRS` rounds
(or runs a side) stands behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from ..compare import MIN_PAIRS, paired_ratios, ratio_interval, unpaired_interval, verdict

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
        source: where the study makes the claim (the study's short name and
            section or table).
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
    (:func:`embryo_bench.planning.schedule.round_order`), so the ratio of two workloads' runs on
    one target in the same round cancels the machine's speed at that time, as a ratio of two
    targets does (:mod:`embryo_bench.reporting.compare`): Wu et al.'s batch 500 over batch 50
    (Wu et al. 2018, Table XV), files over memory input (DATAmadness 2019, the V100 blog).

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


#: How :func:`target_ratio` got its ratio.
PAIRED, UNPAIRED, MEDIANS = "paired", "unpaired", "medians"


@dataclass(frozen=True)
class TargetRatio:
    """One target's value over another's (the base's) in the same workload.

    Attributes:
        ratio: :data:`PAIRED`: the geometric mean of the per-round ratios; :data:`UNPAIRED`:
            the ratio of the two targets' geometric means; :data:`MEDIANS`: the ratio of the
            medians ``ours`` gives.
        low, high: the 95 % interval (:func:`~embryo_bench.reporting.compare.ratio_interval`
            or :func:`~embryo_bench.reporting.compare.unpaired_interval`); equal to ``ratio``
            where none can be drawn (one pair or run a side, no spread, medians).
        n: pairs (paired), the smaller side's runs (unpaired), 0 (medians).
        pairing: :data:`PAIRED`, :data:`UNPAIRED` or :data:`MEDIANS`.
    """

    ratio: float
    low: float
    high: float
    n: int
    pairing: str

    @property
    def text(self) -> str:
        """ "x4.210 [3.900, 4.540], paired within 3 rounds", "x4.210, 1 round paired, no
        interval", "x4.210 [3.100, 5.700], unpaired (no round ran both), 3 runs on the smaller
        side" or "x4.210, the ratio of the medians (no runs to pair)"."""
        if self.pairing == MEDIANS:
            return f"x{self.ratio:.3f}, the ratio of the medians (no runs to pair)"
        interval = f"x{self.ratio:.3f} [{self.low:.3f}, {self.high:.3f}]"
        if self.pairing == PAIRED:
            if self.n < 2:
                return f"x{self.ratio:.3f}, 1 round paired, no interval"
            return f"{interval}, paired within {self.n} rounds"
        if self.n < 2:
            return f"x{self.ratio:.3f}, unpaired (no round ran both), 1 run on a side, no interval"
        return f"{interval}, unpaired (no round ran both), {self.n} runs on the smaller side"

    def times(self, factor: float) -> TargetRatio:
        """This ratio (and its interval) multiplied by a constant ``factor`` (> 0), e.g. a
        speed ratio turned into a cost ratio by the two targets' prices."""
        return TargetRatio(
            self.ratio * factor, self.low * factor, self.high * factor, self.n, self.pairing
        )

    def inverse(self) -> TargetRatio:
        """The base's value over the target's: 1 / the ratio, the interval mirrored."""
        return TargetRatio(1 / self.ratio, 1 / self.high, 1 / self.low, self.n, self.pairing)

    def compare_verdict(self, min_difference: float) -> str:
        """:func:`embryo_bench.reporting.compare.verdict`'s words for this ratio (a speed's:
        above 1 the target is faster; :func:`embryo_bench.reporting.compare.direction` reads
        them), or why there is none ("one pair: no interval", "2 pairs: too few for a verdict
        (3 needed)");
        "the ratio of the medians only: no interval" for :data:`MEDIANS`.

        Args:
            min_difference: the machine's noise as a fraction (``compare.min_difference``).
        """
        if self.pairing == MEDIANS:
            return "the ratio of the medians only: no interval"
        return verdict(
            self.n, self.ratio, self.low, self.high, min_difference, self.pairing == PAIRED
        )


def _positive(rows: pd.DataFrame, value: str) -> pd.DataFrame:
    values = pd.to_numeric(rows[value], errors="coerce")
    return rows.assign(**{value: values})[values.gt(0) & values.map(math.isfinite)]


def target_ratio(
    runs: pd.DataFrame,
    workload: str,
    target: str,
    base_target: str,
    value: str = "images_per_s",
    medians: tuple[float, float] | None = None,
) -> TargetRatio | None:
    """``target``'s ``value`` over ``base_target``'s in ``workload``.

    Paired within the rounds (round k of a configuration runs every target's repeat k close
    together, so a ratio within a round cancels the machine's speed at that time:
    :mod:`embryo_bench.reporting.compare`) where some round holds a run of both made by this
    workflow; else unpaired (runs merged from other folders, or rounds that never hold both:
    :func:`~embryo_bench.reporting.compare.unpaired_interval`, as compare does for them);
    else, with no run of one of them in ``runs``, the ratio of ``medians``.

    Args:
        runs: ``study/runs.csv`` rows: workload, target, repeat (int), merged (bool) and
            ``value``.
        workload: the config's workload name both targets ran.
        target, base_target: the targets (numerator, denominator).
        value: a numeric column, e.g. "images_per_s" (images/s: above 1 the target is
            faster) or "steady_epoch_s" (s).
        medians: (target's, base's) median ``value`` (e.g. ``ours``' throughput), for the
            fallback; None for none.

    Returns:
        :class:`TargetRatio`, or None without a run of both and without positive medians.

    Raises:
        ValueError: a target has two runs of ``workload`` in one round.
    """
    mine = runs[(runs["workload"] == workload) & runs["target"].isin([target, base_target])]
    mine = _positive(mine, value)
    own = mine[~mine["merged"].astype(bool)]
    if (own["target"] == base_target).any() and (own["target"] == target).any():
        pairs = paired_ratios(own.assign(round=own["repeat"].astype(int)), base_target, value)
        pairs = pairs[pairs["target"] == target]
        if len(pairs):
            ratio, low, high = ratio_interval(pairs["ratio"])
            return TargetRatio(ratio, low, high, len(pairs), PAIRED)
    ours = mine.loc[mine["target"] == target, value]
    base = mine.loc[mine["target"] == base_target, value]
    if len(ours) and len(base):
        ratio, low, high = unpaired_interval(ours, base)
        return TargetRatio(ratio, low, high, min(len(ours), len(base)), UNPAIRED)
    if medians is None:
        return None
    a, b = (float(m) for m in medians)
    if not (a > 0 and b > 0 and math.isfinite(a / b)):
        return None
    return TargetRatio(a / b, a / b, a / b, 0, MEDIANS)


def judge_at_least(ratio: TargetRatio, threshold: float) -> tuple[str, str]:
    """Is ``ratio`` (a speed-up: above 1 the target is faster) at least ``threshold``?

    A verdict needs an interval of at least
    :data:`~embryo_bench.reporting.compare.MIN_PAIRS` pairs (or runs on a side), as compare's
    verdicts do: :data:`HOLDS` where its interval lies above ``threshold``,
    :data:`DOES_NOT_HOLD` where it lies below; :data:`CANNOT` where it covers ``threshold``
    ("the interval covers x4.46: more rounds would resolve it") or with too few rounds
    (compare's words: "one pair: no interval", "2 pairs: too few for a verdict (3 needed)",
    "the ratio of the medians only: no interval").

    Returns:
        (verdict, why): why is "" unless the verdict is :data:`CANNOT`.
    """
    if ratio.pairing == MEDIANS or ratio.n < MIN_PAIRS:
        return CANNOT, ratio.compare_verdict(0.0)
    if ratio.low > threshold:
        return HOLDS, ""
    if ratio.high < threshold:
        return DOES_NOT_HOLD, ""
    return CANNOT, f"the interval covers x{threshold:.3g}: more rounds would resolve it"
