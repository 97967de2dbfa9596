"""Benchmark: how often the project's verdicts are wrong, and how often right, at a given
machine noise. Not a test: a simulation through the project's own functions, printing the
rates that docs/results.md records.

Each simulated experiment draws runs from a noise model and hands them to the same
functions the workflow's tables, claims and ``embryo-bench compare`` use:
:func:`embryo_bench.reporting.compare.ratio_interval` (paired rounds),
:func:`~embryo_bench.reporting.compare.unpaired_interval` (across folders),
:func:`~embryo_bench.reporting.compare.verdict` and
:func:`~embryo_bench.reporting.compare.direction` (the words and what they call),
:func:`embryo_bench.reporting.rounds.half_width` and
:func:`embryo_bench.planning.rounds.decide` (``compare.until``). Before the tables, one
experiment per paired cell goes through :func:`~embryo_bench.reporting.compare.
comparison_table` as well, and its verdicts must be the simulation's (else it stops): the
tables are the workflow's arithmetic, not a copy of it.

Noise model (the statistical review's, from this machine's measurements): a run's log
images/s is the target's true log ratio + the round's shock (one draw per round, shared by
its runs: the machine's speed that minute; sd = the CV) + a drift linear in the run's time
over the experiment (slope uniform in +-``--drift``, 10 %) + the run's own noise (lognormal,
CV ``--cv``); with ``--outliers P`` a run is 20 % slow with probability P. Within a round
the targets run in the rows of a Williams square (``compare.order: balanced``,
:func:`embryo_bench.planning.schedule.williams_rows`). Across folders each folder (a
workflow invocation: a session) adds its own effect, sd ``--session`` (0, 3, 6 %), to all
its runs, and with ``--target-session`` each target a session effect of its own as well
(one image's cache, one daemon's state: what a control does not divide out).

Tables (each cell ``--experiments`` experiments, default 2,000):

* **paired**, per CV x rounds x rows (targets compared with the base in one table, at the
  level the table gives them: :func:`~embryo_bench.reporting.compare.
  simultaneous_confidence`): the family-wise A/A rate (every target identical to the base;
  some row called faster or slower), the same with each row at 95 % on its own (as before
  the tables held their rows together), the A/A "the same within" rate, the coverage of the
  true ratio by the table's intervals, and the power at a true 2, 5 and 10 % (the first row
  that much faster, the others identical; called faster);
* **across folders**, per CV x session effect x rounds a side (each folder's rounds of a
  target and a control, paired as above): the A/A rate (the target in two folders called
  faster or slower) and the coverage of the plain row (its runs unpaired) and of the row
  relative to the control (:func:`embryo_bench.reporting.crossfolder_rows.controlled_row`,
  ``compare --control``), and the controlled row's power at a true 5 % slowdown;
* **reference**, per CV x session effect x sessions written: a reference file written by
  ``compare --write-reference`` from that many sessions of ``--rounds``' largest number of
  runs (:func:`embryo_bench.reporting.reference_file.reference_from`, read back by
  :func:`~embryo_bench.reporting.reference_file.read_reference`), then one more session of
  the same machine judged against it (:func:`~embryo_bench.reporting.crossfolder_rows.
  reference_row`): the false regression rate, the tolerance written (mean), and the power
  at a true 10 % and 20 % slowdown; beside it, the same new session against a hand-written
  entry at the true speed with ``--min-difference`` as its tolerance (what ``--reference``
  was before references were written from sessions);
* **until**, per goal x CV x ``--width-floor`` x ``--sd-bounds``: the rounds run (mean),
  the A/A rate and coverage at the stop (those that stopped early and those at the cap
  apart) and the power at a true 5 %, ``max_rounds`` 10; a stop before ``max_rounds`` judged
  at the level the workflow's table gives it (:attr:`embryo_bench.planning.rounds.Decision.
  confidence`, 99 %). ``--width-floor F`` sets ``compare.noise`` (the stop's floor,
  :func:`embryo_bench.planning.rounds.stop_width`) to F x the true paired sd, as an A/A
  measured apart from the rounds would give it; ``--sd-bounds`` is a what-if that stops on
  the rounds' own width widened by its sd's upper confidence bound (:func:`_sd_bound`).

The verdict's band X is ``--min-difference`` (``compare.min_difference``, 5 %).

Usage:
    python benchmarks/bench_verdicts.py [--experiments 2000] [--cv 0.03 0.06 0.09]
        [--rounds 3 5 10] [--rows 1 3] [--session 0 0.03 0.06] [--target-session 0]
        [--sessions 3 5] [--goals 0.02 0.03 0.05] [--width-floor 0] [--sd-bounds 0]
        [--outliers 0] [--drift 0.10] [--min-difference 0.05] [--seed 0] [--json PATH]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from scipy import stats

from embryo_bench.planning.rounds import decide
from embryo_bench.planning.schedule import williams_rows
from embryo_bench.recording.hardware import cpu_model
from embryo_bench.reporting import compare
from embryo_bench.reporting.crossfolder_rows import Expected, Part, controlled_row, reference_row
from embryo_bench.reporting.reference_file import read_reference, reference_from
from embryo_bench.reporting.rounds import half_width

#: How much slower an outlier run is (the review's 20 % slow outliers).
OUTLIER_SLOWDOWN = 0.80
#: The tables, in the order printed.
PARTS = ("paired", "across", "until", "reference")
#: The true differences the power columns are at.
POWER_AT = (0.02, 0.05, 0.10)


def _sd(cv: float) -> float:
    """The log-scale sd of a lognormal with coefficient of variation ``cv``."""
    return float(np.sqrt(np.log1p(cv**2)))


def paired_logs(
    rng: np.random.Generator,
    true_logs: np.ndarray,
    rounds: int,
    cv: float,
    drift: float,
    outliers: float,
) -> np.ndarray:
    """One experiment's log images/s in rounds: shape (rounds, 1 + len(true_logs)) float64,
    column 0 the base (true log ratio 0), in the order of a Williams square within each
    round (the times the drift is read at)."""
    n = 1 + len(true_logs)
    truth = np.concatenate([[0.0], true_logs])
    orders = williams_rows(n)
    slope = rng.uniform(-drift, drift)
    out = np.empty((rounds, n))
    for r in range(rounds):
        shock = rng.normal(0.0, _sd(cv))
        for position, target in enumerate(orders[r % len(orders)]):
            t = (r * n + position) / (rounds * n)
            out[r, target] = truth[target] + shock + np.log1p(slope * t)
    out += rng.normal(0.0, _sd(cv), size=out.shape)
    if outliers:
        out += np.where(rng.random(out.shape) < outliers, np.log(OUTLIER_SLOWDOWN), 0.0)
    return out


def _verdicts(logs: np.ndarray, min_difference: float, joint: bool = True):
    """Per compared target (columns 1..): (ratio, low, high, verdict) of its paired ratios to
    column 0, through :func:`compare.ratio_interval` and :func:`compare.verdict`, at the
    level a comparison table gives its throughput (:func:`compare.simultaneous_confidence`
    over the compared columns; 95 % each where not ``joint``)."""
    level = compare.simultaneous_confidence(logs.shape[1] - 1 if joint else 1)
    out = []
    for j in range(1, logs.shape[1]):
        ratios = np.exp(logs[:, j] - logs[:, 0])
        ratio, low, high = compare.ratio_interval(ratios, level)
        words = compare.verdict(len(ratios), ratio, low, high, min_difference, confidence=level)
        out.append((ratio, low, high, words))
    return out


def _called(words: str) -> str:
    return compare.direction(words)


def check_against_table(logs: np.ndarray, min_difference: float) -> None:
    """The simulation's verdicts of ``logs`` equal :func:`compare.comparison_table`'s on the
    same runs as a results table (raises AssertionError otherwise)."""
    rows = [
        {"target": f"t{j}", "repeat": r + 1, "images_per_s": float(np.exp(logs[r, j])),
         "time_to_accuracy_s": np.nan, "flags": ""}
        for r in range(logs.shape[0]) for j in range(logs.shape[1])
    ]  # fmt: skip
    table = compare.comparison_table(pd.DataFrame(rows), "t0", min_difference).set_index("target")
    for j, (_, _, _, words) in enumerate(_verdicts(logs, min_difference), start=1):
        got = table.loc[f"t{j}", "throughput_verdict"]
        assert got == words, f"comparison_table says {got!r}, the simulation {words!r}"


def paired_cell(rng, cv, rounds, rows, args) -> dict:
    """The paired table's cell: rates over ``args.experiments`` experiments (fractions)."""
    n = args.experiments
    aa_any = aa_each = aa_same = covered = total = 0
    for _ in range(n):
        logs = paired_logs(rng, np.zeros(rows), rounds, cv, args.drift, args.outliers)
        found = _verdicts(logs, args.min_difference)
        calls = [_called(w) for *_, w in found]
        aa_any += any(c in (compare.FASTER, compare.SLOWER) for c in calls)
        each = [_called(w) for *_, w in _verdicts(logs, args.min_difference, joint=False)]
        aa_each += any(c in (compare.FASTER, compare.SLOWER) for c in each)
        aa_same += sum(c == compare.SAME for c in calls)
        covered += sum(low <= 1.0 <= high for _, low, high, _ in found)
        total += len(found)
    cell = {
        "aa_familywise": aa_any / n,
        "aa_familywise_each_at_95": aa_each / n,
        "aa_same": aa_same / total,
        "coverage": covered / total,
    }
    for d in POWER_AT:
        hits = 0
        truth = np.zeros(rows)
        truth[0] = np.log1p(d)
        for _ in range(n):
            logs = paired_logs(rng, truth, rounds, cv, args.drift, args.outliers)
            hits += _called(_verdicts(logs, args.min_difference)[0][3]) == compare.FASTER
        cell[f"power_{d:g}"] = hits / n
    return cell


def _part(folder: str, name: str, logs: np.ndarray) -> Part:
    """One folder's runs of one target, as ``embryo-bench compare`` reads them: a
    :class:`Part` whose rows are a results table's (round = repeat, images/s, no flags)."""
    rows = pd.DataFrame(
        {
            "target": name,
            "repeat": np.arange(1, logs.size + 1),
            "images_per_s": np.exp(logs),
            "flags": "",
        }
    )
    return Part(folder, "w", name, name, "m", rows)


def across_cell(rng, cv, session, runs, args, target_session: float = 0.0) -> dict:
    """Across folders (two sessions, ``runs`` rounds each of a target and a control, paired
    within each folder's rounds as :func:`paired_logs` draws them, plus a session effect of
    sd ``session`` on all of a folder's runs and one of sd ``target_session`` on each
    target's runs in it, drawn apart): the plain row (the target's runs, unpaired:
    :func:`compare.unpaired_interval`) and the row relative to the control
    (:func:`~embryo_bench.reporting.crossfolder_rows.controlled_row`, ``compare --control``):
    A/A rate and coverage of each, and the controlled row's power at a true 5 % slowdown of
    the target in the second session (called slower)."""
    n = args.experiments
    called = covered = c_called = c_covered = c_power = 0
    for _ in range(n):
        for slowdown in (0.0, 0.05):
            sides = []
            for k in range(2):
                effect = rng.normal(0.0, session) if session else 0.0
                truth = np.array([np.log1p(-slowdown) if k else 0.0])
                logs = paired_logs(rng, truth, runs, cv, args.drift, args.outliers) + effect
                if target_session:  # each target's own, which the control does not share
                    logs += rng.normal(0.0, target_session, size=logs.shape[1])
                sides.append(logs)
            first, this = (
                (_part(f, "control", s[:, 0]), _part(f, "target", s[:, 1]))
                for f, s in zip(("first", "this"), sides, strict=True)
            )
            row = controlled_row(
                this[1], first[1], (this[0], first[0]), "first", args.min_difference
            )
            c_call = _called(row["verdict"])
            if slowdown:
                c_power += c_call == compare.SLOWER
                continue
            c_called += c_call in (compare.FASTER, compare.SLOWER)
            c_covered += row["ratio_low"] <= 1.0 <= row["ratio_high"]
            ratio, low, high = compare.unpaired_interval(
                np.exp(sides[1][:, 1]), np.exp(sides[0][:, 1])
            )
            words = compare.verdict(runs, ratio, low, high, args.min_difference, paired=False)
            called += _called(words) in (compare.FASTER, compare.SLOWER)
            covered += low <= 1.0 <= high
    return {
        "aa_called": called / n,
        "coverage": covered / n,
        "controlled_aa_called": c_called / n,
        "controlled_coverage": c_covered / n,
        "controlled_power_0.05": c_power / n,
    }


#: The true slowdowns the reference table's power columns are at.
REFERENCE_POWER_AT = (0.10, 0.20)


def _session_logs(rng, cv, session, runs, args, truth: float = 0.0) -> np.ndarray:
    """One session's log images/s of one target: ``runs`` rounds as :func:`paired_logs`
    draws the base's, plus the session's effect (sd ``session``) and ``truth``."""
    effect = rng.normal(0.0, session) if session else 0.0
    return paired_logs(rng, np.zeros(0), runs, cv, args.drift, args.outliers)[:, 0] + effect + truth


def written_reference(sessions: list[np.ndarray], min_difference: float):
    """The entry ``compare --write-reference`` writes from ``sessions`` (each one session's
    log images/s of the target), read back as ``--reference`` reads it (through a file):
    :class:`~embryo_bench.reporting.crossfolder_rows.Expected`."""
    folders = [f"session-{k}" for k in range(len(sessions))]
    parts = {
        (f, "w"): [_part(f, "target", logs)] for f, logs in zip(folders, sessions, strict=True)
    }
    data, _notes = reference_from(parts, folders, min_difference)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "reference.yaml"
        path.write_text(yaml.safe_dump(data))
        ((_, expected),) = read_reference(path, min_difference).items()
    return expected


def reference_cell(rng, cv, session, sessions, runs, args) -> dict:
    """Against a reference file: ``sessions`` sessions of ``runs`` rounds write it
    (:func:`written_reference`), one more session of the same machine is judged against it
    (:func:`~embryo_bench.reporting.crossfolder_rows.reference_row`; a regression is its
    ``regression``); the same new session against a hand-written entry at the true speed
    with ``min_difference`` as its tolerance. Fractions over ``args.experiments``."""
    n = args.experiments
    written = hand = 0
    tolerances = []
    power = dict.fromkeys(REFERENCE_POWER_AT, 0)
    hand_written = Expected(1.0, args.min_difference, any_machine=True)
    for _ in range(n):
        before = [_session_logs(rng, cv, session, runs, args) for _ in range(sessions)]
        expected = written_reference(before, args.min_difference)
        tolerances.append(expected.tolerance)
        new = _part("new", "target", _session_logs(rng, cv, session, runs, args))
        written += bool(reference_row(new, expected, "written")["regression"])
        hand += bool(reference_row(new, hand_written, "hand")["regression"])
        for slowdown in REFERENCE_POWER_AT:
            slow = _session_logs(rng, cv, session, runs, args, np.log1p(-slowdown))
            power[slowdown] += bool(
                reference_row(_part("new", "target", slow), expected, "written")["regression"]
            )
    return {
        "written_aa_regression": written / n,
        "tolerance_mean": float(np.mean(tolerances)),
        **{f"written_power_{d:g}": power[d] / n for d in REFERENCE_POWER_AT},
        "hand_aa_regression": hand / n,
    }


def _sd_bound(pairs: int, level: float) -> float:
    """A what-if, not the workflow's rule: the factor taking a sample sd of ``pairs`` paired
    log ratios to its one-sided upper confidence bound at ``level`` (chi-square), sqrt((n -
    1) / chi2.ppf(1 - level, n - 1)); 1 for ``level`` 0. A stop on the width times it is
    still a stop on the same rounds' spread: docs/results.md found it no help."""
    if not level or pairs < 2:
        return 1.0
    return float(np.sqrt((pairs - 1) / stats.chi2.ppf(1 - level, pairs - 1)))


def until_cell(
    rng, goal, cv, args, floor: float = 0.0, level: float = 0.0, max_rounds: int = 10
) -> dict:
    """``compare.until`` = ``goal`` with two targets: rounds until :func:`decide` stops, and
    the verdict there (A/A and a true 5 %). ``floor``: ``compare.noise`` at that many times the
    paired log ratio's true sd (0: unset); ``level``: a what-if, the rounds' own width times
    :func:`_sd_bound` at that level (0: none)."""
    n = args.experiments
    noise = floor * float(np.sqrt(2)) * _sd(cv)
    out = {}
    for name, truth in (("aa", 0.0), ("true5", np.log1p(0.05))):
        rounds_run, called, covered, faster, early_called = [], 0, 0, 0, 0
        for _ in range(n):
            logs = paired_logs(rng, np.array([truth]), max_rounds, cv, args.drift, args.outliers)
            for r in range(1, max_rounds + 1):
                ratios = np.exp(logs[:r, 1] - logs[:r, 0])
                ratio, low, high = compare.ratio_interval(ratios, compare.CONFIDENCE)
                width = half_width(low, high)
                width = None if width is None else width * _sd_bound(r, level)
                check = {"workloads": {"w": {"targets": {"x": {"half_width": width, "pairs": r}}}}}
                decision = decide(check, r, goal, max_rounds, noise)
                if not decision.more:
                    break
            if decision.confidence:  # an early stop: the table judges it at this level
                ratio, low, high = compare.ratio_interval(ratios, decision.confidence)
            rounds_run.append(r)
            judged_at = decision.confidence or compare.CONFIDENCE
            words = compare.verdict(r, ratio, low, high, args.min_difference, confidence=judged_at)
            called += _called(words) in (compare.FASTER, compare.SLOWER)
            # Split by how it ended: a stop on the width before the cap selects rounds whose
            # sample sd is small by chance (a larger t for the same mean).
            early_called += r < max_rounds and _called(words) in (compare.FASTER, compare.SLOWER)
            faster += _called(words) == compare.FASTER
            covered += low <= np.exp(truth) <= high
        early = int(np.sum(np.array(rounds_run) < max_rounds))
        out[name] = {
            "rounds_mean": float(np.mean(rounds_run)),
            "called": called / n,
            "stopped_early": early / n,
            "called_when_early": early_called / early if early else float("nan"),
            "called_at_cap": (called - early_called) / (n - early) if n > early else float("nan"),
            "faster": faster / n,
            "coverage": covered / n,
        }
    return out


def _pct(x: float) -> str:
    """A fraction as a percentage; "-" where there is none (NaN: no such experiment)."""
    return "-" if np.isnan(x) else f"{100 * x:.1f} %"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--experiments", type=int, default=2000)
    p.add_argument("--cv", type=float, nargs="+", default=[0.03, 0.06, 0.09])
    p.add_argument("--rounds", type=int, nargs="+", default=[3, 5, 10])
    p.add_argument("--rows", type=int, nargs="+", default=[1, 3])
    p.add_argument("--session", type=float, nargs="+", default=[0.0, 0.03, 0.06])
    p.add_argument("--target-session", type=float, nargs="+", default=[0.0])
    p.add_argument("--sessions", type=int, nargs="+", default=[3, 5])
    p.add_argument("--goals", type=float, nargs="+", default=[0.02, 0.03, 0.05])
    p.add_argument("--outliers", type=float, default=0.0)
    p.add_argument(
        "--sd-bounds",
        type=float,
        nargs="+",
        default=[0.0],
        help="until only, a what-if: stop on the rounds' own width times its sd's upper "
        "confidence bound at these levels (0: none, the workflow's rule)",
    )
    p.add_argument(
        "--width-floor",
        type=float,
        nargs="+",
        default=[0.0],
        help="until only: compare.noise set to F x the true paired sd (0: unset)",
    )
    p.add_argument("--drift", type=float, default=0.10)
    p.add_argument("--min-difference", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="the tables to print"
    )
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    started = time.monotonic()
    print(
        f"bench_verdicts: {cpu_model()}; {args.experiments} experiments a cell; "
        f"min_difference {_pct(args.min_difference)}, drift +-{_pct(args.drift)}, "
        f"outliers {_pct(args.outliers)}; seed {args.seed}"
    )
    for cv in args.cv:  # the simulation's arithmetic is the workflow's
        for rounds in args.rounds:
            for rows in args.rows:
                check_against_table(
                    paired_logs(rng, np.zeros(rows), rounds, cv, args.drift, 0.0),
                    args.min_difference,
                )
    result: dict = {
        "settings": vars(args) | {"json": str(args.json)},
        "paired": [],
        "across": [],
        "until": [],
        "reference": [],
    }
    if "paired" in args.parts:
        paired_table(rng, args, result)
    if "across" in args.parts:
        across_table(rng, args, result)
    if "until" in args.parts:
        until_table(rng, args, result)
    if "reference" in args.parts:
        reference_table(rng, args, result)
    result["seconds"] = round(time.monotonic() - started, 1)
    print(f"\n{result['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


def paired_table(rng, args, result) -> None:
    """The paired rounds' table, printed as each cell ends."""
    print("\n## Paired rounds (one table: the base and `rows` targets)\n")
    head = (
        "| CV | rounds | rows | A/A any row called | (each row at 95 %) | A/A same within "
        "| coverage |"
    )
    head += "".join(f" power at {_pct(d)} |" for d in POWER_AT)
    print(head)
    print("|" + "---|" * (7 + len(POWER_AT)))
    for cv in args.cv:
        for rounds in args.rounds:
            for rows in args.rows:
                cell = paired_cell(rng, cv, rounds, rows, args)
                result["paired"].append({"cv": cv, "rounds": rounds, "rows": rows, **cell})
                powers = "".join(f" {_pct(cell[f'power_{d:g}'])} |" for d in POWER_AT)
                print(
                    f"| {_pct(cv)} | {rounds} | {rows} | {_pct(cell['aa_familywise'])} | "
                    f"{_pct(cell['aa_familywise_each_at_95'])} | {_pct(cell['aa_same'])} | "
                    f"{_pct(cell['coverage'])} |{powers}",
                    flush=True,
                )


def across_table(rng, args, result) -> None:
    """The across-folders table, printed as each cell ends."""
    print("\n## Across folders (two sessions; plain: one target unpaired; controlled: relative")
    print("to a control target run in both)\n")
    print(
        "| CV | session effect | each target's own | rounds a side | plain: A/A called "
        "| coverage | controlled: A/A called | coverage | a true 5 % slowdown called |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for cv in args.cv:
        for session in args.session:
            for own in args.target_session:
                for runs in args.rounds:
                    cell = across_cell(rng, cv, session, runs, args, own)
                    result["across"].append(
                        {"cv": cv, "session": session, "target_session": own, "runs": runs,
                         **cell}
                    )  # fmt: skip
                    print(
                        f"| {_pct(cv)} | {_pct(session)} | {_pct(own)} | {runs} | "
                        f"{_pct(cell['aa_called'])} | {_pct(cell['coverage'])} | "
                        f"{_pct(cell['controlled_aa_called'])} | "
                        f"{_pct(cell['controlled_coverage'])} | "
                        f"{_pct(cell['controlled_power_0.05'])} |",
                        flush=True,
                    )


def until_table(rng, args, result) -> None:
    """compare.until's table, printed as each cell ends."""
    print("\n## compare.until (two targets, max_rounds 10)\n")
    print(
        "| goal | CV | compare.noise (x the true sd) | what-if: sd bound at | A/A rounds "
        "| A/A called | A/A coverage | A/A stopped early | called then | called at the cap "
        "| true 5 %: rounds | faster | coverage |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    grid = itertools.product(args.goals, args.cv, args.width_floor, args.sd_bounds)
    for goal, cv, floor, level in grid:
        cell = until_cell(rng, goal, cv, args, floor, level)
        result["until"].append(
            {"goal": goal, "cv": cv, "width_floor": floor, "sd_bound": level, **cell}
        )
        aa, t5 = cell["aa"], cell["true5"]
        print(
            f"| {_pct(goal)} | {_pct(cv)} | {floor:g} | {_pct(level) if level else '-'} | "
            f"{aa['rounds_mean']:.1f} | "
            f"{_pct(aa['called'])} | "
            f"{_pct(aa['coverage'])} | {_pct(aa['stopped_early'])} | "
            f"{_pct(aa['called_when_early'])} | {_pct(aa['called_at_cap'])} | "
            f"{t5['rounds_mean']:.1f} | {_pct(t5['faster'])} | "
            f"{_pct(t5['coverage'])} |",
            flush=True,
        )


def reference_table(rng, args, result) -> None:
    """The reference file's table, printed as each cell ends (runs a session: the largest
    of ``--rounds``)."""
    runs = max(args.rounds)
    print(f"\n## Against a reference written from sessions ({runs} runs a session)\n")
    power = "".join(f" a true {_pct(d)} slowdown called |" for d in REFERENCE_POWER_AT)
    print(
        "| CV | session effect | sessions written | A/A: regression | tolerance written (mean) |"
        + power
        + f" hand-written at the truth, ±{_pct(args.min_difference)}: A/A regression |"
    )
    print("|---|---|---|---|---|" + "---|" * len(REFERENCE_POWER_AT) + "---|")
    for cv in args.cv:
        for session in args.session:
            for sessions in args.sessions:
                cell = reference_cell(rng, cv, session, sessions, runs, args)
                result["reference"].append(
                    {"cv": cv, "session": session, "sessions": sessions, "runs": runs, **cell}
                )
                powers = "".join(
                    f" {_pct(cell[f'written_power_{d:g}'])} |" for d in REFERENCE_POWER_AT
                )
                print(
                    f"| {_pct(cv)} | {_pct(session)} | {sessions} | "
                    f"{_pct(cell['written_aa_regression'])} | {_pct(cell['tolerance_mean'])} |"
                    f"{powers} {_pct(cell['hand_aa_regression'])} |",
                    flush=True,
                )


if __name__ == "__main__":
    sys.exit(main())
