"""Every run of a plan, in the order the rounds run them.

A *run* is one training of a workload's model on a target: a repeat number 1..N, each its own
cached job writing ``train/<target>/repeat-<k>/`` (another workload's under
``workloads/<name>/``); repeat k trains with seed ``train.seed + k - 1`` (MLPerf-style
repeated runs, reported as median and min-max). Round k holds repeat k of every workload on
every target that runs at least k repeats of it, in the order ``compare.order`` gives
(:func:`round_order`), so a drift of the machine's speed lands on every target alike; with
``compare.until`` rounds are added after the first ones (:meth:`Schedule.rounds_wanted`, by
:mod:`embryo_bench.planning.rounds`).
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, DataError
from ..vocabulary import layout
from ..vocabulary.layout import PAPER_WORKLOAD
from ..vocabulary.round_check import check_path, read_check
from .rounds import Decision, decide
from .targets import Target
from .workloads import Workload

#: The orders of the targets within a round (``compare.order``; :func:`round_order`).
ROUND_ORDERS = ("alternate", "shuffle", "balanced")


def williams_rows(n: int) -> list[list[int]]:
    """A Williams design for ``n`` treatments (Williams 1949, "Experimental designs balanced
    for the estimation of residual effects of treatments"): rows of a Latin square, each a
    permutation of range(n), such that over all rows every index stands in every position
    equally often and directly follows every other index equally often. n rows for an even
    n; 2n for an odd n (the square and its mirror image); the first n rows are a Latin
    square. Relabelled so that the first row is range(n) (round 1 runs in configuration
    order, as under ``alternate``; a relabelling keeps both balances).

    Raises:
        ValueError: n < 1.
    """
    if n < 1:
        raise ValueError(f"a Williams design needs at least one treatment, got {n}")
    first, low, high = [0], 1, n - 1
    while low <= high:  # 0, 1, n-1, 2, n-2, ...
        first.append(low)
        if low != high:
            first.append(high)
        low, high = low + 1, high - 1
    label = {old: new for new, old in enumerate(first)}
    rows = [[label[(i + r) % n] for i in first] for r in range(n)]
    return rows + [row[::-1] for row in rows] if n % 2 and n > 1 else rows


def round_order(
    targets: dict[str, Target], order: str = "alternate", seed: int = 0, rounds: int = 0
):
    """Every run as (target, repeat) in the order rounds run them (interleaved, so a drift
    of the machine's speed lands on every target alike): round k holds
    repeat k of every target with at least k repeats; a round beyond every target's repeats
    (``compare.until`` adds them) holds every target.

    Args:
        targets: main targets (config order), then sweep points.
        order: "alternate": config order in odd rounds, reversed in even ones (ABC CBA ABC:
            a steady drift of the machine's speed lands on every target alike);
            "shuffle": a new order each round, :class:`random.Random` seeded with
            ``seed`` and the round; "balanced": the rows of a Williams Latin square
            (:func:`williams_rows`) in turn, so over a cycle of n rounds (2n for an odd n)
            every target runs in every position equally often and after every other
            target equally often (for two targets it is "alternate").
        rounds: how many rounds (0: the most repeats of any target). Round k's runs and
            their order do not depend on it, so more rounds only add runs at the end.

    Returns:
        list of (target, repeat), round 1 first.

    Raises:
        ValueError: an unknown order.
    """
    if order not in ROUND_ORDERS:
        raise ValueError(f"round order must be one of {', '.join(ROUND_ORDERS)}, got {order!r}")
    most = max(t.repeats for t in targets.values())
    runs = []
    for k in range(1, (rounds or most) + 1):
        names = [n for n, t in targets.items() if t.repeats >= k or k > most]
        if order == "shuffle":
            random.Random(f"{seed}/{k}").shuffle(names)
        elif order == "balanced":
            rows = williams_rows(len(names))
            names = [names[i] for i in rows[(k - 1) % len(rows)]]
        elif k % 2 == 0:
            names.reverse()
        runs += [(n, k) for n in names]
    return runs


@dataclass(frozen=True)
class Schedule:
    """The runs of a plan and their rounds.

    Attributes:
        targets: every target that runs, main targets (config order) then sweep points.
        workloads: every workload, by name, in the configuration's order.
        compare: the configuration's ``compare`` section (order, seed, until, max_rounds,
            noise, min_difference).
        compare_base: the comparison base (:func:`embryo_bench.planning.bases.compare_base`).
        outdir: the configuration's output folder, under which the runs' folders are.
        own_repeats: the names of the ``targets:`` entries that set ``repeats`` of their own
            (kept over a workload's).
    """

    targets: dict[str, Target]
    workloads: dict[str, Workload]
    compare: dict
    compare_base: str
    outdir: str
    own_repeats: frozenset[str] = frozenset()

    def workload_targets(self, workload: str) -> dict[str, Target]:
        """The targets a workload's runs train on: every target for a workload trained by
        the ``train`` section (the paper's), the main targets (not the sweep points, which
        vary that section's batch size and threads) for one with a recipe of its own
        (:attr:`embryo_bench.planning.workloads.Workload.own_recipe`); each with the repeats
        it runs of that workload: its own (a ``targets:`` entry's ``repeats``, a sweep
        point's), else the workload's (:attr:`embryo_bench.planning.workloads.Workload.
        repeats`: its entry's, its catalog entry's, ``train.repeats``)."""
        w = self.workloads.get(workload)
        if w is None or not w.own_recipe:
            targets = self.targets
        else:
            targets = {n: t for n, t in self.targets.items() if not t.sweep}
        if w is None or w.repeats is None:
            return targets
        return {
            n: t if t.sweep or n in self.own_repeats else dataclasses.replace(t, repeats=w.repeats)
            for n, t in targets.items()
        }

    def round_targets(self) -> dict[tuple[str, str], Target]:
        """(workload, target name) -> target, for every run's workload and target."""
        return {(w, n): t for w in self.workloads for n, t in self.workload_targets(w).items()}

    @property
    def first_rounds(self) -> int:
        """The rounds that always run: the most repeats of any target in any workload (the
        base's)."""
        return max(t.repeats for t in self.round_targets().values())

    @property
    def until(self) -> float:
        """``compare.until``: the half-width wanted of every ratio interval (a fraction);
        0.0 when rounds are not added."""
        return float(self.compare["until"])

    @property
    def noise(self) -> float:
        """``compare.noise``: the machine's paired noise a stop on ``compare.until`` is
        floored at (a fraction; 0.0: none, the rounds' own width decides)."""
        return float(self.compare["noise"])

    @property
    def max_rounds(self) -> int:
        """The most rounds that may run: ``compare.max_rounds`` with ``compare.until``, else
        :attr:`first_rounds`."""
        return self.compare["max_rounds"] if self.until else self.first_rounds

    @functools.cached_property
    def planned_runs(self) -> list[tuple[str, str, int]]:
        """Every run that may run, as (workload, target, repeat), in the order the rounds
        run them (:func:`round_order`, ``compare.order``), up to
        :attr:`max_rounds` rounds: round k holds repeat k of every workload on every
        target that runs at least k repeats of it (:meth:`workload_targets`: a workload
        with fewer repeats has no run in the rounds after its last), so a drift of the
        machine's speed lands on every workload alike; the rounds ``compare.until`` adds
        (after the most repeats) are shared by every workload and target alike."""
        c = self.compare
        order = round_order(self.round_targets(), c["order"], c["seed"], self.max_rounds)
        return [(w, n, k) for (w, n), k in order]

    def round_runs(self, rounds: int | None = None) -> list[tuple[str, str, int]]:
        """The runs of rounds 1..``rounds`` (default: :attr:`first_rounds`) as (workload,
        target, repeat), in the planned order (:attr:`planned_runs`).

        Raises:
            ValueError: ``rounds`` is more than :attr:`max_rounds`.
        """
        rounds = rounds or self.first_rounds
        if rounds > self.max_rounds:
            raise ValueError(f"{rounds} rounds: this plan has at most {self.max_rounds}")
        return [r for r in self.planned_runs if r[2] <= rounds]

    @functools.cached_property
    def all_runs(self) -> list[tuple[str, str, int]]:
        """Every run of the rounds that always run (:attr:`first_rounds`: without
        ``compare.until``, every run) as (workload, target, repeat), in the planned order
        (:attr:`planned_runs`)."""
        return self.round_runs()

    def workload_runs(self, workload: str, rounds: int | None = None) -> list[tuple[str, int]]:
        """A workload's runs of rounds 1..``rounds`` (default: :attr:`first_rounds`) as
        (target, repeat), in the planned order."""
        return [(t, k) for w, t, k in self.round_runs(rounds) if w == workload]

    def previous_run(
        self, target: str, repeat: int, workload: str = PAPER_WORKLOAD
    ) -> tuple[str, int, str] | None:
        """The run that runs just before this one in :attr:`planned_runs`, as (target,
        repeat, workload) (None for the first): the workflow makes each run wait for it, so
        the rounds run in the planned order.

        Raises:
            KeyError: no such run.
        """
        runs = self.planned_runs
        try:
            i = runs.index((workload, target, repeat))
        except ValueError:
            raise KeyError(f"no run {target} repeat {repeat} of {workload} in this plan") from None
        if not i:
            return None
        w, t, k = runs[i - 1]
        return t, k, w

    # --- rounds until the answer is sure (compare.until) -----------------------------------

    def comparison_base(self, workload: str = PAPER_WORKLOAD) -> str:
        """The target a workload's runs are compared with: :attr:`compare_base` where it
        trains that workload, else the target of the workload's first run (as the figures
        take it)."""
        if self.compare_base in self.workload_targets(workload):
            return self.compare_base
        return self.workload_runs(workload)[0][0]

    def round_run_dirs(self, rounds: int) -> list[str]:
        """Every run folder of every workload in rounds 1..``rounds``, in the planned order
        (what the check after round ``rounds`` reads)."""
        return [f"{self.outdir}/{layout.run_dir(t, k, w)}" for w, t, k in self.round_runs(rounds)]

    def round_check_params(self, round_: int) -> dict:
        """What the check after round ``round_`` measures (the ``round_check`` rule's
        params; :func:`embryo_bench.reporting.rounds.check_round`): per workload its base
        and its run folders of rounds 1..``round_``, and ``compare.min_difference``."""
        return {
            "round": round_,
            "min_difference": float(self.compare["min_difference"]),
            "workloads": {
                w: {"base": self.comparison_base(w), "runs": self.workload_run_dirs(w, round_)}
                for w in self.workloads
            },
        }

    def round_finished(self, round_: int) -> bool:
        """Every run of round ``round_`` has all its files on disk (a round finished before
        ``compare.until`` or ``compare.max_rounds`` was changed: it is kept, not dropped)."""
        runs = [(w, t) for w, t, k in self.planned_runs if k == round_]
        return bool(runs) and all(
            (Path(self.outdir) / layout.run_dir(t, round_, w) / f).is_file()
            for w, t in runs
            for f in (*layout.RUN_FILES, layout.RUN_SPEC)
        )

    def rounds_wanted(
        self,
        read_check: Callable[[int], dict],
        finished: Callable[[int], bool] | None = None,
    ) -> tuple[int, Decision | None]:
        """How many rounds run: :attr:`first_rounds` without ``compare.until``; with it,
        one more after each round whose check asks for one
        (:func:`embryo_bench.planning.rounds.decide`), up to :attr:`max_rounds`, and every
        round already finished after those (:meth:`round_finished`: a goal loosened later
        keeps what was measured).

        Args:
            read_check: round k -> the check after round k (the workflow reads the
                ``round_check`` checkpoint's output: asking for one that is not made yet
                makes Snakemake make it, and the runs before it, then ask again).
            finished: round k -> it is on disk (default: :meth:`round_finished`).

        Returns:
            (rounds, the decision after the last of them; None without ``compare.until``).
        """
        if not self.until:
            return self.first_rounds, None
        finished = finished or self.round_finished
        k = self.first_rounds
        while True:
            decision = decide(read_check(k), k, self.until, self.max_rounds, self.noise)
            if k >= self.max_rounds or not (decision.more or finished(k + 1)):
                return k, decision
            k += 1

    def workload_run_dirs(self, workload: str, rounds: int | None = None) -> list[str]:
        """Every run's folder of a workload, rounds 1..``rounds`` (default:
        :attr:`first_rounds`), in the planned order."""
        return [
            f"{self.outdir}/{layout.run_dir(t, k, workload)}"
            for t, k in self.workload_runs(workload, rounds)
        ]


def check_rounds(schedule: Schedule) -> None:
    """``compare.max_rounds`` leaves room for the rounds that run first
    (:attr:`Schedule.first_rounds`) when ``compare.until`` is set.

    Raises:
        ConfigError: naming both settings and the target with the most repeats.
    """
    first = schedule.first_rounds
    if schedule.until and schedule.max_rounds < first:
        most = next(n for (_, n), t in schedule.round_targets().items() if t.repeats == first)
        raise ConfigError(
            f"compare.max_rounds {schedule.max_rounds}: fewer than the {first} rounds that run "
            f"first (the repeats of target {most}); compare.until adds rounds after "
            f"those, so set max_rounds >= {first}"
        )


def check_round_checks(schedule: Schedule) -> None:
    """The round checks already on disk (``compare.until``), checked before any job: the
    workflow reads them when it plans the jobs, and makes one again only when its runs
    or settings change, so a damaged one would fail every plan.

    Raises:
        ConfigError: as :func:`embryo_bench.vocabulary.round_check.read_check` (naming the file,
            and that deleting it has the round measured again).
    """
    if not schedule.until:
        return
    for k in range(schedule.first_rounds, schedule.max_rounds + 1):
        path = Path(schedule.outdir) / check_path(k)
        if path.is_file():
            try:
                read_check(path, k)
            except DataError as exc:
                raise ConfigError(str(exc)) from None
