"""``embryo-bench``: the command the Snakemake rules call, and users' entry point.

Each sub-command runs one pipeline step and is one ``cmd_<name>`` function here: it declares
the command's arguments and returns the function that runs it, which only converts arguments
and calls the package (the logic lives in the modules). The workflow hashes a command's code
as that function, this module's shared code and what they import
(:mod:`embryo_bench.vocabulary.codehash`).
Errors on bad input exit with status 2 and one line ``embryo-bench: error: <message naming
the file or setting>`` on stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
from pathlib import Path

from .errors import ConfigError, DataError, EmbryoBenchError, Interrupted
from .runners import lifeline

log = logging.getLogger("embryo_bench")


def cmd_synthesize(p):
    """write a synthetic database tree"""
    p.add_argument("--out", required=True)
    p.add_argument("--embryos", type=int, default=10)
    p.add_argument("--frames-per-embryo", type=int, default=40)
    p.add_argument("--frame-size", type=int, default=480)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--separator", choices=["tab", "spaces"], default="tab")
    p.add_argument("--trailing-separator", action="store_true")
    p.add_argument("--unlabelled-frames", type=int, default=0)
    p.add_argument("--extra-lines", type=int, default=0)
    p.add_argument("--total-frames", type=int, help="labelled frames over all embryos")
    p.add_argument("--three-cell-frames", type=int, help="3-cell frames over all embryos")
    p.add_argument("--jobs", type=int, default=1, help="processes writing embryos at once")
    p.add_argument("--info")

    def run(a):
        from .data.synthetic import write_db
        from .io import write_json

        info = write_db(
            a.out,
            a.embryos,
            a.frames_per_embryo,
            a.frame_size,
            a.seed,
            separator=a.separator,
            trailing_separator=a.trailing_separator,
            unlabelled_frames=a.unlabelled_frames,
            extra_lines=a.extra_lines,
            total_frames=a.total_frames,
            three_cell_frames=a.three_cell_frames,
            jobs=a.jobs,
        )
        if a.info:
            write_json(a.info, info)
        log.info("synthetic database: %s", info)

    return run


def cmd_download(p):
    """download the database archive"""
    p.add_argument("--url", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--info", required=True)
    p.add_argument("--sha256", default="")
    p.add_argument("--retries", type=int, default=5)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--no-progress", action="store_true")

    def run(a):
        from .data.download import download
        from .io import write_json

        # urllib3 refuses a timeout of 0 and the socket NaN, each with a traceback; no
        # attempt at all left no file to check.
        if not (math.isfinite(a.timeout) and a.timeout > 0):
            raise ConfigError(f"--timeout {a.timeout}: expected a finite number of seconds above 0")
        if a.retries < 0:
            raise ConfigError(f"--retries {a.retries}: expected 0 or more")
        info = download(
            a.url,
            a.out,
            sha256=a.sha256 or None,
            retries=a.retries,
            timeout=a.timeout,
            progress=not a.no_progress,
        )
        write_json(a.info, info)
        log.info("downloaded %s (%d bytes, sha256 %s)", a.url, info["bytes"], info["sha256"])

    return run


def cmd_extract(p):
    """unpack a database archive"""
    p.add_argument("--archive", required=True)
    p.add_argument("--out", required=True)

    def run(a):
        from .data.download import extract

        log.info("extracted %s; embryo folders under %s", a.archive, extract(a.archive, a.out))

    return run


def cmd_index(p):
    """index a source into manifest.csv"""
    p.add_argument("--layout", choices=["db", "imagefolder"], required=True)
    p.add_argument("--root", required=True)
    p.add_argument("--frame-size", type=int, required=True)
    p.add_argument("--test-mod", type=int, default=5)
    p.add_argument("--test-remainder", type=int, default=0)
    p.add_argument("--dataset", required=True)
    p.add_argument("--label", required=True)
    p.add_argument("--synthetic", action="store_true")
    p.add_argument("--download-info", help="download.json whose sha256 identifies the data")
    p.add_argument(
        "--checksum-of", help="archive or folder whose sha256 identifies the data (default: --root)"
    )
    p.add_argument("--unlabelled-frames", choices=["skip", "error"], default="skip")
    p.add_argument("--extra-lines", type=int, default=1)
    p.add_argument("--lineage-ended", choices=["skip", "keep"], default="skip")
    p.add_argument("--out", required=True)
    p.add_argument("--source-info", required=True)

    def run(a):
        from .data.select import CLASSES
        from .data.sources import check_split, index_source, skipped_lines
        from .data.trajectories import TrajectoryRules
        from .io import atomic_path, write_json

        manifest, source = index_source(
            a.layout,
            a.root,
            a.frame_size,
            test_mod=a.test_mod,
            test_remainder=a.test_remainder,
            dataset=a.dataset,
            label=a.label,
            synthetic=a.synthetic,
            download_info=a.download_info,
            checksum_of=a.checksum_of,
            rules=TrajectoryRules(a.unlabelled_frames, a.extra_lines, a.lineage_ended),
        )
        for line in skipped_lines(source):
            log.warning("%s", line)
        # Before anything is written: a split without test embryos, or a class in one split.
        check_split(manifest, a.root, a.layout, a.test_mod, a.test_remainder, CLASSES)
        with atomic_path(a.out) as tmp:
            manifest.to_csv(tmp, index=False)
        write_json(a.source_info, source)
        counts = manifest.groupby(["split", "cells"]).size().to_dict()
        log.info("indexed %d labelled frames: %s", len(manifest), counts)

    return run


def cmd_select(p):
    """select 1-4 cell frames, balance, shard"""
    p.add_argument("--manifest", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--shards", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--summary", required=True)

    def run(a):
        from .data.select import counts_lines, select_frames
        from .io import atomic_path, write_json

        selected, counts = select_frames(a.manifest, a.seed, a.shards)
        with atomic_path(a.out) as tmp:
            selected.to_csv(tmp, index=False)
        write_json(a.summary, counts)
        for line in counts_lines(counts):
            log.info("%s", line)
        if dropped := counts.get("dropped_frames"):
            log.warning(
                "%d labelled frames left out: cell counts outside 1-4 (the paper's classes): %s",
                sum(dropped.values()),
                dropped,
            )

    return run


def cmd_crop(p):
    """centre-crop one shard"""
    p.add_argument("--selection", required=True)
    p.add_argument("--shard", type=int, required=True)
    p.add_argument("--frame-size", type=int, required=True)
    p.add_argument("--fraction", type=float, required=True)
    p.add_argument("--out", required=True)

    def run(a):
        from .data.stages import crop_shard

        n = crop_shard(a.selection, a.shard, a.frame_size, a.fraction, a.out)
        log.info("shard %d: cropped %d frames", a.shard, n)

    return run


def cmd_invert(p):
    """equalise + shadow-invert one shard"""
    p.add_argument("--input", required=True)
    p.add_argument("--centre", type=int, required=True)
    p.add_argument("--out", required=True)

    def run(a):
        from .data.stages import invert_shard

        log.info("inverted %d images", invert_shard(a.input, a.centre, a.out))

    return run


def cmd_augment(p):
    """rotate + downsize one shard"""
    p.add_argument("--input", required=True)
    p.add_argument("--rotation-step", type=float, required=True)
    p.add_argument("--image-size", type=int, required=True)
    p.add_argument("--out", required=True)

    def run(a):
        from .data.stages import augment_shard

        n = augment_shard(a.input, a.rotation_step, a.image_size, a.out)
        log.info("augmented to %d samples", n)

    return run


def cmd_workloads(p):
    """list the workloads of the catalog (the studies' models) and the datasets they use"""

    def run(a):
        from .workloads import catalog

        for w in catalog.catalog().values():
            r = w.recipe
            print(
                f"{w.name:<24} study {w.study}  {w.dataset:<12} "
                f"{'x'.join(map(str, w.input_shape))} {w.input_dtype}, {w.classes} classes, "
                f"{w.parameters:,} parameters; {r.optimizer} {r.learning_rate:g}, batch "
                f"{r.batch_size}, {r.epochs} epochs\n    {w.source}"
            )

    return run


def cmd_studies(p):
    """list the studies (each a folder of src/embryo_bench/studies/), their workloads and
    configurations"""
    p.add_argument("--names", action="store_true", help="only the names, one a line")
    p.add_argument(
        "--with-config",
        action="store_true",
        help="only the studies that ship a configuration (config/<name>.yaml, its short form)",
    )

    def run(a):
        from .studies.docs import configured
        from .studies.registry import studies
        from .workloads.catalog import catalog

        known = studies()
        chosen = configured(known) if a.with_config else list(known.values())
        workloads = catalog().values()
        for s in chosen:
            if a.names:
                print(s.name)
                continue
            own = ", ".join(w.name for w in workloads if w.study == s.number) or "none"
            config = (
                f"config/{s.name}.yaml, config/{s.name}-short.yaml" if s in configured(known)
                else "none of its own"
            )  # fmt: skip
            print(
                f"{s.number} {s.name:<12} {s.seed}: {s.headline or s.title}\n"
                f"    folder {s.folder}\n    workloads: {own}\n    configuration: {config}"
            )

    return run


def cmd_dataset_file(p):
    """download one file of a workload's dataset, checked against the registry"""
    p.add_argument("--dataset", required=True, help="a dataset of data/datasets.yaml")
    p.add_argument("--file", required=True, help="the file's name in the registry")
    p.add_argument("--out", required=True)
    p.add_argument("--retries", type=int, default=5)

    def run(a):
        from .data.fetch import fetch_file
        from .data.registry import get

        if a.retries < 0:
            raise ConfigError(f"--retries {a.retries}: expected 0 or more")
        ds = get(a.dataset)
        f = next((f for f in ds.files if f.name == a.file), None)
        if f is None:
            raise ConfigError(
                f"dataset {ds.name}: no file {a.file!r}; it has {[f.name for f in ds.files]}"
            )
        fetch_file(ds, f, a.out, progress=False, retries=a.retries)
        log.info("dataset %s: %s from %s", ds.name, a.out, f.url)

    return run


def cmd_workload_data(p):
    """make a workload's arrays: its dataset's files parsed, or synthetic arrays of its shape"""
    p.add_argument("--workload", required=True, help="the workload's name (for the info)")
    p.add_argument(
        "--data",
        required=True,
        help="how, as JSON (the plan's embryo_bench.planning.workloads.WorkloadData)",
    )
    p.add_argument("--files", nargs="*", default=[], help="the dataset's files (real data)")
    p.add_argument("--out", required=True, help="the arrays (.npz)")
    p.add_argument("--info", required=True, help="what they are (JSON, for the figures)")

    def run(a):
        from .data import datasets
        from .data.registry import check_file
        from .io import parse_json, write_json

        d = parse_json(a.data, "--data")
        ds = datasets.get(d["dataset"])
        shape = tuple(d["input_shape"])
        if d["synthetic"]:
            n_train = d["train_samples"] or ds.train
            n_test = d["test_samples"] or ds.test
            if not n_train or n_test is None:  # the plan checks it first
                raise ConfigError(
                    f"workload {a.workload}: dataset {ds.name} gives no sample counts; set "
                    "train_samples and test_samples for its synthetic data"
                )
            info = datasets.prepare_synthetic(
                ds.name, a.out, n_train=n_train, n_test=n_test, seed=d["seed"], shape=shape
            )
        else:
            if ds.files:
                files = {Path(f).name: Path(f) for f in a.files}
                # Every file is the registry's (or the one its workload accepts by sha256)
                # before it is parsed: an offline copy is checked nowhere else.
                offline = f"workload {a.workload}" if d["path"] else ""
                accepted = d.get("sha256") or {}
                for f in ds.files:
                    if f.name in files:  # prepare names a missing one
                        check_file(
                            ds, f, files[f.name], sha256=accepted.get(f.name), accept=offline
                        )
            else:  # an image folder: read in place
                files = {datasets.FOLDER: Path(d["path"])}
            info = datasets.prepare(
                ds.name,
                files,
                a.out,
                limit_train=d["train_samples"],
                limit_test=d["test_samples"],
                shape=shape,
            )
        label = f"{ds.name}" + (" (SYNTHETIC)" if d["synthetic"] else "")
        write_json(a.info, {**info, "workload": a.workload, "label": label})
        log.info(
            "workload %s: %s, %d train / %d test samples", a.workload, label,
            info["train"], info["test"],
        )  # fmt: skip

    return run


def cmd_workload_files(p):
    """write a workload's training images as JPEG files, train/<class>/<n>.jpg (its files
    input mode reads them)"""
    p.add_argument("--arrays", required=True, help="the workload's arrays (.npz)")
    p.add_argument("--out", required=True, help="the folder to write (train/ and test/)")

    def run(a):
        from .data.arrays import read_arrays, read_info
        from .data.classnames import write_class_folders

        info = read_info(a.arrays)
        classes = info.get("classes")
        # A class count that names no folder, or a label beyond it, would fail inside the
        # image writer: refused here, naming the file.
        if not isinstance(classes, int) or isinstance(classes, bool) or classes < 2:
            raise DataError(
                f"{a.arrays}: info classes {classes!r}; expected a whole number of classes, "
                "2 or more"
            )
        x_train, y_train, _, _ = read_arrays(a.arrays, classes=classes)
        # Without names, numbers of one width: their sorted order is the labels' order.
        width = len(str(classes - 1))
        names = info.get("class_names") or [f"class-{k:0{width}d}" for k in range(classes)]
        # The training images only (the test set is scored from memory); the folder appears
        # only when all its files are written, and none before every name is checked.
        write_class_folders(
            x_train,
            y_train,
            Path(a.out) / "train",
            [str(n) for n in names],
            f"{a.arrays}: class_names",
            classes=classes,
        )
        log.info("wrote %d training images under %s/train", len(y_train), a.out)

    return run


def cmd_spec(p):
    """write a run's settings (run.json), checked"""
    p.add_argument("--json", required=True, help="the run spec as JSON")
    p.add_argument("--out", required=True)

    def run(a):
        from .io import parse_json
        from .vocabulary.spec import RunSpec

        where = "--json (the run spec)"
        RunSpec.from_dict(parse_json(a.json, where), where).write(a.out)

    return run


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
    p.add_argument("--out-dir", required=True)
    p.add_argument("--image-record", help="image JSON from the image build (docker runs)")
    p.add_argument(
        "--daemon",
        help="how the spec's docker_host is reached (the workflow's daemon record: TLS files); "
        "without it, the address alone with the Docker environment's TLS",
    )
    # Inside the docker runner's container: train here; the runner measures from outside.
    p.add_argument("--in-container", action="store_true", help=argparse.SUPPRESS)

    def run(a):
        from .io import read_json
        from .vocabulary.spec import RunSpec
        from .vocabulary.training_input import TrainingInput

        spec = RunSpec.read(a.spec)
        # The data options as one input, of the kind the run trains on.
        inputs = TrainingInput.for_run(spec, a.spec, a.shards, a.arrays, a.files)
        if spec.runner == "docker" and not a.in_container:
            from .runners import docker_runner
            from .runners.docker_api import Daemon

            if not a.image_record:
                raise EmbryoBenchError(f"{a.spec}: a docker run needs --image-record")
            daemon = Daemon.read(a.daemon) if a.daemon else None
            if daemon is not None and daemon.address != spec.docker_host:
                raise ConfigError(
                    f"--daemon {a.daemon} is for {daemon.address or 'the environment'}, "
                    f"{a.spec} trains on {spec.docker_host or 'the environment'}"
                )
            docker_runner.run(
                spec,
                spec_file=a.spec,
                image=read_json(a.image_record),
                daemon=daemon,
                inputs=inputs,
                source_info=a.source_info,
                out_dir=a.out_dir,
            )
            return
        from .training.train import run_training

        if not a.in_container and os.environ.get(lifeline.TIE_ENV):
            # A workflow job ends with Snakemake: an orphaned trainer went on and wrote its
            # outputs, and a rerun then trained beside it. Not by hand:
            # `nohup embryo-bench train ... &` must survive its shell.
            lifeline.tie_to_workflow()
        elif os.environ.get(lifeline.LIFELINE_ENV) == "stdin":
            lifeline.watch_stdin()  # ends when the docker runner's attached stdin closes
        dataset = read_json(a.source_info)
        run_training(spec, inputs, dataset, a.out_dir, measure=not a.in_container)

    return run


def cmd_figures(p):
    """figures and tables of every run"""
    p.add_argument(
        "--spec",
        required=True,
        help="figures-spec.json: runs (in the planned order), merged folders, targets' prices, "
        "cost and comparison bases, stability thresholds, the effective configuration",
    )
    p.add_argument(
        "--selection", default="", help="the select stage's selected.csv (the paper's workload)"
    )
    p.add_argument(
        "--select-summary", default="", help="the select stage's summary.json (data counts)"
    )
    p.add_argument(
        "--source-info",
        required=True,
        help="the index stage's source.json, or a workload's data info.json",
    )
    p.add_argument(
        "--shard",
        default="",
        help="an augment shard (its preprocessing settings; the paper's workload)",
    )
    p.add_argument(
        "--rounds-note",
        default="",
        help="why the rounds stopped (compare.until), for the comparison table",
    )
    p.add_argument(
        "--out-dir",
        required=True,
        help="the figures folder; the spec's configuration is written there as config.yaml "
        "after the figures (one job, so it always describes the runs the tables show)",
    )

    def run(a):
        from .data.stages import shard_settings
        from .io import kept_path, read_json, staged_folder
        from .recording.baseline import load_baseline
        from .reporting import figures
        from .reporting.merge import merge_runs, split_by_machine
        from .reporting.runs import load_runs
        from .vocabulary.figspec import FiguresSpec
        from .vocabulary.spec import Preprocessing

        spec = FiguresSpec.read(a.spec, current=True)
        runs = load_runs(spec.runs)
        merged, targets = merge_runs(spec.merge, runs, spec.targets)
        # One target's runs on two machines are two targets: never pooled into one.
        own = split_by_machine(runs, merged, targets)
        for note in own.notes:
            log.warning("%s", note)
        baseline = spec.stability.get("baseline", "")
        # Into a staging folder, moved into place only when every figure and table is made
        # (a failure halfway leaves no half set), the complete set then kept beside
        # (figures.previous), for the workflow to put back if a later figures job fails after
        # Snakemake removed them.
        with staged_folder(a.out_dir, keep=kept_path(a.out_dir)) as out_dir:
            figures.make_all(
                own.runs,
                own.targets,
                read_json(a.source_info),
                (
                    Preprocessing.from_dict(shard_settings(a.shard)["preprocessing"], a.shard)
                    if a.shard
                    else None
                ),
                a.selection or None,
                out_dir,
                cost_base=own.name(spec.cost_base),
                cost_note=spec.cost_note,
                stability=spec.stability,
                counts=read_json(a.select_summary) if a.select_summary else None,
                merged=merged,
                compare_base=own.name(spec.compare_base),
                min_difference=spec.min_difference,
                baseline=load_baseline(baseline) if baseline else None,
                rounds_note=a.rounds_note,
            )
            _write_config(spec.config, out_dir / "config.yaml")

    return run


def cmd_study_ours(p):
    """every workload's runs as one table, and per workload and target (what a
    study's numbers and claims are put beside, and the workload x target view)"""
    p.add_argument(
        "--workloads",
        required=True,
        help="JSON list: per workload its name, catalog, input, data, spec (figures-spec.json) "
        "and info (its data's record)",
    )
    p.add_argument("--runs-out", required=True, help="study/runs.csv: every run")
    p.add_argument("--ours-out", required=True, help="study/ours.csv: per workload and target")

    def run(a):
        from .io import atomic_path, parse_json
        from .reporting.study import StudyWorkload, ours_tables

        entries = parse_json(a.workloads, "--workloads")
        if not isinstance(entries, list):
            raise ConfigError("--workloads: expected a JSON list of workloads")
        workloads = [StudyWorkload.from_dict(e, f"--workloads[{i}]") for i, e in enumerate(entries)]
        runs, ours = ours_tables(workloads)
        for table, path in ((runs, a.runs_out), (ours, a.ours_out)):
            with atomic_path(path) as tmp:
                table.to_csv(tmp, index=False)
        log.info("%d runs, %d workload x target rows", len(runs), len(ours))

    return run


def cmd_study(p):
    """a study's published numbers beside ours, and its claims checked on our runs"""
    p.add_argument("--study", required=True, help="a study's name (embryo-bench studies)")
    p.add_argument("--numbers", required=True, help="the study's numbers file (CSV)")
    p.add_argument("--ours", required=True, help="study/ours.csv (embryo-bench study-ours)")
    p.add_argument(
        "--runs", required=True, help="study/runs.csv (cost bases, rounds for the claims)"
    )
    p.add_argument("--out-dir", required=True, help="study/: numbers, claims, study.png")

    def run(a):
        from .published.studies import load_numbers, studies
        from .reporting.study import read_ours, read_runs, write_study

        known = studies()
        if a.study not in known:
            raise ConfigError(f"--study {a.study!r}: expected one of {sorted(known)}")
        study = known[a.study]
        runs = read_runs(a.runs)
        cost_base = dict(zip(runs["workload"], runs["cost_base"], strict=True))
        published = load_numbers(study, a.numbers)
        write_study(study, published, read_ours(a.ours), runs, a.out_dir, cost_base)

    return run


def cmd_workload_view(p):
    """time and cost relative to the base target, per workload and target"""
    p.add_argument("--runs", required=True, help="study/runs.csv (embryo-bench study-ours)")
    p.add_argument("--out", required=True, help="the view's path without extension")

    def run(a):
        from .reporting.study import read_runs
        from .reporting.workload_view import write_workload_view

        try:
            write_workload_view(read_runs(a.runs), a.out)
        except ValueError as exc:
            raise DataError(f"{a.runs}: {exc}") from None

    return run


def cmd_round_check(p):
    """measure every target's ratio interval after a round (compare.until: the workflow
    adds rounds until they are narrow enough)"""
    p.add_argument(
        "--check",
        required=True,
        help="JSON: round, min_difference, and per workload its base target and its runs "
        "of rounds 1..round",
    )
    p.add_argument("--out", required=True, help="the round check (rounds/round-<k>.json)")

    def run(a):
        from .io import parse_json
        from .reporting.rounds import check_round, write_check

        c = parse_json(a.check, "--check")
        write_check(check_round(c["round"], c["workloads"], c["min_difference"]), a.out)

    return run


def _write_config(config: dict, path: Path) -> None:
    """Write the effective configuration ``config`` as YAML at ``path`` (atomically)."""
    import yaml

    from .io import atomic_path

    with atomic_path(path) as tmp:
        tmp.write_text(yaml.safe_dump(config, sort_keys=False))


def cmd_calibrate(p):
    """measure this machine's own probe noise: back-to-back calibration probes on given cores
    and threads, written as a machine baseline (stability.baseline)"""
    from .recording.calibrate import BASELINE_PROBES, MIN_PAIRS

    p.add_argument(
        "--probes",
        type=int,
        default=BASELINE_PROBES,
        help=f"probes, back to back (>= {MIN_PAIRS + 1})",
    )
    p.add_argument("--seconds", type=float, default=2.0, help="length of each probe (s)")
    p.add_argument("--threads", type=int, default=1, help="threads, as a run's threads")
    p.add_argument("--cpus", type=int, default=1, help="cores to pin to, as a run's cpus")
    p.add_argument(
        "--backend", default="tensorflow", help="Keras backend running the probe (installed)"
    )
    p.add_argument(
        "--out", required=True, help="the baseline JSON to write (its folder must exist)"
    )

    def run(a):
        from .training.noise import take_baseline

        # Every argument is checked before the probing (minutes) starts.
        base = take_baseline(a.probes, a.seconds, a.threads, a.cpus, a.backend, a.out)
        rows = "; ".join(
            f"{c['lag_s']:.3g} s apart: median {c['median']:.1%}, p99 {c['p99']:.1%}"
            for c in base["changes"]
        )
        print(
            f"{base['probes']} probes of {base['probe_seconds']:.1f} s: "
            f"{base['gflops_mean']:.1f} GFLOP/s mean ({base['gflops_min']:.1f}-"
            f"{base['gflops_max']:.1f}), CV {base['cv']:.1%}; change {rows}; written {a.out}"
        )

    return run


def cmd_batch_limit(p):
    """find the largest batch a run's model trains at on this machine, and draw throughput
    against batch size (SYNTHETIC inputs: speed and memory only)"""
    p.add_argument(
        "--spec",
        required=True,
        help="a run.json: its backend, gpus, cpus, threads, precision and model (the paper's "
        "at its preprocessing's image size, or its workload's)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the folder to write batch_limit.csv, batch_limit.json and batch_limit.png in",
    )
    p.add_argument(
        "--start", type=int, help="the first batch size tried (images; default: the run's)"
    )
    p.add_argument(
        "--most",
        type=int,
        help="the largest batch size tried (images; default 2**20, lowered to what this "
        "machine's memory, or --memory-limit, holds of a trial's synthetic data)",
    )
    p.add_argument(
        "--resolution",
        type=float,
        default=0.05,
        help="stop bisecting when the gap is this fraction of the fitting batch or 8 images, "
        "whichever is larger (default 0.05)",
    )
    p.add_argument(
        "--budget", type=float, help="seconds the whole search may take (default: no limit)"
    )
    p.add_argument(
        "--memory-limit",
        help="each trial's memory (a Docker size: 512m, 2g), as RLIMIT_DATA: writable address "
        "space, at least the resident memory (for CPU trials; default: none)",
    )
    p.add_argument(
        "--steps", type=int, default=10, help="training steps an epoch of a trial (default 10)"
    )
    p.add_argument(
        "--epochs",
        type=int,
        default=3,
        help="epochs a trial (>= 2; the first, with compilation, is left out; default 3)",
    )

    def run(a):
        from .recording.hardware import size_mib
        from .reporting.batch_limit import draw
        from .training import batch_limit as bl
        from .vocabulary.spec import RunSpec

        spec = RunSpec.read(a.spec)
        out = Path(a.out)
        if out.exists() and not out.is_dir():  # mkdir failed with a traceback
            raise ConfigError(f"--out {out}: a file; expected a folder")
        limit = None
        if a.memory_limit is not None:
            try:
                limit = size_mib(a.memory_limit)
            except ConfigError as exc:
                raise ConfigError(f"--memory-limit: {exc}") from None
        # Every setting is checked before the first trial, and before any file is written.
        settings = bl.check_settings(
            spec,
            a.spec,
            start=a.start,
            most=a.most,
            resolution=a.resolution,
            budget=a.budget,
            memory_limit_mib=limit,
            steps=a.steps,
            epochs=a.epochs,
        )
        out.mkdir(parents=True, exist_ok=True)
        # A former search's files go first: an interrupted search leaves none that look
        # complete. The JSON is written last, so a folder holding it holds the others.
        for name in (bl.JSON_NAME, bl.CSV_NAME, bl.PNG_NAME):
            (out / name).unlink(missing_ok=True)
        log.info(
            "batch-limit of %s (%s, %s, %d GPU(s)): batch %d to %d, %d steps x %d epochs a "
            "trial, each in a fresh process; SYNTHETIC inputs",
            spec.workload_name, spec.backend, spec.precision, spec.gpus, settings.start,
            settings.most, settings.steps, settings.epochs,
        )  # fmt: skip
        for note in bl.notes(spec)[1:]:
            log.warning("%s", note)
        result = bl.find_batch_limit(spec, settings, log)
        failed = [t for t in result["trials"] if t["outcome"] == bl.ERROR]
        if failed and len(failed) == len(result["trials"]):
            # No trial trained at all (a GPU the framework does not see, a model that cannot be
            # built): a setting to fix, not a limit measured; nothing that looks like one.
            raise ConfigError(f"{a.spec}: no trial could train: {failed[0]['error']}")
        bl.write_trials(result, out / bl.CSV_NAME)
        draw(bl.trials_frame(result), result, out / bl.PNG_NAME)
        bl.write_result(result, out / bl.JSON_NAME)
        print(
            f"largest batch that fits: {result['largest_batch_size']} "
            f"({result['stopped']['text']}); {len(result['trials'])} trials in "
            f"{result['seconds']:.0f} s; written {out / bl.JSON_NAME}"
        )

    return run


def cmd_compare(p):
    """compare result folders (outdirs, from any machines or days) target by target: the
    first folder is the reference point; exit status 1 when a slowdown is measured"""
    p.description = (
        "Each other folder's targets (per workload: train/<target>/repeat-k, "
        "workloads/<name>/train/<target>/repeat-k) against the first folder's: the ratio of "
        "the geometric means of images/s with Welch's 95 % t interval on the logarithms, "
        "unpaired (runs in different folders share no rounds), and a verdict (at least 3 "
        "runs a side, an interval excluding 1, a ratio further from 1 than --min-difference "
        "on the log scale). A target whose runs in one folder ran on several machines is "
        "split, <target>@<machine>, never pooled; each folder's own rounds are shown paired "
        "against its compare.base. Markdown on stdout. Exit status: 1 when a slowdown is "
        "measured (another folder against the first, or any folder against --reference), "
        "2 for bad input, else 0."
    )
    p.add_argument(
        "folders", nargs="+", help="result folders (outdirs); the first is the reference"
    )
    p.add_argument(
        "--min-difference",
        type=float,
        help="a ratio closer to 1 than this fraction (log scale) is no measured difference "
        "(default: compare.min_difference's default in config/schema.yaml)",
    )
    p.add_argument(
        "--reference",
        help="YAML of expected images/s per target, each with a tolerance (a fraction, log "
        "scale like --min-difference; default: --min-difference): 'tolerance: 0.1', "
        "'targets: {host-1cpu: {images_per_s: 52}}', 'workloads: {mnist-mlp: {host-1cpu: "
        "{images_per_s: 900, tolerance: 0.05}}}'; a measured slowdown beyond it is a regression",
    )
    p.add_argument("--csv", help="write every row, every column, as CSV here")
    p.add_argument("--markdown", help="write the Markdown here too")

    def run(a):
        from .io import atomic_path
        from .reporting import crossfolder
        from .vocabulary.config import apply_defaults, load_schema

        # compare.min_difference's default and range, written once: in the schema.
        given = {} if a.min_difference is None else {"min_difference": a.min_difference}
        schema = load_schema()["properties"]["compare"]
        min_difference = apply_defaults(given, schema, [("--min-difference", given)])[
            "min_difference"
        ]
        if len(a.folders) < 2 and not a.reference:
            raise ConfigError("compare: give two or more result folders, or one and --reference")
        # Checked before the comparison runs, which may take a while: a path that cannot be
        # written failed only after it, with a traceback.
        outputs: dict[Path, str] = {}
        reference = Path(a.reference).resolve() if a.reference else None
        # What compare reads is never written: --markdown onto the reference file, or --csv
        # onto a run's metrics.json, replaced it with the comparison.
        runs = {Path(f).resolve() / part: f for f in a.folders for part in ("train", "workloads")}
        for option, path in (("--csv", a.csv), ("--markdown", a.markdown)):
            if not path:
                continue
            where = Path(path).resolve()
            if where == reference:
                raise ConfigError(
                    f"{option} {path}: the --reference file; expected a file of its own"
                )
            inside = next(((r, f) for r, f in runs.items() if where.is_relative_to(r)), None)
            if inside:
                raise ConfigError(
                    f"{option} {path}: inside {inside[1]}'s runs ({inside[0].name}/); expected a "
                    "file outside the result folders' train/ and workloads/"
                )
            if where.is_dir():
                raise ConfigError(f"{option} {path}: is a folder; expected a file to write")
            if not where.parent.is_dir():
                raise ConfigError(f"{option} {path}: its folder does not exist")
            if not os.access(where.parent, os.W_OK | os.X_OK):
                raise ConfigError(f"{option} {path}: its folder is not writable")
            if where in outputs:
                raise ConfigError(f"{option} {path}: the same file as {outputs[where]}")
            outputs[where] = option
        reference = crossfolder.read_reference(a.reference, min_difference) if a.reference else None
        result = crossfolder.compare_folders(
            a.folders, min_difference, reference, a.reference or ""
        )
        for note in result.notes:
            log.info("%s", note)
        text = crossfolder.markdown(result)
        if a.csv:
            with atomic_path(a.csv) as tmp:
                result.table.to_csv(tmp, index=False)
        if a.markdown:
            with atomic_path(a.markdown) as tmp:
                tmp.write_text(text)
        print(text, end="")
        lines = crossfolder.regression_lines(result)
        for line in lines:
            print(f"embryo-bench: slower: {line}", file=sys.stderr)
        if lines:
            # A nightly job or a CI stops on it (main returns 0 for a command that returns).
            raise SystemExit(1)

    return run


def cmd_check_config(p):
    """check a configuration: syntax (with line and column), schema and settings; several
    files are merged in order, as Snakemake merges several --configfile"""
    p.add_argument(
        "files",
        nargs="+",
        help="configuration files, as given to snakemake --configfile: a later file's settings "
        "over an earlier one's (nested sections merged key by key, lists replaced)",
    )
    p.add_argument(
        "--each",
        action="store_true",
        help="check each file as a configuration of its own instead (several configs at once)",
    )

    def run(a):
        from .planning.plan import Plan
        from .vocabulary.config import apply_defaults, load_schema, read_config_files

        schema = load_schema()
        for files in [[f] for f in a.files] if a.each else [a.files]:
            name = " + ".join(files)
            config, sources = read_config_files(files)
            apply_defaults(config, schema, sources)  # the schema's refusal names its file
            try:  # every check the workflow makes before a job, but the hardware's
                plan = Plan.from_config(
                    config, hardware_check="none", schema=schema, sources=sources
                )
                plan.source_stamp()  # a source read in place: every entry readable
            except EmbryoBenchError as exc:
                raise ConfigError(f"{name}: {exc}") from None
            for note in (*plan.merge_notes, *plan.baseline_notes):
                print(f"{name}: {note}")
            print(
                f"{name}: valid ({len(plan.targets)} targets, {len(plan.workloads)} workloads, "
                f"outdir {plan.config['outdir']})"
            )

    return run


def cmd_base_image(p):
    """build a Debian base image (debootstrap + import)"""
    p.add_argument("--tag", default="embryo-bench/debian:bookworm")
    p.add_argument("--suite", default="bookworm")
    p.add_argument("--mirror", help="Debian mirror (default: the host's apt mirror)")
    p.add_argument("--record", help="write the image record (JSON) here")
    p.add_argument("--reuse", action="store_true", help="keep an existing image of --tag")

    def run(a):
        from .io import write_json
        from .runners.containers import build_base_image

        info = build_base_image(a.tag, suite=a.suite, mirror=a.mirror, reuse=a.reuse)
        if a.record:
            write_json(a.record, info)

    return run


def cmd_wheelhouse(p):
    """download an image's wheels on the host"""
    p.add_argument("--image", choices=["cpu", "gpu"], default="cpu")
    # Defaults relative to the current folder: run it in the repository.
    p.add_argument(
        "--requirements", help="the lock (default: containers/requirements-<image>.lock)"
    )
    p.add_argument("--out", help="the wheel folder (default: containers/wheelhouse/<image>)")
    p.add_argument("--record", help="write the wheel list (JSON) here")

    def run(a):
        from .io import write_json
        from .runners.containers import requirements_file, wheelhouse_dir
        from .runners.wheelhouse import make_wheelhouse

        out = a.out or wheelhouse_dir(a.image)
        record = make_wheelhouse(a.requirements or requirements_file(a.image), out)
        log.info("%d wheels in %s", len(record["wheels"]), out)
        if a.record:
            write_json(a.record, record)

    return run


def cmd_build_image(p):
    """build a hardware image with the Docker SDK"""
    p.add_argument("--image", choices=["cpu", "gpu"], required=True)
    p.add_argument("--tag", required=True)
    p.add_argument("--base-image", required=True)
    p.add_argument("--pip-source", choices=["pypi", "wheelhouse"], default="pypi")
    p.add_argument(
        "--context",
        default=str(Path(__file__).resolve().parents[2]),
        help="the repository (build context; default: this checkout)",
    )
    p.add_argument("--record", required=True)

    def run(a):
        from .runners.containers import build_image

        info = build_image(a.context, a.tag, a.image, a.base_image, a.pip_source, a.record)
        log.info(
            "%s %s: %s, %.0f MiB, %.0f s",
            "reused" if info["reused"] else "built",
            info["tag"],
            info["image_id"],
            info["size_mib"],
            info["build_seconds"],
        )
        if "tensorflow_build" in info:
            log.info("TensorFlow's build: %s", json.dumps(info["tensorflow_build"]))

    return run


def cmd_ship_image(p):
    """put a built image onto a target's Docker daemon (docker_host)"""
    p.add_argument("--record", required=True, help="the image build's record (JSON)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--docker-host",
        help="tcp://, ssh:// or unix:// address (tcp:// over TLS from DOCKER_TLS_VERIFY and "
        "DOCKER_CERT_PATH, or on a loopback address)",
    )
    where.add_argument("--daemon", help="the workflow's daemon record (address, TLS files)")
    p.add_argument("--out", required=True, help="write the record for that daemon here")

    def run(a):
        from .io import read_json, write_json
        from .runners.containers import ship_image
        from .runners.docker_api import Daemon

        daemon = Daemon.read(a.daemon) if a.daemon else a.docker_host
        info = ship_image(read_json(a.record), daemon)
        write_json(a.out, info)
        name, how = info["daemon"]["name"], info["channel"]
        log.info("%s on %s (%s, %s)", info["tag"], info["docker_host"], name, how)

    return run


def cmd_daemon(p):
    """write how a target's Docker daemon is reached (address, TLS file paths)"""
    p.add_argument("--json", required=True, help="the daemon (docker_api.Daemon) as JSON")
    p.add_argument("--out", required=True)

    def run(a):
        from .io import parse_json, write_json
        from .runners.docker_api import Daemon

        where = "--json (the daemon)"
        fields = parse_json(a.json, where)
        # Its TLS files are checked at plan time and where a client of it is built
        # (ship-image, train: docker_client), not here.
        Daemon.from_dict(fields, where)
        write_json(a.out, fields)

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
        from .training.evaluate import evaluate

        print(json.dumps(evaluate(a.model, a.images, all_rotations=a.all_rotations)))

    return run


def commands() -> dict:
    """Command name -> its ``cmd_<name>`` function, in definition order."""
    return {
        name[4:].replace("_", "-"): fn
        for name, fn in globals().items()
        if name.startswith("cmd_") and callable(fn)
    }


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    p = argparse.ArgumentParser(prog="embryo-bench", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)
    for name, define in commands().items():
        s = sub.add_parser(name, help=define.__doc__)
        s.set_defaults(func=define(s))
    return p


#: Commands that tie themselves to the workflow (:mod:`embryo_bench.runners.lifeline`) or not at
#: all: a docker training's runner must outlive nothing but stop its container first.
SELF_TIED = ("train",)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``embryo-bench`` console command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        if args.command not in SELF_TIED:
            # A workflow job ends with Snakemake, writing nothing more (a figures or
            # augment job orphaned by a SIGKILLed Snakemake finished and wrote its outputs).
            lifeline.tie_to_workflow()
        args.func(args)
    except EmbryoBenchError as exc:
        print(f"embryo-bench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"embryo-bench: interrupted ({exc}); nothing was kept", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print("embryo-bench: interrupted (SIGINT); nothing was kept", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
