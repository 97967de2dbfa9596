"""The rows of ``embryo-bench compare`` (:mod:`embryo_bench.reporting.crossfolder`): each
result folder's finished runs read per workload (:func:`finished_run_dirs`,
:func:`read_folder`) and checked comparable, split into parts (a workload's target, or its
runs on one machine), and one row per part: against the first folder's (unpaired), against the
reference file's expected images/s, or not compared and why (:data:`COLUMNS`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import ConfigError, DataError
from ..vocabulary.figspec import FiguresSpec
from ..vocabulary.layout import FIGURES_SPEC, METRICS, workload_dir, workload_of_dir
from . import compare
from .merge import (
    difference,
    identity,
    read_finished_run,
    run_dirs,
    software_differences,
    split_by_machine,
    unfinished_runs,
)
from .runs import Machines, Run
from .summary import run_table

#: The columns of :attr:`embryo_bench.reporting.crossfolder.Comparison.table` (one CSV).
COLUMNS = [
    "section",
    "folder",
    "reference",
    "workload",
    "target",
    "reference_target",
    "machine",
    "reference_machine",
    "pairing",
    "runs",
    "reference_runs",
    "images_per_s",
    "reference_images_per_s",
    "ratio",
    "ratio_low",
    "ratio_high",
    "verdict",
    "threshold",
    "time_to_accuracy_ratio",
    "time_to_accuracy_low",
    "time_to_accuracy_high",
    "time_to_accuracy_verdict",
    "flagged_runs",
    "reference_flagged_runs",
    "cost_usd",
    "reference_cost_usd",
    "differs",
    "regression",
]


#: Run settings (run.json) not compared between the two sides of a row.
NOT_SETTINGS = ("format", "target", "repeat")


@dataclass(frozen=True)
class Expected:
    """One reference entry: ``images_per_s`` expected (images/s), the ``tolerance`` (a
    fraction) within which a slower speed is not a regression, and ``any_machine``: an entry
    named without a machine that its file lets judge every machine's runs (``machines:
    any``)."""

    images_per_s: float
    tolerance: float
    any_machine: bool = False


@dataclass
class Part:
    """One folder's runs of one name (a target, or a split part of it) in one workload:
    its rows of the results table (one per run)."""

    folder: str
    workload: str
    name: str
    target: str
    machine: str
    rows: pd.DataFrame
    spec: dict = field(default_factory=dict)
    run: Run | None = None


def finished_run_dirs(outdir: str) -> dict[str, list[str]]:
    """The finished runs of a result folder, per workload: the paper's
    (:data:`~embryo_bench.vocabulary.layout.PAPER_WORKLOAD`) under ``train/``, each other
    workload's under ``workloads/<name>/train/`` (:func:`embryo_bench.reporting.merge.run_dirs`
    of each); workloads without a finished run left out.

    Raises:
        ConfigError: ``outdir`` is not a folder, or holds no finished run at all.
    """
    found: dict[str, list[str]] = {}
    if not Path(outdir).is_dir():
        run_dirs(outdir)  # merge's one line: not a folder
    # Every workload's folder (layout.workload_dir: "" for the paper's, at the top).
    pattern = f"{workload_dir('*')}train/*/repeat-*/{METRICS}"
    named = sorted({p.parents[3].name for p in Path(outdir).glob(pattern)})
    for prefix in ["", *(workload_dir(w) for w in named)]:
        if any((Path(outdir) / prefix).glob(f"train/*/repeat-*/{METRICS}")):
            found[workload_of_dir(prefix)] = run_dirs(Path(outdir) / prefix)
    if not found:
        raise ConfigError(
            f"{outdir} holds no finished run (no train/<target>/repeat-<k>/{METRICS}, "
            f"nor {workload_dir('<name>')}train/<target>/repeat-<k>/{METRICS})"
        )
    return found


def read_folder(outdir: str) -> tuple[dict[str, list[Run]], list[str]]:
    """A result folder's finished runs per workload, each checked as a merged folder's
    (:func:`embryo_bench.reporting.merge.read_finished_run`), and a note for its unfinished
    runs (left out)."""
    runs, notes = {}, []
    try:
        found = finished_run_dirs(outdir)
        for workload, dirs in found.items():
            runs[workload] = [read_finished_run(d) for d in dirs]
    except (ConfigError, DataError) as exc:
        # merge's checks, named for this command (merge: X -> compare: X)
        raise ConfigError(f"compare: {str(exc).removeprefix('merge: ')}") from None
    for workload in found:
        left = unfinished_runs(Path(outdir) / workload_dir(workload))
        if left:
            notes.append(
                f"{outdir}: {len(left)} unfinished run(s) of workload {workload} left out "
                f"(no {METRICS}): {', '.join(left)}"
            )
    return runs, notes


def check_comparable(folders: dict[str, dict[str, list[Run]]]) -> None:
    """Every run of a workload, in every folder, trained on the same data with the same
    preprocessing as the first one (:func:`embryo_bench.reporting.merge.identity`).

    Raises:
        ConfigError: naming both runs and the first difference.
    """
    first: dict[str, Run] = {}
    for runs in folders.values():
        for workload, rs in runs.items():
            for run in rs:
                ref = first.setdefault(workload, run)
                diff = difference(identity(ref), identity(run))
                if diff:
                    raise ConfigError(
                        f"compare: {run.dir} is not comparable with {ref.dir} ({diff}): runs "
                        "on other data or preprocessing cannot be compared"
                    )


def base_of(outdir: str, workload: str, names: list[str], split) -> tuple[str, str]:
    """A folder's ``compare.base`` for a workload, as its figures named it (its
    ``figures-spec.json``, :class:`embryo_bench.vocabulary.figspec.FiguresSpec`), and a note
    when there is none (then the first of ``names``).

    Raises:
        DataError: the spec is unreadable, edited or of a newer format.
    """
    path = Path(outdir) / workload_dir(workload) / FIGURES_SPEC
    if path.is_file():
        base = split.name(FiguresSpec.read(path).compare_base)
        if base in names:
            return base, ""
    note = f"{outdir}, workload {workload}: no compare.base in {path}; {names[0]} is the base"
    return names[0], note


def prices_of(outdir: str, workload: str) -> dict[str, dict]:
    """A folder's targets' report fields for a workload (hourly_usd in USD/h, price_source),
    as its figures priced them (its ``figures-spec.json``); {} where it has none.

    Raises:
        DataError: the spec is unreadable, edited or of a newer format.
    """
    path = Path(outdir) / workload_dir(workload) / FIGURES_SPEC
    return dict(FiguresSpec.read(path).targets) if path.is_file() else {}


def _differs(mine: Part, theirs: Part) -> str:
    """The run settings (run.json, nested keys dotted) in which ``mine`` differs from
    ``theirs``, and its software (:func:`embryo_bench.reporting.merge.software_differences`),
    as "threads 1 (first folder 2); ..."; "" when the same."""

    def flat(d: dict, prefix: str = "") -> dict:
        out = {}
        for k, v in d.items():
            if prefix or k not in NOT_SETTINGS:
                key = f"{prefix}{k}"
                out |= flat(v, f"{key}.") if isinstance(v, dict) else {key: v}
        return out

    a, b = flat(mine.spec), flat(theirs.spec)
    notes = [
        f"{k} {a.get(k)!r} (first folder {b.get(k)!r})"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
    if mine.run is not None and theirs.run is not None:
        software = software_differences(mine.run, [theirs.run])
        notes += [f"software: {software}".replace("(here ", "(first folder ")] if software else []
    return "; ".join(notes)


def geomean(values: pd.Series) -> float:
    """Geometric mean of the positive numbers among ``values``; NaN without one."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if v.size else np.nan


def _flagged(part: Part | None) -> int:
    """Runs of ``part`` that carry a stability flag (0 without ``part``)."""
    return int((part.rows["flags"].fillna("") != "").sum()) if part is not None else 0


def _cost(part: Part | None) -> float:
    """The median cost of a run of ``part`` (USD: training time x the target's hourly price,
    :func:`embryo_bench.reporting.summary.cost_usd`); NaN without a price or ``part``."""
    if part is None or "cost_usd" not in part.rows:
        return np.nan
    v = pd.to_numeric(part.rows["cost_usd"], errors="coerce").dropna()
    return float(v.median()) if len(v) else np.nan


def row_of(section: str, part: Part | None, ref: Part | None, **cells) -> dict:
    """A :data:`COLUMNS` row: the two sides' names, machines, runs, speeds, flagged runs and
    costs (either side may be missing), and ``cells``."""
    row = dict.fromkeys(COLUMNS, "")
    row |= {
        "section": section,
        "folder": part.folder if part else "",
        "workload": part.workload if part else ref.workload if ref else "",
        "target": part.name if part else "",
        "reference_target": ref.name if ref else "",
        "machine": part.machine if part else "",
        "reference_machine": ref.machine if ref else "",
        "runs": len(part.rows) if part else 0,
        "reference_runs": len(ref.rows) if ref else 0,
        "images_per_s": geomean(part.rows["images_per_s"]) if part else np.nan,
        "reference_images_per_s": geomean(ref.rows["images_per_s"]) if ref else np.nan,
        "flagged_runs": _flagged(part),
        "reference_flagged_runs": _flagged(ref),
        "cost_usd": _cost(part),
        "reference_cost_usd": _cost(ref),
        "regression": False,
    }
    return row | cells


def across_row(part: Part, ref: Part, first: str, min_difference: float, family: int = 1) -> dict:
    """``part`` (another folder's) against ``ref`` (the first folder's), unpaired
    (:func:`embryo_bench.reporting.compare.comparison_table` with ``part`` made elsewhere),
    its throughput interval one of ``family`` that hold together at 95 %; shown, never a
    regression (the session's own speed is in it)."""
    sides = [ref.rows.assign(target="first"), part.rows.assign(target="this")]
    both = pd.concat(sides, ignore_index=True)
    table = compare.comparison_table(
        both, "first", min_difference, elsewhere={"this"}, family=family
    )
    by_side = table.set_index("target")
    r = by_side.loc["this"]
    return row_of(
        "across",
        part,
        ref,
        reference=first,
        pairing=r["pairing"],
        ratio=r["throughput_ratio"],
        ratio_low=r["throughput_low"],
        ratio_high=r["throughput_high"],
        verdict=r["throughput_verdict"],
        threshold=min_difference,
        time_to_accuracy_ratio=r["time_to_accuracy_ratio"],
        time_to_accuracy_low=r["time_to_accuracy_low"],
        time_to_accuracy_high=r["time_to_accuracy_high"],
        # Its words name the base: here the first folder's runs.
        time_to_accuracy_verdict=str(r["time_to_accuracy_verdict"]).replace("base", "first folder"),
        flagged_runs=int(r["flagged_runs"]),
        reference_flagged_runs=int(by_side.loc["first", "flagged_runs"]),
        differs=_differs(part, ref),
        # Never a regression: with one session a side, a speed shared by all of a session's
        # runs (the day's CPU, the host's load) is in the ratio and not in its interval, and
        # an A/A pair of folders read as a slowdown (crossfolder's docstring).
        regression=False,
    )


def round_ratios(part: Part, control: Part) -> np.ndarray:
    """``part``'s images/s over ``control``'s in each round both ran in (one folder's paired
    ratios, :func:`embryo_bench.reporting.compare.paired_ratios`), float64, in round order;
    empty where they share no round."""
    sides = [control.rows.assign(target="control"), part.rows.assign(target="this")]
    both = pd.concat(sides, ignore_index=True).assign(round=lambda t: t["repeat"].astype(int))
    ratios = compare.paired_ratios(both, "control").sort_values("round")["ratio"]
    ratios = ratios.to_numpy(dtype=float)
    return ratios[np.isfinite(ratios) & (ratios > 0)]


def controlled_row(
    part: Part,
    ref: Part,
    controls: tuple[Part, Part],
    first: str,
    min_difference: float,
    confidence: float = compare.CONFIDENCE,
) -> dict:
    """``part`` (another folder's) against ``ref`` (the first folder's) relative to a control
    target run in both sessions: each folder's paired ratios to its control
    (:func:`round_ratios`, ``controls`` = (this folder's control, the first folder's)), and
    the ratio of their geometric means with Welch's interval
    (:func:`embryo_bench.reporting.compare.unpaired_interval`), a ratio of ratios.

    A speed shared by all of one session's runs (the day's CPU, the host's load, one
    invocation's drift) divides out, which the plain across row cannot do: a statistical
    review found an A/A pair of folders called different in up to 27.5 % with a session
    effect. The price: a change that slows the control as much as the target is not seen.

    Returns:
        a :data:`COLUMNS` row, section "controlled": runs and reference_runs are the pairs
        each side, pairing names the control, ratio/low/high at ``confidence``, verdict
        (:func:`~embryo_bench.reporting.compare.verdict`, unpaired, at least
        :data:`~embryo_bench.reporting.compare.MIN_PAIRS` pairs a side), regression.
    """
    mine, theirs = round_ratios(part, controls[0]), round_ratios(ref, controls[1])
    cells = {
        "reference": first,
        "threshold": min_difference,
        "pairing": f"relative to {controls[0].name}",
        "differs": _differs(part, ref),
    }
    row = row_of("controlled", part, ref, **cells)
    row |= {"runs": mine.size, "reference_runs": theirs.size}
    if not mine.size or not theirs.size:
        side = "this folder" if not mine.size else "the first folder"
        return row | {"verdict": f"no round with the control in {side}"}
    ratio, low, high = compare.unpaired_interval(mine, theirs, confidence)
    n = min(mine.size, theirs.size)
    # Each side's unit is a round with the control, not a run.
    words = compare.verdict(
        n, ratio, low, high, min_difference, paired=False, confidence=confidence,
        sides=("round with the control", "rounds with the control"),
    )  # fmt: skip
    return row | {
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "verdict": words,
        "regression": compare.is_regression(words),
    }


def reference_row(part: Part, expected: Expected, reference: str) -> dict:
    """``part``'s runs against an expected speed: the geometric mean over it with a 95 % t
    interval on the logarithms (:func:`embryo_bench.reporting.compare.ratio_interval`) and
    the verdict rule with the entry's tolerance."""
    speeds = pd.to_numeric(part.rows["images_per_s"], errors="coerce").dropna()
    speeds = speeds[speeds > 0]
    n = len(speeds)
    cells = {"reference": reference, "threshold": expected.tolerance, "pairing": "reference"}
    cells["flagged_runs"] = int((part.rows["flags"].fillna("") != "").sum())
    if not n:
        return row_of("reference", part, None, **cells, verdict="not measured")
    ratio, low, high = compare.ratio_interval(speeds / expected.images_per_s)
    if n < compare.MIN_PAIRS:
        why = "one run: no interval" if n == 1 else f"{n} runs: too few for a verdict"
        why += f" ({compare.MIN_PAIRS} needed)" if n > 1 else ""
    else:
        why = compare.verdict(n, ratio, low, high, expected.tolerance, paired=False)
    row = row_of("reference", part, None, **cells)
    return row | {
        "reference_images_per_s": expected.images_per_s,
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "verdict": why,
        "regression": compare.is_regression(why),
    }


def folder_parts(
    folders: dict[str, dict[str, list[Run]]],
) -> tuple[dict[tuple[str, str], list[Part]], dict, list[str]]:
    """Each folder's runs per workload, split by machine, as :class:`Part` s in the order
    of their first run; the split per (folder, workload); the split's notes."""
    everything = [r for runs in folders.values() for rs in runs.values() for r in rs]
    machines = Machines(everything)
    parts: dict[tuple[str, str], list[Part]] = {}
    splits, notes = {}, []
    for outdir, runs in folders.items():
        for workload, rs in runs.items():
            mine = {id(r) for r in rs}
            # The other folders' runs go in as "merged" ones, so that one machine has one
            # label in every folder (Machines of all the runs).
            split = split_by_machine(rs, [r for r in everything if id(r) not in mine], {})
            splits[outdir, workload] = split
            notes += [f"{outdir}, workload {workload}: {n}" for n in split.notes]
            # Priced as the folder's own figures priced its targets: a run's cost is its
            # training time at its folder's price.
            priced = prices_of(outdir, workload)
            table = run_table(split.runs, priced, "")
            table["machine"] = [machines.of(r).label for r in rs]
            found: dict[str, Part] = {}
            for run, machine in zip(split.runs, table["machine"], strict=True):
                if run.name not in found:
                    rows = table[table["target"] == run.name]
                    spec = run.spec or {}
                    found[run.name] = Part(
                        outdir, workload, run.name, run.planned_name, machine, rows, spec, run
                    )
            parts[outdir, workload] = list(found.values())
    return parts, splits, notes
