"""Runs made on other machines, brought into this workflow's figures, tables and report.

The paper's six systems were six machines. A user runs the workflow on each (each with its own
``outdir``) and lists the other result folders under ``merge:`` in one config; the figures job
reads their finished runs (never writes them), checks that they trained on the same data with
the same preprocessing, names each by its machine and adds them to every table and figure.

* :func:`run_dirs`: the finished runs of a result folder.
* :func:`merge_runs`: the merged runs, checked and named ``<target>@<machine>``, and their
  report fields (prices, paper system) from that folder's ``figures/config.yaml``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from ..errors import ConfigError, DataError
from ..vocabulary.figspec import FiguresSpec
from ..vocabulary.layout import (
    FIGURES_SPEC,
    HISTORY,
    METRICS,
    PROGRESS,
    RUN_FILES,
    RUN_SPEC,
    TELEMETRY,
    WINDOWS,
)
from ..vocabulary.spec import RunSpec
from .runs import IDENTITY_FIELDS, Machines, Run, load_runs

#: What must be equal for runs to be comparable: the data (source.json, as each run's
#: provenance carries it) and what the trainer was given (counts per split and class).
DATASET_KEYS = ("dataset", "synthetic", "sha256", "embryos", "frames", "frames_labelled", "rules")
RUN_KEYS = ("n_train", "n_test", "label_counts_train", "label_counts_test")
#: Report fields a merged target takes from its own configuration.
REPORT_FIELDS = ("hourly_usd", "price_source", "paper_system")


def run_dirs(outdir: str | Path) -> list[str]:
    """The finished runs (folders with metrics.json) under ``outdir/train/*/repeat-*``.

    Raises:
        ConfigError: ``outdir`` is not a folder, or holds no finished run.
    """
    root = Path(outdir)
    if not root.is_dir():
        raise ConfigError(f"merge: {outdir} is not a folder (a result folder, an outdir)")
    found = sorted(str(p.parent) for p in root.glob(f"train/*/repeat-*/{METRICS}"))
    if not found:
        raise ConfigError(
            f"merge: {outdir} holds no finished run (no train/<target>/repeat-<k>/metrics.json)"
        )
    return found


#: What a run's metrics.json must hold for the tables (a metrics.json without
#: provenance crashed the figures job after the figures were deleted).
REQUIRED_METRICS = (
    "target",
    "repeat",
    "cpus",
    "gpus",
    "batch_size",
    "n_train",
    "n_test",
    "epochs",
    "training_seconds",
    "first_epoch_seconds",
    "mean_images_per_s",
    "final_test_accuracy",
    "parameter_count",
    "provenance",
)
#: The measurements of a run that comparisons divide by one another (metrics.json key ->
#: (unit, whether null is allowed: one epoch has no steady epoch, a run that never reached
#: the accuracy target no time to it)). A trainer writes each as a positive, finite number;
#: a hand-edited or damaged one (0, -5, NaN) would make a ratio fail deep inside a
#: comparison or read as "not measured", naming no file.
MEASUREMENTS = {
    "mean_images_per_s": ("images/s", False),
    "training_seconds": ("s", False),
    "first_epoch_seconds": ("s", False),
    "steady_epoch_seconds": ("s", True),
    "time_to_accuracy_seconds": ("s", True),
}
#: The columns the figures read of this workflow's runs' tables (figure 4, the utilisation
#: figures), checked when the file is there.
OWN_COLUMNS = {
    HISTORY: ("epoch", "test_accuracy"),
    TELEMETRY: ("time_s", "cpu_percent", "memory_mib"),
    WINDOWS: ("ended_unix_s", "images_per_s"),
}


def read_finished_run(d: str, columns: dict[str, tuple[str, ...]] | None = None) -> Run:
    """A finished run's folder read as the figures read it, checked: its files
    (:func:`embryo_bench.reporting.runs.load_runs`), the keys of :data:`REQUIRED_METRICS` in its
    metrics.json, its :data:`MEASUREMENTS` (:func:`check_measurements`), ``columns`` (file
    name -> the columns it must have, when the file is there) and its run.json a valid run
    spec of the run its folder names (:func:`check_run`).

    Raises:
        DataError or ConfigError: naming the file and what is wrong with it.
    """
    (run,) = load_runs([d])
    missing = [k for k in REQUIRED_METRICS if k not in run.metrics]
    if missing:
        raise DataError(f"{d}/{METRICS} lacks {missing}")
    if not isinstance(run.metrics["provenance"], dict):
        raise DataError(f"{d}/{METRICS}: provenance is not a mapping")
    check_measurements(run)
    tables = {HISTORY: run.history, TELEMETRY: run.telemetry, WINDOWS: run.windows}
    for name, needed in (columns or {}).items():
        table = tables[name]
        if table is not None and (lacking := [c for c in needed if c not in table.columns]):
            raise DataError(f"{d}/{name} lacks the columns {lacking}")
    check_run(run)
    return run


def check_measurements(run: Run) -> None:
    """Each of a run's :data:`MEASUREMENTS` in its metrics.json that it holds is a positive,
    finite number (images/s, s), or null where that one may be.

    Raises:
        DataError: one line naming the file, the key and its value, e.g.
            ``.../metrics.json: mean_images_per_s nan: expected a positive finite number
            (images/s)``.
    """
    for key, (unit, nullable) in MEASUREMENTS.items():
        if key not in run.metrics or (nullable and run.metrics[key] is None):
            continue
        value = run.metrics[key]
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and value > 0):
            raise DataError(
                f"{run.dir}/{METRICS}: {key} {value!r}: expected a positive finite number "
                f"({unit}){', or null' if nullable else ''}"
            )


def check_own_runs(run_dirs: list[str]) -> None:
    """Check, before any job, what the figures job will read of this workflow's runs that are
    already on disk: a run whose every file is there
    (:data:`embryo_bench.vocabulary.layout.RUN_FILES` and run.json) is read as the figures read it
    (:func:`read_finished_run`); a run with a file missing will be trained (again) first.

    Raises:
        ConfigError: naming the file, what is wrong with it, and the run folder to delete
            to retrain that run.
    """
    for d in run_dirs:
        if not all((Path(d) / f).is_file() for f in (*RUN_FILES, RUN_SPEC)):
            continue
        try:
            read_finished_run(d, OWN_COLUMNS)
        except (ConfigError, DataError) as exc:
            raise ConfigError(f"{exc}; delete {d} to retrain that run") from None


def unfinished_runs(outdir: str | Path) -> list[str]:
    """Run folders under ``outdir/train/*/repeat-*`` that a training started (a run.json or
    a progress.csv) but never finished (no metrics.json): a merge leaves them out."""
    root = Path(outdir)
    started = {p.parent for p in root.glob(f"train/*/repeat-*/{RUN_SPEC}")}
    started |= {p.parent for p in root.glob(f"train/*/repeat-*/{PROGRESS}")}
    return sorted(str(d) for d in started if not (d / METRICS).is_file())


def check_run(run: Run) -> None:
    """A run's run.json is a valid run spec of the run its folder names
    (``train/<target>/repeat-<k>``), and its metrics.json is of that run too.

    Raises:
        ConfigError or DataError: naming the file: a value of the wrong type or range, an
            unknown or missing key (:meth:`embryo_bench.vocabulary.spec.RunSpec.from_dict`), or a
            target
            or repeat other than the folder's.
    """
    where = f"{run.dir}/{RUN_SPEC}"
    spec = RunSpec.from_dict(run.spec or {}, where)
    folder = Path(run.dir)
    repeat = folder.name.removeprefix("repeat-")
    if (spec.target, str(spec.repeat)) != (folder.parent.name, repeat):
        raise ConfigError(
            f"{where} is of target {spec.target} repeat {spec.repeat}, but its folder "
            f"is {folder.parent.name}/{folder.name}"
        )
    theirs = (run.metrics.get("target"), str(run.metrics.get("repeat")))
    if theirs != (spec.target, str(spec.repeat)):
        raise ConfigError(
            f"{run.dir}/{METRICS} is of target {theirs[0]} repeat {theirs[1]}, but "
            f"{RUN_SPEC} says {spec.target} repeat {spec.repeat}"
        )


def check_folders(outdirs: list[str], own_outdir: str, preprocessing: dict) -> list[str]:
    """Check ``merge:`` before any job runs: a bad folder fails the plan,
    so Snakemake never deletes the existing figures for a figures job that would fail.

    Args:
        outdirs: the ``merge:`` folders.
        own_outdir: this workflow's ``outdir`` (it cannot merge itself).
        preprocessing: this workflow's preprocessing settings (``Preprocessing.to_dict()``).

    Returns:
        the finished run folders, in the folders' order.

    Raises:
        ConfigError: naming the folder or run: not a folder, no finished run, the same folder
            twice (after normalising the path), this workflow's own outdir, a run the
            figures could not read (:func:`read_finished_run`: a metrics.json, history.csv or
            run.json unreadable or of a newer format, a key or column the figures need
            missing, a run.json that is not a valid run spec of its folder's run), or a run
            made with other preprocessing.
    """
    seen: dict[Path, str] = {}
    own = Path(own_outdir).resolve()
    found = []
    for outdir in outdirs:
        real = Path(outdir).resolve()
        if real == own:
            raise ConfigError(f"merge: {outdir} is this workflow's own outdir")
        if real in seen:
            raise ConfigError(f"merge: {seen[real]} and {outdir} are the same folder")
        seen[real] = outdir
        for d in run_dirs(outdir):
            try:
                run = read_finished_run(d)
            except (ConfigError, DataError) as exc:
                raise ConfigError(f"merge: {exc}") from None
            theirs = (run.spec or {}).get("preprocessing") or {}
            for key, value in preprocessing.items():
                if theirs.get(key) != value:
                    raise ConfigError(
                        f"merge: {d} was made with preprocessing {key} {theirs.get(key)!r} "
                        f"(ours {value!r}): runs on other preprocessing cannot share a table"
                    )
            found.append(d)
    return found


def identity(run: Run) -> dict:
    """What makes runs comparable (:data:`DATASET_KEYS` of the data, :data:`RUN_KEYS`, the
    preprocessing settings), as a flat dict."""
    data = run.metrics["provenance"].get("dataset", {})
    out = {f"dataset {k}": data.get(k) for k in DATASET_KEYS}
    out |= {k: run.metrics.get(k) for k in RUN_KEYS}
    out |= {
        f"preprocessing {k}": v for k, v in ((run.spec or {}).get("preprocessing") or {}).items()
    }
    return out


def difference(ours: dict, theirs: dict) -> str | None:
    """The first key whose values differ, as ``key: theirs X, ours Y``; None if none."""
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            return f"{key}: theirs {theirs.get(key)!r}, ours {ours.get(key)!r}"
    return None


def software_differences(run: Run, reference: list[Run]) -> str:
    """How ``run``'s software differs from ``reference`` runs with the same runner (or any,
    if none has it): the framework versions that differ, and how many installed packages do;
    "" when the same."""
    same = [r for r in reference if r.metrics.get("runner") == run.metrics.get("runner")]
    if not (same or reference):
        return ""
    ref = (same or reference)[0].metrics["provenance"]
    theirs = run.metrics["provenance"]
    notes = [
        f"{name} {version} (here {ref.get('versions', {}).get(name, 'absent')})"
        for name, version in sorted(theirs.get("versions", {}).items())
        if ref.get("versions", {}).get(name) != version
    ]
    packages = set(theirs.get("packages") or []) ^ set(ref.get("packages") or [])
    if packages and (theirs.get("packages") and ref.get("packages")):
        names = {p.split("==")[0] for p in packages}
        notes.append(f"{len(names)} installed packages differ")
    return "; ".join(notes)


def _report_fields(outdir: Path) -> dict[str, dict]:
    """Target name -> :data:`REPORT_FIELDS` from ``outdir``'s figures spec
    (:data:`embryo_bench.vocabulary.layout.FIGURES_SPEC`), or for a folder made before specs were
    written, from the configuration its figures job recorded (``figures/config.yaml``); {}
    without either.

    Raises:
        DataError: the spec is unreadable or newer than this embryo-bench reads.
    """
    spec_path = outdir / FIGURES_SPEC
    if spec_path.is_file():
        targets = FiguresSpec.read(spec_path).targets
        return {n: {k: t[k] for k in REPORT_FIELDS if k in t} for n, t in targets.items()}
    path = outdir / "figures" / "config.yaml"
    if not path.is_file():
        return {}
    config = yaml.safe_load(path.read_text()) or {}
    return {
        t["name"]: {k: t[k] for k in REPORT_FIELDS if k in t} for t in config.get("targets", [])
    }


def merge_runs(
    outdirs: list[str], ours: list[Run], targets: dict[str, dict]
) -> tuple[list[Run], dict[str, dict]]:
    """The finished runs of the result folders ``outdirs``, to be shown beside ``ours``.

    Each merged run's target becomes ``<target>@<machine>``, the label of the machine it ran
    on (:class:`embryo_bench.reporting.runs.Machines` of ``ours`` and every merged run: CPU
    model and flags, cores, memory, GPUs, host, Docker daemon), so the same target from two
    machines gives two rows, and a folder from "the same" instance type that landed on
    another CPU is another machine, whatever its host name; its metrics gain ``machine``
    (that label), ``merged_from`` (the folder) and ``software_differs``
    (:func:`software_differences`). Nothing is written to those folders.

    Args:
        outdirs: other result folders (the config's ``merge:``).
        ours: this workflow's runs (the reference for data and software).
        targets: this workflow's report fields per target; returned with the merged ones.

    Returns:
        (merged runs, ``targets`` plus each merged target's report fields, with ``sweep``
        from the run's own run.json: a sweep point stays a sweep point, of ``<base>@<machine>``).

    Raises:
        ConfigError: a folder without runs, a run on other data or preprocessing than ours
            (naming the folder, the run and the first difference), a merged name that is
            already taken, or the same machine, target and repeat twice.
    """
    reference = identity(ours[0]) if ours else None
    found: list[tuple[str, Run]] = []
    for outdir in outdirs:
        for run in load_runs(run_dirs(outdir)):
            if reference is None:
                reference = identity(run)
            diff = difference(reference, identity(run))
            if diff:
                raise ConfigError(
                    f"merge: {run.dir} is not comparable with this workflow's runs ({diff}): "
                    "runs on other data or preprocessing cannot share a table"
                )
            found.append((outdir, run))
    machines = Machines([*ours, *(run for _, run in found)])
    reports = {outdir: _report_fields(Path(outdir)) for outdir in outdirs}
    merged: list[Run] = []
    fields = dict(targets)
    seen: dict[tuple[str, int], str] = {}
    for outdir, run in found:
        machine = machines.of(run).label
        target = run.metrics["target"]
        name = f"{target}@{machine}"
        if name in targets:
            raise ConfigError(f"merge: {run.dir}: the name {name} is already a target")
        key = (name, run.metrics.get("repeat", 1))
        if key in seen:
            raise ConfigError(
                f"merge: {run.dir} and {seen[key]} are both {name} repeat {key[1]}: "
                "list each machine's result folder once"
            )
        seen[key] = run.dir
        run.metrics = {
            **run.metrics,
            "target": name,
            "machine": machine,
            "merged_from": str(outdir),
            "software_differs": software_differences(run, ours),
        }
        # A sweep point is known by its own run.json (the other folder's config lists
        # targets, not the points derived from them); its base gets the machine too.
        fields[name] = {**reports[outdir].get(target, {}), "sweep": _on(run, machine)}
        merged.append(run)
    return merged, fields


def _on(run: Run, machine: str) -> dict | None:
    """``run``'s sweep point (its run.json's ``sweep``) with its base on ``machine``
    (``<base>@<machine>``), or None for a run that is no sweep point."""
    sweep = (run.spec or {}).get("sweep")
    return {**sweep, "base": f"{sweep['base']}@{machine}"} if sweep else None


@dataclass
class ByMachine:
    """This workflow's runs, named by the machine they ran on where a target's runs ran on
    several (:func:`split_by_machine`).

    Attributes:
        runs: the runs, in their order; those of a target that ran on more than one machine
            renamed ``<target>@<machine>`` (metrics ``target``; ``machine`` added; the
            planned name stays in :attr:`embryo_bench.reporting.runs.Run.planned_name`).
        targets: report fields per name: a split target's are its parts'.
        names: each split target -> the part that stands for it where one name is asked
            for (``compare.base``, ``cost.base_target``, its ``paper_system``): the machine
            with most of its runs (a tie: the machine of its first run).
        notes: one line per split target, e.g. "host-1cpu ran on 2 machines (cpu_model, isa
            differ): host-1cpu@epyc-7b13-avx2-2c-24g-1a2b rounds 1-3, ...".
    """

    runs: list[Run]
    targets: dict[str, dict]
    names: dict[str, str]
    notes: list[str]

    def name(self, target: str) -> str:
        """The name ``target`` goes by in the tables (itself, or its part in
        :attr:`names`); "" stays ""."""
        return self.names.get(target, target)


def split_by_machine(ours: list[Run], merged: list[Run], targets: dict[str, dict]) -> ByMachine:
    """Never pool one target's runs from different machines: a target
    whose runs in this workflow's outdir ran on more than one machine (an outdir whose
    rounds 1-3 ran on Monday's AMD and rounds 4-5 on Tuesday's Xeon: a VM class is not a
    machine) is split into one target per machine, ``<target>@<machine>`` with the machine's
    label (:class:`embryo_bench.reporting.runs.Machines` of ``ours`` and ``merged``, as
    :func:`merge_runs` names the merged runs); a target that ran on one machine keeps its
    name. Each part keeps the target's report fields (its price; a sweep point's base gets
    the machine, as a merged one's does); only the part in :attr:`ByMachine.names` keeps
    its ``paper_system``. Runs are not changed in place (a renamed run is a new
    :class:`embryo_bench.reporting.runs.Run`).

    Args:
        ours: this workflow's runs, in the planned order.
        merged: the merged runs (:func:`merge_runs`), named already.
        targets: report fields per name (:func:`merge_runs`' second value).

    Raises:
        ConfigError: a split part's name is a merged target's too (a merged folder ran
            that target on a machine this outdir also ran it on).
    """
    machines = Machines([*ours, *merged])
    by_target: dict[str, dict[str, list[Run]]] = {}
    for run in ours:
        by_target.setdefault(run.name, {}).setdefault(machines.of(run).label, []).append(run)
    split = {t: parts for t, parts in by_target.items() if len(parts) > 1}
    # The part that stands for a split target: the most runs, then the first run's.
    chosen = {t: max(parts, key=lambda m: len(parts[m])) for t, parts in split.items()}
    fields = {n: f for n, f in targets.items() if n not in split}
    taken = {r.name: r.metrics.get("merged_from", "") for r in merged}
    notes, runs = [], []
    for target, parts in split.items():
        own = targets.get(target, {})
        first = machines.of(next(iter(parts.values()))[0])
        differ = sorted(
            {f for rs in parts.values() for f in first.differences(machines.of(rs[0]))},
            key=IDENTITY_FIELDS.index,
        )
        described = []
        for machine, rs in parts.items():
            name = f"{target}@{machine}"
            if name in taken:
                raise ConfigError(
                    f"merge: {taken[name]} ran {target} on {machine}, as some of this "
                    f"workflow's own runs of {target} did (its outdir ran {target} on "
                    f"{len(parts)} machines, so they are {name} too): merge one folder's "
                    "runs of a machine, not two"
                )
            sweep = own.get("sweep")
            keep = machine == chosen[target]
            fields[name] = {
                **{k: v for k, v in own.items() if k != "paper_system" or keep},
                # a line per machine in the sweeps figure, as for a merged sweep point
                "sweep": {**sweep, "base": f"{sweep['base']}@{machine}"} if sweep else sweep,
            }
            rounds = ", ".join(str(r.metrics.get("repeat", 1)) for r in rs)
            described.append(f"{name} (rounds {rounds})")
        notes.append(
            f"{target} ran on {len(parts)} machines ({', '.join(differ)} differ), so its "
            f"runs are not pooled: {'; '.join(described)}; {target}@{chosen[target]} "
            f"stands for {target} (compare.base, cost.base_target, paper_system)"
        )
    for run in ours:
        if run.name in split:
            machine = machines.of(run).label
            metrics = {**run.metrics, "target": f"{run.name}@{machine}", "machine": machine}
            run = replace(run, metrics=metrics)
        runs.append(run)
    names = {t: f"{t}@{m}" for t, m in chosen.items()}
    return ByMachine(runs, fields, names, notes)
