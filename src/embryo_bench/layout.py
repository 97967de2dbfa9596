"""Where every output goes, by name: the one list the workflow's rules and the figures code
share. Paths are relative to a configuration's ``outdir``.
"""

from __future__ import annotations

#: Files of one training run, in ``train/<target>/repeat-<k>/``. ``run.json`` (the run's
#: resolved settings, :class:`embryo_bench.spec.RunSpec`) is written before training, by its
#: own rule; the rest by the training.
RUN_SPEC = "run.json"
RUN_FILES = ("metrics.json", "history.csv", "model.keras", "settings.json", "telemetry.csv")
#: The epochs measured so far, appended after each epoch while a run trains; not a rule
#: output (a stopped run keeps what it measured without looking complete), removed when the
#: run finishes.
PROGRESS = "progress.csv"

#: Figures (PNG and PDF each) of the ``figures`` rule.
FIGURE_NAMES = (
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
TABLE_NAMES = ("results_table", "summary_table", "cost_table", "paper_comparison", "provenance")
TABLE_FORMATS = ("csv", "md")


def run_dir(target: str, repeat: int) -> str:
    """Folder of one run: ``train/<target>/repeat-<k>``."""
    return f"train/{target}/repeat-{repeat}"


def utilisation_name(target: str, repeat: int) -> str:
    """File name (without extension, PNG only) of a run's utilisation figure, under
    ``figures/``."""
    return f"utilisation/{target}-repeat-{repeat}"
