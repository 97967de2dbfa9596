# The adapter between Snakemake and embryo_bench.planning.plan: the plan (targets, runs, specs,
# names) comes from the package; this file only exposes it to the rules. Input functions sit
# in the rule files that use them.
import json
import os
import re
import shlex
import sys

# Jobs run this repository's own package source (src/), whatever else is installed, so the
# code that runs is the code hashed below. `python3` is the interpreter snakemake runs in:
# its directory is put first on the jobs' PATH, so `/path/to/venv/bin/snakemake` works
# without activating the venv. With --software-deployment-method conda the rule's
# environment is activated around the whole command and its python3 is used instead (no rule
# has a container: directive, so apptainer changes nothing here).
SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
from embryo_bench.vocabulary import layout
from embryo_bench.vocabulary.codehash import code_hash
from embryo_bench.errors import EmbryoBenchError
from embryo_bench.runners.lifeline import TIE_ENV, forward_sigint_to_jobs
from embryo_bench.runners.outdir_lock import claim as claim_outdir
from embryo_bench.vocabulary.config import load_schema, read_config_files
from embryo_bench.planning.plan import Plan
from embryo_bench.reporting.answer import landing_page
from embryo_bench.vocabulary.spec import INPUT_ARRAYS, INPUT_SHARDS
from embryo_bench.vocabulary.training_input import TrainingInput

# `kill -INT <snakemake>` stops the running jobs at once, as Ctrl-C in a terminal does
# (Snakemake alone would wait for every epoch, then mark the finished outputs incomplete).
forward_sigint_to_jobs()

# shell.prefix is formatted like the commands: {{ }} in the f-string's result is one brace.
# TIE_ENV carries Snakemake's pid (the job shell's parent): every job ends with Snakemake,
# even under a shell that outlives it (embryo_bench.runners.lifeline.tie_to_workflow).
# The checkout's location is a variable, not a params value, so a moved checkout reruns
# nothing.
_ENV_DEPLOYED = "CONDA" in {
    m.name for m in workflow.deployment_settings.deployment_method
}
_PYTHON_BIN = "" if _ENV_DEPLOYED else os.path.dirname(sys.executable)
shell.prefix(
    f"set -euo pipefail; "
    f"export EMBRYO_BENCH_REPO={shlex.quote(workflow.basedir)}; "
    f"export {TIE_ENV}=$PPID; "
    f"export PYTHONPATH={shlex.quote(SRC)}${{{{PYTHONPATH:+:$PYTHONPATH}}}}; "
    + (f'export PATH={shlex.quote(_PYTHON_BIN)}:"$PATH"; ' if _PYTHON_BIN else "")
)


# Bench slots: the profiles declare `resources: bench_slot=100`. A training job takes all of
# them and every other job one, so nothing (no second training, image build, preprocessing or
# figures job) runs beside a timed run. Each rule declares its own share rather than the
# profiles' default-resources: profiles/default is applied as the workflow profile on top of
# any --profile and would replace a cluster profile's whole default-resources (its Slurm
# partition, memory and runtime).
BENCH_SLOTS = 100
OTHER_JOB_SLOTS = 1


# Targets, the machine baseline and the finished runs the figures will read are checked once,
# before any job, by the process that plans the jobs; a job that Slurm (or another executor)
# runs on a node parses this file again and does not check them again: its allocation holds
# what it asked for, and the docker runner checks its daemon. The checks of the configuration
# itself (schema, sizes and resources) run at every parse.
try:
    # Snakemake's own YAML loading keeps the last of a key given twice; read each configfile
    # again to refuse that, naming the file and line, and check the merged
    # settings naming the file that set a refused one (Snakemake's validate prints the whole
    # configuration and no file).
    _SCHEMA = load_schema(os.path.join(workflow.basedir, "config", "schema.yaml"))
    _SOURCES = read_config_files(workflow.configfiles)[1]
    if workflow.config_settings.config:
        _SOURCES.append(("--config", dict(workflow.config_settings.config)))
    PLAN = Plan.from_config(
        config,
        hardware_check="none" if workflow.remote_exec else None,
        schema=_SCHEMA,
        on_this_machine=not workflow.remote_exec,
        sources=_SOURCES,
    )
    # A source read in place: its files' names, sizes and times (changed images rerun the
    # index rule); a link that loops or an unreadable folder is named here, in one line.
    SOURCE_STAMP = PLAN.source_stamp()
except EmbryoBenchError as exc:
    raise WorkflowError(str(exc))
for _name, _why in PLAN.skipped.items():
    logger.warning(f"target {_name}: skipped, {_why} (on_missing_hardware: skip)")
for _note in (
    PLAN.cost_note,
    PLAN.compare_note,
    *PLAN.merge_notes,
    *PLAN.baseline_notes,
):
    if _note:
        logger.warning(_note)

CONFIG = PLAN.config  # every default filled in
OUT = CONFIG["outdir"]
LOGS = f"{OUT}/logs"
# The workflow's description in the report (a Jinja template Snakemake renders), first on
# its landing page (the Snakefile's report: directive).
DESCRIPTION = "workflow/report/workflow.rst"
DATASET = CONFIG["dataset"]
PP = CONFIG["preprocess"]
CONTAINERS = CONFIG["containers"]
SHARDS = list(range(CONFIG["select"]["shards"]))

# One outdir, one workflow at a time (embryo_bench.runners.outdir_lock; Snakemake's own lock is per
# working directory, so it never saw a second checkout writing the same outdir). Claimed when
# Snakemake starts to execute jobs, its one entry point that runs any (--lint, --report,
# --unlock and the listings never get there), by the main process only (not a job's own
# Snakemake on a cluster node or in a subprocess: the workflow that runs it holds the outdir).
# A dry run takes nothing, and warns when another workflow holds the outdir. Snakemake's API
# calls workflow.execute(executor_plugin=...) for real runs, dry runs and --touch alike.
_execute = workflow.execute


def _execute_holding_outdir(*args, **kwargs):
    if workflow.is_main_process:
        dry_run = kwargs["executor_plugin"].common_settings.dryrun_exec
        try:
            note = claim_outdir(OUT, workflow.basedir, dry_run=dry_run)
        except EmbryoBenchError as exc:
            raise WorkflowError(str(exc))
        if note:
            logger.warning(note)
    return _execute(*args, **kwargs)


workflow.execute = _execute_holding_outdir


def code(command):
    """Hash of the code an `embryo-bench <command>` job runs (a params value: a code change
    reruns exactly the jobs whose command imports it; comments and docstrings do not).
    """
    return code_hash(f"cli:{command}")


def target(wildcards):
    """The resolved target (embryo_bench.planning.targets.Target) of a job's {target}."""
    return PLAN.targets[wildcards.target]


def workload(wildcards):
    """The resolved workload (embryo_bench.planning.workloads.Workload) of a job's {wdir}:
    "" for the paper's, whose outputs sit at the top of the outdir, workloads/<name>/ for
    another (layout.workload_dir)."""
    return PLAN.workloads[layout.workload_of_dir(wildcards.wdir)]


def previous_run(wildcards):
    """The metrics of the run planned just before this one, of any workload ([] for the
    first), ancient()."""
    before = PLAN.previous_run(
        wildcards.target, int(wildcards.repeat), workload(wildcards).name
    )
    return (
        ancient(f"{OUT}/{layout.run_dir(*before)}/{layout.METRICS}") if before else []
    )


wildcard_constraints:
    shard=r"\d+",
    repeat=r"\d+",
    round=r"\d+",
    image="cpu|gpu",
    daemon=r"[A-Za-z0-9._-]+",
    target="|".join(re.escape(n) for n in PLAN.targets),
    # A workload's folder (layout.workload_dir): "" for the paper's, so one rule makes every
    # workload's runs and figures while the paper's keep their paths at the top.
    wdir=layout.workload_dir_pattern(PLAN.workloads),
    # The workloads whose data workloads.smk prepares (input kind arrays).
    workload="|".join(
        re.escape(n) for n, w in PLAN.workloads.items() if w.input_kind == INPUT_ARRAYS
    )
    or "(?!)",
    dataset=r"[a-z0-9][a-z0-9-]*",
    file=r"[A-Za-z0-9][A-Za-z0-9._-]*",


# Every file a run writes, of every workload: `all` asks for them, so a deleted model.keras
# or telemetry.csv reruns its training (Snakemake checks only the outputs something asks
# for). The runs are those of every round that runs (rounds.smk: with compare.until, as
# decided so far).
def run_outputs(wildcards):
    return [
        f"{d}/{f}"
        for w in PLAN.workloads
        for d in decided_run_dirs(w)
        for f in layout.RUN_FILES
    ]


# Finished runs of other machines' result folders (merge:), read by the figures job only.
MERGED_RUN_DIRS = PLAN.merged_run_dirs


def figures_files(prefix):
    """The figures and tables (and config.yaml) of the figures job of the workload under
    `prefix` (layout.workload_dir), by name: the same set for every workload."""
    folder = f"{OUT}/{layout.figures_dir(prefix)}"
    return {
        **{
            f"{n}_{e}": f"{folder}/{n}.{e}"
            for n in layout.FIGURE_NAMES
            for e in layout.FIGURE_FORMATS
        },
        **{
            f"{n}_{e}": f"{folder}/{n}.{e}"
            for n in layout.TABLE_NAMES
            for e in layout.TABLE_FORMATS
        },
        "config": f"{folder}/config.yaml",
    }


# The figures of the workload at the top of the outdir (the paper's, where it runs): every
# figure, table and run's utilisation figure, each with its caption in the report
# (workflow/report/); the other workloads' figures are made by the same rule, outside the
# report. `all` asks for them.
TOP_FIGURES = [w for w in PLAN.workloads if not layout.workload_dir(w)]
UTILISATION = [
    f"{OUT}/{layout.figures_dir('')}/{layout.utilisation_name(t, k)}.png"
    for w in TOP_FIGURES
    for t, k in PLAN.workload_runs(w)
]
FIGURES = [f for w in TOP_FIGURES for f in figures_files("").values()] + UTILISATION


# The report's categories this configuration's report has: each entry's category is numbered
# by its place among them when the report is made (layout.numbered_category), so a report of
# one workload starts at 1. Registered as the entries are made, which is before any report.
REPORT_CATEGORIES = set()


def category(name):
    """layout's report category `name` as a report entry's category: registered, and numbered
    when the report is made."""
    REPORT_CATEGORIES.add(name)
    return lambda wildcards: layout.numbered_category(name, REPORT_CATEGORIES)


# With several workloads, each workload's entries are a subcategory of their category.
REPORT_BY_WORKLOAD = len(PLAN.workloads) > 1
# Another workload's figures and tables in the report: its answer (comparison and cost) and
# its every run; the top workload's are all there.
WORKLOAD_REPORTED = (
    "comparison",
    "comparison_table",
    "cost",
    "cost_table",
    "results_table",
)


def reported(path, workload=""):
    """A figure, table or the configuration of a workload's figures folder as its report entry
    (layout.REPORT_ENTRIES: category and words; the caption in workflow/report/): a figure's
    PNG, a table's CSV and config.yaml; their other formats as they are, as is another
    workload's figure or table not in WORKLOAD_REPORTED."""
    name, ext = os.path.splitext(os.path.basename(path))
    top = not layout.workload_dir(workload)
    if name == "config" and top:
        entry, words = layout.CONFIGURATION, {
            "file": "the effective configuration (every default filled in)"
        }
    elif ext == (".png" if name in layout.FIGURE_NAMES else ".csv") and (
        top or name in WORKLOAD_REPORTED
    ):
        entry, label = layout.REPORT_ENTRIES[name]
        words = {("figure" if name in layout.FIGURE_NAMES else "table"): label}
    else:
        return path
    return report(
        path,
        caption=f"workflow/report/{name}.rst",
        category=category(entry),
        subcategory=workload if REPORT_BY_WORKLOAD else None,
        labels=words,
    )


def reported_utilisation(folder):
    """The utilisation folder of the top figures as one report entry per run's figure."""
    return report(
        folder,
        patterns=["{target}-repeat-{repeat}.png"],
        caption="workflow/report/utilisation.rst",
        category=category(layout.UTILISATION),
        subcategory="{target}",
        labels={"target": "{target}", "repeat": "{repeat}"},
    )


# Each workload's figures: the top ones as report entries (with the utilisation figures of
# every run, one entry each, from the figures job's utilisation folder); the others' answer
# (comparison and cost) and results table as report entries, the rest of their figures job's
# outputs with them.
REPORTED_FIGURES = [
    reported(f, w) for w in TOP_FIGURES for f in figures_files("").values()
] + [
    reported_utilisation(f"{OUT}/{layout.figures_dir('')}/{layout.UTILISATION_DIR}")
    for w in TOP_FIGURES
]
WORKLOAD_FIGURES = [
    reported(f, w)
    for w in PLAN.workloads
    if layout.workload_dir(w)
    for f in figures_files(layout.workload_dir(w)).values()
    if os.path.splitext(os.path.basename(f))[0] in WORKLOAD_REPORTED
]


# The studies (study.smk): the study's tables and figure and the workload view in the report.
def study_report(path, name, kind, shown):
    """``path`` as a report entry of layout.STUDY_REPORT_ENTRIES[name]; its category counted
    among the report's where ``shown`` (the rule's outputs are asked for)."""
    entry, words = layout.STUDY_REPORT_ENTRIES[name]
    if not shown:
        return report(
            path, caption=f"../report/{name}.rst", category=entry, labels={kind: words}
        )
    return report(
        path,
        caption=f"../report/{name}.rst",
        category=category(entry),
        labels={kind: words},
    )
