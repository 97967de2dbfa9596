"""The paths, flags and params of the workflow's data and image rules, from the
configuration: where the paper's database comes from (downloaded, extracted, generated or
read in place) and how it is indexed, how another workload's arrays are made and from which
files, and what an image build waits for. Each is a function of the validated configuration
(every default filled in) or of a resolved workload; the plan hands them to the rules.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .. import __version__
from ..data import registry
from ..io import tree_stamp
from ..vocabulary import layout
from .workloads import Workload

#: How figures name each kind of data on their face, unless ``dataset.label`` says.
DATASET_LABELS = {
    "synthetic": "SYNTHETIC frames (generated, not real embryos)",
    "imagefolder": "real images from {path}",
    "local": "Mouse Embryo Tracking Database (local copy)",
    "mouse-embryo-tracking-db": "Mouse Embryo Tracking Database (Cicconet et al. 2014)",
}


# --- how figures name the data ----------------------------------------------------------


def dataset_label(dataset: dict) -> str:
    """How figures and tables name the data on their face: ``dataset.label``, else one per
    kind (:data:`DATASET_LABELS`)."""
    if dataset.get("label"):
        return dataset["label"]
    return DATASET_LABELS[dataset["kind"]].format(path=dataset.get("path", ""))


# --- where the paper's data comes from (rules download, extract, synthesize, index) ---------


def db_dir(config: dict) -> str:
    """Where an archive (downloaded or local) is extracted."""
    return f"{config['outdir']}/{layout.DB_DIR}"


def download_path(config: dict) -> str:
    """Where the database archive is downloaded to (named after the URL)."""
    name = Path(config["dataset"].get("url", "")).name or "db.zip"
    return f"{config['outdir']}/data/{name}"


def archive(config: dict) -> str:
    """The archive to extract: a local archive's path, else the download's."""
    ds = config["dataset"]
    return ds["path"] if ds["kind"] == "local" else download_path(config)


def reads_in_place(config: dict) -> bool:
    """The source is read where it is (an image folder, a local database folder), not
    produced by the workflow."""
    ds = config["dataset"]
    return ds["kind"] == "imagefolder" or (ds["kind"] == "local" and Path(ds["path"]).is_dir())


def index_inputs(config: dict) -> dict[str, str]:
    """Files indexing waits for: the generated or extracted database (and the download
    record); nothing for a source read in place."""
    kind, outdir = config["dataset"]["kind"], config["outdir"]
    if kind == "synthetic":
        return {"db": f"{outdir}/{layout.SYNTHETIC_DB}"}
    if reads_in_place(config):
        return {}
    if kind == "local":
        return {"db": db_dir(config)}
    return {"db": db_dir(config), "info": f"{outdir}/{layout.DOWNLOAD_RECORD}"}


def index_flags(config: dict) -> list[str]:
    """Extra ``embryo-bench index`` options: the synthetic marker, the download record
    (its sha256 identifies the data), or the local archive whose sha256 does."""
    inputs = index_inputs(config)
    if config["dataset"]["kind"] == "synthetic":
        return ["--synthetic"]
    if "info" in inputs:
        return ["--download-info", inputs["info"]]
    if "db" in inputs:
        return ["--checksum-of", config["dataset"]["path"]]
    return []


def synthetic_flags(config: dict) -> list[str]:
    """``embryo-bench synthesize`` options for the trajectory-format variants set in
    ``dataset.synthetic`` and its exact counts (``total_frames``, ``three_cell_frames``:
    named only when set, so configurations without them keep their flags)."""
    syn = config["dataset"]["synthetic"]
    flags = ["--separator", syn["separator"]]
    if syn["trailing_separator"]:
        flags.append("--trailing-separator")
    flags += [
        "--unlabelled-frames",
        str(syn["unlabelled_frames"]),
        "--extra-lines",
        str(syn["extra_lines"]),
    ]
    for key in ("total_frames", "three_cell_frames"):
        if key in syn:
            flags += [f"--{key.replace('_', '-')}", str(syn[key])]
    return flags


def source_stamp(config: dict) -> str:
    """Identity of a source read in place (names, sizes and times of its files), so that
    changed images rerun indexing; "" for sources the workflow produces."""
    return tree_stamp(config["dataset"]["path"]) if reads_in_place(config) else ""


# --- another workload's data (rules dataset_file, workload_data) ------------------------------


def data_params(workload: Workload) -> dict:
    """How a workload's arrays are made (the ``workload_data`` rule's params).

    Raises:
        KeyError: the paper's workload (whose data is the shards).
    """
    data = workload.data
    if data is None:
        raise KeyError(f"workload {workload.name}: its data is the paper's shards")
    # The dataset's registry entry too (files, checksums, format, shape): an edit to
    # datasets.yaml remakes the arrays of the workloads that use that dataset.
    return {**data.to_dict(), "registry": dataclasses.asdict(registry.get(data.dataset))}


def dataset_files(outdir: str, workload: Workload) -> list[str]:
    """The files a workload's arrays are made from: none for synthetic data, the files
    of its ``path`` (an offline copy), or the downloads under ``outdir``'s
    ``data/datasets/``."""
    data = workload.data
    if data is None or data.synthetic:
        return []
    files = [f.name for f in registry.get(data.dataset).files]
    if data.path:
        return [os.path.join(data.path, f) for f in files]
    return [f"{outdir}/{layout.dataset_dir(data.dataset)}/{f}" for f in files]


def dataset_file(dataset: str, name: str) -> registry.DatasetFile:
    """A downloadable file of a dataset (the ``dataset_file`` rule's URL and checksum).

    Raises:
        KeyError: the dataset has no such file.
    """
    for f in registry.get(dataset).files:
        if f.name == name:
            return f
    raise KeyError(f"dataset {dataset} has no file {name}")


# --- images ----------------------------------------------------------------------------------


def image_tag(config: dict, image: str) -> str:
    """The tag of a project image, e.g. ``embryo-bench/cpu:0.1.0``."""
    c = config["containers"]
    return f"{c['tag_prefix']}/{image}:{c['tag_version'] or __version__}"


def image_inputs(config: dict, image: str) -> dict[str, str]:
    """Records an image build waits for: the base image (when built here) and the
    wheelhouse (when installing from it)."""
    c, out = config["containers"], {}
    if c["build_base"]:
        out["base"] = f"{config['outdir']}/{layout.BASE_IMAGE_RECORD}"
    if c["pip_source"] == "wheelhouse":
        out["wheelhouse"] = f"{config['outdir']}/{layout.wheelhouse_record(image)}"
    return out
