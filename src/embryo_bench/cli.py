"""``embryo-bench``: the command the Snakemake rules call, and users' entry point.

Each sub-command runs one pipeline step; errors on bad input exit with status 2 and one line
``embryo-bench: error: <message naming the file or setting>`` on stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from .errors import EmbryoBenchError, Interrupted

log = logging.getLogger("embryo_bench")


def _cmd_synthesize(a: argparse.Namespace) -> None:
    from .io import write_json
    from .synthetic import generate_db

    info = generate_db(a.out, a.embryos, a.frames_per_embryo, a.frame_size, a.seed)
    if a.info:
        write_json(a.info, info)
    log.info("synthetic database: %s", info)


def _cmd_download(a: argparse.Namespace) -> None:
    from .download import download
    from .io import write_json

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


def _cmd_extract(a: argparse.Namespace) -> None:
    from .download import extract

    root = extract(a.archive, a.out)
    log.info("extracted %s; embryo folders under %s", a.archive, root)


def _cmd_index(a: argparse.Namespace) -> None:
    from .download import sha256_tree
    from .io import atomic_path, read_json, sha256_file, write_json
    from .sources import index_db, index_imagefolder

    if a.layout == "imagefolder":
        manifest, stats = index_imagefolder(a.root, a.frame_size)
    else:
        manifest, stats = index_db(a.root, a.frame_size, a.test_mod, a.test_remainder)
    source = {
        "dataset": a.dataset,
        "label": a.label,
        "synthetic": a.synthetic,
        "root": str(Path(a.root).resolve()),
        **stats,
    }
    if a.synthetic:
        source["sha256"] = "synthetic"
    elif a.download_info:
        source["sha256"] = read_json(a.download_info)["sha256"]
    else:
        ident = Path(a.checksum_of or a.root)
        source["sha256"] = sha256_file(ident) if ident.is_file() else sha256_tree(ident)
        source["sha256_of"] = str(ident)
    with atomic_path(a.out) as tmp:
        manifest.to_csv(tmp, index=False)
    write_json(a.source_info, source)
    log.info(
        "indexed %d labelled frames: %s",
        len(manifest),
        manifest.groupby(["split", "cells"]).size().to_dict(),
    )


def _cmd_select(a: argparse.Namespace) -> None:
    import pandas as pd

    from .errors import DataError
    from .io import atomic_path, write_json
    from .select import assign_shards, balance, summary

    try:
        manifest = pd.read_csv(
            a.manifest, dtype={"embryo": str, "frame": str}, keep_default_na=False
        )
    except FileNotFoundError as exc:
        raise DataError(f"{a.manifest}: manifest not found") from exc
    selected = assign_shards(balance(manifest, a.seed), a.shards)
    counts = summary(selected)
    for split in ("train", "test"):
        if split not in counts:
            raise DataError(f"{a.manifest}: no {split} frames after selection")
    with atomic_path(a.out) as tmp:
        selected.to_csv(tmp, index=False)
    write_json(a.summary, counts)
    log.info("selected %d frames: %s", len(selected), counts)


def _cmd_crop(a: argparse.Namespace) -> None:
    from .stages import crop_shard

    n = crop_shard(a.selection, a.shard, a.frame_size, a.fraction, a.out)
    log.info("shard %d: cropped %d frames", a.shard, n)


def _cmd_invert(a: argparse.Namespace) -> None:
    from .stages import invert_shard

    log.info("inverted %d images", invert_shard(a.input, a.centre, a.out))


def _cmd_augment(a: argparse.Namespace) -> None:
    from .stages import augment_shard

    log.info(
        "augmented to %d samples", augment_shard(a.input, a.rotation_step, a.image_size, a.out)
    )


def train_options(
    *,
    target: str,
    threads: int,
    epochs: int,
    preprocessing: dict,
    cpus: int | None = None,
    gpus: int = 0,
    repeat: int = 1,
    backend: str = "tensorflow",
    batch_size: int = 480,
    learning_rate: float = 1e-4,
    dropout: float = 0.5,
    seed: int = 0,
    accuracy_target: float = 0.85,
    strategy: str = "none",
    replicas: int = 1,
) -> list[str]:
    """``embryo-bench train`` options other than shards, out-dir, source-info and runner
    (defaults: the paper's settings; ``cpus`` defaults to ``threads``), e.g. for the docker
    runner's in-container command, benchmarks and tests."""
    options = {
        "--target": target, "--repeat": repeat, "--cpus": cpus or threads, "--gpus": gpus,
        "--threads": threads, "--backend": backend, "--epochs": epochs,
        "--batch-size": batch_size, "--learning-rate": repr(learning_rate),
        "--dropout": repr(dropout), "--seed": seed, "--accuracy-target": repr(accuracy_target),
        "--preprocessing": json.dumps(preprocessing, sort_keys=True),
        "--strategy": strategy, "--replicas": replicas,
    }  # fmt: skip
    return [str(x) for pair in options.items() for x in pair]


def _cmd_train(a: argparse.Namespace) -> None:
    from .io import read_json

    # Before anything imports Keras: the backend is chosen once per process.
    os.environ["KERAS_BACKEND"] = a.backend
    settings = {
        "target": a.target, "repeat": a.repeat, "cpus": a.cpus or a.threads,
        "threads": a.threads, "gpus": a.gpus, "backend": a.backend, "epochs": a.epochs,
        "batch_size": a.batch_size, "learning_rate": a.learning_rate, "dropout": a.dropout,
        "seed": a.seed, "accuracy_target": a.accuracy_target,
        "preprocessing": json.loads(a.preprocessing), "strategy": a.strategy,
        "replicas": a.replicas,
    }  # fmt: skip
    if a.runner == "docker":
        from . import docker_runner

        if not a.target_json or not a.image_record:
            raise EmbryoBenchError("--runner docker needs --target-json and --image-record")
        docker_runner.run(
            target=json.loads(a.target_json),
            image=read_json(a.image_record),
            shards=a.shards,
            source_info=a.source_info,
            out_dir=a.out_dir,
            train_args=train_options(**settings),
        )
        return
    from .train import run_training

    settings.pop("backend")  # run_training records the backend Keras actually loaded
    run_training(
        a.shards,
        a.out_dir,
        **settings,
        dataset=read_json(a.source_info),
        runner=a.runner_name or a.runner,
        telemetry=a.runner_name != "docker",  # in a container: sampled from outside
    )


def _cmd_config_record(a: argparse.Namespace) -> None:
    import yaml

    from .io import atomic_path

    with atomic_path(a.out) as tmp:
        tmp.write_text(yaml.safe_dump(json.loads(a.json), sort_keys=False))


def _cmd_figures(a: argparse.Namespace) -> None:
    from . import figures

    figures.make_all(a)


def _cmd_base_image(a: argparse.Namespace) -> None:
    from .containers import build_base_image
    from .io import write_json

    info = build_base_image(a.tag, suite=a.suite, mirror=a.mirror, reuse=a.reuse)
    if a.record:
        write_json(a.record, info)


def _cmd_wheelhouse(a: argparse.Namespace) -> None:
    from .containers import make_wheelhouse
    from .io import sha256_file, write_json

    wheels = make_wheelhouse(a.requirements, a.out)
    log.info("%d wheels in %s", len(wheels), a.out)
    if a.record:
        write_json(
            a.record,
            {
                "requirements": a.requirements,
                "wheels": wheels,
                "requirements_sha256": sha256_file(a.requirements),
            },
        )


def _cmd_build_image(a: argparse.Namespace) -> None:
    from .containers import build_image

    info = build_image(
        a.context,
        a.tag,
        f"containers/requirements-{a.image}.txt",
        a.base_image,
        a.pip_source,
        a.record,
    )
    log.info("built %s: %s", info["tag"], info["image_id"])


def _cmd_evaluate(a: argparse.Namespace) -> None:
    from .evaluate import evaluate

    print(json.dumps(evaluate(a.model, a.images, all_rotations=a.all_rotations)))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every sub-command."""
    p = argparse.ArgumentParser(prog="embryo-bench", description=__doc__.splitlines()[0])
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("synthesize", help="write a synthetic database tree")
    s.add_argument("--out", required=True)
    s.add_argument("--embryos", type=int, default=10)
    s.add_argument("--frames-per-embryo", type=int, default=40)
    s.add_argument("--frame-size", type=int, default=480)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--info")
    s.set_defaults(func=_cmd_synthesize)

    s = sub.add_parser("download", help="download the database archive")
    s.add_argument("--url", required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--info", required=True)
    s.add_argument("--sha256", default="")
    s.add_argument("--retries", type=int, default=5)
    s.add_argument("--timeout", type=float, default=60.0)
    s.add_argument("--no-progress", action="store_true")
    s.set_defaults(func=_cmd_download)

    s = sub.add_parser("extract", help="unpack a database archive")
    s.add_argument("--archive", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_extract)

    s = sub.add_parser("index", help="index a source into manifest.csv")
    s.add_argument("--layout", choices=["db", "imagefolder"], required=True)
    s.add_argument("--root", required=True)
    s.add_argument("--frame-size", type=int, required=True)
    s.add_argument("--test-mod", type=int, default=5)
    s.add_argument("--test-remainder", type=int, default=0)
    s.add_argument("--dataset", required=True)
    s.add_argument("--label", required=True)
    s.add_argument("--synthetic", action="store_true")
    s.add_argument("--download-info", help="download.json whose sha256 identifies the data")
    s.add_argument(
        "--checksum-of", help="archive or folder whose sha256 identifies the data (default: --root)"
    )
    s.add_argument("--out", required=True)
    s.add_argument("--source-info", required=True)
    s.set_defaults(func=_cmd_index)

    s = sub.add_parser("select", help="select 1-4 cell frames, balance, shard")
    s.add_argument("--manifest", required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--shards", type=int, required=True)
    s.add_argument("--out", required=True)
    s.add_argument("--summary", required=True)
    s.set_defaults(func=_cmd_select)

    s = sub.add_parser("crop", help="centre-crop one shard")
    s.add_argument("--selection", required=True)
    s.add_argument("--shard", type=int, required=True)
    s.add_argument("--frame-size", type=int, required=True)
    s.add_argument("--fraction", type=float, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_crop)

    s = sub.add_parser("invert", help="equalise + shadow-invert one shard")
    s.add_argument("--input", required=True)
    s.add_argument("--centre", type=int, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_invert)

    s = sub.add_parser("augment", help="rotate + downsize one shard")
    s.add_argument("--input", required=True)
    s.add_argument("--rotation-step", type=float, required=True)
    s.add_argument("--image-size", type=int, required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_augment)

    s = sub.add_parser("train", help="train the paper CNN on augmented shards (host runner)")
    s.add_argument("--shards", nargs="+", required=True)
    s.add_argument("--out-dir", required=True)
    s.add_argument("--target", required=True)
    s.add_argument("--repeat", type=int, default=1, help="repeat number (1-based; recorded)")
    s.add_argument(
        "--cpus", type=int, help="cores the run is pinned to (the target's cpus; default threads)"
    )
    s.add_argument("--threads", type=int, required=True, help="backend thread-pool size")
    s.add_argument("--gpus", type=int, default=0, help="GPUs assigned (sampled through NVML)")
    s.add_argument(
        "--backend",
        choices=["tensorflow", "jax", "torch"],
        default="tensorflow",
        help="Keras backend (KERAS_BACKEND)",
    )
    s.add_argument("--epochs", type=int, required=True)
    s.add_argument("--batch-size", type=int, required=True)
    s.add_argument("--learning-rate", type=float, required=True)
    s.add_argument("--dropout", type=float, required=True)
    s.add_argument("--seed", type=int, required=True)
    s.add_argument("--accuracy-target", type=float, required=True)
    s.add_argument("--preprocessing", required=True, help="JSON of the preprocessing settings")
    s.add_argument("--source-info", required=True)
    s.add_argument(
        "--runner",
        choices=["host", "docker"],
        default="host",
        help="host: in this process; docker: in a container of --image-record",
    )
    s.add_argument("--runner-name", help=argparse.SUPPRESS)  # recorded name (in containers)
    s.add_argument("--strategy", choices=["none", "mirrored"], default="none")
    s.add_argument(
        "--replicas",
        type=int,
        default=1,
        help="devices of a mirrored strategy (GPUs, else logical CPU devices)",
    )
    s.add_argument("--target-json", help="the hardware target's settings (docker runner)")
    s.add_argument("--image-record", help="image JSON from the image build (docker runner)")
    s.set_defaults(func=_cmd_train)

    s = sub.add_parser("figures", help="figures and results table")
    s.add_argument("--runs", nargs="+", required=True, help="run folders (metrics.json etc.)")
    s.add_argument("--targets", required=True, help="JSON list of target settings")
    s.add_argument("--cost-base", default="", help="target that cost is normalised to")
    s.add_argument("--cost-note", default="", help="why cost is not normalised, if it is not")
    s.add_argument("--selection", required=True)
    s.add_argument("--source-info", required=True)
    s.add_argument("--preprocessing", required=True)
    s.add_argument("--out-dir", required=True)
    s.set_defaults(func=_cmd_figures)

    s = sub.add_parser("config-record", help="write the run's configuration (JSON) as YAML")
    s.add_argument("--json", required=True)
    s.add_argument("--out", required=True)
    s.set_defaults(func=_cmd_config_record)

    s = sub.add_parser("base-image", help="build a Debian base image (debootstrap + import)")
    s.add_argument("--tag", default="embryo-bench/debian:bookworm")
    s.add_argument("--suite", default="bookworm")
    s.add_argument("--mirror", help="Debian mirror (default: the host's apt mirror)")
    s.add_argument("--record", help="write the image record (JSON) here")
    s.add_argument("--reuse", action="store_true", help="keep an existing image of --tag")
    s.set_defaults(func=_cmd_base_image)

    s = sub.add_parser("wheelhouse", help="download an image's wheels on the host")
    s.add_argument("--requirements", default="containers/requirements-cpu.txt")
    s.add_argument("--out", default="containers/wheelhouse")
    s.add_argument("--record", help="write the wheel list (JSON) here")
    s.set_defaults(func=_cmd_wheelhouse)

    s = sub.add_parser("build-image", help="build a hardware image with the Docker SDK")
    s.add_argument("--image", choices=["cpu", "gpu"], required=True)
    s.add_argument("--tag", required=True)
    s.add_argument("--base-image", required=True)
    s.add_argument("--pip-source", choices=["pypi", "wheelhouse"], default="pypi")
    s.add_argument(
        "--context",
        default=str(Path(__file__).resolve().parents[2]),
        help="the repository (build context; default: this checkout)",
    )
    s.add_argument("--record", required=True)
    s.set_defaults(func=_cmd_build_image)

    s = sub.add_parser("evaluate", help="score a trained model on an image folder")
    s.add_argument("--model", required=True, help="model.keras from a training run")
    s.add_argument("--images", required=True, help="<split>/<class>/*.png or <class>/*.png")
    s.add_argument(
        "--all-rotations",
        action="store_true",
        help="score every training rotation (the paper's rotated test set)",
    )
    s.set_defaults(func=_cmd_evaluate)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``embryo-bench`` console command."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        args.func(args)
    except EmbryoBenchError as exc:
        print(f"embryo-bench: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"embryo-bench: interrupted ({exc}); nothing was kept", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
