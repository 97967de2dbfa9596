"""Where every output goes, by name: the one list the workflow's rules and the figures code
share. Paths are relative to a configuration's ``outdir``.
"""

from __future__ import annotations

import re

#: Files of one training run, in ``train/<target>/repeat-<k>/``. ``run.json`` (the run's
#: resolved settings, :class:`embryo_bench.vocabulary.spec.RunSpec`) is written before training, by
#: its
#: own rule; the rest by the training.
RUN_SPEC = "run.json"
#: Format versions of ``run.json`` and ``metrics.json``: a file records the version
#: it was written in; readers refuse a newer one and read the older ones (files without a
#: version are version 0). Raise one when what a file means changes. ``run.json`` 2: a run
#: of a workload other than the paper's (its ``workload``); the paper's runs are still
#: written as 1, unchanged, so they are not run again.
RUN_SPEC_FORMAT = 2
METRICS_FORMAT = 1
#: Format version of a machine baseline (`embryo-bench calibrate --out`, `stability.baseline`);
#: files without one are version 0 (their machine records no CPU flags or host cores).
BASELINE_FORMAT = 1
#: The figures job's settings (:mod:`embryo_bench.vocabulary.figspec`), beside ``figures/``, and its
#: format version (2: the file carries the digest of its content).
FIGURES_SPEC = "figures-spec.json"
FIGURES_SPEC_FORMAT = 2
METRICS = "metrics.json"
HISTORY = "history.csv"
MODEL = "model.keras"
SETTINGS = "settings.json"
TELEMETRY = "telemetry.csv"
WINDOWS = "windows.csv"
RUN_FILES = (METRICS, HISTORY, MODEL, SETTINGS, TELEMETRY, WINDOWS)
#: Where the data comes from, under ``outdir``: the download's record, the extracted
#: database, the synthetic database and its record.
DOWNLOAD_RECORD = "data/download.json"
DB_DIR = "data/db"
SYNTHETIC_DB = "data/synthetic"
SYNTHETIC_RECORD = "data/synthetic.json"
#: The base image's build record, under ``outdir``.
BASE_IMAGE_RECORD = "images/base.json"


def wheelhouse_record(image: str) -> str:
    """The record of an image's wheelhouse: ``images/wheelhouse-<image>.json``."""
    return f"images/wheelhouse-{image}.json"


def image_record(image: str, daemon: str = "") -> str:
    """The record of an image's build (``images/<image>.json``) or, with ``daemon`` (a
    daemon key), of that image sent to that daemon (``images/<image>@<daemon>.json``)."""
    return f"images/{image}@{daemon}.json" if daemon else f"images/{image}.json"


def daemon_record(daemon: str) -> str:
    """How the daemon of a ``docker_host`` is reached (address, TLS file paths), by daemon
    key: ``images/daemon@<daemon>.json``."""
    return f"images/daemon@{daemon}.json"


#: The epochs measured so far, appended after each epoch while a run trains; not a rule
#: output (a stopped run keeps what it measured without looking complete), removed when the
#: run finishes.
PROGRESS = "progress.csv"

#: Figures (PNG and PDF each) of the ``figures`` rule.
FIGURE_NAMES = (
    "comparison",
    "fig1_preprocessing",
    "fig4_test_accuracy",
    "fig5_6_training_time",
    "epoch_times",
    "throughput",
    "efficiency",
    "cost",
    "backends",
    "sweeps",
    "paper_vs_ours",
)
FIGURE_FORMATS = ("png", "pdf")
#: Tables (CSV and Markdown each) of the ``figures`` rule.
TABLE_NAMES = (
    "comparison_table",
    "results_table",
    "summary_table",
    "cost_table",
    "paper_comparison",
    "provenance",
)
TABLE_FORMATS = ("csv", "md")

#: Where each figure and table sits in the ``snakemake --report`` (category, numbered so the
#: paper's own figures come first) and the words it is listed under.
#: The report's landing page, under the outdir: the workflow's description and the answer's
#: tables, written where a run ends (:func:`embryo_bench.reporting.answer.write_landing`).
REPORT_LANDING = "report-landing.rst"
#: The report's categories (Snakemake shows them sorted by name, so each is numbered when the
#: report is made: :func:`numbered_category`, over those a configuration's report has). The
#: workload x target view leads when a configuration has several workloads, then the study's
#: numbers beside ours (:data:`STUDY_REPORT_ENTRIES`), then the answer for each workload: each
#: target's speed and cost relative to the base.
WORKLOAD_VIEW_CATEGORY = "Every workload: time and cost relative to the base target"
STUDY_CATEGORY = "The study's published numbers beside ours, and its claims"
COMPARISON = "The answer: each target's speed and cost relative to the base"
PAPER_FIGURES = "The paper's figures, reproduced"
OUR_FIGURES = "Throughput, efficiency and epoch times (beyond the paper)"
TABLES = "Tables"
UTILISATION = "Utilisation of each run"
CONFIGURATION = "Configuration"
REPORT_CATEGORIES = (
    WORKLOAD_VIEW_CATEGORY,
    STUDY_CATEGORY,
    COMPARISON,
    PAPER_FIGURES,
    OUR_FIGURES,
    TABLES,
    UTILISATION,
    CONFIGURATION,
)


def numbered_category(category: str, present) -> str:
    """``category`` numbered by its place among the categories ``present`` in a report, in
    :data:`REPORT_CATEGORIES`' order: "1. The answer: ..." where it leads (a report of one
    workload has neither the workload view nor a study's numbers, and starts at 1).

    Raises:
        ValueError: ``category`` is not one of :data:`REPORT_CATEGORIES`.
    """
    if category not in REPORT_CATEGORIES:
        raise ValueError(f"report category {category!r} is not in REPORT_CATEGORIES")
    shown = [c for c in REPORT_CATEGORIES if c in set(present) | {category}]
    return f"{shown.index(category) + 1}. {category}"


REPORT_ENTRIES = {
    "comparison": (COMPARISON, "Speed relative to the base target, paired within rounds"),
    "comparison_table": (COMPARISON, "The paired comparison, with intervals and verdicts"),
    "fig1_preprocessing": (PAPER_FIGURES, "Figure 1: one frame through the preprocessing"),
    "fig4_test_accuracy": (PAPER_FIGURES, "Figure 4: test accuracy per epoch"),
    "fig5_6_training_time": (PAPER_FIGURES, "Figures 5 and 6: training time per system"),
    "paper_vs_ours": (PAPER_FIGURES, "The paper's values beside ours"),
    "throughput": (OUR_FIGURES, "Training throughput per target"),
    "efficiency": (OUR_FIGURES, "Achieved FLOP/s against the machine's measured limit"),
    "epoch_times": (OUR_FIGURES, "First epoch against steady-state epochs"),
    "cost": (COMPARISON, "Time and cost relative to the base target"),
    "backends": (OUR_FIGURES, "Keras backends compared"),
    "sweeps": (OUR_FIGURES, "Batch size and thread sweeps"),
    "results_table": (TABLES, "Every run, with its stability verdict"),
    "summary_table": (TABLES, "Per target, every run counted (flags counted beside)"),
    "cost_table": (COMPARISON, "Cost per target"),
    "paper_comparison": (TABLES, "The paper's values beside ours"),
    "provenance": (TABLES, "Provenance of every run"),
}


#: The paper's workload: the default, and the one whose outputs sit at the top of
#: an outdir (``train/``, ``figures/``) as they did before workloads; every other workload's
#: under ``workloads/<name>/`` (:func:`workload_dir`), in the same layout.
PAPER_WORKLOAD = "paper"
#: A workload's prepared data, under its folder: the arrays (``.npz``), what they are, and
#: the image files its ``files`` input mode reads.
WORKLOAD_ARRAYS = "data/arrays.npz"
WORKLOAD_DATA_INFO = "data/info.json"
WORKLOAD_FILES = "data/files"


def workload_dir(workload: str = PAPER_WORKLOAD) -> str:
    """Where a workload's outputs go, relative to ``outdir``: "" for the paper's,
    ``workloads/<name>/`` for another (ending in ``/``)."""
    return "" if workload == PAPER_WORKLOAD else f"workloads/{workload}/"


def workload_of_dir(prefix: str) -> str:
    """The workload whose outputs go under ``prefix`` (:func:`workload_dir`'s inverse: ""
    is the paper's, ``workloads/<name>/`` that workload's).

    Raises:
        ValueError: ``prefix`` is neither.
    """
    if not prefix:
        return PAPER_WORKLOAD
    name = prefix.removeprefix("workloads/").removesuffix("/")
    if workload_dir(name) != prefix or not name or "/" in name:
        raise ValueError(f"{prefix!r}: not a workload's folder (expected '' or workloads/<name>/)")
    return name


def workload_dir_pattern(workloads) -> str:
    """A regular expression that matches :func:`workload_dir` of each of ``workloads`` and
    nothing else (the empty string among them for the paper's): the constraint of the
    workflow's ``{wdir}`` wildcard, which puts every workload's runs and figures in one
    rule each while the paper's stay at the top of ``outdir``."""
    # A group, so the paper's folder alone ("") is still a pattern, and one that matches "".
    return "(?:" + "|".join(re.escape(workload_dir(w)) for w in workloads) + ")"


def run_path(prefix: str, target: str, repeat: int | str) -> str:
    """Folder of one run under a workload's folder ``prefix`` (:func:`workload_dir`):
    ``<prefix>train/<target>/repeat-<k>``. Every run's path is made here: with the
    workflow's wildcards (``"{wdir}"``, ``"{target}"``, ``"{repeat}"``) it is the rules'
    pattern."""
    return f"{prefix}train/{target}/repeat-{repeat}"


def figures_dir(prefix: str) -> str:
    """A workload's figures folder under its folder ``prefix`` (:func:`workload_dir`):
    ``<prefix>figures``."""
    return f"{prefix}figures"


def dataset_dir(dataset: str) -> str:
    """Where a dataset's downloaded files go: ``data/datasets/<name>``."""
    return f"data/datasets/{dataset}"


def run_dir(target: str, repeat: int, workload: str = PAPER_WORKLOAD) -> str:
    """Folder of one run: ``train/<target>/repeat-<k>`` for the paper's workload,
    ``workloads/<workload>/train/<target>/repeat-<k>`` for another."""
    return run_path(workload_dir(workload), target, repeat)


#: The folder, under a figures folder, of one utilisation figure per run (a folder: a
#: workload's runs are its own, so the figures job declares the folder, not its files).
UTILISATION_DIR = "utilisation"


def utilisation_name(target: str, repeat: int) -> str:
    """File name (without extension, PNG only) of a run's utilisation figure, under
    ``figures/``."""
    return f"{UTILISATION_DIR}/{target}-repeat-{repeat}"


#: For the studies, under ``outdir``: every workload's runs as one table
#: (``study/runs.csv``: the results table's rows with the workload's bases) and per workload
#: and target
#: (``study/ours.csv``, :data:`embryo_bench.reporting.study.OURS_COLUMNS`); the study's
#: numbers beside ours and its claims (``study/<name>.csv`` and ``.md``, :data:`STUDY_TABLES`)
#: with one figure (``study/study.png``); the workload x target view
#: (``study/workload_view.csv``, ``.md``, ``.png``).
STUDY_DIR = "study"
STUDY_RUNS = "study/runs.csv"
STUDY_OURS = "study/ours.csv"
STUDY_TABLES = ("numbers", "claims")
STUDY_FIGURE = "study/study.png"
WORKLOAD_VIEW = "study/workload_view"
#: The study's outputs and the workload view in the ``snakemake --report``: (category, words).
STUDY_REPORT_ENTRIES = {
    "workload_view": (WORKLOAD_VIEW_CATEGORY, "Time and cost relative to the base, per workload"),
    "numbers": (STUDY_CATEGORY, "The study's numbers beside ours, both machines named"),
    "claims": (STUDY_CATEGORY, "The study's headline claims, checked on our runs"),
    "study": (STUDY_CATEGORY, "The study's throughput beside ours, per workload"),
}
