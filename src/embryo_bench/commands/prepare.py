"""``embryo-bench`` commands that prepare the data: the paper's database (synthesized or
downloaded, unpacked, indexed, selected and sharded, then each shard cropped, inverted and
augmented) and the other workloads' datasets (their files fetched, parsed into arrays, written
as image files).

Each ``cmd_<name>`` function declares one command's arguments and returns the function that
runs it (:mod:`embryo_bench.cli` gathers them); what a command runs it imports when it runs,
so its code hash (:mod:`embryo_bench.vocabulary.codehash`) follows that function and this
module's shared code, not the other commands'.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

from ..errors import ConfigError, DataError

log = logging.getLogger("embryo_bench")


def cmd_synthesize(p):
    """write a synthetic database tree"""
    p.add_argument(
        "--out",
        required=True,
        help="the database folder to write (E<NN>/Frame<NNN>.png, E<NN>/_trajectories.txt)",
    )
    p.add_argument("--embryos", type=int, default=10, help="number of embryos (E00, E01, ...)")
    p.add_argument(
        "--frames-per-embryo",
        type=int,
        default=40,
        help="labelled frames of each embryo: 9 or more, so that every cell count 1-4 appears "
        "(4 or more with --three-cell-frames; unused with --total-frames)",
    )
    p.add_argument(
        "--frame-size",
        type=int,
        default=480,
        help="frame width and height (px; the real database's: 480)",
    )
    p.add_argument(
        "--seed", type=int, default=0, help="random seed: the same seed writes the same frames"
    )
    p.add_argument(
        "--separator",
        choices=["tab", "spaces"],
        default="tab",
        help="between a trajectory line's fields: tab, or spaces (two)",
    )
    p.add_argument(
        "--trailing-separator",
        action="store_true",
        help="end every trajectory line with a separator (a variant of the format)",
    )
    p.add_argument(
        "--unlabelled-frames",
        type=int,
        default=0,
        help="frames (of 4 cells) written after each embryo's last trajectory line, so "
        "unlabelled; not with --extra-lines",
    )
    p.add_argument(
        "--extra-lines",
        type=int,
        default=0,
        help="trajectory lines (copies of the last) written after each embryo's last frame; "
        "not with --unlabelled-frames",
    )
    p.add_argument("--total-frames", type=int, help="labelled frames over all embryos")
    p.add_argument("--three-cell-frames", type=int, help="3-cell frames over all embryos")
    p.add_argument("--jobs", type=int, default=1, help="processes writing embryos at once")
    p.add_argument(
        "--info",
        help="write the settings and the labelled frames per cell count here (JSON); without "
        "it they are only logged",
    )

    def run(a):
        from ..data.synthetic import write_db
        from ..io import write_json

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
    p.add_argument("--url", required=True, help="http(s) URL of the archive (zip or tar)")
    p.add_argument(
        "--out",
        required=True,
        help="the archive file to write; the bytes gather in <out>.part until complete and checked",
    )
    p.add_argument(
        "--info",
        required=True,
        help="write the download record here (JSON: url, path, bytes, sha256, sha256_verified, "
        "resumed)",
    )
    p.add_argument(
        "--sha256",
        default="",
        help="the archive's expected sha256 (hex); empty: the observed one is recorded "
        "unchecked, and no partial download of an earlier run is resumed",
    )
    p.add_argument(
        "--retries",
        type=int,
        default=5,
        help="attempts after the first (0 or more), on a connection error, HTTP 429 or 5xx, "
        "or a body cut short (resumed where it can be checked)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="connect and read timeout of each request (s, above 0)",
    )
    p.add_argument("--no-progress", action="store_true", help="show no progress bar (stderr)")

    def run(a):
        from ..data.download import download
        from ..io import write_json

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
    p.add_argument("--archive", required=True, help="the database archive (zip or tar)")
    p.add_argument(
        "--out",
        required=True,
        help="the folder to unpack into, replaced if it exists; the archive must hold E<NN>/ "
        "embryo folders at its top level or one level down",
    )

    def run(a):
        from ..data.download import extract

        log.info("extracted %s; embryo folders under %s", a.archive, extract(a.archive, a.out))

    return run


def cmd_index(p):
    """index a source into manifest.csv"""
    p.add_argument(
        "--layout",
        choices=["db", "imagefolder"],
        required=True,
        help="the source's layout: db (E<NN>/Frame<NNN>.png and E<NN>/_trajectories.txt) or "
        "imagefolder (<split>/<class>/*.png, class k holding k + 1 cells)",
    )
    p.add_argument(
        "--root",
        required=True,
        help="the folder to index (a database, or a folder one level above it; an image folder)",
    )
    p.add_argument(
        "--frame-size",
        type=int,
        required=True,
        help="frame width and height (px); a frame of another size is refused",
    )
    p.add_argument(
        "--test-mod",
        type=int,
        default=5,
        help="the split rule's modulus: an embryo is test data when its number mod this equals "
        "--test-remainder (db layout only)",
    )
    p.add_argument(
        "--test-remainder",
        type=int,
        default=0,
        help="embryos whose number mod --test-mod equals this are the test split (db layout only)",
    )
    p.add_argument(
        "--dataset",
        required=True,
        help="the data's kind (the configuration's dataset.kind), recorded in --source-info",
    )
    p.add_argument(
        "--label", required=True, help="how the figures name the data, recorded in --source-info"
    )
    p.add_argument(
        "--synthetic",
        action="store_true",
        help="generated data: its identity is recorded as synthetic, not a sha256",
    )
    p.add_argument("--download-info", help="download.json whose sha256 identifies the data")
    p.add_argument(
        "--checksum-of", help="archive or folder whose sha256 identifies the data (default: --root)"
    )
    p.add_argument(
        "--unlabelled-frames",
        choices=["skip", "error"],
        default="skip",
        help="frames after an embryo's last trajectory line: skip (counted and left out) or "
        "error (db layout)",
    )
    p.add_argument(
        "--extra-lines",
        type=int,
        default=1,
        help="trajectory lines after an embryo's last frame that are ignored (counted); more is "
        "an error (db layout)",
    )
    p.add_argument(
        "--lineage-ended",
        choices=["skip", "keep"],
        default="skip",
        help="frames from the line where a grand-daughter slot ends (5 or more cells): skip "
        "(left out) or keep (labelled by their non-zero slots) (db layout)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the manifest to write (CSV: embryo, frame, path, cells, split; a labelled frame "
        "a row)",
    )
    p.add_argument(
        "--source-info",
        required=True,
        help="write the source's description here (source.json: dataset, label, counts, sha256)",
    )

    def run(a):
        from ..data.select import CLASSES
        from ..data.sources import check_split, index_source, skipped_lines
        from ..data.trajectories import TrajectoryRules
        from ..io import atomic_path, write_json

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
    p.add_argument("--manifest", required=True, help="the index stage's manifest (CSV)")
    p.add_argument(
        "--seed",
        type=int,
        required=True,
        help="random seed of the frames drawn from the larger classes to balance them",
    )
    p.add_argument(
        "--shards",
        type=int,
        required=True,
        help="number of shards (1 or more) the selected frames are dealt into, round-robin",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the selection to write (CSV: the manifest's columns and shard)",
    )
    p.add_argument(
        "--summary",
        required=True,
        help="write the frames per split and class, beside the paper's counts, here (JSON)",
    )

    def run(a):
        from ..data.select import counts_lines, select_frames
        from ..io import atomic_path, write_json

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
    p.add_argument("--selection", required=True, help="the select stage's selection (CSV)")
    p.add_argument("--shard", type=int, required=True, help="the shard to crop: its number, from 0")
    p.add_argument(
        "--frame-size",
        type=int,
        required=True,
        help="frame width and height (px); a frame of another size is refused",
    )
    p.add_argument(
        "--fraction",
        type=float,
        required=True,
        help="crop side / frame side, above 0 and at most 1 (paper: 2/3, 480 -> 320 px)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the cropped shard to write (.npz: images and their labels)",
    )

    def run(a):
        from ..data.stages import crop_shard

        n = crop_shard(a.selection, a.shard, a.frame_size, a.fraction, a.out)
        log.info("shard %d: cropped %d frames", a.shard, n)

    return run


def cmd_invert(p):
    """equalise + shadow-invert one shard"""
    p.add_argument("--input", required=True, help="a crop stage shard (.npz)")
    p.add_argument(
        "--centre",
        type=int,
        required=True,
        help="grey level (0-255) the shadow inversion p -> |p - centre| maps to 0 (paper: 128)",
    )
    p.add_argument("--out", required=True, help="the inverted shard to write (.npz)")

    def run(a):
        from ..data.stages import invert_shard

        log.info("inverted %d images", invert_shard(a.input, a.centre, a.out))

    return run


def cmd_augment(p):
    """rotate + downsize one shard"""
    p.add_argument("--input", required=True, help="an invert stage shard (.npz)")
    p.add_argument(
        "--rotation-step",
        type=float,
        required=True,
        help="degrees between rotations, above 0 and at most 360: angles 0, step, 2 x step, "
        "... below 360 (paper: 18, 20 rotations)",
    )
    p.add_argument(
        "--image-size",
        type=int,
        required=True,
        help="side of the output images (px; paper: 64)",
    )
    p.add_argument(
        "--out",
        required=True,
        help="the augmented shard to write (.npz: every rotation of every frame, with its angle)",
    )

    def run(a):
        from ..data.stages import augment_shard

        n = augment_shard(a.input, a.rotation_step, a.image_size, a.out)
        log.info("augmented to %d samples", n)

    return run


def cmd_dataset_file(p):
    """download one file of a workload's dataset, checked against the registry"""
    p.add_argument("--dataset", required=True, help="a dataset of data/datasets.yaml")
    p.add_argument("--file", required=True, help="the file's name in the registry")
    p.add_argument(
        "--out",
        required=True,
        help="the file to write; one already there whose sha256 and size are the registry's is "
        "kept",
    )
    p.add_argument(
        "--retries", type=int, default=5, help="download attempts after the first (0 or more)"
    )

    def run(a):
        from ..data.fetch import fetch_file
        from ..data.registry import get

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
        from ..data import datasets
        from ..data.formats import FOLDER
        from ..data.registry import check_file
        from ..io import parse_json, write_json

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
                ds.name,
                a.out,
                n_train=n_train,
                n_test=n_test,
                seed=d["seed"],
                shape=shape,
                vocabulary=d.get("vocabulary", 0),
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
                files = {FOLDER: Path(d["path"])}
            info = datasets.prepare(
                ds.name,
                files,
                a.out,
                limit_train=d["train_samples"],
                limit_test=d["test_samples"],
                shape=shape,
                ngram_range=d.get("ngram_range", 1),
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
        from ..data.arrays import read_arrays, read_info
        from ..data.classnames import write_class_folders

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
