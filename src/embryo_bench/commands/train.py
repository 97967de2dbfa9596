"""``embryo-bench`` commands that train and score: one run trained by its runner, a trained
model scored.

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import argparse
import json


def cmd_train(p):
    """train one run (its run.json) on the data its workload's input kind names: the paper's
    augmented shards, or another workload's arrays (and image files)"""
    p.add_argument("--spec", required=True, help="the run's run.json (runner, limits, settings)")
    p.add_argument(
        "--shards", nargs="+", default=[], help="augmented shards (the paper's workload)"
    )
    p.add_argument("--arrays", help="a workload's prepared arrays (another workload's runs)")
    p.add_argument("--files", help="a workload's image files (its files input mode)")
    p.add_argument(
        "--source-info",
        required=True,
        help="the index stage's source.json, or a workload's data info.json",
    )
    p.add_argument(
        "--out-dir",
        required=True,
        help="the run folder to write the run's files to (metrics.json, history.csv, "
        "model.keras, ...)",
    )
    p.add_argument("--image-record", help="image JSON from the image build (docker runs)")
    p.add_argument(
        "--daemon",
        help="how the spec's docker_host is reached (the workflow's daemon record: TLS files); "
        "without it, the address alone with the Docker environment's TLS",
    )
    # Inside the docker runner's container: train here; the runner measures from outside.
    p.add_argument("--in-container", action="store_true", help=argparse.SUPPRESS)

    def run(a):
        from ..launch.job import TrainJob
        from ..launch.registry import train
        from ..vocabulary.spec import RunSpec
        from ..vocabulary.training_input import TrainingInput

        spec = RunSpec.read(a.spec)
        # The data options as one input, of the kind the run trains on.
        inputs = TrainingInput.for_run(spec, a.spec, a.shards, a.arrays, a.files)
        # The run's runner trains it (one plug-in a runner kind, by its name).
        train(
            TrainJob(
                spec,
                spec_file=a.spec,
                inputs=inputs,
                source_info=a.source_info,
                out_dir=a.out_dir,
                image_record=a.image_record,
                daemon=a.daemon,
                in_container=a.in_container,
            )
        )

    return run


def cmd_evaluate(p):
    """score a trained model on an image folder"""
    p.add_argument("--model", required=True, help="model.keras from a training run")
    p.add_argument("--images", required=True, help="<split>/<class>/*.png or <class>/*.png")
    p.add_argument(
        "--all-rotations",
        action="store_true",
        help="score every training rotation (the paper's rotated test set)",
    )

    def run(a):
        from ..training.evaluate import evaluate

        print(json.dumps(evaluate(a.model, a.images, all_rotations=a.all_rotations)))

    return run
