"""Result folders compared with each other: ``embryo-bench compare A B
[C ...]``, for runs from any machines or days, and against expected speeds.

A result folder is a workflow's ``outdir``: the paper's runs under
``train/<target>/repeat-<k>/``, each other workload's under
``workloads/<name>/train/<target>/repeat-<k>/``. The choices:

* **The first folder is the reference point.** For each other folder, each (workload,
  target) it shares with the first gets the ratio of its images/s to the first folder's:
  the ratio of the geometric means with Welch's 95 % t interval on the logarithms, and the
  same verdict rule as the figures (:func:`embryo_bench.reporting.compare.verdict`: at least
  :data:`~embryo_bench.reporting.compare.MIN_PAIRS` runs on each side, an interval that
  excludes 1, a ratio further from 1 than ``min_difference`` on the log scale). Always
  *unpaired*: runs in different folders never share a round, whatever their repeat numbers.
  Time to accuracy is compared the same way (as a speed: above 1 is faster).
* **Runs on different machines are never pooled.** A target whose runs in one folder ran on
  several machines becomes ``<target>@<machine>`` parts
  (:func:`embryo_bench.reporting.merge.split_by_machine`, as the figures split it), with one
  machine label for one machine in every folder (:class:`embryo_bench.reporting.runs.Machines`
  of all the folders' runs). Each part of another folder is compared with the first
  folder's part on the same machine, else with the part that stands for that target there
  (most runs); each row names both machines, so a ratio between two CPUs says so.
* **Each folder's own rounds** (where a folder ran two or more targets of a workload): its
  paired comparison with its ``compare.base`` (from its ``figures-spec.json``; without one,
  the first target by name), as its figures show it. Shown beside, never an exit status: a
  target slower than another target is no regression.
* **A reference file** (:func:`read_reference`): expected images/s per target, each with a
  tolerance, as ReFrame's performance references give a value and thresholds per system.
  Every folder's runs of a target are compared with its expected value: the geometric mean
  over the expected value with a 95 % t interval on the logarithms, and the verdict rule
  with the tolerance in place of ``min_difference`` (log scale: a tolerance of 0.10 calls
  a ratio below 1 / 1.10 = 0.909 slower when its interval is below 1).
* **A regression** is a row whose throughput verdict is "slower": another folder against
  the first, or any folder against the reference file. Fewer than
  :data:`~embryo_bench.reporting.compare.MIN_PAIRS` runs give a ratio and no verdict, so no
  regression (the table says so).

The folders are read, never written, and checked as ``merge:`` checks them
(:func:`embryo_bench.reporting.merge.run_dirs`,
:func:`~embryo_bench.reporting.merge.read_finished_run`: every run's images/s and times
positive and finite; the data and preprocessing of each workload's runs alike in every
folder), before anything is compared: a bad folder is one line naming it, and a reference
file's numbers are finite (:func:`read_reference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from jsonschema import Draft202012Validator

from ..errors import ConfigError, DataError
from ..vocabulary.config import read_config_file
from ..vocabulary.figspec import FiguresSpec
from ..vocabulary.layout import FIGURES_SPEC, METRICS, PAPER_WORKLOAD, workload_dir, workload_of_dir
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
from .readable_tables import comparison_note, number_text, readable_comparison
from .runs import Machines, Run
from .summary import run_table

#: The sections of a comparison, as its CSV's ``section`` column names them: another folder
#: against the first, a folder's own rounds against its base, a folder against the
#: reference file.
SECTIONS = ("across", "within", "reference")
#: The columns of :attr:`Comparison.table` (one CSV).
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
    "differs",
    "regression",
]
#: The verdicts that have an interval (the others say why there is none).
CALLED = ("faster", "slower", "no measured difference")
#: What a row says where one side has no runs of its target.
ONLY_FIRST = "not in this folder"
ONLY_THIS = "not in the first folder"
NO_RUN = "no run"
#: Run settings (run.json) not compared between the two sides of a row.
NOT_SETTINGS = ("format", "target", "repeat")

_ENTRY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["images_per_s"],
    "properties": {
        "images_per_s": {"type": "number", "exclusiveMinimum": 0},
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
#: What a reference file (``--reference``) may hold: a tolerance for every entry, the
#: paper's workload's targets, and other workloads' targets by workload name; an entry is
#: the expected images/s and, optionally, its own tolerance (a fraction).
REFERENCE_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "tolerance": {"type": "number", "minimum": 0, "maximum": 1},
        "targets": {"type": "object", "additionalProperties": _ENTRY},
        "workloads": {
            "type": "object",
            "additionalProperties": {"type": "object", "additionalProperties": _ENTRY},
        },
    },
}
_REFERENCE_VALIDATOR = Draft202012Validator(REFERENCE_SCHEMA)


@dataclass(frozen=True)
class Expected:
    """One reference entry: ``images_per_s`` expected (images/s) and the ``tolerance``
    (a fraction) within which a slower speed is not a regression."""

    images_per_s: float
    tolerance: float


def read_reference(path: str | Path, tolerance: float) -> dict[tuple[str, str], Expected]:
    """A reference file: expected images/s per target, as ReFrame's references give
    ``(value, lower, upper, unit)`` per system and variable, here per (workload, target),
    images/s only and a single tolerance (slowdowns only), e.g.::

        tolerance: 0.10            # every entry's, unless it gives its own
        targets:                   # the paper's workload
          host-1cpu: {images_per_s: 52.0}
          host-2cpu: {images_per_s: 95.0, tolerance: 0.05}
        workloads:
          mnist-mlp:
            host-1cpu: {images_per_s: 900}

    A target name may be a split part's, ``<target>@<machine>``; otherwise an entry holds
    for every machine's part of that target. Validated against :data:`REFERENCE_SCHEMA`
    (jsonschema). The tolerance is judged as ``compare.min_difference`` is, on the log
    scale (:func:`embryo_bench.reporting.compare.verdict`): with 0.10, a geometric mean below
    expected / 1.10 whose interval is below the expected value is a regression (ReFrame's
    lower threshold -0.10 would fail below expected x 0.90 on a single value).

    Args:
        tolerance: the tolerance of entries that give none, in a file that gives none
            (``--min-difference``).

    Returns:
        (workload, target) -> :class:`Expected`; the paper's workload is
        :data:`embryo_bench.vocabulary.layout.PAPER_WORKLOAD`.

    Raises:
        ConfigError: one line naming the file and the key: not a file, not YAML (line and
            column), a number that is NaN or an infinity, an unknown key, a value of the
            wrong type or range, no entry.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--reference {path}: not a file (expected images/s per target, YAML)")
    data = read_config_file(path)
    errors = sorted(_REFERENCE_VALIDATOR.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = ".".join(str(p) for p in e.absolute_path)
        if e.validator == "additionalProperties":
            known = ", ".join(e.schema.get("properties", {}))
            extra = [k for k in e.instance if k not in e.schema.get("properties", {})]
            where = ".".join(p for p in (where, extra[0]) if p)
            message = f"unknown key; expected one of {known}"
        elif e.validator == "minProperties":
            message = "holds no reference; expected targets: or workloads:"
        else:
            message = e.message
        raise ConfigError(f"{path}: {where + ': ' if where else ''}{message}")
    default = data.get("tolerance", tolerance)
    entries = {(PAPER_WORKLOAD, t): e for t, e in data.get("targets", {}).items()}
    for workload, targets in data.get("workloads", {}).items():
        entries |= {(workload, t): e for t, e in targets.items()}
    if not entries:
        raise ConfigError(
            f"{path}: holds no target; expected images/s under targets: or workloads:"
        )
    return {
        key: Expected(float(e["images_per_s"]), float(e.get("tolerance", default)))
        for key, e in entries.items()
    }


@dataclass
class Comparison:
    """What :func:`compare_folders` found.

    Attributes:
        folders: the result folders, the first the reference point.
        table: one row per compared (folder, workload, target), :data:`COLUMNS`: section
            (:data:`SECTIONS`), ratio (above 1: faster than the reference side), ratio_low
            and ratio_high (95 % interval), verdict, threshold (the fraction within which a
            difference is noise: ``min_difference`` or the reference's tolerance),
            images_per_s (geometric mean of the row's runs, images/s), flagged_runs and
            reference_flagged_runs (runs that carry a stability flag, each side), differs
            (run settings and software that differ from the first folder's), regression
            (True where the throughput verdict is "slower" across folders or against the
            reference).
        within: (folder, workload, base, :func:`embryo_bench.reporting.compare.comparison_table`)
            per folder and workload with two or more targets: the folder's own rounds.
        notes: sentences to show once (split targets, unfinished runs left out, bases).
        min_difference: the fraction used.
        reference: the reference file, or "".
    """

    folders: list[str]
    table: pd.DataFrame
    within: list[tuple[str, str, str, pd.DataFrame]]
    notes: list[str]
    min_difference: float
    reference: str = ""

    @property
    def regressions(self) -> pd.DataFrame:
        """The rows that measured a slowdown (:attr:`table`'s regression)."""
        return self.table[self.table["regression"].astype(bool)]


@dataclass
class _Part:
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


def _read_folder(outdir: str) -> tuple[dict[str, list[Run]], list[str]]:
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


def _check_comparable(folders: dict[str, dict[str, list[Run]]]) -> None:
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


def _base(outdir: str, workload: str, names: list[str], split) -> tuple[str, str]:
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


def _differs(mine: _Part, theirs: _Part) -> str:
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


def _geomean(values: pd.Series) -> float:
    """Geometric mean of the positive numbers among ``values``; NaN without one."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    v = v[np.isfinite(v) & (v > 0)]
    return float(np.exp(np.log(v).mean())) if v.size else np.nan


def _row(section: str, part: _Part | None, ref: _Part | None, **cells) -> dict:
    """A :data:`COLUMNS` row: the two sides' names, machines, runs and speeds (either side
    may be missing), and ``cells``."""
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
        "images_per_s": _geomean(part.rows["images_per_s"]) if part else np.nan,
        "reference_images_per_s": _geomean(ref.rows["images_per_s"]) if ref else np.nan,
        "regression": False,
    }
    return row | cells


def _across(part: _Part, ref: _Part, first: str, min_difference: float) -> dict:
    """``part`` (another folder's) against ``ref`` (the first folder's), unpaired
    (:func:`embryo_bench.reporting.compare.comparison_table` with ``part`` made elsewhere)."""
    sides = [ref.rows.assign(target="first"), part.rows.assign(target="this")]
    both = pd.concat(sides, ignore_index=True)
    table = compare.comparison_table(both, "first", min_difference, elsewhere={"this"})
    by_side = table.set_index("target")
    r = by_side.loc["this"]
    return _row(
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
        regression=r["throughput_verdict"] == "slower",
    )


def _against(part: _Part, expected: Expected, reference: str) -> dict:
    """``part``'s runs against an expected speed: the geometric mean over it with a 95 % t
    interval on the logarithms (:func:`embryo_bench.reporting.compare.ratio_interval`) and
    the verdict rule with the entry's tolerance."""
    speeds = pd.to_numeric(part.rows["images_per_s"], errors="coerce").dropna()
    speeds = speeds[speeds > 0]
    n = len(speeds)
    cells = {"reference": reference, "threshold": expected.tolerance, "pairing": "reference"}
    cells["flagged_runs"] = int((part.rows["flags"].fillna("") != "").sum())
    if not n:
        return _row("reference", part, None, **cells, verdict="not measured")
    ratio, low, high = compare.ratio_interval(speeds / expected.images_per_s)
    if n < compare.MIN_PAIRS:
        why = "one run: no interval" if n == 1 else f"{n} runs: too few for a verdict"
        why += f" ({compare.MIN_PAIRS} needed)" if n > 1 else ""
    else:
        why = compare.verdict(n, ratio, low, high, expected.tolerance, paired=False)
    row = _row("reference", part, None, **cells)
    return row | {
        "reference_images_per_s": expected.images_per_s,
        "ratio": ratio,
        "ratio_low": low,
        "ratio_high": high,
        "verdict": why,
        "regression": why == "slower",
    }


def _parts(
    folders: dict[str, dict[str, list[Run]]],
) -> tuple[dict[tuple[str, str], list[_Part]], dict, list[str]]:
    """Each folder's runs per workload, split by machine, as :class:`_Part` s in the order
    of their first run; the split per (folder, workload); the split's notes."""
    everything = [r for runs in folders.values() for rs in runs.values() for r in rs]
    machines = Machines(everything)
    parts: dict[tuple[str, str], list[_Part]] = {}
    splits, notes = {}, []
    for outdir, runs in folders.items():
        for workload, rs in runs.items():
            mine = {id(r) for r in rs}
            # The other folders' runs go in as "merged" ones, so that one machine has one
            # label in every folder (Machines of all the runs).
            split = split_by_machine(rs, [r for r in everything if id(r) not in mine], {})
            splits[outdir, workload] = split
            notes += [f"{outdir}, workload {workload}: {n}" for n in split.notes]
            table = run_table(split.runs, {}, "")
            table["machine"] = [machines.of(r).label for r in rs]
            found: dict[str, _Part] = {}
            for run, machine in zip(split.runs, table["machine"], strict=True):
                if run.name not in found:
                    rows = table[table["target"] == run.name]
                    spec = run.spec or {}
                    found[run.name] = _Part(
                        outdir, workload, run.name, run.planned_name, machine, rows, spec, run
                    )
            parts[outdir, workload] = list(found.values())
    return parts, splits, notes


def compare_folders(
    outdirs: list[str],
    min_difference: float,
    reference: dict[tuple[str, str], Expected] | None = None,
    reference_name: str = "",
) -> Comparison:
    """Compare result folders: every other folder's targets against the first folder's,
    each folder's own rounds, and every folder against ``reference`` (the module's
    docstring says how).

    Args:
        outdirs: two or more result folders (workflow outdirs), the first the reference
            point; with ``reference``, one is enough.
        min_difference: the fraction within which a difference is noise
            (``compare.min_difference``, e.g. 0.05).
        reference: :func:`read_reference`'s entries, or None.
        reference_name: the reference file's name, for the table.

    Returns:
        :class:`Comparison`.

    Raises:
        ConfigError: a folder given twice (after normalising the path), not a folder, with
            no finished run, a run the figures could not read (a measurement such as its
            images/s not a positive finite number included:
            :func:`embryo_bench.reporting.merge.check_measurements`), runs of a workload on
            other data or preprocessing than the first folder's, a ``reference`` of which no
            entry matches a run (one line naming it).
        DataError: a folder's ``figures-spec.json`` is unreadable.
    """
    seen: dict[Path, str] = {}
    for outdir in outdirs:
        real = Path(outdir).resolve()
        if real in seen:
            raise ConfigError(f"compare: {seen[real]} and {outdir} are the same folder")
        seen[real] = outdir
    folders: dict[str, dict[str, list[Run]]] = {}
    notes: list[str] = []
    for outdir in outdirs:
        folders[outdir], more = _read_folder(outdir)
        notes += more
    _check_comparable(folders)
    parts, splits, split_notes = _parts(folders)
    notes += split_notes
    first = outdirs[0]
    rows = []
    for outdir in outdirs[1:]:
        workloads = dict.fromkeys([*folders[first], *folders[outdir]])
        for workload in workloads:
            theirs = parts.get((first, workload), [])
            used = set()
            for part in parts.get((outdir, workload), []):
                same = [p for p in theirs if p.target == part.target]
                on_machine = [p for p in same if p.machine == part.machine]
                stands = splits[first, workload].name(part.target) if same else ""
                ref = (on_machine or [p for p in same if p.name == stands] or [None])[0]
                if ref is None:
                    rows.append(_row("across", part, None, reference=first, verdict=ONLY_THIS))
                    continue
                used.add(ref.name)
                rows.append(_across(part, ref, first, min_difference))
            for ref in theirs:
                if ref.name not in used:
                    row = _row("across", None, ref, reference=first, verdict=ONLY_FIRST)
                    rows.append(row | {"folder": outdir})
    within = []
    for (outdir, workload), ps in parts.items():
        names = [p.name for p in ps]
        if len(names) < 2:
            continue
        base, note = _base(outdir, workload, names, splits[outdir, workload])
        notes += [note] if note else []
        table = pd.concat([p.rows for p in ps])
        try:
            paired = compare.comparison_table(table, base, min_difference, order=names)
        except ValueError as exc:
            raise DataError(f"compare: {outdir}, workload {workload}: {exc}") from None
        within.append((outdir, workload, base, paired))
        for _, r in paired.iloc[1:].iterrows():
            part = next(p for p in ps if p.name == r["target"])
            rows.append(
                _row(
                    "within", part, next(p for p in ps if p.name == base),
                    reference=outdir, pairing=r["pairing"], ratio=r["throughput_ratio"],
                    ratio_low=r["throughput_low"], ratio_high=r["throughput_high"],
                    verdict=r["throughput_verdict"], threshold=min_difference,
                    time_to_accuracy_ratio=r["time_to_accuracy_ratio"],
                    time_to_accuracy_low=r["time_to_accuracy_low"],
                    time_to_accuracy_high=r["time_to_accuracy_high"],
                    time_to_accuracy_verdict=r["time_to_accuracy_verdict"],
                    flagged_runs=int(r["flagged_runs"]),
                )
            )  # fmt: skip
    reference = reference or {}
    matched = set()
    for (_, workload), ps in parts.items():
        for part in ps:
            # A split part's own entry (<target>@<machine>), else its target's.
            key = next(
                (k for k in ((workload, f"{part.target}@{part.machine}"), (workload, part.target))
                 if k in reference),
                None,
            )  # fmt: skip
            if key is not None:
                matched.add(key)
                rows.append(_against(part, reference[key], reference_name))
    if reference and not matched:
        # Every entry misses (a misspelt target): "no run" rows and exit status 0, so a
        # nightly job against this reference could never fail.
        ran = sorted({f"{w}/{p.name}" for (_, w), ps in parts.items() for p in ps})
        raise ConfigError(
            f"{reference_name}: no entry matches a run of the folders (its entries: "
            f"{', '.join(f'{w}/{t}' for w, t in reference)}; the folders' runs: "
            f"{', '.join(ran)}); expected targets (or workloads and targets) as the folders "
            "name them"
        )
    for (workload, target), expected in reference.items():
        if (workload, target) not in matched:
            rows.append(
                _row("reference", None, None)
                | {"workload": workload, "target": target, "reference": reference_name,
                   "verdict": NO_RUN,
                   "reference_images_per_s": expected.images_per_s,
                   "threshold": expected.tolerance}
            )  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    return Comparison(list(outdirs), table, within, notes, min_difference, reference_name)


def ratio_words(row, prefix: str = "") -> str:
    """A row's ratio as a person reads it: "0.900 [0.880, 0.921]" where its verdict has an
    interval, the ratio alone where it has none, "" without a ratio."""
    ratio = number_text(row[f"{prefix}ratio"], ".3f")
    if not ratio:
        return ""
    if row[f"{prefix}verdict"] not in CALLED:
        return ratio
    return f"{ratio} [{number_text(row[f'{prefix}low' if prefix else 'ratio_low'], '.3f')}, " + (
        f"{number_text(row[f'{prefix}high' if prefix else 'ratio_high'], '.3f')}]"
    )


def _sides(row) -> str:
    """ "3 / 5": the row's runs and the other side's."""
    return f"{int(row['runs'])} / {int(row['reference_runs'])}"


def markdown(result: Comparison) -> str:
    """The comparison as Markdown: what was compared and how, one table per other folder
    against the first, each folder's own rounds, the reference file's table, and the
    regressions found."""
    t, first = result.table, result.folders[0]
    md = result.min_difference
    lines = [
        "# embryo-bench compare",
        "",
        f"Reference point: `{first}` (the first folder). Other folders' targets against it: "
        "the ratio of the geometric means of images/s (above 1: faster), with Welch's 95 % "
        "t interval on the logarithms, **unpaired** (runs in different folders share no "
        "rounds); time to accuracy likewise, as a speed. A difference is called with at "
        f"least {compare.MIN_PAIRS} runs on each side, an interval that excludes 1 and a "
        f"ratio further from 1 than {md:.0%} on the log scale (below {1 / (1 + md):.3g} or "
        f"above {1 + md:.3g}; --min-difference). Runs of one target on different machines "
        "are never pooled: such a target is split, `<target>@<machine>`.",
    ]
    for outdir in result.folders[1:]:
        rows = t[(t["section"] == "across") & (t["folder"] == outdir)]
        shown = pd.DataFrame(
            {
                "workload": rows["workload"],
                "target": [r["target"] or r["reference_target"] for _, r in rows.iterrows()],
                "machine (this / first)": [
                    (r["machine"] or "-")
                    + (
                        " / same"
                        if r["machine"] == r["reference_machine"]
                        else f" / {r['reference_machine'] or '-'}"
                    )
                    for _, r in rows.iterrows()
                ],
                "runs (this / first)": [_sides(r) for _, r in rows.iterrows()],
                "images/s (this / first)": [
                    f"{number_text(r['images_per_s'])} / {number_text(r['reference_images_per_s'])}"
                    for _, r in rows.iterrows()
                ],
                "ratio [95 % interval]": [ratio_words(r) for _, r in rows.iterrows()],
                "verdict": rows["verdict"],
                # a flag is a warning, not a gate: counted beside
                "flagged runs (this / first)": [
                    f"{r['flagged_runs'] or 0} / {r['reference_flagged_runs'] or 0}"
                    for _, r in rows.iterrows()
                ],
                "time-to-accuracy ratio": [
                    " ".join(
                        w
                        for w in (
                            ratio_words(r, "time_to_accuracy_"),
                            r["time_to_accuracy_verdict"],
                        )
                        if w
                    )
                    for _, r in rows.iterrows()
                ],
                "differs from the first folder's runs": rows["differs"],
            }
        )
        lines += ["", f"## `{outdir}` against `{first}`", ""]
        lines.append(shown.to_markdown(index=False) if len(shown) else "Nothing in common.")
    if result.within:
        lines += [
            "",
            "## Each folder's own rounds",
            "",
            "Paired within the folder's rounds against its compare.base (its figures' "
            "comparison): not a regression check.",
        ]
        for outdir, workload, base, paired in result.within:
            lines += ["", f"### `{outdir}`, workload {workload}, base {base}", ""]
            lines.append(readable_comparison(paired).to_markdown(index=False))
            if note := comparison_note(paired):
                lines += ["", note]
    rows = t[t["section"] == "reference"]
    if len(rows):
        shown = pd.DataFrame(
            {
                "folder": rows["folder"],
                "workload": rows["workload"],
                "target": rows["target"],
                "runs": rows["runs"],
                "flagged runs": rows["flagged_runs"],
                "images/s": rows["images_per_s"].map(number_text),
                "expected": rows["reference_images_per_s"].map(number_text),
                "tolerance": rows["threshold"].map(lambda v: f"{v:.0%}"),
                "ratio [95 % interval]": [ratio_words(r) for _, r in rows.iterrows()],
                "verdict": rows["verdict"],
            }
        )
        lines += [
            "",
            f"## Against the reference `{result.reference}`",
            "",
            "Each folder's runs over the expected images/s: the geometric mean with a 95 % t "
            "interval on the logarithms; slower when the interval is below 1 and the ratio "
            "below 1 / (1 + tolerance).",
            "",
            shown.to_markdown(index=False),
        ]
    if result.notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in result.notes]
    reg = result.regressions
    lines += ["", "## Regressions", ""]
    lines.append(
        "\n".join(f"- {line}" for line in regression_lines(result))
        if len(reg)
        else "None measured (exit status 0)."
    )
    return "\n".join(lines) + "\n"


def regression_lines(result: Comparison) -> list[str]:
    """One sentence per regression (:attr:`Comparison.regressions`), e.g. "out-b, workload
    paper, host-1cpu: 0.900 [0.880, 0.921] of out-a's images/s (slower)"."""
    out = []
    for _, r in result.regressions.iterrows():
        against = (
            f"the reference's {number_text(r['reference_images_per_s'])} images/s"
            if r["section"] == "reference"
            else f"{r['reference']}'s {r['reference_target']}"
        )
        out.append(
            f"{r['folder']}, workload {r['workload']}, {r['target']}: {ratio_words(r)} of "
            f"{against} (slower by more than {r['threshold']:.0%})"
        )
    return out
