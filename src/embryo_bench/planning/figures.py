"""What a workload's figures job is given (its ``figures-spec.json``), and what the figures
read that no job of the plan writes, checked before any job: other machines' result folders
(``merge:``), this outdir's runs already on disk and a ``figures-spec.json`` already written.
"""

from __future__ import annotations

from ..reporting.merge import check_own_runs, unfinished_runs
from ..vocabulary import layout
from ..vocabulary.figspec import FiguresSpec, check_written_spec
from ..vocabulary.layout import PAPER_WORKLOAD
from ..vocabulary.spec import INPUT_SHARDS
from .schedule import Schedule
from .workloads import Workload


def check_figures_inputs(schedule: Schedule) -> None:
    """What the figures job will read that no job of this plan writes, checked before
    any job (``merge:`` folders are checked apart:
    :func:`embryo_bench.reporting.merge.check_folders`): the runs of this plan already on disk
    (:func:`embryo_bench.reporting.merge.check_own_runs`) and a ``figures-spec.json`` already
    written (:func:`embryo_bench.vocabulary.figspec.check_written_spec`). A figures job that
    fails costs the figures it would have replaced; these fail the plan instead.

    Raises:
        ConfigError: naming the file (and, for a run, the folder to delete to retrain it).
    """
    for w in schedule.workloads:
        check_own_runs(schedule.workload_run_dirs(w, schedule.max_rounds))
        check_written_spec(f"{schedule.outdir}/{layout.workload_dir(w)}{layout.FIGURES_SPEC}")


def merge_notes(config: dict) -> list[str]:
    """One line per run of a ``merge:`` folder that started but never finished (no
    metrics.json): it is left out of the figures, and said so."""
    return [
        f"merge: {d} left out: it has no {layout.METRICS} (a run that never finished, "
        "or is still training)"
        for outdir in config["merge"]
        for d in unfinished_runs(outdir)
    ]


def figures_spec(
    config: dict,
    schedule: Schedule,
    cost: tuple[str, str],
    workload: str = PAPER_WORKLOAD,
    rounds: int | None = None,
) -> FiguresSpec:
    """What a workload's figures job is given (its ``figures-spec.json``): its runs of
    rounds 1..``rounds`` (default: :attr:`Schedule.first_rounds`;
    :meth:`Schedule.rounds_wanted`), each target's report fields and the bases. Other
    machines' folders (``merge:``: their runs on shards, checked against this configuration's
    preprocessing when the plan was made) are merged into the figures of the workloads of
    input kind shards (the paper's) only.

    Args:
        config: the validated configuration. schedule: the plan's runs.
        cost: the cost base and its note (:func:`embryo_bench.planning.bases.cost_base`).
    """
    w = schedule.workloads.get(workload)
    merges = w is not None and w.input_kind == INPUT_SHARDS
    targets = schedule.workload_targets(workload)
    compare_base = schedule.compare_base
    return FiguresSpec(
        runs=schedule.workload_run_dirs(workload, rounds),
        merge=list(config["merge"]) if merges else [],
        targets={n: t.report_fields() for n, t in targets.items()},
        cost_base=cost[0],
        cost_note=cost[1],
        # A sweep point compared against runs only in the paper's workload.
        compare_base=compare_base if compare_base in targets else "",
        min_difference=float(config["compare"]["min_difference"]),
        stability=dict(config["stability"]),
        config=workload_config(config, schedule.workloads, workload),
    )


def workload_config(
    config: dict, workloads: dict[str, Workload], workload: str = PAPER_WORKLOAD
) -> dict:
    """The effective configuration as a workload's figures record it: its own entry of
    ``workloads:`` only (none for a workload trained by the ``train`` section, the
    paper's, whose settings are the sections above), so adding or editing another
    workload reruns none of its figures."""
    # study: changes the study's tables only, not a workload's figures.
    others = {k: v for k, v in config.items() if k not in ("workloads", "study")}
    w = workloads.get(workload)
    if w is None or not w.own_recipe:
        return others
    return {**others, "workloads": [e for e in config["workloads"]
                                     if e["name"] == workload]}  # fmt: skip
