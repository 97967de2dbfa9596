# Shared helpers: output paths, shard list, targets, and hashes of the package modules each
# rule runs (Snakemake does not track imported code, so a change to them reruns the rule).
import hashlib
import json
import os
import re
import shlex
import sys

OUT = config["outdir"]
DATASET = config["dataset"]
PP = config["preprocess"]
TRAIN = config["train"]
SHARDS = list(range(config["select"]["shards"]))
LOGS = f"{OUT}/logs"


# Jobs run this repository's own package source (src/), whatever else is installed, so the
# code that runs is the code hashed below. `python3` is the environment's interpreter (the
# one snakemake runs in, or the rule's conda env with --software-deployment-method conda).
SRC = os.path.join(workflow.basedir, "src")
sys.path.insert(0, SRC)
from embryo_bench.containers import IMAGE_SOURCES, content_hash, docker_client
from embryo_bench.errors import ConfigError, DockerError
from embryo_bench.runs import (
    check_backend,
    cost_base,
    expand_sweeps,
    repeats_of,
    run_seed,
)
from embryo_bench.io import tree_stamp
from embryo_bench.hardware import (
    ClusterError,
    local_node,
    slurm_nodes,
    target_memory_mib,
    why_not_here,
    why_not_on_nodes,
)

# shell.prefix is formatted like the commands: {{ }} in the f-string's result is one brace.
shell.prefix(
    f"set -euo pipefail; "
    f"export PYTHONPATH={shlex.quote(SRC)}${{{{PYTHONPATH:+:$PYTHONPATH}}}}; "
)


def code_hash(*modules):
    """sha256 over the source of embryo_bench modules, always with cli.py (a params value:
    an edit reruns the jobs that use the module)."""
    h = hashlib.sha256()
    for name in ("cli", *modules):
        path = os.path.join(SRC, "embryo_bench", f"{name}.py")
        try:
            with open(path, "rb") as fh:
                h.update(fh.read())
        except FileNotFoundError:
            raise WorkflowError(f"package module {path} not found")
    return h.hexdigest()[:16]


HARDWARE_CHECK = config.get("hardware_check", "local")
_DAEMONS = {}


def _daemon(address):
    """(Docker client info, None) for a daemon address ("" = local), or (None, error)."""
    if address not in _DAEMONS:
        try:
            _DAEMONS[address] = (
                docker_client(address or None, timeout=20).info(),
                None,
            )
        except DockerError as exc:
            _DAEMONS[address] = (None, str(exc))
    return _DAEMONS[address]


def _available(target):
    """Why a target cannot run where the jobs run, or None if it can (hardware.py)."""
    if HARDWARE_CHECK == "slurm":
        return why_not_on_nodes(target, SLURM_NODES)
    info = None
    if target["runner"] == "docker":
        info, error = _daemon(target.get("docker_host", ""))
        if error:
            return error
    return why_not_here(target, LOCAL_NODE, info)


if config["split"]["test_remainder"] >= config["split"]["test_mod"]:
    raise WorkflowError(
        f"split.test_remainder ({config['split']['test_remainder']}) must be below "
        f"split.test_mod ({config['split']['test_mod']}): no embryo would be in the test split"
    )

# Checked once, before any job, by the process that plans the jobs; a job that Slurm (or
# another executor) runs on a node parses this file again and does not check again: its
# allocation holds what it asked for, and the docker runner checks its daemon there.
if workflow.remote_exec or HARDWARE_CHECK == "none":
    HARDWARE_CHECK = "none"
elif HARDWARE_CHECK == "slurm":
    try:
        SLURM_NODES = slurm_nodes()
    except ClusterError as exc:
        raise WorkflowError(f"hardware_check: slurm: {exc}")
else:
    LOCAL_NODE = local_node()

TARGETS = {}
for _t in config["targets"]:
    if _t["name"] in TARGETS:
        raise WorkflowError(f"targets: name {_t['name']!r} is used twice")
    _why = None if HARDWARE_CHECK == "none" else _available(_t)
    if _why is None:
        TARGETS[_t["name"]] = _t
    elif config.get("on_missing_hardware", "fail") == "skip":
        logger.warning(
            f"target {_t['name']}: skipped, {_why} (on_missing_hardware: skip)"
        )
    else:
        raise WorkflowError(
            f"target {_t['name']}: {_why}; set on_missing_hardware: skip to leave it out"
        )
if not TARGETS:
    raise WorkflowError("no target can run on this host (see the warnings above)")
try:
    for _t in TARGETS.values():
        check_backend(_t)
    # Sweep points are targets too (derived from one), each with its own runs.
    SWEEP_TARGETS = expand_sweeps(config.get("sweeps", []), TARGETS, TRAIN)
except ConfigError as exc:
    raise WorkflowError(str(exc))
MAIN_TARGETS = list(TARGETS)
TARGETS.update(SWEEP_TARGETS)

RUN_FILES = [
    "metrics.json",
    "history.csv",
    "model.keras",
    "settings.json",
    "telemetry.csv",
]


def repeats(name):
    """Repeat numbers 1..N of a target (its own repeats, else train.repeats)."""
    return range(1, repeats_of(TARGETS[name], TRAIN.get("repeats", 1)) + 1)


def run_dirs():
    """Every run folder: train/<target>/repeat-<k>, main targets first, then sweeps."""
    return [f"{OUT}/train/{n}/repeat-{k}" for n in TARGETS for k in repeats(n)]


def names_regex(names):
    """A wildcard constraint matching exactly these names (never matching if empty)."""
    return "|".join(re.escape(n) for n in names) or "^$"


HOST_TARGETS = [n for n, t in TARGETS.items() if t["runner"] == "host"]
DOCKER_TARGETS = [n for n, t in TARGETS.items() if t["runner"] == "docker"]
CONTAINERS = config.get("containers", {})
IMAGES = sorted({TARGETS[n].get("image", "cpu") for n in DOCKER_TARGETS})


def image_tag(image):
    """The tag of a hardware image, e.g. embryo-bench/cpu:0.1.0."""
    return f"{CONTAINERS.get('tag_prefix', 'embryo-bench')}/{image}:{CONTAINERS.get('tag_version', '0.1.0')}"


def training_args(wildcards):
    """The train options shared by both runners (everything that changes the result)."""
    t = TARGETS[wildcards.target]
    repeat = int(wildcards.repeat)
    return (
        f"--target {wildcards.target} --repeat {repeat} --cpus {t['cpus']} "
        f"--gpus {t.get('gpus', 0)} "
        f"--threads {t.get('threads', t['cpus'])} --backend {t.get('backend', 'tensorflow')} "
        f"--epochs {TRAIN['epochs']} --batch-size {t.get('batch_size', TRAIN['batch_size'])} "
        f"--learning-rate {TRAIN['learning_rate']} --dropout {TRAIN['dropout']} "
        f"--seed {run_seed(TRAIN['seed'], repeat)} "
        f"--accuracy-target {TRAIN['accuracy_target']} "
        f"--strategy {t.get('strategy', 'none')} --replicas {t.get('gpus') or t['cpus']} "
        f"--preprocessing {shlex.quote(preprocessing_json())}"
    )


FIGURE_NAMES = [
    "fig1_preprocessing",
    "fig4_test_accuracy",
    "fig5_6_training_time",
    "epoch_times",
    "throughput",
    "cost",
    "backends",
    "sweeps",
    "paper_vs_ours",
]
TABLE_NAMES = [
    "results_table",
    "summary_table",
    "cost_table",
    "paper_comparison",
    "provenance",
]


def utilisation_figures():
    """One utilisation figure (PNG) per run: figures/utilisation/<target>-repeat-<k>.png."""
    return [
        f"{OUT}/figures/utilisation/{n}-repeat-{k}.png"
        for n in TARGETS
        for k in repeats(n)
    ]


FIGURES = (
    [f"{OUT}/figures/{n}.{ext}" for n in FIGURE_NAMES for ext in ("png", "pdf")]
    + [f"{OUT}/figures/{n}.{ext}" for n in TABLE_NAMES for ext in ("csv", "md")]
    + utilisation_figures()
    + [f"{OUT}/figures/config.yaml"]
)
try:
    COST_BASE, COST_NOTE = cost_base(
        config.get("cost", {}), config["targets"], MAIN_TARGETS
    )
except ConfigError as exc:
    raise WorkflowError(str(exc))
if COST_NOTE:
    logger.warning(COST_NOTE)


def preprocessing_json():
    """The settings that produce the training arrays, saved with each model for evaluate."""
    return json.dumps(
        {
            "frame_size": DATASET["frame_size"],
            "crop_fraction": PP["crop_fraction"],
            "invert_centre": PP["invert_centre"],
            "rotation_step": PP["rotation_step"],
            "image_size": PP["image_size"],
        },
        sort_keys=True,
    )


def dataset_label():
    """How figures name the data on their face."""
    if "label" in DATASET:
        return DATASET["label"]
    return {
        "synthetic": "SYNTHETIC frames (generated, not real embryos)",
        "imagefolder": f"real images from {DATASET.get('path', '')}",
        "local": "Mouse Embryo Tracking Database (local copy)",
        "mouse-embryo-tracking-db": "Mouse Embryo Tracking Database (Cicconet et al. 2014)",
    }[DATASET["kind"]]


# Data source wiring (download.smk, index.smk).
DB_DIR = f"{OUT}/data/db"
ARCHIVE = f"{OUT}/data/{os.path.basename(DATASET.get('url', '')) or 'db.zip'}"


def archive_input(wildcards):
    """The archive to extract: the downloaded one, or a local archive path."""
    if DATASET["kind"] == "mouse-embryo-tracking-db":
        return ARCHIVE
    return DATASET["path"]


def index_input():
    """Files that indexing reads: the generated or extracted database (and download info);
    nothing for sources read in place (imagefolder, a local database folder)."""
    kind = DATASET["kind"]
    if kind == "synthetic":
        return {"db": f"{OUT}/data/synthetic"}
    if kind == "imagefolder" or (
        kind == "local" and os.path.isdir(DATASET.get("path", ""))
    ):
        return {}
    if kind == "local":
        return {"db": DB_DIR}
    return {"db": DB_DIR, "info": f"{OUT}/data/download.json"}


def index_root(wildcards, input):
    """The folder to index: the extracted/generated database, or the external source."""
    return input.db if "db" in input.keys() else DATASET["path"]


def source_stamp():
    """Identity of a source read in place (imagefolder, local database folder), so that
    changed images rerun indexing; "" for sources produced by the workflow."""
    if DATASET["kind"] in ("imagefolder", "local") and not index_input():
        return tree_stamp(DATASET["path"])
    return ""


def index_flags(wildcards, input):
    """Extra index flags: the synthetic marker, the download record (for its sha256), or the
    local archive whose sha256 identifies the data."""
    if DATASET["kind"] == "synthetic":
        return "--synthetic"
    if "info" in input.keys():
        return f"--download-info {input.info}"
    if DATASET["kind"] == "local" and "db" in input.keys():
        return f"--checksum-of {shlex.quote(DATASET['path'])}"
    return ""


INDEX_LAYOUT = "imagefolder" if DATASET["kind"] == "imagefolder" else "db"


# Image build wiring (images.smk).
def image_inputs(wildcards):
    """Records the image build waits for: the base image (when built here) and the
    wheelhouse (when installing from it)."""
    out = {}
    if CONTAINERS.get("build_base", False):
        out["base"] = f"{OUT}/images/base.json"
    if CONTAINERS.get("pip_source", "pypi") == "wheelhouse":
        out["wheelhouse"] = f"{OUT}/images/wheelhouse-{wildcards.image}.json"
    return out


def image_content_hash(image):
    """sha256 of what the image is built from: Dockerfile, requirements, package source."""
    sources = IMAGE_SOURCES + [f"containers/requirements-{image}.txt"]
    return content_hash(sources, workflow.basedir)[:16]
