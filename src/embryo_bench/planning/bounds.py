"""Sizes and resources bounded before any job runs.

:func:`check_plan`, called by :meth:`embryo_bench.planning.plan.Plan.from_config` (so by the
workflow before any job and by ``embryo-bench check-config``), refuses, in one line naming the
setting:

* generator settings that cannot be met (:func:`embryo_bench.data.synthetic.check_settings`) or
  that indexing would refuse (frames after the last line with
  ``dataset.trajectories.unlabelled_frames: error``, more extra lines than it allows);
* a split that leaves no test (or training) embryo among the synthetic embryos, a class with
  no frame in one split, fewer selected frames than ``select.shards``, and a batch larger
  than the most training images the selection can give;
* a container memory limit of 0 (Docker reads it as no limit at all) or below Docker's
  minimum (:func:`embryo_bench.planning.memory.check_containers`);
* a job that would hold more memory than it can have: the synthesize job drawing a frame,
  the crop, invert and augment jobs of the largest shard, each target's trainer (against this
  machine's memory when the jobs run here, ``hardware_check: local``; a docker target's
  ``memory`` limit; a host target's ``memory`` when a Slurm cluster reserves it);
* a synthetic database larger than the free space of the outdir's file system (checked
  again by ``embryo-bench synthesize`` before it writes: :func:`check_free_space`);
* every other workload (``workloads:``,
  :func:`embryo_bench.planning.workload_bounds.check_workloads`): a batch larger than its
  training set (an empty one included) where the count is known, its data job's and each
  of its trainers' memory (its arrays: samples x sample bytes) against the same limits,
  and the disk its downloads, arrays file and image files (files input) take on the
  outdir's file system.

Every size is an ESTIMATE and a lower bound: what the code's own arrays must hold at once
(the formulas of :mod:`embryo_bench.data.stages`, :mod:`embryo_bench.data.preprocess` and
:mod:`embryo_bench.training.train`), plus the few constants that were measured (here and in
:mod:`embryo_bench.planning.memory`). What is refused cannot fit; what passes may still not
fit (a job holds more than its arrays: the Python runtime, libraries' workspaces,
temporaries). The counts are exact for synthetic data (the
allocation is known at plan time), the paper's for the downloaded database, and unknown for
a local copy or an image folder (there only what a single frame or a single batch needs is
checked, and indexing refuses an empty split).
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.preprocess import crop_box, rotation_angles
from ..data.select import CLASSES
from ..data.sources import test_split
from ..data.synthetic import (
    DRAW_BYTES_PER_PX,
    check_free_space,
    check_settings,
    embryo_folder,
    frames_written,
)
from ..errors import ConfigError, StorageError
from ..published import paper
from ..recording import hardware
from ..vocabulary import layout
from ..vocabulary.spec import INPUT_SHARDS
from ..vocabulary.units import MIB, px, size_text
from .memory import (
    TRAINER_BASE_MIB,
    Need,
    check_containers,
    check_need,
    machine_text,
    memory_limits,
)
from .workload_bounds import check_workloads

#: Float32 copies of each parameter while training: the weights, their gradients and Adam's
#: two moments.
MODEL_COPIES = 4
#: Filters of the model's first convolution (embryo_bench.workloads.paper): its float32 output, one
#: value per pixel and filter, is held for the backward pass.
CONV1_FILTERS = 32


def model_parameters(image_size: int, classes: int = 4) -> int:
    """Trainable parameters of the paper CNN (:func:`embryo_bench.workloads.paper.build_model`) for
    ``image_size`` px inputs: conv 5x5x32, conv 5x5x64 (each after a 2x2 pooling of its
    input's side, rounded down), dense 1024, dense ``classes``; 64 px: 16,834,436."""
    side = (image_size // 2) // 2
    return (
        (5 * 5 * 1 + 1) * 32
        + (5 * 5 * 32 + 1) * 64
        + (side * side * 64 + 1) * 1024
        + (1024 + 1) * classes
    )


# --- what the data will be ------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    """What the plan knows of the data before any job.

    Attributes:
        selected: frames the selection will hold (exact for synthetic data, the paper's for
            the downloaded database), None when unknown.
        how: where ``selected`` comes from, for messages.
        allocation: synthetic data only: int64 (embryos, 4) labelled frames of 1-4 cells per
            embryo (:func:`embryo_bench.data.synthetic.allocate_frames`), else None.
        frames_written: synthetic data only: PNG frames the generator writes (labelled and
            unlabelled), else 0.
    """

    selected: int | None
    how: str
    allocation: np.ndarray | None = None
    frames_written: int = 0


def synthetic_data(config: dict) -> Data:
    """The synthetic database a configuration asks for, checked.

    Raises:
        ConfigError: generator settings that cannot be met, or that indexing the database
            would refuse (``dataset.trajectories``), naming the settings.
    """
    ds = config["dataset"]
    syn, rules = ds["synthetic"], ds["trajectories"]
    try:
        alloc = check_settings(
            syn["embryos"],
            syn["frames_per_embryo"],
            syn["seed"],
            separator=syn["separator"],
            unlabelled_frames=syn["unlabelled_frames"],
            extra_lines=syn["extra_lines"],
            total_frames=syn.get("total_frames"),
            three_cell_frames=syn.get("three_cell_frames"),
        )
    except ConfigError as exc:
        raise ConfigError(f"dataset.{exc}") from None
    if syn["unlabelled_frames"] and rules["unlabelled_frames"] == "error":
        raise ConfigError(
            f"dataset.synthetic.unlabelled_frames {syn['unlabelled_frames']} with "
            "dataset.trajectories.unlabelled_frames: error: indexing would refuse every "
            "embryo (frames after its last trajectory line); set one of them to skip / 0"
        )
    if syn["extra_lines"] > rules["extra_lines"]:
        raise ConfigError(
            f"dataset.synthetic.extra_lines {syn['extra_lines']} > "
            f"dataset.trajectories.extra_lines {rules['extra_lines']}: indexing would refuse "
            "every embryo (more lines than frames); raise trajectories.extra_lines or lower "
            "synthetic.extra_lines"
        )
    per_class = alloc.sum(axis=0)
    rarest = int(per_class.min())
    return Data(
        selected=len(CLASSES) * rarest,
        how=f"{len(CLASSES)} x {rarest:,} frames of the rarest class (synthetic allocation)",
        allocation=alloc,
        frames_written=frames_written(alloc, syn["unlabelled_frames"]),
    )


def plan_data(config: dict) -> Data:
    """What the plan knows of the data (:class:`Data`): the synthetic allocation, checked
    (:func:`synthetic_data`); the paper's selection for the downloaded database; else
    nothing."""
    kind = config["dataset"]["kind"]
    if kind == "synthetic":
        return synthetic_data(config)
    if kind == "mouse-embryo-tracking-db":
        return Data(paper.BALANCED_FRAMES, "the paper's selection from this database")
    return Data(None, "unknown before indexing")


# --- counts: split, shards, batch ------------------------------------------------------------


def check_counts(config: dict, data: Data, batch_sizes: dict[str, int]) -> None:
    """Checks of a synthetic allocation against the split, the shards and the batch sizes.

    Args:
        config: the validated configuration.
        data: :func:`plan_data`'s result (nothing is checked without an allocation).
        batch_sizes: target name -> its batch size.

    Raises:
        ConfigError: no test or no training embryo, a class with no frame in one split,
            fewer selected frames than shards, or a batch larger than the most training
            images the selection can give.
    """
    alloc = data.allocation
    if alloc is None:
        return
    split, embryos = config["split"], len(alloc)
    mod, rem = split["test_mod"], split["test_remainder"]
    test = np.array([test_split(n, mod, rem) == "test" for n in range(embryos)])
    rule = f"split.test_mod {mod}, split.test_remainder {rem}"
    last = embryo_folder(embryos - 1)
    if not test.any() or test.all():
        which = "test" if not test.any() else "training"
        raise ConfigError(
            f"{rule}: no {which} embryo among the {embryos} synthetic embryos E00..{last} "
            f"(test: number mod {mod} == {rem}); change split or dataset.synthetic.embryos"
        )
    per_split = {"test": alloc[test].sum(axis=0), "training": alloc[~test].sum(axis=0)}
    for name, counts in per_split.items():
        empty = [c for c, n in zip(CLASSES, counts, strict=True) if n == 0]
        if empty:
            raise ConfigError(
                f"{rule}: the {name} embryos of the synthetic data hold no frame with "
                f"{empty[0]} cells (frames per class: "
                f"{dict(zip(CLASSES, counts.tolist(), strict=True))}); change split or "
                "dataset.synthetic (three_cell_frames, total_frames, seed)"
            )
    shards = config["select"]["shards"]
    if data.selected < shards:
        raise ConfigError(
            f"select.shards {shards} > the {data.selected:,} frames the selection will hold "
            f"({data.how}): a shard would be empty; lower select.shards"
        )
    # The rarest class is kept whole, the others drawn: at most min(rarest, its training
    # frames) of each class trains.
    rarest = data.selected // len(CLASSES)
    rotations = len(rotation_angles(config["preprocess"]["rotation_step"]))
    most = rotations * int(np.minimum(per_split["training"], rarest).sum())
    for name, batch in batch_sizes.items():
        if batch > most:
            raise ConfigError(
                f"target {name}: batch size {batch:,} > the at most {most:,} training images "
                f"the selection can give ({data.how}, {rotations} rotations each, training "
                "embryos only): every step would train all of them; lower train.batch_size "
                "(or the sweep's), or generate more frames"
            )


# --- memory ----------------------------------------------------------------------------------


def synthesize_need(config: dict) -> Need:
    """The memory the synthesize job holds at least while it draws one frame
    (:data:`DRAW_BYTES_PER_PX`, measured; one frame at a time per process)."""
    size = config["dataset"]["frame_size"]
    return Need(
        "the synthesize job",
        DRAW_BYTES_PER_PX * size * size,
        f"drawing one frame of {px(size)}, {DRAW_BYTES_PER_PX} bytes per px at least",
        "lower dataset.frame_size",
    )


def shard_needs(config: dict, data: Data) -> list[Need]:
    """The memory the crop, invert and augment jobs of the largest shard hold at least: of
    ``data.selected`` frames over ``select.shards`` (one frame when the count is unknown).

    Shapes (:mod:`embryo_bench.data.stages`): crop keeps every decoded frame (S x S; the crops
    are views of them) and stacks their C x C crops; invert holds its input, the equalised
    images and their stack (3 x C x C per frame); augment holds its input and its output,
    N x R images of I x I px (uint8 throughout).
    """
    ds, pp = config["dataset"], config["preprocess"]
    size = ds["frame_size"]
    left, _, right, _ = crop_box(size, pp["crop_fraction"])
    crop, image = right - left, pp["image_size"]
    rotations = len(rotation_angles(pp["rotation_step"]))
    shards = config["select"]["shards"]
    frames = math.ceil(data.selected / shards) if data.selected else 1
    known = f"{frames:,} frames" if data.selected else "one frame (the count is unknown)"
    shard_fix = "raise select.shards or lower dataset.frame_size"
    return [
        Need(
            "the crop job of shard 0",
            frames * (size * size + crop * crop),
            f"{known} of {px(size)} and their crops of {px(crop)}",
            shard_fix,
        ),
        Need(
            "the invert job of shard 0",
            3 * frames * crop * crop,
            f"{known} cropped to {px(crop)}, three times: input, equalised, stacked",
            shard_fix,
        ),
        Need(
            "the augment job of shard 0",
            frames * (crop * crop + rotations * image * image),
            f"{known} of {px(crop)} and their {frames * rotations:,} rotations of {px(image)}",
            "raise select.shards, lower preprocess.image_size or raise preprocess.rotation_step",
        ),
    ]


def trainer_need(target, config: dict, data: Data) -> Need:
    """The memory a target's trainer holds at least (:mod:`embryo_bench.training.train`):
    TensorFlow's
    own (:data:`TRAINER_BASE_MIB`), then the greater of loading the data (the shards'
    images, their concatenation and the train/test split: three copies of every image;
    :func:`embryo_bench.data.stages.load_dataset`) and training (the images, the model's
    parameters x :data:`MODEL_COPIES` float32, one batch's first-convolution output in
    float32). On a GPU target the model and the batches are on the GPU and not counted.

    Args:
        target: a :class:`embryo_bench.planning.targets.Target` (name, batch_size, gpus).
        config: the validated configuration.
        data: :func:`plan_data`'s result; without a count, the images are one batch.
    """
    image = config["preprocess"]["image_size"]
    rotations = len(rotation_angles(config["preprocess"]["rotation_step"]))
    images = data.selected * rotations if data.selected else target.batch_size
    pixels = image * image
    load = 3 * images * pixels
    params = model_parameters(image)
    model = MODEL_COPIES * 4 * params
    batch = target.batch_size * pixels * CONV1_FILTERS * 4
    train = images * pixels + (0 if target.gpus else model + batch)
    what = f"{images:,} images of {px(image)}" + ("" if data.selected else " (one batch)")
    detail = (
        f"TensorFlow's own {TRAINER_BASE_MIB} MiB (measured), then the greater of loading "
        f"the {what} (three copies while the shards are joined and split: "
        f"{size_text(load)}) and training (the images, {size_text(images * pixels)}"
    )
    if target.gpus:
        detail += "; the model and the batches are on the GPU: not counted)"
    else:
        detail += (
            f", a model of {params:,} parameters with its gradients and Adam's two moments, "
            f"{size_text(model)}, and one batch of {target.batch_size:,} through the first "
            f"convolution, {size_text(batch)})"
        )
    return Need(
        f"target {target.name}: its trainer",
        TRAINER_BASE_MIB * MIB + max(load, train),
        detail,
        "lower preprocess.image_size, train.batch_size or the data, or raise the memory",
    )


# --- disk ------------------------------------------------------------------------------------


def _allocated(folder: Path) -> int:
    """Bytes the files under ``folder`` take on disk (as ``du``); 0 for a missing one."""
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            with contextlib.suppress(OSError):  # removed meanwhile
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
    return total


def check_disk(config: dict, data: Data) -> None:
    """:func:`check_free_space` of the synthetic database a configuration generates, unless
    it is already there (its record written; the workflow removes an old copy before it
    generates a new one, and ``embryo-bench synthesize`` checks again before it writes).

    Raises:
        ConfigError: as :func:`check_free_space`, naming the setting.
    """
    if config["dataset"]["kind"] != "synthetic":
        return
    out = Path(config["outdir"])
    if (out / layout.SYNTHETIC_RECORD).exists():
        return
    db = out / layout.SYNTHETIC_DB
    try:
        check_free_space(
            db,
            data.frames_written,
            config["dataset"]["frame_size"],
            "free space, lower dataset.synthetic.total_frames (or embryos x frames_per_embryo) "
            "or dataset.frame_size, or point outdir elsewhere",
            freed=_allocated(db),
        )
    except StorageError as exc:
        raise ConfigError(f"dataset.synthetic: {exc}") from None


# --- the plan --------------------------------------------------------------------------------


def check_plan(plan, machine_mib: int | None = None) -> None:
    """Every bound of this module on a resolved plan (:meth:`Plan.from_config` calls it), in
    the order the jobs would meet them: the generator's settings, the split, shards and batch
    sizes (:func:`check_counts`), the docker targets' memory limits
    (:func:`check_containers`), the synthesize job's memory, the synthetic database's disk
    space (:func:`check_disk`), the preprocessing jobs' memory (:func:`shard_needs`), each
    trainer's (:func:`trainer_need` against :func:`memory_limits`), then every other
    workload's data, files and trainers (:func:`check_workloads`). The paper's bounds (all
    but the containers' limits and the other workloads') only where its workload runs.

    Where the jobs run is the configuration's own ``hardware_check``: with "local" this
    machine's memory bounds every job (``embryo-bench check-config`` and a job on a cluster
    node pass "none" to the plan only to skip the targets' hardware check); otherwise only
    the limits the configuration itself sets are checked.

    Args:
        plan: an :class:`embryo_bench.planning.plan.Plan` (config, targets).
        machine_mib: this machine's memory (MiB); default :func:`hardware.memory_mib`.

    Raises:
        ConfigError: the first bound a setting breaks, naming it.
    """
    config = plan.config
    # The stages' data, preprocessing and trainers only where a workload of input kind shards
    # (the paper's) runs: without one their sections are defaults or unused settings, whose
    # sizes bound nothing.
    runs_paper = any(w.input_kind == INPUT_SHARDS for w in plan.workloads.values())
    data = plan_data(config) if runs_paper else None
    if runs_paper:
        check_counts(config, data, {n: t.batch_size for n, t in plan.targets.items()})
    check_containers(plan.targets)
    where = config["hardware_check"]
    if where != "local":
        machine_mib = None
    elif machine_mib is None:
        machine_mib = hardware.memory_mib()
    machine = machine_text(machine_mib) if machine_mib else ""
    if runs_paper:
        if machine and config["dataset"]["kind"] == "synthetic":
            check_need(synthesize_need(config), machine_mib, machine)
        check_disk(config, data)
        for need in shard_needs(config, data) if machine else []:
            check_need(need, machine_mib, machine)
        for t in plan.targets.values():
            need = trainer_need(t, config, data)
            for limit_mib, text in memory_limits(t, where, machine_mib):
                check_need(need, limit_mib, text)
    check_workloads(plan, where, machine_mib)
