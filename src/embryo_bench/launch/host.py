"""The ``host`` runner: train in this process (the Snakemake job's own, or the process inside
the container the docker runner started)."""

from __future__ import annotations

import os

from ..io import read_json
from ..runners import lifeline
from ..training.train import run_training
from .job import TrainJob


def train(job: TrainJob) -> None:
    """Train ``job`` here, tied to the workflow that started it.

    A workflow job (:data:`embryo_bench.runners.lifeline.TIE_ENV` set) ends with Snakemake; a
    trainer inside the docker runner's container ends when the runner's attached stdin closes.
    Measured here (samples, energy) unless ``job.in_container``: the runner outside measures.

    Raises:
        ConfigError, DataError: the run's settings or data refused
            (:func:`embryo_bench.training.train.run_training`).
        Interrupted: the workflow or the runner went away.
    """
    if not job.in_container and os.environ.get(lifeline.TIE_ENV):
        # A workflow job ends with Snakemake: an orphaned trainer went on and wrote its
        # outputs, and a rerun then trained beside it. Not by hand:
        # `nohup embryo-bench train ... &` must survive its shell.
        lifeline.tie_to_workflow()
    elif os.environ.get(lifeline.LIFELINE_ENV) == "stdin":
        lifeline.watch_stdin()  # ends when the docker runner's attached stdin closes
    dataset = read_json(job.source_info)
    run_training(job.spec, job.inputs, dataset, job.out_dir, measure=not job.in_container)
