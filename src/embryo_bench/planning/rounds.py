"""Whether another round is needed (``compare.until``), from the round
checks the workflow writes after each round (:mod:`embryo_bench.reporting.rounds` measures
them). This module is read when the workflow plans its jobs
(:meth:`embryo_bench.planning.plan.Plan.rounds_wanted`), so it imports statistics only when
it decides with ``compare.noise`` (:func:`stop_width`); the checks are read by
:func:`embryo_bench.vocabulary.round_check.read_check`.

A round check (``rounds/round-<k>.json``) holds, per workload, every target's ratio to the
base with its interval and that interval's *half-width* on the log scale, (ln high - ln low)
/ 2 (0.03 is about +-3 %), and its pairs. With ``compare.noise`` (the machine's paired noise,
measured apart from these rounds) a stop is decided on the half-width that noise gives where
it is wider than the rounds' own (:func:`stop_width`). It holds measurements only: the
decision follows from them and ``compare.until`` / ``compare.max_rounds`` /
``compare.noise`` here, so changing any of them reruns no check and no run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: The fewest rounds before ``compare.until`` may stop early: at 3 or 4 rounds an interval's
#: width is itself too uncertain (a statistical review of this machine's noise found goals
#: stopped early missed the true ratio in up to 60 % of those stops, and coverage fell to
#: 92 %). ``max_rounds`` below it stops there still.
MIN_ROUNDS_TO_STOP = 5

#: The level a comparison's throughput intervals are judged at when the rounds stopped
#: early on the width (``compare.until`` reached before ``max_rounds``), instead of 95 %:
#: stopping when the interval is narrow picks rounds whose spread is small by chance, and
#: with the same mean a small spread is a large t. Simulated with this machine's noise
#: (benchmarks/bench_verdicts.py, docs/results.md), 95 % at such a stop called an A/A pair
#: different in 5.1-7.3 % of experiments; this level keeps it at or under 5 %.
EARLY_STOP_CONFIDENCE = 0.99


@dataclass(frozen=True)
class Decision:
    """What a round check says with ``compare.until`` and ``compare.max_rounds``.

    Attributes:
        rounds: the rounds measured.
        more: another round is needed (some interval is wider than ``until`` and fewer than
            ``max_rounds`` rounds ran).
        why: "goal" (every interval is at most ``until`` wide), "max_rounds", "no target"
            (no workload has a target besides its base), or "more".
        widest: workload -> (its target with the widest interval, that half-width; None for
            no interval), for the workloads that have a target besides the base.
        noise: ``compare.noise`` (0: none).
        floored: workload -> the half-width the stop is decided on (:func:`stop_width`: the
            widest target's, or what ``noise`` gives at its pairs where that is wider);
            None for no interval.
        until, max_rounds: the settings decided with.

    :attr:`confidence` is the level the comparison's intervals are judged at.
    """

    rounds: int
    more: bool
    why: str
    widest: dict[str, tuple[str, float | None]]
    until: float
    max_rounds: int
    noise: float = 0.0
    floored: dict[str, float | None] = field(default_factory=dict)

    @property
    def stopped_early(self) -> bool:
        """The goal was reached before ``max_rounds``."""
        return self.why == "goal" and self.rounds < self.max_rounds

    @property
    def confidence(self) -> float | None:
        """The level of the comparison's throughput intervals: :data:`EARLY_STOP_CONFIDENCE`
        after an early stop (:attr:`stopped_early`); None otherwise (the table's own, 95 %)."""
        return EARLY_STOP_CONFIDENCE if self.stopped_early else None

    def figures_options(self, workload: str) -> list[str]:
        """The figures command's options for ``workload``'s comparison: ``--rounds-note``
        (:meth:`note`), then ``--confidence`` after an early stop (:attr:`confidence`)."""
        level = ["--confidence", str(self.confidence)] if self.confidence else []
        return ["--rounds-note", self.note(workload), *level]

    def note(self, workload: str) -> str:
        """What a workload's comparison table says about its rounds, e.g.
        "compare.until 3 %: half-width 2.8 % after 7 rounds (widest: docker-1cpu); stopped
        before max_rounds 10, so the intervals are at 99 %, ..." or "compare.until 3 %:
        max_rounds 10 reached: 4.1 % (widest: docker-1cpu)"."""
        head = f"compare.until {_pct(self.until)}: "
        if workload not in self.widest:
            return head + f"no target besides the base; {self.rounds} rounds"
        target, width = self.widest[workload]
        floor = self.floored.get(workload)
        at_bound = (
            f" ({_pct(floor)} at compare.noise {_pct(self.noise)})"
            if floor is not None and width is not None and floor > width
            else ""
        )
        if self.why == "goal":
            text = (
                head + f"half-width {_pct(width)}{at_bound} after {self.rounds} rounds "
                f"(widest: {target})"
            )
            if self.stopped_early:
                text += (
                    f"; stopped before max_rounds {self.max_rounds}, so the throughput "
                    f"intervals are at {100 * EARLY_STOP_CONFIDENCE:.0f} %, not 95 % (a stop "
                    "on a narrow interval picks rounds whose spread is small by chance)"
                )
            return text
        if self.why == "max_rounds":
            text = head + (
                f"max_rounds {self.max_rounds} reached: {_pct(width)}{at_bound} (widest: {target})"
            )
            unsure = [w for w in self.widest if not _sure(self.floored.get(w), self.until)]
            if _sure(floor, self.until):  # sure here: another workload's was not
                text += f"; not reached in {', '.join(unsure)}"
            return text
        return head + (
            f"half-width {_pct(width)}{at_bound} after {self.rounds} rounds (widest: {target})"
        )


def stop_width(measured: dict, targets: int, noise: float) -> float | None:
    """The half-width a stop is decided on for one target of a round check (``measured``:
    its half_width and pairs): its own, or, where wider, the half-width ``noise`` (a paired
    sd, log scale) gives at its pairs and the table's level for ``targets`` compared targets
    (:func:`embryo_bench.reporting.rounds.noise_half_width`); None without an interval.

    Why: a stop on the rounds' own width selects rounds whose spread is small by chance.
    Simulated at this machine's noise (benchmarks/bench_verdicts.py, docs/results.md), the
    few early stops at goals of 2-3 % and a CV of 6 % called an A/A pair different in 22-56 %
    of them even judged at 99 %, and a bound taken from the same rounds' spread (its upper
    confidence limit) made it worse; a noise measured apart from them, set at half the true
    one or more, left no such stop.
    """
    width = measured["half_width"]
    if width is None or not noise:
        return width
    # Only with compare.noise: the plan is read at every start of the workflow.
    from ..reporting.rounds import noise_half_width

    return max(width, noise_half_width(noise, int(measured["pairs"]), targets))


def _pct(fraction: float | None) -> str:
    """A half-width as the tables write it: "2.8 %", "0.45 %", "3 %" (trailing zeros
    dropped), or "no interval"."""
    if fraction is None:
        return "no interval"
    percent = 100 * fraction
    return f"{percent:.1f}".rstrip("0").rstrip(".") + " %" if percent >= 1 else f"{percent:.2g} %"


def _sure(width: float | None, until: float) -> bool:
    """An interval at most ``until`` wide (none is never sure)."""
    return width is not None and width <= until


def decide(check: dict, rounds: int, until: float, max_rounds: int, noise: float = 0.0) -> Decision:
    """Whether another round is needed after ``rounds`` rounds.

    Args:
        check: the round check after round ``rounds``
            (:func:`embryo_bench.reporting.rounds.check_round`).
        until: ``compare.until`` (a half-width, fraction; > 0).
        max_rounds: ``compare.max_rounds``.
        noise: ``compare.noise``, the machine's paired noise (a fraction; 0: none).

    Returns:
        a :class:`Decision`: another round while some target of some workload has an
        interval wider than ``until`` (or none), or would have with ``noise``
        (:func:`stop_width`), or fewer than :data:`MIN_ROUNDS_TO_STOP` rounds ran, and
        ``rounds`` < ``max_rounds``.
    """
    widest, floored = {}, {}
    for workload, w in check["workloads"].items():
        ts = w["targets"]
        widths = {t: stop_width(m, len(ts), noise) for t, m in ts.items()}
        if widths:
            target = max(widths, key=lambda t: _width_key(widths[t]))
            widest[workload] = (target, ts[target]["half_width"])
            floored[workload] = widths[target]
    if not widest:
        why = "no target"
    elif all(_sure(x, until) for x in floored.values()) and (
        rounds >= min(MIN_ROUNDS_TO_STOP, max_rounds)
    ):
        why = "goal"
    elif rounds >= max_rounds:
        why = "max_rounds"
    else:
        why = "more"
    return Decision(rounds, why == "more", why, widest, until, max_rounds, noise, floored)


def _width_key(width: float | None) -> float:
    """Order of half-widths, no interval the widest."""
    return math.inf if width is None else width
